// SPDX-License-Identifier: MIT
/* The desired-state cache (STATE_DIR/desired): a re-apply of the same bytes skips the profile load. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "engine_int.h"

#define DESIRED_MAGIC "fabricctl-desired 1"
#define DESIRED_MAX (64u << 20)
#define MAC_LEN 32

struct build_id {
	unsigned char id[64];
	size_t len;
};

/* The GNU build id of the running program (its first loaded object), from its notes. */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build_id *b = arg;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t off = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		while (off + sizeof(ElfW(Nhdr)) <= ph->p_memsz) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
			size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
			const unsigned char *d = p + off + sizeof(*n) + name;

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(p + off + sizeof(*n), "GNU", 4) == 0 && n->n_descsz <= sizeof(b->id)) {
				memcpy(b->id, d, n->n_descsz);
				b->len = n->n_descsz;
				return 1;
			}
			off += sizeof(*n) + name + desc;
		}
	}
	return 1; /* only the program itself */
}

/* What an entry is for: this build, this host, the profile named so from this directory,
 * these bytes. Without a build id (a program linked without one) there is no cache. */
static int entry_key(const char *host, const char *file, const unsigned char sha[32],
		     char hex[65])
{
	struct build_id b = { .len = 0 };
	char cwd[PATH_MAX];
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c;
	int ok;

	dl_iterate_phdr(phdr_cb, &b);
	if (!b.len || !getcwd(cwd, sizeof(cwd)))
		return -ENOTSUP;
	c = EVP_MD_CTX_new();
	if (!c)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(c, DESIRED_MAGIC, sizeof(DESIRED_MAGIC)) &&
	     EVP_DigestUpdate(c, b.id, b.len) && EVP_DigestUpdate(c, host, strlen(host) + 1) &&
	     EVP_DigestUpdate(c, file, strlen(file) + 1) &&
	     EVP_DigestUpdate(c, cwd, strlen(cwd) + 1) && EVP_DigestUpdate(c, sha, 32) &&
	     EVP_DigestFinal_ex(c, md, &mdlen);
	EVP_MD_CTX_free(c);
	if (!ok)
		return -EIO;
	fctl_format_hex(md, 32, hex);
	return 0;
}

/* Reads a small state file that must be a regular file of this user, written by nobody
 * else (no symlink, not group- or other-writable). */
static int read_private(const char *path, size_t max, struct fctl_buf *out)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY), r = 0;
	char chunk[65536];
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (uint64_t)st.st_size > max) {
		close(fd);
		return -EPERM;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		fctl_buf_append(out, chunk, (size_t)n);
	}
	close(fd);
	if (!r && out->oom)
		r = -ENOMEM;
	return r;
}

/* STATE_DIR/desired.key: 32 random bytes, made on the first store. */
static int mac_key(const char *dir, bool create, unsigned char key[32])
{
	char path[PATH_MAX + 16];
	struct fctl_buf b = { 0 };
	int r;

	snprintf(path, sizeof(path), "%s/desired.key", dir);
	r = read_private(path, 32, &b);
	if (r == 0 && b.len == 32) {
		memcpy(key, b.data, 32);
		fctl_memzero(b.data, b.len);
		fctl_buf_release(&b);
		return 0;
	}
	if (b.data)
		fctl_memzero(b.data, b.len);
	fctl_buf_release(&b);
	if (!create)
		return r < 0 ? r : -EBADMSG;
	if (getrandom(key, 32, 0) != 32)
		return -EIO;
	return fctl_file_replace(path, NULL, key, 32, 0600, FCTL_FILE_SYNC_DIR);
}

static int entry_mac(const unsigned char key[32], const void *data, size_t len, char hex[65])
{
	unsigned char md[MAC_LEN];
	unsigned int mdlen = 0;

	if (!HMAC(EVP_sha256(), key, 32, data, len, md, &mdlen) || mdlen != MAC_LEN)
		return -EIO;
	fctl_format_hex(md, MAC_LEN, hex);
	return 0;
}

static void desired_path(const struct fctl_engine_opts *o, char *dir, size_t dlen, char *path,
			 size_t plen)
{
	fctl_state_dir_path(o->state_dir, o->netns, dir, dlen);
	snprintf(path, plen, "%s/desired", dir);
}

static bool has_mka(const struct fctl_profile *p)
{
	for (size_t i = 0; i < p->n_policies; i++)
		if (p->policies[i].has_mka)
			return true;
	return false;
}

/* The key files validation reads (each policy's file key, below the profile's directory)
 * as their inodes say: device, inode, type and mode, owner, size, modification and change
 * times. Any write, chmod, chown, replacement or removal changes it, so the checks
 * validation makes of key files (permissions, format, length) are made again by a miss.
 * Their bytes are never read here. */
static int keyfiles_digest(char *const *paths, size_t n, char hex[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok;

	if (!c)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	for (size_t i = 0; ok && i < n; i++) {
		struct stat st;
		uint64_t v[12] = { 0 };

		if (lstat(paths[i], &st) < 0) {
			v[0] = 1;
			v[1] = (uint64_t)errno;
		} else {
			v[2] = st.st_dev, v[3] = st.st_ino, v[4] = st.st_mode, v[5] = st.st_uid;
			v[6] = st.st_gid, v[7] = (uint64_t)st.st_size;
			v[8] = (uint64_t)st.st_mtim.tv_sec, v[9] = (uint64_t)st.st_mtim.tv_nsec;
			v[10] = (uint64_t)st.st_ctim.tv_sec, v[11] = (uint64_t)st.st_ctim.tv_nsec;
		}
		ok = EVP_DigestUpdate(c, paths[i], strlen(paths[i]) + 1) &&
		     EVP_DigestUpdate(c, v, sizeof(v));
	}
	ok = ok && EVP_DigestFinal_ex(c, md, &mdlen);
	EVP_MD_CTX_free(c);
	if (!ok)
		return -EIO;
	fctl_format_hex(md, 32, hex);
	return 0;
}

/* "keyfile HEX" per key file of p, then "keys DIGEST". */
static int put_keyfiles(struct fctl_buf *b, const struct fctl_profile *p)
{
	char **paths = calloc(p->n_policies + 1, sizeof(*paths)), hex[65];
	size_t n = 0;
	int r = paths ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < p->n_policies; i++) {
		const struct fctl_keyref *k = &p->policies[i].key;

		if (!p->policies[i].has_key || !k->backend || strcmp(k->backend, "file") != 0 ||
		    !k->id)
			continue;
		if (asprintf(&paths[n], "%s/%s", p->dir, k->id) < 0) {
			paths[n] = NULL;
			r = -ENOMEM;
			break;
		}
		fctl_buf_puts(b, "keyfile ");
		fctl_buf_put_hex(b, (const unsigned char *)paths[n], strlen(paths[n]));
		fctl_buf_putc(b, '\n');
		n++;
	}
	if (!r)
		r = keyfiles_digest(paths, n, hex);
	if (!r)
		fctl_buf_printf(b, "keys %s\n", hex);
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	return r;
}

int fctl_engine_desired_store(const struct fctl_engine_opts *o, const char *file,
			      const unsigned char *data, size_t len, const struct fctl_profile *p)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], host[64], key[65], mac[65];
	unsigned char sha[32], mkey[32];
	unsigned int mdlen = 0;
	struct fctl_host_state *hs = NULL;
	struct fctl_buf b = { 0 };
	int r;

	/* MKA ports are started from the whole profile: such profiles are always loaded */
	if (has_mka(p))
		return -ENOTSUP;
	if (!EVP_Digest(data, len, sha, &mdlen, EVP_sha256(), NULL))
		return -EIO;
	if (CRYPTO_memcmp(sha, p->sha256, 32) != 0)
		return -ESTALE; /* the file changed since these bytes were read */
	r = fctl_engine_host_name(o, host, sizeof(host));
	if (r == 0)
		r = entry_key(host, file, sha, key);
	if (r == 0 && !fctl_profile_find_host(p, host))
		r = -ENOENT;
	if (r == 0)
		r = fctl_profile_render_host(p, host, &hs);
	if (r < 0)
		return r;
	desired_path(o, dir, sizeof(dir), path, sizeof(path));
	fctl_buf_printf(&b, "%s\nkey %s\nversion %" PRIu64 "\nname ", DESIRED_MAGIC, key,
			p->version);
	fctl_buf_put_hex(&b, (const unsigned char *)(p->name ? p->name : ""),
			 p->name ? strlen(p->name) : 0);
	fctl_buf_puts(&b, "\ndir ");
	fctl_buf_put_hex(&b, (const unsigned char *)p->dir, strlen(p->dir));
	fctl_buf_putc(&b, '\n');
	r = put_keyfiles(&b, p);
	if (r == 0)
		r = fctl_host_state_save(hs, &b);
	fctl_host_state_free(hs);
	if (r == 0)
		r = mac_key(dir, true, mkey);
	if (r == 0)
		r = entry_mac(mkey, b.data, b.len, mac);
	fctl_memzero(mkey, sizeof(mkey));
	if (r == 0) {
		fctl_buf_printf(&b, "mac %s\n", mac);
		r = b.oom ? -ENOMEM : fctl_file_replace(path, NULL, b.data, b.len, 0600, 0);
	}
	fctl_buf_release(&b);
	return r;
}

/* "TAG HEX\n" at *pos: the hex decoded into a new string. */
static char *hex_line(const char **pos, const char *tag)
{
	const char *s = *pos, *nl;
	size_t tl = strlen(tag), n;
	char *out, *digits;

	if (strncmp(s, tag, tl) != 0 || s[tl] != ' ' || !(nl = strchr(s + tl + 1, '\n')))
		return NULL;
	s += tl + 1;
	n = (size_t)(nl - s);
	if (n % 2 || n > 2 * PATH_MAX || !(out = calloc(1, n / 2 + 1)))
		return NULL;
	digits = strndup(s, n);
	if (!digits || fctl_parse_hex(digits, (unsigned char *)out, n / 2) < 0 ||
	    strlen(out) != n / 2) {
		free(digits);
		free(out);
		return NULL;
	}
	free(digits);
	*pos = nl + 1;
	return out;
}

/* The profile a hit stands for: its name, version, bytes' digest, file, directory and the
 * one host (no links, policies or MKA: what an unchanged re-apply reads of it). */
static int light_profile(const char *file, const char *host, const unsigned char sha[32],
			 const char **pos, struct fctl_profile **out)
{
	struct fctl_profile *p = calloc(1, sizeof(*p));
	char *end = NULL;

	if (!p)
		return -ENOMEM;
	memcpy(p->sha256, sha, 32);
	p->schema = FCTL_SCHEMA_VERSION;
	if (strncmp(*pos, "version ", 8) == 0)
		p->version = strtoull(*pos + 8, &end, 10);
	if (!end || *end != '\n')
		goto bad;
	*pos = end + 1;
	p->name = hex_line(pos, "name");
	p->dir = hex_line(pos, "dir");
	p->file = strdup(file);
	p->hosts = calloc(1, sizeof(*p->hosts));
	if (!p->name || !p->dir || !p->file || !p->hosts)
		goto bad;
	p->n_hosts = p->cap_hosts = 1;
	p->hosts[0].name = strdup(host);
	if (!p->hosts[0].name)
		goto bad;
	*out = p;
	return 0;
bad:
	fctl_profile_free(p);
	return -EBADMSG;
}

/* The "keyfile" lines at *pos and their "keys" digest: 1 when the files are as they were,
 * 0 when one changed, -EBADMSG when malformed. */
static int keyfiles_match(const char **pos)
{
	char *paths[256], hex[65];
	size_t n = 0;
	int r = 0;

	while (n < FCTL_ARRAY_SIZE(paths) && strncmp(*pos, "keyfile ", 8) == 0) {
		paths[n] = hex_line(pos, "keyfile");
		if (!paths[n]) {
			r = -EBADMSG;
			break;
		}
		n++;
	}
	if (!r && (strncmp(*pos, "keys ", 5) != 0 || strlen(*pos) < 70 || (*pos)[69] != '\n'))
		r = -EBADMSG;
	if (!r)
		r = keyfiles_digest(paths, n, hex);
	if (!r) {
		r = memcmp(hex, *pos + 5, 64) == 0;
		*pos += 70;
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return r < 0 ? -EBADMSG : r;
}

/* Checks an entry's text (NUL-terminated in b) and its MAC; *body: after the key line. */
static int check_entry(const char *dir, struct fctl_buf *b, const char *key, const char **body)
{
	char want_key[128], mac[65];
	unsigned char mkey[32];
	const char *tail;
	size_t body_len;
	int r;

	snprintf(want_key, sizeof(want_key), "%s\nkey %s\n", DESIRED_MAGIC, key);
	if (b->len < strlen(want_key) + 70 || memchr(b->data, '\0', b->len))
		return -EBADMSG;
	if (strncmp((const char *)b->data, DESIRED_MAGIC "\nkey ", sizeof(DESIRED_MAGIC) + 4) != 0)
		return -EBADMSG;
	if (strncmp((const char *)b->data, want_key, strlen(want_key)) != 0)
		return 0; /* another profile's (or build's, host's) entry: a miss */
	body_len = b->len - 69; /* "mac " + 64 hex + "\n" */
	tail = (const char *)b->data + body_len;
	if (strncmp(tail, "mac ", 4) != 0 || tail[68] != '\n')
		return -EBADMSG;
	r = mac_key(dir, false, mkey);
	if (r == 0)
		r = entry_mac(mkey, b->data, body_len, mac);
	fctl_memzero(mkey, sizeof(mkey));
	if (r < 0)
		return -EBADMSG;
	if (CRYPTO_memcmp(mac, tail + 4, 64) != 0)
		return -EBADMSG;
	((char *)b->data)[body_len] = '\0'; /* the state ends before the MAC line */
	*body = (const char *)b->data + strlen(want_key);
	return 1;
}

int fctl_engine_desired_load(const struct fctl_engine_opts *o, const char *file,
			     const unsigned char *data, size_t len, struct fctl_profile **p,
			     struct fctl_host_state **want)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], host[64], key[65];
	unsigned char sha[32];
	unsigned int mdlen = 0;
	struct fctl_profile *lp = NULL;
	struct fctl_host_state *hs = NULL;
	struct fctl_buf b = { 0 };
	const char *body = NULL;
	size_t used = 0;
	int r;

	if (!EVP_Digest(data, len, sha, &mdlen, EVP_sha256(), NULL))
		return -EIO;
	r = fctl_engine_host_name(o, host, sizeof(host));
	if (r == 0)
		r = entry_key(host, file, sha, key);
	if (r < 0)
		return 0; /* no cache without a build id: not an untrusted entry */
	desired_path(o, dir, sizeof(dir), path, sizeof(path));
	r = read_private(path, DESIRED_MAX, &b);
	if (r == -ENOENT) {
		fctl_buf_release(&b);
		return 0;
	}
	if (r == 0 && !b.oom && b.data)
		r = check_entry(dir, &b, key, &body);
	else
		r = -EBADMSG;
	if (r == 1)
		r = light_profile(file, host, sha, &body, &lp);
	if (r == 0 && lp && keyfiles_match(&body) != 1)
		r = -ESTALE; /* a key file changed: a miss, the profile is validated again */
	if (r == 0 && lp)
		r = fctl_host_state_load(body, &used, &hs) < 0 || body[used] != '\0' ||
				    strcmp(hs->host, host) != 0
			    ? -EBADMSG
			    : 1;
	fctl_buf_release(&b);
	if (r != 1) {
		fctl_host_state_free(hs);
		fctl_profile_free(lp);
		return r == -ESTALE ? 0 : r < 0 ? -EBADMSG : 0;
	}
	*p = lp;
	*want = hs;
	return 1;
}
