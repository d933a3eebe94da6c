// SPDX-License-Identifier: MIT
/* Host state: its objects and their names, SCIs, the KEYID and salt of a key reference. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fctl/state.h"

struct name_map {
	const char *name;
	int value;
};

static const struct name_map cipher_names[] = {
	{ "gcm-aes-128", FCTL_CIPHER_GCM_AES_128 },
	{ "gcm-aes-256", FCTL_CIPHER_GCM_AES_256 },
	{ "gcm-aes-xpn-128", FCTL_CIPHER_GCM_AES_XPN_128 },
	{ "gcm-aes-xpn-256", FCTL_CIPHER_GCM_AES_XPN_256 },
};

static const struct name_map validate_names[] = {
	{ "disabled", FCTL_VALIDATE_DISABLED },
	{ "check", FCTL_VALIDATE_CHECK },
	{ "strict", FCTL_VALIDATE_STRICT },
};

static const struct name_map offload_names[] = {
	{ "off", FCTL_OFFLOAD_OFF },
	{ "phy", FCTL_OFFLOAD_PHY },
	{ "mac", FCTL_OFFLOAD_MAC },
};

static const struct name_map proto_names[] = {
	{ "802.1q", FCTL_VLAN_8021Q },
	{ "802.1ad", FCTL_VLAN_8021AD },
};

static const struct name_map addrgen_names[] = {
	{ "eui64", FCTL_ADDRGEN_EUI64 },
	{ "none", FCTL_ADDRGEN_NONE },
	{ "stable_secret", FCTL_ADDRGEN_STABLE_PRIVACY },
	{ "random", FCTL_ADDRGEN_RANDOM },
};

static const char *map_name(const struct name_map *m, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].value == v)
			return m[i].name;
	return "?";
}

static int map_value(const struct name_map *m, size_t n, const char *s, int *out)
{
	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(m[i].name, s) == 0) {
			*out = m[i].value;
			return 0;
		}
	}
	return -EINVAL;
}

#define DEFINE_NAMES(type, fn, table)                                                              \
	const char *fctl_##fn##_name(enum type v)                                                  \
	{                                                                                          \
		return map_name(table, FCTL_ARRAY_SIZE(table), (int)v);                            \
	}                                                                                          \
	int fctl_##fn##_from_name(const char *s, enum type *out)                                   \
	{                                                                                          \
		int v, r = map_value(table, FCTL_ARRAY_SIZE(table), s, &v);                        \
		if (r == 0)                                                                        \
			*out = (enum type)v;                                                       \
		return r;                                                                          \
	}

DEFINE_NAMES(fctl_cipher, cipher, cipher_names)
DEFINE_NAMES(fctl_validate, validate, validate_names)
DEFINE_NAMES(fctl_offload, offload, offload_names)
DEFINE_NAMES(fctl_vlan_proto, vlan_proto, proto_names)
DEFINE_NAMES(fctl_addrgen, addrgen, addrgen_names)

size_t fctl_cipher_key_len(enum fctl_cipher c)
{
	return c == FCTL_CIPHER_GCM_AES_256 || c == FCTL_CIPHER_GCM_AES_XPN_256 ? 32 : 16;
}

bool fctl_cipher_is_xpn(enum fctl_cipher c)
{
	return c == FCTL_CIPHER_GCM_AES_XPN_128 || c == FCTL_CIPHER_GCM_AES_XPN_256;
}

/* Values of MACSEC_CIPHER_ID_* in linux/if_macsec.h. */
#define CIPHER_ID_LEGACY_DEFAULT 0x0080020001000001ULL
#define CIPHER_ID_GCM_AES_128 0x0080C20001000001ULL
#define CIPHER_ID_GCM_AES_256 0x0080C20001000002ULL
#define CIPHER_ID_GCM_AES_XPN_128 0x0080C20001000003ULL
#define CIPHER_ID_GCM_AES_XPN_256 0x0080C20001000004ULL

uint64_t fctl_cipher_kernel_id(enum fctl_cipher c)
{
	switch (c) {
	case FCTL_CIPHER_GCM_AES_256:
		return CIPHER_ID_GCM_AES_256;
	case FCTL_CIPHER_GCM_AES_XPN_128:
		return CIPHER_ID_GCM_AES_XPN_128;
	case FCTL_CIPHER_GCM_AES_XPN_256:
		return CIPHER_ID_GCM_AES_XPN_256;
	case FCTL_CIPHER_GCM_AES_128:
	default:
		return CIPHER_ID_GCM_AES_128;
	}
}

int fctl_cipher_from_kernel_id(uint64_t id, enum fctl_cipher *out)
{
	switch (id) {
	case CIPHER_ID_LEGACY_DEFAULT: /* the kernel reports GCM-AES-128 with the old id */
	case CIPHER_ID_GCM_AES_128:
		*out = FCTL_CIPHER_GCM_AES_128;
		return 0;
	case CIPHER_ID_GCM_AES_256:
		*out = FCTL_CIPHER_GCM_AES_256;
		return 0;
	case CIPHER_ID_GCM_AES_XPN_128:
		*out = FCTL_CIPHER_GCM_AES_XPN_128;
		return 0;
	case CIPHER_ID_GCM_AES_XPN_256:
		*out = FCTL_CIPHER_GCM_AES_XPN_256;
		return 0;
	}
	return -EINVAL;
}

struct fctl_host_state *fctl_host_state_new(const char *host)
{
	struct fctl_host_state *hs = calloc(1, sizeof(*hs));

	if (!hs)
		return NULL;
	hs->host = strdup(host ? host : "");
	if (!hs->host) {
		free(hs);
		return NULL;
	}
	return hs;
}

void fctl_link_release(struct fctl_link *l)
{
	if (!l)
		return;
	free(l->macsec.rxsc);
	l->macsec.rxsc = NULL;
	l->macsec.n_rxsc = l->macsec.cap_rxsc = 0;
	free(l->macsec.key.backend);
	free(l->macsec.key.id);
	free(l->macsec.key.base);
	l->macsec.key.backend = l->macsec.key.id = l->macsec.key.base = NULL;
	for (size_t i = 0; i < l->n_addrs; i++)
		free(l->addrs[i]);
	free(l->addrs);
	l->addrs = NULL;
	l->n_addrs = l->cap_addrs = 0;
}

void fctl_host_state_free(struct fctl_host_state *hs)
{
	if (!hs)
		return;
	for (size_t i = 0; i < hs->n_links; i++)
		fctl_link_release(&hs->links[i]);
	free(hs->links);
	free(hs->host);
	free(hs);
}

struct fctl_link *fctl_host_state_add_link(struct fctl_host_state *hs, enum fctl_link_kind kind,
					   const char *name)
{
	struct fctl_link *l;

	if (strlen(name) >= FCTL_IFNAMSIZ)
		return NULL;
	l = fctl_array_grow(&hs->links, &hs->n_links, &hs->cap_links, sizeof(*l));
	if (!l)
		return NULL;
	hs->sorted = false;
	l->kind = kind;
	snprintf(l->name, sizeof(l->name), "%s", name);
	return l;
}

/* First index in [lo, hi) of links sorted by name whose name is >= name. */
static size_t lower_bound(const struct fctl_link *v, size_t lo, size_t hi, const char *name)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct fctl_link *fctl_host_state_find(const struct fctl_host_state *hs, const char *name)
{
	size_t lo = 0, hi, mid, i;

	if (!hs || !name)
		return NULL;
	if (!hs->sorted || hs->n_links < 16) {
		for (i = 0; i < hs->n_links; i++)
			if (strcmp(hs->links[i].name, name) == 0)
				return &hs->links[i];
		return NULL;
	}
	/* canonical order: the VLANs by name, then the MACsec links by name; the
	 * first match in that order is the one a scan would find */
	hi = hs->n_links;
	while (lo < hi) { /* first MACsec link */
		mid = lo + (hi - lo) / 2;
		if (hs->links[mid].kind == FCTL_LINK_VLAN)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lower_bound(hs->links, 0, lo, name);
	if (i < lo && strcmp(hs->links[i].name, name) == 0)
		return &hs->links[i];
	i = lower_bound(hs->links, lo, hs->n_links, name);
	if (i < hs->n_links && strcmp(hs->links[i].name, name) == 0)
		return &hs->links[i];
	return NULL;
}

struct fctl_rxsc *fctl_macsec_add_rxsc(struct fctl_macsec *m, uint64_t sci)
{
	struct fctl_rxsc *sc = fctl_array_grow(&m->rxsc, &m->n_rxsc, &m->cap_rxsc, sizeof(*sc));

	if (sc)
		sc->sci = sci;
	return sc;
}

struct fctl_rxsc *fctl_macsec_find_rxsc(const struct fctl_macsec *m, uint64_t sci)
{
	for (size_t i = 0; i < m->n_rxsc; i++)
		if (m->rxsc[i].sci == sci)
			return &m->rxsc[i];
	return NULL;
}

int fctl_link_add_addr(struct fctl_link *l, const char *cidr)
{
	char **slot, *copy = strdup(cidr);

	if (!copy)
		return -ENOMEM;
	slot = fctl_array_grow(&l->addrs, &l->n_addrs, &l->cap_addrs, sizeof(*slot));
	if (!slot) {
		free(copy);
		return -ENOMEM;
	}
	*slot = copy;
	return 0;
}

static int cmp_link(const void *a, const void *b)
{
	const struct fctl_link *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind == FCTL_LINK_VLAN ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_rxsc(const void *a, const void *b)
{
	const struct fctl_rxsc *x = a, *y = b;

	return x->sci < y->sci ? -1 : x->sci > y->sci;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void fctl_host_state_sort(struct fctl_host_state *hs)
{
	if (hs->n_links > 1)
		qsort(hs->links, hs->n_links, sizeof(*hs->links), cmp_link);
	hs->sorted = true;
	for (size_t i = 0; i < hs->n_links; i++) {
		struct fctl_link *l = &hs->links[i];

		if (l->macsec.n_rxsc > 1)
			qsort(l->macsec.rxsc, l->macsec.n_rxsc, sizeof(*l->macsec.rxsc), cmp_rxsc);
		if (l->n_addrs > 1)
			qsort(l->addrs, l->n_addrs, sizeof(*l->addrs), cmp_str);
	}
}

uint64_t fctl_sci_make(const uint8_t mac[6], uint16_t port)
{
	uint64_t sci = 0;

	for (int i = 0; i < 6; i++)
		sci = sci << 8 | mac[i];
	return sci << 16 | port;
}

void fctl_sci_format(uint64_t sci, char out[24])
{
	snprintf(out, 24, "%02x:%02x:%02x:%02x:%02x:%02x/%u", (unsigned)(sci >> 56) & 0xff,
		 (unsigned)(sci >> 48) & 0xff, (unsigned)(sci >> 40) & 0xff,
		 (unsigned)(sci >> 32) & 0xff, (unsigned)(sci >> 24) & 0xff,
		 (unsigned)(sci >> 16) & 0xff, (unsigned)(sci & 0xffff));
}

int fctl_sci_parse(const char *s, uint64_t *sci)
{
	uint8_t mac[6];
	char macs[18];
	const char *slash;
	uint64_t port;

	if (!s)
		return -EINVAL;
	if (strlen(s) == 16) {
		uint8_t b[8];
		uint64_t v = 0;

		if (fctl_parse_hex(s, b, 8) < 0)
			return -EINVAL;
		for (int i = 0; i < 8; i++)
			v = v << 8 | b[i];
		*sci = v;
		return 0;
	}
	slash = strchr(s, '/');
	if (!slash || slash - s != 17)
		return -EINVAL;
	memcpy(macs, s, 17);
	macs[17] = '\0';
	if (fctl_parse_mac(macs, mac) < 0 || fctl_parse_u64(slash + 1, &port) < 0 || port > 0xffff)
		return -EINVAL;
	*sci = fctl_sci_make(mac, (uint16_t)port);
	return 0;
}

void fctl_keyid_from_ref(const struct fctl_keyref *ref, uint8_t keyid[FCTL_KEYID_LEN])
{
	static const char tag[] = "fabricctl-keyid";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char ver[16];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const char *b = ref->backend ? ref->backend : "", *id = ref->id ? ref->id : "";

	snprintf(ver, sizeof(ver), "%" PRIu32, ref->version);
	memset(md, 0, sizeof(md));
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(ctx, tag, sizeof(tag));
		EVP_DigestUpdate(ctx, b, strlen(b) + 1);
		EVP_DigestUpdate(ctx, id, strlen(id) + 1);
		EVP_DigestUpdate(ctx, ver, strlen(ver));
		EVP_DigestFinal_ex(ctx, md, &mdlen);
	}
	EVP_MD_CTX_free(ctx);
	memcpy(keyid, md, FCTL_KEYID_LEN);
}

void fctl_salt_from_keyid(const uint8_t keyid[FCTL_KEYID_LEN], uint8_t salt[FCTL_SALT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	memset(md, 0, sizeof(md));
	EVP_Digest(keyid, FCTL_KEYID_LEN, md, &n, EVP_sha256(), NULL);
	memcpy(salt, md, FCTL_SALT_LEN);
}

void fctl_salt_from_ref(const struct fctl_keyref *ref, uint8_t salt[FCTL_SALT_LEN])
{
	uint8_t id[FCTL_KEYID_LEN];

	fctl_keyid_from_ref(ref, id);
	fctl_salt_from_keyid(id, salt);
}

uint32_t fctl_macsec_overhead(uint8_t icv_len)
{
	/* SecTAG (8) + SCI (8) + ICV: the kernel sizes the SecY MTU assuming the SCI is sent */
	return 16u + icv_len;
}

static void json_sa(struct fctl_buf *o, const struct fctl_sa *sa, unsigned an)
{
	fctl_buf_printf(o, "{\"an\":%u,\"active\":%s,\"pn\":%" PRIu64, an,
			sa->active ? "true" : "false", sa->pn);
	if (sa->has_keyid) {
		fctl_buf_puts(o, ",\"key_id\":\"");
		fctl_buf_put_hex(o, sa->keyid, FCTL_KEYID_LEN);
		fctl_buf_putc(o, '"');
	}
	if (sa->ssci) /* XPN: dumped by the kernel, unlike the salt */
		fctl_buf_printf(o, ",\"ssci\":%" PRIu32, sa->ssci);
	fctl_buf_putc(o, '}');
}

int fctl_host_state_to_json(const struct fctl_host_state *hs, struct fctl_buf *o)
{
	char sci[24];

	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, hs->host);
	fctl_buf_puts(o, ",\"links\":[");
	for (size_t i = 0; i < hs->n_links; i++) {
		const struct fctl_link *l = &hs->links[i];

		fctl_buf_printf(o, "%s{\"kind\":\"%s\",\"name\":", i ? "," : "",
				l->kind == FCTL_LINK_VLAN ? "vlan" : "macsec");
		fctl_buf_json_str(o, l->name);
		fctl_buf_puts(o, ",\"parent\":");
		fctl_buf_json_str(o, l->parent);
		if (l->has_mtu)
			fctl_buf_printf(o, ",\"mtu\":%" PRIu32, l->mtu);
		fctl_buf_printf(o, ",\"up\":%s", l->up ? "true" : "false");
		if (l->has_addrgen)
			fctl_buf_printf(o, ",\"addrgenmode\":\"%s\"", fctl_addrgen_name(l->addrgen));
		if (l->kind == FCTL_LINK_VLAN) {
			fctl_buf_printf(o, ",\"vid\":%u,\"protocol\":\"%s\"", l->vid,
					fctl_vlan_proto_name(l->proto));
			if (!fctl_vlan_qos_empty(&l->qos))
				fctl_vlan_qos_to_json(&l->qos, o);
		} else {
			const struct fctl_macsec *m = &l->macsec;

			fctl_sci_format(m->sci, sci);
			fctl_buf_printf(o,
					",\"sci\":\"%s\",\"port\":%u,\"cipher\":\"%s\",\"icv_len\":%u,"
					"\"encrypt\":%s,\"protect\":%s,\"replay_protect\":%s,"
					"\"window\":%" PRIu32 ",\"validate\":\"%s\",\"send_sci\":%s,"
					"\"end_station\":%s,\"scb\":%s,\"offload\":\"%s\","
					"\"encoding_sa\":%u,\"tx_sa\":[",
					sci, m->port, fctl_cipher_name(m->cipher), m->icv_len,
					m->encrypt ? "true" : "false", m->protect ? "true" : "false",
					m->replay_protect ? "true" : "false", m->window,
					fctl_validate_name(m->validate), m->send_sci ? "true" : "false",
					m->end_station ? "true" : "false", m->scb ? "true" : "false",
					fctl_offload_name(m->offload), m->encoding_sa);
			for (unsigned an = 0, n = 0; an < FCTL_MAX_AN; an++) {
				if (!m->txsa[an].present)
					continue;
				if (n++)
					fctl_buf_putc(o, ',');
				json_sa(o, &m->txsa[an], an);
			}
			fctl_buf_puts(o, "],\"rx_sc\":[");
			for (size_t s = 0; s < m->n_rxsc; s++) {
				const struct fctl_rxsc *sc = &m->rxsc[s];

				fctl_sci_format(sc->sci, sci);
				fctl_buf_printf(o, "%s{\"sci\":\"%s\",\"active\":%s,\"sa\":[",
						s ? "," : "", sci, sc->active ? "true" : "false");
				for (unsigned an = 0, n = 0; an < FCTL_MAX_AN; an++) {
					if (!sc->sa[an].present)
						continue;
					if (n++)
						fctl_buf_putc(o, ',');
					json_sa(o, &sc->sa[an], an);
				}
				fctl_buf_puts(o, "]}");
			}
			fctl_buf_putc(o, ']');
		}
		fctl_buf_puts(o, ",\"addresses\":[");
		for (size_t a = 0; a < l->n_addrs; a++) {
			if (a)
				fctl_buf_putc(o, ',');
			fctl_buf_json_str(o, l->addrs[a]);
		}
		fctl_buf_puts(o, "]}");
	}
	fctl_buf_puts(o, "]}");
	return o->oom ? -ENOMEM : 0;
}

void fctl_state_dir_path(const char *state_dir, const char *netns, char *out, size_t len)
{
	if (state_dir)
		snprintf(out, len, "%s", state_dir);
	else if (netns)
		snprintf(out, len, "%s/netns/%s", FCTL_STATE_DIR, netns);
	else
		snprintf(out, len, "%s", FCTL_STATE_DIR);
}
