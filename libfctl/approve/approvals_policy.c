// SPDX-License-Identifier: MIT
/* The host's approval policy file, the check's text and JSON, and the copies of a
 * version's signatures the history keeps. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fctl/approvals.h"

/* "N of FILE", FILE relative to the policy file's folder */
static int parse_require(const char *v, const char *conf, struct fctl_approval_policy *p)
{
	char file[PATH_MAX], dir[PATH_MAX];
	unsigned int n;
	int used = 0;

	if (sscanf(v, "%u of %n", &n, &used) != 1 || used == 0 || n == 0 || n > 64)
		return -EINVAL;
	snprintf(file, sizeof(file), "%s", v + used);
	file[strcspn(file, " \t")] = '\0';
	if (!*file)
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%s", conf);
	if (file[0] == '/')
		snprintf(p->signers, sizeof(p->signers), "%s", file);
	else
		snprintf(p->signers, sizeof(p->signers), "%s/%s", dirname(dir), file);
	p->required = n;
	return 0;
}

int fctl_approval_policy_load(const char *conf, struct fctl_approval_policy *out, char *err,
			      size_t errlen)
{
	struct fctl_approval_policy p = { 0 };
	struct fctl_buf b = { 0 };
	unsigned int line = 0;
	char *s, *next;
	int r;

	if (!conf)
		conf = FCTL_APPROVALS_CONF;
	snprintf(p.conf, sizeof(p.conf), "%s", conf);
	r = fctl_file_read(conf, &b);
	if (r == -ENOENT) {
		fctl_buf_release(&b);
		return 0;
	}
	if (r < 0) {
		fctl_set_err(err, errlen, "%s: %s", conf, strerror(-r));
		return r;
	}
	for (s = b.data; s && r == 0; s = next) {
		char *v;

		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		line++;
		s[strcspn(s, "#")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			continue;
		v = strchr(s, ':');
		if (v) {
			*v++ = '\0';
			while (*v == ' ' || *v == '\t')
				v++;
		}
		if (!v || strcmp(s, "require") != 0) {
			fctl_set_err(err, errlen, "%s:%u: expected 'require: N of ALLOWED_SIGNERS'",
				     conf, line);
			r = -EINVAL;
		} else if (parse_require(v, conf, &p) < 0) {
			fctl_set_err(err, errlen,
				     "%s:%u: expected 'require: N of ALLOWED_SIGNERS' with N in "
				     "1..64",
				     conf, line);
			r = -EINVAL;
		}
	}
	fctl_buf_release(&b);
	if (r == 0 && !p.required) {
		fctl_set_err(err, errlen, "%s: no 'require: N of ALLOWED_SIGNERS' line", conf);
		r = -EINVAL;
	}
	if (r < 0)
		return r;
	*out = p;
	return 1;
}

static void names(const struct fctl_approvals *a, enum fctl_approval_state st,
		  struct fctl_buf *out)
{
	bool first = true;

	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].state != st)
			continue;
		fctl_buf_printf(out, "%s%s %s", first ? "" : ", ", a->v[i].principal, a->v[i].fp);
		first = false;
	}
	if (first)
		fctl_buf_puts(out, "nobody");
}

void fctl_approvals_text(const struct fctl_approvals *a, struct fctl_buf *out)
{
	if (a->met) {
		fctl_buf_printf(out, "approved: %u of %u required signed (", a->counted,
				a->required);
		names(a, FCTL_APPROVAL_COUNTED, out);
		fctl_buf_printf(out, "; allowed_signers %s)", a->signers_file);
		return;
	}
	fctl_buf_printf(out, "NOT approved: %u of %u required signed (signed by ", a->counted,
			a->required);
	names(a, FCTL_APPROVAL_COUNTED, out);
	fctl_buf_printf(out, "); missing: %s; checked against %s",
			*a->missing ? a->missing : "(no other principal)", a->signers_file);
	if (!a->n)
		fctl_buf_puts(out, "; no signature file (PROFILE.sig or PROFILE.sig.d/*.sig)");
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].state != FCTL_APPROVAL_COUNTED)
			fctl_buf_printf(out, "; %s %s: %s", a->v[i].file,
					a->v[i].state == FCTL_APPROVAL_REPEAT ? "not counted"
									       : "refused",
					a->v[i].reason);
}

void fctl_approvals_json(const struct fctl_approvals *a, struct fctl_buf *out)
{
	static const char *const st[] = { "", "counted", "repeat", "refused" };

	fctl_buf_printf(out, "{\"required\":%u,\"counted\":%u,\"met\":%s,\"allowed_signers\":",
			a->required, a->counted, a->met ? "true" : "false");
	fctl_buf_json_str(out, a->signers_file);
	fctl_buf_puts(out, ",\"missing\":[");
	{
		char buf[sizeof(a->missing)], *save = NULL;
		bool first = true;

		snprintf(buf, sizeof(buf), "%s", a->missing);
		for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
			fctl_buf_puts(out, first ? "" : ",");
			fctl_buf_json_str(out, p + (*p == ' '));
			first = false;
		}
	}
	fctl_buf_puts(out, "],\"signatures\":[");
	for (size_t i = 0; i < a->n; i++) {
		const struct fctl_approval_sig *s = &a->v[i];

		fctl_buf_puts(out, i ? ",{\"file\":" : "{\"file\":");
		fctl_buf_json_str(out, s->file);
		fctl_buf_printf(out, ",\"state\":\"%s\",\"principal\":", st[s->state]);
		fctl_buf_json_str(out, s->principal);
		fctl_buf_puts(out, ",\"fingerprint\":");
		fctl_buf_json_str(out, s->fp);
		fctl_buf_puts(out, ",\"digest\":");
		fctl_buf_json_str(out, s->digest);
		fctl_buf_puts(out, ",\"reason\":");
		fctl_buf_json_str(out, s->reason);
		fctl_buf_puts(out, "}");
	}
	fctl_buf_puts(out, "]}");
}

int fctl_approvals_keep(const char *src, const char *dst)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 64], **files = NULL;
	size_t n = 0;
	int r = fctl_approvals_list(src, &files, &n);

	if (r < 0 || n == 0)
		goto out;
	snprintf(dir, sizeof(dir), "%s.sig.d", dst);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		goto out;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		struct fctl_buf b = { 0 };
		char *base = strrchr(files[i], '/');
		int fd;

		r = fctl_file_read(files[i], &b);
		if (r < 0) {
			fctl_buf_release(&b);
			break;
		}
		snprintf(path, sizeof(path), "%s/%02zu-%s", dir, i, base ? base + 1 : files[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			r = -errno;
		else {
			r = fctl_write_all(fd, b.data, b.len);
			if (r == 0 && fsync(fd) < 0)
				r = -errno;
			close(fd);
		}
		fctl_buf_release(&b);
	}
out:
	fctl_approvals_list_free(files, n);
	return r;
}
