// SPDX-License-Identifier: MIT
/*
 * Profile loading: YAML tree -> struct fctl_profile, with structural checks
 * (types, ranges, required and unknown keys). Semantic checks live in validate.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#ifdef FCTL_TEST_HOOKS
#include <poll.h>
#endif

#include "fctl/profile.h"
#include "profile_sections_int.h"
#include "yaml_tree_int.h"

struct ctx {
	const char *file;
	struct fctl_diags *d;
};

#define ERR(c, n, code, hint, ...)                                                                 \
	fctl_diag_add((c)->d, FCTL_SEV_ERROR, (c)->file, (n)->line, (n)->col, code, hint,         \
		      __VA_ARGS__)

static struct fctl_pos pos_of(const struct ynode *n)
{
	struct fctl_pos p = { n ? n->line : 0, n ? n->col : 0 };

	return p;
}

static bool is_type(struct ctx *c, const struct ynode *n, enum ynode_type t, const char *what)
{
	if (n->type == t)
		return true;
	ERR(c, n, "wrong-type", NULL, "'%s' is %s; expected %s", what, fctl_ynode_type_name(n->type),
	    fctl_ynode_type_name(t));
	return false;
}

static bool is_null(const struct ynode *n)
{
	return n->type == YNODE_SCALAR && n->plain &&
	       (n->len == 0 || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0);
}

/* Unknown keys are errors, with the closest known key as a hint. */
static void check_keys(struct ctx *c, const struct ynode *m, const char *const *known, size_t n,
		       const char *where)
{
	for (size_t i = 0; i < ymap_len(m); i++) {
		const struct ynode *k = m->kids[2 * i];
		const char *guess;
		char hint[96];
		bool ok = false;

		if (k->type != YNODE_SCALAR) {
			ERR(c, k, "wrong-type", NULL, "a key in %s is %s; expected a plain name",
			    where, fctl_ynode_type_name(k->type));
			continue;
		}
		for (size_t j = 0; j < n && !ok; j++)
			ok = strcmp(known[j], k->str) == 0;
		if (ok)
			continue;
		guess = fctl_did_you_mean(k->str, known, n);
		if (guess)
			snprintf(hint, sizeof(hint), "did you mean '%s'?", guess);
		ERR(c, k, "unknown-key", guess ? hint : NULL, "unknown key '%.64s' in %s", k->str,
		    where);
	}
}

static const struct ynode *get(const struct ynode *m, const char *key)
{
	for (size_t i = 0; i < ymap_len(m); i++) {
		const struct ynode *k = m->kids[2 * i];

		if (k->type == YNODE_SCALAR && strcmp(k->str, key) == 0)
			return m->kids[2 * i + 1];
	}
	return NULL;
}

static const struct ynode *need(struct ctx *c, const struct ynode *m, const char *key,
				const char *where)
{
	const struct ynode *v = get(m, key);

	if (!v)
		ERR(c, m, "missing-key", NULL, "missing required key '%s' in %s", key, where);
	return v;
}

static bool scalar(struct ctx *c, const struct ynode *n, const char *what)
{
	return is_type(c, n, YNODE_SCALAR, what);
}

static char *get_str(struct ctx *c, const struct ynode *n, const char *what, size_t maxlen)
{
	char *s;

	if (!scalar(c, n, what))
		return NULL;
	if (is_null(n)) {
		ERR(c, n, "empty", NULL, "'%s' is empty; expected a value", what);
		return NULL;
	}
	if (maxlen && n->len > maxlen) {
		ERR(c, n, "too-long", NULL, "'%s' is %zu characters; at most %zu allowed", what,
		    n->len, maxlen);
		return NULL;
	}
	if (strlen(n->str) != n->len) {
		ERR(c, n, "nul-byte", NULL, "'%s' contains a NUL character", what);
		return NULL;
	}
	s = strdup(n->str);
	if (!s)
		ERR(c, n, "memory", NULL, "out of memory");
	return s;
}

static int get_u64(struct ctx *c, const struct ynode *n, const char *what, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r;

	if (!scalar(c, n, what))
		return -EINVAL;
	if (!n->plain) {
		ERR(c, n, "wrong-type", NULL, "'%s' is a quoted string \"%.32s\"; expected a number",
		    what, n->str);
		return -EINVAL;
	}
	r = fctl_parse_u64(n->str, &v);
	if (r == -ERANGE || (r == 0 && (v < min || v > max))) {
		ERR(c, n, "out-of-range", NULL, "'%s' is %.32s; expected %llu..%llu", what, n->str,
		    (unsigned long long)min, (unsigned long long)max);
		return -ERANGE;
	}
	if (r < 0) {
		ERR(c, n, "wrong-type", NULL, "'%s' is \"%.32s\"; expected a whole number", what,
		    n->str);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int get_double(struct ctx *c, const struct ynode *n, const char *what, double *out)
{
	char *end;
	double v;

	if (!scalar(c, n, what))
		return -EINVAL;
	if (!n->plain || !n->len) {
		ERR(c, n, "wrong-type", NULL, "'%s' is \"%.32s\"; expected a number", what, n->str);
		return -EINVAL;
	}
	errno = 0;
	v = strtod(n->str, &end);
	if (*end || errno || !isfinite(v) || v < 0) {
		ERR(c, n, "wrong-type", NULL, "'%s' is \"%.32s\"; expected a non-negative number",
		    what, n->str);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int get_bool(struct ctx *c, const struct ynode *n, const char *what, bool *out)
{
	if (!scalar(c, n, what))
		return -EINVAL;
	if (n->plain && strcmp(n->str, "true") == 0) {
		*out = true;
		return 0;
	}
	if (n->plain && strcmp(n->str, "false") == 0) {
		*out = false;
		return 0;
	}
	ERR(c, n, "wrong-type",
	    (strcmp(n->str, "yes") == 0 || strcmp(n->str, "on") == 0 || strcmp(n->str, "no") == 0 ||
	     strcmp(n->str, "off") == 0)
		    ? "write true or false: YAML 1.1 and 1.2 disagree about yes/no/on/off"
		    : NULL,
	    "'%s' is \"%.32s\"; expected true or false", what, n->str);
	return -EINVAL;
}

static int get_duration(struct ctx *c, const struct ynode *n, const char *what, uint64_t *out)
{
	uint64_t v;
	int r;

	if (!scalar(c, n, what))
		return -EINVAL;
	r = fctl_parse_duration(n->str, &v);
	if (r < 0) {
		ERR(c, n, r == -ERANGE ? "out-of-range" : "wrong-type", NULL,
		    "'%s' is \"%.32s\"; expected a duration such as 90s, 15m, 24h or 30d", what,
		    n->str);
		return r;
	}
	*out = v;
	return 0;
}

#define LIST(...) { __VA_ARGS__ }
#define CIPHERS LIST("gcm-aes-128", "gcm-aes-256", "gcm-aes-xpn-128", "gcm-aes-xpn-256")
#define VALIDATES LIST("disabled", "check", "strict")
/* "none" (what showconf writes) means the same to YAML 1.1 readers (PyYAML, Ansible,
 * go-yaml v2) as to us; they read "off" as the boolean false, so that is taken too */
#define OFFLOADS LIST("none", "phy", "mac", "off", "false")
#define PROTOS LIST("802.1q", "802.1ad")

static int get_cipher(struct ctx *c, const struct ynode *n, const char *what,
		      enum fctl_cipher *out)
{
	static const char *const names[] = CIPHERS;
	const char *guess;
	char hint[96];

	if (!scalar(c, n, what))
		return -EINVAL;
	if (fctl_cipher_from_name(n->str, out) == 0)
		return 0;
	guess = fctl_did_you_mean(n->str, names, FCTL_ARRAY_SIZE(names));
	if (guess)
		snprintf(hint, sizeof(hint), "did you mean '%s'?", guess);
	ERR(c, n, "bad-value", guess ? hint : NULL,
	    "'%s' is \"%.32s\"; expected gcm-aes-128, gcm-aes-256, gcm-aes-xpn-128 or "
	    "gcm-aes-xpn-256",
	    what, n->str);
	return -EINVAL;
}

static int pick(struct ctx *c, const struct ynode *n, const char *what, const char *const *names,
		size_t nn, int *out)
{
	const char *guess;
	char hint[96], expected[128] = "";

	if (!scalar(c, n, what))
		return -EINVAL;
	for (size_t i = 0; i < nn; i++) {
		if (strcmp(n->str, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
		snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected), "%s%s",
			 i ? (i + 1 == nn ? " or " : ", ") : "", names[i]);
	}
	guess = fctl_did_you_mean(n->str, names, nn);
	if (guess)
		snprintf(hint, sizeof(hint), "did you mean '%s'?", guess);
	ERR(c, n, "bad-value", guess ? hint : NULL, "'%s' is \"%.32s\"; expected %s", what, n->str,
	    expected);
	return -EINVAL;
}

static void parse_keyref(struct ctx *c, const struct ynode *n, struct fctl_keyref *ref,
			 struct fctl_pos *at, const char *what)
{
	static const char *const keys[] = { "backend", "id", "version" };
	static const char *const backends[] = { "file", "pkcs11", "kmip" };
	const struct ynode *v;
	uint64_t u;
	int b;

	*at = pos_of(n);
	if (!is_type(c, n, YNODE_MAP, what))
		return;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "key reference");
	if ((v = need(c, n, "backend", "key reference")) && pick(c, v, "backend", backends, 3, &b) == 0)
		ref->backend = strdup(backends[b]);
	if ((v = need(c, n, "id", "key reference")))
		ref->id = get_str(c, v, "id", 4096);
	if ((v = get(n, "version")) && get_u64(c, v, "version", 1, UINT32_MAX, &u) == 0)
		ref->version = (uint32_t)u;
}

/* A CAK and its CKN: the primary one, or the fallback (docs/mka.md). */
static void parse_mka_ca(struct ctx *c, const struct ynode *n, struct fctl_mka_ca *ca,
			 const char *where)
{
	const struct ynode *v;

	if ((v = need(c, n, "cak", where)))
		parse_keyref(c, v, &ca->cak, &ca->cak_pos, "cak");
	if ((v = need(c, n, "ckn", where))) {
		ca->ckn_pos = pos_of(v);
		ca->ckn = get_str(c, v, "ckn", 128);
	}
}

static void parse_mka(struct ctx *c, const struct ynode *n, struct fctl_macsec_policy *pol)
{
	static const char *const keys[] = { "cak", "ckn", "priority", "fallback" };
	static const char *const fkeys[] = { "cak", "ckn" };
	struct fctl_mka *m = &pol->mka;
	const struct ynode *v;
	uint64_t u;

	m->pos = pos_of(n);
	m->priority = FCTL_MKA_PRIORITY_DEFAULT;
	if (!is_type(c, n, YNODE_MAP, "mka"))
		return;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "mka");
	parse_mka_ca(c, n, &m->primary, "mka");
	if ((v = get(n, "priority"))) {
		m->pos_priority = pos_of(v);
		if (get_u64(c, v, "priority", 0, 255, &u) == 0)
			m->priority = (uint8_t)u;
	}
	if ((v = get(n, "fallback"))) {
		m->pos_fallback = pos_of(v);
		if (!is_type(c, v, YNODE_MAP, "mka fallback"))
			return;
		check_keys(c, v, fkeys, FCTL_ARRAY_SIZE(fkeys), "mka fallback");
		m->has_fallback = true;
		parse_mka_ca(c, v, &m->fallback, "mka fallback");
	}
}

static void parse_policy(struct ctx *c, const struct ynode *k, const struct ynode *n,
			 struct fctl_profile *p)
{
	static const char *const keys[] = {
		"cipher",  "icv_len",  "encrypt", "replay_protect", "replay_window",
		"validate", "send_sci", "end_station", "scb", "offload", "port", "key",
		"cryptoperiod", "overlap", "pn_rekey_threshold", "must_secure", "mka",
	};
	struct fctl_macsec_policy *pol;
	const struct ynode *v;
	uint64_t u;
	char where[96];

	pol = fctl_array_grow(&p->policies, &p->n_policies, &p->cap_policies, sizeof(*pol));
	if (!pol)
		return;
	pol->name = fctl_strdup(k->str);
	pol->pos = pos_of(k);
	/* defaults: the fail-secure choices */
	pol->cipher = FCTL_CIPHER_GCM_AES_128;
	pol->icv_len = 16;
	pol->encrypt = true;
	pol->validate = FCTL_VALIDATE_STRICT;
	pol->send_sci = true;
	pol->offload = FCTL_OFFLOAD_OFF;
	pol->port = 1;
	pol->cryptoperiod_s = 86400;
	pol->overlap_s = 30;
	pol->must_secure = true;
	snprintf(where, sizeof(where), "macsec policy '%.48s'", k->str);
	pol->pos_body = pos_of(n);
	if (!is_type(c, n, YNODE_MAP, where))
		return;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), where);

	if ((v = get(n, "cipher"))) {
		pol->pos_cipher = pos_of(v);
		get_cipher(c, v, "cipher", &pol->cipher);
	}
	if ((v = get(n, "icv_len"))) {
		pol->pos_icv = pos_of(v);
		if (get_u64(c, v, "icv_len", 0, 255, &u) == 0)
			pol->icv_len = (uint8_t)u;
	}
	if ((v = get(n, "encrypt"))) {
		pol->pos_encrypt = pos_of(v);
		get_bool(c, v, "encrypt", &pol->encrypt);
	}
	if ((v = get(n, "replay_protect"))) {
		pol->pos_replay = pos_of(v);
		get_bool(c, v, "replay_protect", &pol->replay_protect);
	}
	if ((v = get(n, "replay_window"))) {
		pol->pos_window = pos_of(v);
		if (get_u64(c, v, "replay_window", 0, UINT32_MAX, &u) == 0)
			pol->replay_window = (uint32_t)u;
	}
	if ((v = get(n, "validate"))) {
		static const char *const names[] = VALIDATES;
		int i;

		pol->pos_validate = pos_of(v);
		if (pick(c, v, "validate", names, FCTL_ARRAY_SIZE(names), &i) == 0)
			fctl_validate_from_name(names[i], &pol->validate);
	}
	if ((v = get(n, "send_sci"))) {
		pol->pos_send_sci = pos_of(v);
		get_bool(c, v, "send_sci", &pol->send_sci);
	}
	if ((v = get(n, "end_station"))) {
		pol->pos_es = pos_of(v);
		get_bool(c, v, "end_station", &pol->end_station);
	}
	if ((v = get(n, "scb"))) {
		pol->pos_scb = pos_of(v);
		get_bool(c, v, "scb", &pol->scb);
	}
	if ((v = get(n, "offload"))) {
		static const char *const names[] = OFFLOADS;
		int i;

		pol->pos_offload = pos_of(v);
		if (pick(c, v, "offload", names, FCTL_ARRAY_SIZE(names), &i) == 0 &&
		    fctl_offload_from_name(names[i], &pol->offload) < 0)
			pol->offload = FCTL_OFFLOAD_OFF; /* none, off, false */
	}
	if ((v = get(n, "port")) && get_u64(c, v, "port", 1, 65535, &u) == 0)
		pol->port = (uint16_t)u;
	/* exactly one of 'key' (static SAKs) and 'mka'; validation reports both or neither */
	if ((v = get(n, "key"))) {
		pol->has_key = true;
		parse_keyref(c, v, &pol->key, &pol->key_pos, "key");
	}
	if ((v = get(n, "mka"))) {
		pol->has_mka = true;
		parse_mka(c, v, pol);
	}
	if ((v = get(n, "cryptoperiod")))
		get_duration(c, v, "cryptoperiod", &pol->cryptoperiod_s);
	if ((v = get(n, "overlap"))) {
		pol->pos_overlap = pos_of(v);
		get_duration(c, v, "overlap", &pol->overlap_s);
	}
	if ((v = get(n, "pn_rekey_threshold"))) {
		pol->pos_pn_thr = pos_of(v);
		if (get_u64(c, v, "pn_rekey_threshold", 1, UINT64_MAX, &pol->pn_rekey_threshold) ==
		    0)
			pol->has_pn_rekey_threshold = true;
	}
	if ((v = get(n, "must_secure"))) {
		pol->pos_must_secure = pos_of(v);
		get_bool(c, v, "must_secure", &pol->must_secure);
	}
}

/* "400G", "2.5G", "100M": a line rate with its unit, in Mb/s; -EINVAL otherwise */
static int parse_speed(const char *s, uint64_t *mbps)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *q = s;

	for (; *q >= '0' && *q <= '9' && whole < 10000000; q++)
		whole = whole * 10 + (uint64_t)(*q - '0');
	if (q == s)
		return -EINVAL;
	if (*q == '.')
		for (q++; *q >= '0' && *q <= '9' && scale < 1000; q++, scale *= 10)
			frac = frac * 10 + (uint64_t)(*q - '0');
	if ((*q == 'G' || *q == 'g') && !q[1])
		*mbps = whole * 1000 + frac * 1000 / scale;
	else if ((*q == 'M' || *q == 'm') && !q[1] && scale == 1)
		*mbps = whole;
	else
		return -EINVAL;
	return *mbps ? 0 : -EINVAL;
}

static void parse_port(struct ctx *c, const struct ynode *n, struct fctl_host *h)
{
	static const char *const keys[] = { "name", "mac", "mtu", "speed", "driver" };
	struct fctl_port *pt;
	const struct ynode *v;
	uint64_t u;

	if (!is_type(c, n, YNODE_MAP, "ports[]"))
		return;
	pt = fctl_array_grow(&h->ports, &h->n_ports, &h->cap_ports, sizeof(*pt));
	if (!pt)
		return;
	pt->pos = pos_of(n);
	pt->mtu = 1500;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "port");
	if ((v = need(c, n, "name", "port")))
		pt->name = get_str(c, v, "name", FCTL_IFNAMSIZ - 1);
	if ((v = get(n, "mac")) && scalar(c, v, "mac")) {
		if (fctl_parse_mac(v->str, pt->mac) == 0)
			pt->has_mac = true;
		else
			ERR(c, v, "bad-value", NULL,
			    "'mac' is \"%.32s\"; expected six hex octets like 52:54:00:12:34:56",
			    v->str);
	}
	if ((v = get(n, "mtu"))) {
		pt->pos_mtu = pos_of(v);
		if (get_u64(c, v, "mtu", 68, 65535, &u) == 0)
			pt->mtu = (uint32_t)u;
	}
	if ((v = get(n, "driver")))
		fctl_profile_driver_parse(c->file, c->d, v, pt);
	if ((v = get(n, "speed")) && scalar(c, v, "speed")) {
		pt->pos_speed = pos_of(v);
		if (parse_speed(v->str, &pt->speed_mbps) < 0)
			ERR(c, v, "bad-value", NULL,
			    "'speed' is \"%.32s\"; expected a line rate with its unit, like 100G, "
			    "400G or 2.5G", v->str);
	}
}

static void parse_host(struct ctx *c, const struct ynode *n, struct fctl_profile *p)
{
	static const char *const keys[] = { "name", "agent", "ports" };
	struct fctl_host *h;
	const struct ynode *v;

	if (!is_type(c, n, YNODE_MAP, "hosts[]"))
		return;
	h = fctl_array_grow(&p->hosts, &p->n_hosts, &p->cap_hosts, sizeof(*h));
	if (!h)
		return;
	h->pos = pos_of(n);
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "host");
	if ((v = need(c, n, "name", "host")))
		h->name = get_str(c, v, "name", 63);
	if ((v = get(n, "agent")))
		h->agent = get_str(c, v, "agent", 255);
	if ((v = need(c, n, "ports", "host")) && is_type(c, v, YNODE_SEQ, "ports"))
		for (size_t i = 0; i < v->n; i++)
			parse_port(c, v->kids[i], h);
}

static void parse_end(struct ctx *c, const struct ynode *n, struct fctl_link_end *e,
		      const char *what)
{
	static const char *const keys[] = { "host", "port", "mac" };
	const struct ynode *v;

	e->host_idx = e->port_idx = -1;
	e->pos = pos_of(n);
	if (n->type == YNODE_SCALAR) {
		/* short form "host:port" */
		const char *colon = strchr(n->str, ':');

		if (!colon || colon == n->str || !colon[1] || strchr(colon + 1, ':')) {
			ERR(c, n, "bad-value", NULL,
			    "link end '%s' is \"%.40s\"; expected HOST:PORT or a mapping", what,
			    n->str);
			return;
		}
		e->host = strndup(n->str, (size_t)(colon - n->str));
		e->port = strdup(colon + 1);
		return;
	}
	if (!is_type(c, n, YNODE_MAP, what))
		return;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "link end");
	if ((v = need(c, n, "host", "link end")))
		e->host = get_str(c, v, "host", 63);
	if ((v = need(c, n, "port", "link end")))
		e->port = get_str(c, v, "port", FCTL_IFNAMSIZ - 1);
	if ((v = get(n, "mac")) && scalar(c, v, "mac")) {
		e->pos_peer_mac = pos_of(v);
		if (fctl_parse_mac(v->str, e->peer_mac) == 0)
			e->has_peer_mac = true;
		else
			ERR(c, v, "bad-value", NULL,
			    "'mac' is \"%.32s\"; expected six hex octets like 52:54:00:12:34:56",
			    v->str);
	}
}

static void parse_vlan(struct ctx *c, const struct ynode *n, struct fctl_plink *l)
{
	static const char *const keys[] = { "id", "protocol", "mtu", "macsec", "ifname",
					    "addresses", "qos" };
	static const char *const ifkeys[] = { "vlan", "macsec" };
	struct fctl_vlan *vl;
	const struct ynode *v;
	uint64_t u;

	if (!is_type(c, n, YNODE_MAP, "vlans[]"))
		return;
	vl = fctl_array_grow(&l->vlans, &l->n_vlans, &l->cap_vlans, sizeof(*vl));
	if (!vl)
		return;
	vl->pos = pos_of(n);
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "vlan");
	if ((v = need(c, n, "id", "vlan"))) {
		vl->pos = pos_of(v);
		if (get_u64(c, v, "id", 1, 4094, &u) == 0)
			vl->id = (uint16_t)u;
	}
	if ((v = get(n, "protocol"))) {
		static const char *const names[] = PROTOS;
		int i;

		if (pick(c, v, "protocol", names, FCTL_ARRAY_SIZE(names), &i) == 0)
			fctl_vlan_proto_from_name(names[i], &vl->proto);
	}
	if ((v = get(n, "mtu"))) {
		vl->pos_mtu = pos_of(v);
		if (get_u64(c, v, "mtu", 68, 65535, &u) == 0) {
			vl->mtu = (uint32_t)u;
			vl->has_mtu = true;
		}
	}
	if ((v = get(n, "macsec"))) {
		vl->pos_macsec = pos_of(v);
		if (!is_null(v))
			vl->macsec = get_str(c, v, "macsec", 128);
	} else if (l->macsec) {
		vl->macsec = strdup(l->macsec);
		vl->pos_macsec = l->pos_macsec;
	}
	if ((v = get(n, "ifname")) && is_type(c, v, YNODE_MAP, "ifname")) {
		const struct ynode *w;

		vl->pos_ifname = pos_of(v);
		check_keys(c, v, ifkeys, 2, "ifname");
		if ((w = get(v, "vlan")))
			vl->vlan_ifname = get_str(c, w, "ifname.vlan", FCTL_IFNAMSIZ - 1);
		if ((w = get(v, "macsec")))
			vl->macsec_ifname = get_str(c, w, "ifname.macsec", FCTL_IFNAMSIZ - 1);
	}
	if ((v = get(n, "qos")))
		fctl_profile_qos_parse(c->file, c->d, v, vl);
	if ((v = get(n, "addresses")) && is_type(c, v, YNODE_MAP, "addresses")) {
		for (size_t i = 0; i < ymap_len(v); i++) {
			const struct ynode *hk = v->kids[2 * i], *hv = v->kids[2 * i + 1];
			struct fctl_addr_entry *a;

			if (!scalar(c, hk, "addresses key") || !scalar(c, hv, "address"))
				continue;
			a = fctl_array_grow(&vl->addrs, &vl->n_addrs, &vl->cap_addrs, sizeof(*a));
			if (!a)
				return;
			a->host = strdup(hk->str);
			a->cidr = get_str(c, hv, "address", 64);
			a->pos = pos_of(hv);
		}
	}
}

static void parse_link(struct ctx *c, const struct ynode *n, struct fctl_profile *p)
{
	static const char *const keys[] = { "name", "a", "b", "macsec", "vlans" };
	struct fctl_plink *l;
	const struct ynode *v;

	if (!is_type(c, n, YNODE_MAP, "links[]"))
		return;
	l = fctl_array_grow(&p->links, &p->n_links, &p->cap_links, sizeof(*l));
	if (!l)
		return;
	l->pos = pos_of(n);
	l->end[0].host_idx = l->end[0].port_idx = l->end[1].host_idx = l->end[1].port_idx = -1;
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "link");
	if ((v = get(n, "name")))
		l->name = get_str(c, v, "name", 128);
	if ((v = need(c, n, "a", "link")))
		parse_end(c, v, &l->end[0], "a");
	if ((v = need(c, n, "b", "link")))
		parse_end(c, v, &l->end[1], "b");
	if ((v = get(n, "macsec")) && !is_null(v)) {
		l->pos_macsec = pos_of(v);
		l->macsec = get_str(c, v, "macsec", 128);
	}
	if ((v = need(c, n, "vlans", "link")) && is_type(c, v, YNODE_SEQ, "vlans"))
		for (size_t i = 0; i < v->n; i++)
			parse_vlan(c, v->kids[i], l);
}

static void parse_slo(struct ctx *c, const struct ynode *n, struct fctl_slo *s)
{
	static const char *const keys[] = { "latency_p99_us", "latency_p999_us", "bandwidth_gbps",
					    "max_loss", "max_retransmissions" };
	const struct ynode *v;

	if (!is_type(c, n, YNODE_MAP, "slo"))
		return;
	s->present = true;
	s->pos = pos_of(n);
	check_keys(c, n, keys, FCTL_ARRAY_SIZE(keys), "slo");
	if ((v = get(n, "latency_p99_us")) &&
	    get_double(c, v, "latency_p99_us", &s->latency_p99_us) == 0)
		s->has_latency_p99 = true;
	if ((v = get(n, "latency_p999_us")) &&
	    get_double(c, v, "latency_p999_us", &s->latency_p999_us) == 0)
		s->has_latency_p999 = true;
	if ((v = get(n, "bandwidth_gbps")) &&
	    get_double(c, v, "bandwidth_gbps", &s->bandwidth_gbps) == 0)
		s->has_bandwidth = true;
	if ((v = get(n, "max_loss")))
		get_u64(c, v, "max_loss", 0, 0, &s->max_loss);
	if ((v = get(n, "max_retransmissions")) &&
	    get_u64(c, v, "max_retransmissions", 0, UINT32_MAX, &s->max_retransmissions) == 0)
		s->has_max_retransmissions = true;
}

static void build(struct ctx *c, const struct ynode *root, struct fctl_profile *p)
{
	static const char *const keys[] = { "schema", "profile", "macsec", "hosts", "links", "slo" };
	static const char *const pkeys[] = { "name", "version", "description" };
	const struct ynode *v;
	uint64_t u;

	if (!is_type(c, root, YNODE_MAP, "the document"))
		return;
	check_keys(c, root, keys, FCTL_ARRAY_SIZE(keys), "the profile");
	if ((v = need(c, root, "schema", "the profile"))) {
		if (get_u64(c, v, "schema", 1, UINT32_MAX, &u) == 0) {
			if (u != FCTL_SCHEMA_VERSION)
				ERR(c, v, "schema-version", NULL,
				    "schema %llu is not supported; this fabricctl reads schema %d",
				    (unsigned long long)u, FCTL_SCHEMA_VERSION);
			p->schema = (uint32_t)u;
		}
	}
	if ((v = need(c, root, "profile", "the profile")) && is_type(c, v, YNODE_MAP, "profile")) {
		const struct ynode *w;

		check_keys(c, v, pkeys, FCTL_ARRAY_SIZE(pkeys), "profile");
		if ((w = need(c, v, "name", "profile")))
			p->name = get_str(c, w, "name", 128);
		if ((w = need(c, v, "version", "profile")))
			get_u64(c, w, "version", 1, UINT64_MAX, &p->version);
		if ((w = get(v, "description")))
			p->description = get_str(c, w, "description", 4096);
	}
	if ((v = get(root, "macsec")) && !is_null(v) && is_type(c, v, YNODE_MAP, "macsec"))
		for (size_t i = 0; i < ymap_len(v); i++)
			if (scalar(c, v->kids[2 * i], "policy name"))
				parse_policy(c, v->kids[2 * i], v->kids[2 * i + 1], p);
	if ((v = need(c, root, "hosts", "the profile")) && is_type(c, v, YNODE_SEQ, "hosts"))
		for (size_t i = 0; i < v->n; i++)
			parse_host(c, v->kids[i], p);
	if ((v = get(root, "links")) && !is_null(v) && is_type(c, v, YNODE_SEQ, "links"))
		for (size_t i = 0; i < v->n; i++)
			parse_link(c, v->kids[i], p);
	if ((v = get(root, "slo")) && !is_null(v))
		parse_slo(c, v, &p->slo);
}

int fctl_profile_parse(const char *name, const unsigned char *data, size_t len,
		       struct fctl_diags *d, struct fctl_profile **out)
{
	struct ctx c = { name, d };
	struct fctl_profile *p;
	struct ynode *root = NULL;
	const char *slash;
	unsigned int mdlen;
	int r;

	r = fctl_ynode_parse(name, data, len, d, &root);
	if (r < 0)
		return r;
	if (!root || is_null(root)) {
		/* no document, or one that is only "---": the same mistake */
		fctl_ynode_free(root);
		fctl_diag_add(d, FCTL_SEV_ERROR, name, 1, 1, "empty", NULL,
			      "the file is empty; expected a profile mapping starting with 'schema: %d'",
			      FCTL_SCHEMA_VERSION);
		return -ENODATA;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		fctl_ynode_free(root);
		return -ENOMEM;
	}
	p->file = strdup(name);
	slash = strrchr(name, '/');
	p->dir = slash ? strndup(name, (size_t)(slash - name)) : strdup(".");
	EVP_Digest(data, len, p->sha256, &mdlen, EVP_sha256(), NULL);
	build(&c, root, p);
	fctl_ynode_free(root);
	*out = p;
#ifdef FCTL_TEST_HOOKS
	/* FCTL_TEST_HOLD_PROFILE_MS=N: stay N ms with the parsed profile in memory, so that an
	 * attack test finds a sandboxed agent worker alive at that point (tests/security/
	 * privsep.sh), however slow the machine; poll is in the worker's seccomp filter */
	const char *hold = getenv("FCTL_TEST_HOLD_PROFILE_MS");
	int hold_ms = hold ? atoi(hold) : 0;

	if (hold_ms > 0)
		poll(NULL, 0, hold_ms);
#endif
	return 0;
}

/* Reads fd to its end into *out (NUL-terminated); at most max bytes, -EFBIG past them. */
static int read_fd(int fd, size_t max, unsigned char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	unsigned char *data = NULL;
	ssize_t k;

	for (;;) {
		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			unsigned char *nd;

			if (ncap > max + 2)
				ncap = max + 2;
			if (ncap <= n + 1) {
				free(data);
				return -EFBIG;
			}
			nd = realloc(data, ncap);
			if (!nd) {
				free(data);
				return -ENOMEM;
			}
			data = nd;
			cap = ncap;
		}
		k = read(fd, data + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			k = -errno;
			free(data);
			return (int)k;
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n > max) {
			free(data);
			return -EFBIG;
		}
	}
	data[n] = '\0';
	*out = data;
	*len = n;
	return 0;
}

int fctl_profile_load(const char *file, struct fctl_diags *d, struct fctl_profile **out)
{
	bool std_in = strcmp(file, "-") == 0;
	unsigned char *data = NULL;
	struct stat st;
	size_t len = 0;
	int fd, r;

	fd = std_in ? STDIN_FILENO : fctl_open_ro(file, O_NOCTTY); /* an agent worker's profile is preopened */
	if (fd < 0) {
		r = fd;
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "io", NULL, "cannot open: %s",
			      strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode)) {
		r = -EINVAL;
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "io", NULL,
			      "not a regular file, pipe or standard input");
		if (!std_in)
			close(fd);
		return r;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > YAML_MAX_FILE) {
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "too-large", NULL,
			      "file is %lld bytes; profiles are limited to %u bytes",
			      (long long)st.st_size, YAML_MAX_FILE);
		close(fd);
		return -EFBIG;
	}
	r = read_fd(fd, YAML_MAX_FILE, &data, &len);
	if (!std_in)
		close(fd);
	if (r == -EFBIG)
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "too-large", NULL,
			      "more than %u bytes; profiles are limited to %u bytes", YAML_MAX_FILE,
			      YAML_MAX_FILE);
	else if (r < 0)
		fctl_diag_add(d, FCTL_SEV_ERROR, file, 0, 0, "io", NULL, "cannot read: %s",
			      strerror(-r));
	if (r < 0)
		return r;
	r = fctl_profile_parse(file, data, len, d, out);
	free(data);
	if (r == 0 && !S_ISREG(st.st_mode)) {
		/* a stream has no directory of its own: relative key ids resolve from here */
		char *dot = strdup(".");

		if (!dot) {
			fctl_profile_free(*out);
			*out = NULL;
			return -ENOMEM;
		}
		free((*out)->dir);
		(*out)->dir = dot;
	}
	return r;
}

void fctl_profile_free(struct fctl_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_hosts; i++) {
		for (size_t j = 0; j < p->hosts[i].n_ports; j++)
			free(p->hosts[i].ports[j].name);
		free(p->hosts[i].ports);
		free(p->hosts[i].name);
		free(p->hosts[i].agent);
	}
	free(p->hosts);
	for (size_t i = 0; i < p->n_links; i++) {
		struct fctl_plink *l = &p->links[i];

		for (int e = 0; e < 2; e++) {
			free(l->end[e].host);
			free(l->end[e].port);
		}
		for (size_t j = 0; j < l->n_vlans; j++) {
			struct fctl_vlan *v = &l->vlans[j];

			for (size_t a = 0; a < v->n_addrs; a++) {
				free(v->addrs[a].host);
				free(v->addrs[a].cidr);
			}
			free(v->addrs);
			free(v->macsec);
			free(v->vlan_ifname);
			free(v->macsec_ifname);
		}
		free(l->vlans);
		free(l->macsec);
		free(l->name);
	}
	free(p->links);
	for (size_t i = 0; i < p->n_policies; i++) {
		free(p->policies[i].name);
		free(p->policies[i].key.backend);
		free(p->policies[i].key.id);
		fctl_mka_ca_release(&p->policies[i].mka.primary);
		fctl_mka_ca_release(&p->policies[i].mka.fallback);
	}
	free(p->policies);
	free(p->name);
	free(p->description);
	free(p->file);
	free(p->dir);
	free(p);
}

void fctl_mka_ca_release(struct fctl_mka_ca *ca)
{
	if (!ca)
		return;
	free(ca->cak.backend);
	free(ca->cak.id);
	free(ca->cak.base);
	free(ca->ckn);
	ca->cak.backend = ca->cak.id = ca->cak.base = ca->ckn = NULL;
}

/* --- lookups in the model (validate and render share them) --- */

const struct fctl_host *fctl_profile_find_host(const struct fctl_profile *p, const char *name)
{
	for (size_t i = 0; name && i < p->n_hosts; i++)
		if (p->hosts[i].name && strcmp(p->hosts[i].name, name) == 0)
			return &p->hosts[i];
	return NULL;
}

const struct fctl_macsec_policy *fctl_profile_find_policy(const struct fctl_profile *p,
							  const char *name)
{
	for (size_t i = 0; name && i < p->n_policies; i++)
		if (p->policies[i].name && strcmp(p->policies[i].name, name) == 0)
			return &p->policies[i];
	return NULL;
}

void fctl_vlan_ifnames(const struct fctl_vlan *v, const char *port, char vlan_if[FCTL_IFNAMSIZ + 8],
		       char macsec_if[FCTL_IFNAMSIZ + 8])
{
	/* names may come out too long here; validation reports that */
	if (v->vlan_ifname)
		snprintf(vlan_if, FCTL_IFNAMSIZ + 8, "%s", v->vlan_ifname);
	else
		snprintf(vlan_if, FCTL_IFNAMSIZ + 8, "%.15s.%u", port ? port : "?", v->id);
	if (v->macsec_ifname)
		snprintf(macsec_if, FCTL_IFNAMSIZ + 8, "%s", v->macsec_ifname);
	else
		snprintf(macsec_if, FCTL_IFNAMSIZ + 8, "ms%u", v->id);
}
