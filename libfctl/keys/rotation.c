// SPDX-License-Identifier: MIT
/* Rotation state per MACsec interface (fctl/rotation.h, docs/rotation.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/rotation.h"

void fctl_rotation_dir(const char *state_dir, const char *netns, char *out, size_t len)
{
	char dir[4096];

	fctl_state_dir_path(state_dir, netns, dir, sizeof(dir));
	snprintf(out, len, "%s/rotation", dir);
}

static bool ifname_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < FCTL_IFNAMSIZ && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int fctl_rotation_read(const char *dir, const char *ifname, struct fctl_rotation_cur *out)
{
	struct fctl_rotation_cur c = { 0 };
	char path[4096], line[128];
	bool has_an = false, has_v = false;
	FILE *f;

	if (!ifname_ok(ifname))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, ifname);
	f = fctl_fopen_ro(path);
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned a;
		uint32_t v;
		uint64_t u;

		if (sscanf(line, "an %u", &a) == 1 && a < FCTL_MAX_AN) {
			c.an = (uint8_t)a;
			has_an = true;
		} else if (sscanf(line, "version %" SCNu32, &v) == 1) {
			c.version = v;
			has_v = true;
		} else if (sscanf(line, "busy %" SCNu64, &u) == 1) {
			c.busy_until = u;
		} else if (sscanf(line, "switched %" SCNu64, &u) == 1) {
			c.switched_at = u;
		} else if (sscanf(line, "completed_version %" SCNu32, &v) == 1) {
			c.completed_version = v;
		} else if (sscanf(line, "completed_total %" SCNu64, &u) == 1) {
			c.n_completed = u;
		} else if (sscanf(line, "completed %" SCNu64, &u) == 1) {
			c.completed_at = u;
		} else if (sscanf(line, "rolled_back_total %" SCNu64, &u) == 1) {
			c.n_rolled_back = u;
		} else if (sscanf(line, "failed_total %" SCNu64, &u) == 1) {
			c.n_failed = u;
		} else if (strncmp(line, "keyid ", 6) == 0) {
			line[strcspn(line, "\n")] = 0;
			if (fctl_parse_hex(line + 6, c.keyid, FCTL_KEYID_LEN) < 0) {
				fclose(f);
				return -EBADMSG;
			}
			c.has_keyid = true;
		}
	}
	fclose(f);
	if (!has_an || !has_v)
		return -EBADMSG;
	*out = c;
	return 0;
}

int fctl_rotation_write(const char *dir, const char *ifname, const struct fctl_rotation_cur *c)
{
	char path[4096], tmp[4200], buf[448];
	int n;

	if (!ifname_ok(ifname) || c->an >= FCTL_MAX_AN)
		return -EINVAL;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", dir, ifname);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, ifname);
	n = snprintf(buf, sizeof(buf), "an %u\nversion %" PRIu32 "\nbusy %" PRIu64 "\n", c->an,
		     c->version, c->busy_until);
	if (c->has_keyid) {
		char kid[2 * FCTL_KEYID_LEN + 1];

		fctl_format_hex(c->keyid, FCTL_KEYID_LEN, kid);
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "keyid %s\n", kid);
	}
	if (c->switched_at || c->completed_at || c->n_completed || c->n_rolled_back ||
	    c->n_failed)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n,
			      "switched %" PRIu64 "\ncompleted %" PRIu64
			      "\ncompleted_version %" PRIu32 "\ncompleted_total %" PRIu64
			      "\nrolled_back_total %" PRIu64 "\nfailed_total %" PRIu64 "\n",
			      c->switched_at, c->completed_at, c->completed_version, c->n_completed,
			      c->n_rolled_back, c->n_failed);
	return fctl_file_replace(path, tmp, buf, (size_t)n, 0600, FCTL_FILE_SYNC_DIR);
}

bool fctl_rotation_busy(const char *dir, char *ifname, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool busy = false;
	uint64_t now = (uint64_t)time(NULL);

	if (!d)
		return false;
	while (!busy && (de = readdir(d))) {
		struct fctl_rotation_cur c;

		if (de->d_name[0] == '.')
			continue;
		if (fctl_rotation_read(dir, de->d_name, &c) == 0 && c.busy_until > now) {
			busy = true;
			if (ifname)
				snprintf(ifname, len, "%s", de->d_name);
		}
	}
	closedir(d);
	return busy;
}

static void sa_move(struct fctl_sa *sa, uint8_t an, const uint8_t keyid[FCTL_KEYID_LEN],
		    const uint8_t salt[FCTL_SALT_LEN])
{
	struct fctl_sa s = sa[0];

	if (!s.present)
		return;
	memset(&sa[0], 0, sizeof(sa[0]));
	memcpy(s.keyid, keyid, FCTL_KEYID_LEN);
	if (s.has_salt)
		memcpy(s.salt, salt, FCTL_SALT_LEN);
	sa[an] = s;
}

void fctl_rotation_secy_set(struct fctl_macsec *m, uint8_t an, uint32_t version)
{
	uint8_t keyid[FCTL_KEYID_LEN], salt[FCTL_SALT_LEN];

	/* A pinned version N (KMS references must pin one) is the first version: a record
	 * past it is where rotation took the link. A record at or below N is older than
	 * the profile's pin, which wins (raising N is a replacement, docs/profile.md). */
	if ((m->key.version != 0 && version <= m->key.version) || an >= FCTL_MAX_AN ||
	    !m->txsa[0].present)
		return;
	m->key.version = version;
	fctl_keyid_from_ref(&m->key, keyid);
	fctl_salt_from_ref(&m->key, salt);
	sa_move(m->txsa, an, keyid, salt);
	for (size_t i = 0; i < m->n_rxsc; i++)
		sa_move(m->rxsc[i].sa, an, keyid, salt);
	m->encoding_sa = an;
}

bool fctl_rotation_applies(const struct fctl_keyref *ref, const struct fctl_rotation_cur *c)
{
	struct fctl_keyref at = *ref;
	uint8_t keyid[FCTL_KEYID_LEN];

	if (ref->version != 0 && c->version <= ref->version)
		return false;
	if (!c->has_keyid)
		return true; /* a record from before keyids: the profile's reference */
	at.version = c->version;
	fctl_keyid_from_ref(&at, keyid);
	return memcmp(keyid, c->keyid, FCTL_KEYID_LEN) == 0;
}

int fctl_rotation_overlay(struct fctl_host_state *hs, const char *dir)
{
	DIR *d;
	struct dirent *de;
	int fd, r = 0;

	/* the records there, not one open per SecY of the profile: most were never rotated */
	fd = fctl_open_ro(dir, O_DIRECTORY);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		r = errno;
		if (fd >= 0)
			close(fd);
		return r == ENOENT ? 0 : -r;
	}
	while (r == 0 && (de = readdir(d))) {
		struct fctl_link *l;
		struct fctl_rotation_cur c;

		if (de->d_name[0] == '.')
			continue;
		l = fctl_host_state_find(hs, de->d_name);
		if (!l || l->kind != FCTL_LINK_MACSEC)
			continue;
		r = fctl_rotation_read(dir, l->name, &c);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r == 0 && fctl_rotation_applies(&l->macsec.key, &c))
			fctl_rotation_secy_set(&l->macsec, c.an, c.version);
	}
	closedir(d);
	return r;
}

int fctl_rotation_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
			    struct fctl_key **out, char *err, size_t errlen)
{
	struct fctl_keyref r = *ref;
	char id[4096];

	if (ref->backend && ref->id && strcmp(ref->backend, "file") == 0 && ref->version > 0) {
		snprintf(id, sizeof(id), "%s.v%" PRIu32, ref->id, ref->version);
		r.id = id;
	}
	return fctl_key_fetch(&r, base_dir, want_len, out, err, errlen);
}
