// SPDX-License-Identifier: MIT
/* Agent configuration: defaults, "key: value" file, one setter for file and CLI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/agent.h"
#include "fctl/util.h"

void fctl_agent_config_init(struct fctl_agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->socket_path = fctl_strdup(FCTL_AGENT_SOCKET);
	c->profile_dir = fctl_strdup("/var/lib/fabricctl/agent");
	c->drift_interval_s = 60;
	c->drift_debounce_ms = 500;
	c->max_connections = FCTL_AGENT_MAX_CONNECTIONS;
	c->max_handshakes_per_address = FCTL_AGENT_MAX_HANDSHAKES_PER_ADDRESS;
	c->handshake_timeout_s = FCTL_AGENT_HANDSHAKE_TIMEOUT_S;
	c->max_unix_connections = FCTL_AGENT_MAX_UNIX_CONNECTIONS;
	c->unix_root_reserve = FCTL_AGENT_UNIX_ROOT_RESERVE;
	c->max_metrics_connections = FCTL_AGENT_MAX_METRICS_CONNECTIONS;
	c->refusal_interval_s = FCTL_AGENT_REFUSAL_INTERVAL_S;
	c->max_refusal_sources = FCTL_AGENT_MAX_REFUSAL_SOURCES;
	c->timeout_s = 30;
	c->max_frame = FCTL_AGENT_MAX_FRAME;
	c->max_buffered = FCTL_AGENT_MAX_BUFFERED;
	c->max_workers = FCTL_AGENT_MAX_WORKERS;
	c->worker_user = fctl_strdup("nobody");
}

static int set_str(char **dst, const char *v)
{
	char *d = fctl_strdup(v);

	if (!d)
		return -ENOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

static int set_uint(unsigned *dst, const char *v, uint64_t max, bool duration)
{
	uint64_t n;

	if ((duration ? fctl_parse_duration(v, &n) : fctl_parse_u64(v, &n)) < 0 || n > max)
		return -EINVAL;
	*dst = (unsigned)n;
	return 0;
}

/* The connection limits: unsigned keys with a range (min 0 allowed only where it means
 * something: the root reserve). */
static int set_limit(struct fctl_agent_config *c, const char *key, const char *v)
{
	static const struct {
		const char *key;
		size_t off;
		unsigned min, max;
		bool duration;
	} lims[] = {
		{ "max_handshakes_per_address",
		  offsetof(struct fctl_agent_config, max_handshakes_per_address), 1, 4096, false },
		{ "handshake_timeout", offsetof(struct fctl_agent_config, handshake_timeout_s), 1,
		  3600, true },
		{ "max_unix_connections", offsetof(struct fctl_agent_config, max_unix_connections),
		  1, 4096, false },
		{ "unix_root_reserve", offsetof(struct fctl_agent_config, unix_root_reserve), 0,
		  4095, false },
		{ "max_metrics_connections",
		  offsetof(struct fctl_agent_config, max_metrics_connections), 1, 4096, false },
		{ "refusal_interval", offsetof(struct fctl_agent_config, refusal_interval_s), 1,
		  3600, true },
		{ "max_refusal_sources", offsetof(struct fctl_agent_config, max_refusal_sources),
		  1, 1024, false },
	};

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(lims); i++) {
		unsigned *dst = (unsigned *)((char *)c + lims[i].off), n;

		if (strcmp(key, lims[i].key) != 0)
			continue;
		if (set_uint(&n, v, lims[i].max, lims[i].duration) < 0 || n < lims[i].min)
			return -EINVAL;
		*dst = n;
		return 0;
	}
	return -ENOENT;
}

int fctl_agent_config_set(struct fctl_agent_config *c, const char *key, const char *v)
{
	static const struct {
		const char *key;
		size_t off;
	} strs[] = {
		{ "socket", offsetof(struct fctl_agent_config, socket_path) },
		{ "group", offsetof(struct fctl_agent_config, group) },
		{ "listen", offsetof(struct fctl_agent_config, listen) },
		{ "cert", offsetof(struct fctl_agent_config, cert) },
		{ "key", offsetof(struct fctl_agent_config, key) },
		{ "ca", offsetof(struct fctl_agent_config, ca) },
		{ "policy", offsetof(struct fctl_agent_config, policy) },
		{ "crl", offsetof(struct fctl_agent_config, crl) },
		{ "metrics", offsetof(struct fctl_agent_config, metrics) },
		{ "state_dir", offsetof(struct fctl_agent_config, state_dir) },
		{ "netns", offsetof(struct fctl_agent_config, netns) },
		{ "host", offsetof(struct fctl_agent_config, host) },
		{ "profile_dir", offsetof(struct fctl_agent_config, profile_dir) },
		{ "audit_log", offsetof(struct fctl_agent_config, audit_log) },
		{ "worker_user", offsetof(struct fctl_agent_config, worker_user) },
		{ "pull_dir", offsetof(struct fctl_agent_config, pull_dir) },
		{ "pull_file", offsetof(struct fctl_agent_config, pull_file) },
	};
	unsigned mf;
	int r;

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(strs); i++)
		if (strcmp(key, strs[i].key) == 0)
			return set_str((char **)((char *)c + strs[i].off), v);
	r = set_limit(c, key, v);
	if (r != -ENOENT)
		return r;
	if (strcmp(key, "drift_interval") == 0)
		return set_uint(&c->drift_interval_s, v, 86400, true);
	if (strcmp(key, "drift_debounce_ms") == 0)
		return set_uint(&c->drift_debounce_ms, v, 60000, false);
	if (strcmp(key, "max_connections") == 0)
		return set_uint(&c->max_connections, v, 4096, false) < 0 || !c->max_connections
			       ? -EINVAL
			       : 0;
	if (strcmp(key, "timeout") == 0)
		return set_uint(&c->timeout_s, v, 3600, true) < 0 || !c->timeout_s ? -EINVAL : 0;
	if (strcmp(key, "max_frame") == 0) {
		if (set_uint(&mf, v, FCTL_PROTO_MAX_FRAME, false) < 0 || mf < 4096)
			return -EINVAL;
		c->max_frame = mf;
		return 0;
	}
	if (strcmp(key, "max_buffered") == 0)
		return set_uint(&c->max_buffered, v, 1u << 30, false) < 0 ||
			       c->max_buffered < 65536 ? -EINVAL : 0;
	if (strcmp(key, "max_workers") == 0)
		return set_uint(&c->max_workers, v, 64, false) < 0 || !c->max_workers ? -EINVAL
											: 0;
	if (strcmp(key, "drift_repair") == 0) {
		if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
			return -EINVAL;
		c->drift_repair = strcmp(v, "true") == 0;
		return 0;
	}
	return -ENOENT;
}

int fctl_agent_config_load(struct fctl_agent_config *c, const char *file, char *err,
			   size_t errlen)
{
	char line[1024];
	unsigned lineno = 0;
	FILE *f = fopen(file, "re");
	int r = 0;

	if (!f) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", file, strerror(-r));
		return r;
	}
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char *k = line, *v, *end;

		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';
		while (*k == ' ' || *k == '\t')
			k++;
		if (!*k)
			continue;
		v = strchr(k, ':');
		if (!v) {
			snprintf(err, errlen, "%s:%u:1: expected 'key: value'", file, lineno);
			r = -EINVAL;
			break;
		}
		for (end = v; end > k && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		if (end > v + 1 && (*v == '"' || *v == '\'') && end[-1] == *v) {
			end[-1] = '\0';
			v++;
		}
		r = fctl_agent_config_set(c, k, v);
		if (r == -ENOENT)
			snprintf(err, errlen, "%s:%u:1: unknown key '%s'", file, lineno, k);
		else if (r < 0)
			snprintf(err, errlen, "%s:%u:%d: bad value '%s' for '%s'", file, lineno,
				 (int)(v - line) + 1, v, k);
	}
	fclose(f);
	return r;
}

void fctl_agent_config_release(struct fctl_agent_config *c)
{
	char **strs[] = { &c->socket_path, &c->group, &c->listen, &c->cert, &c->key,
			  &c->ca, &c->policy, &c->crl, &c->metrics, &c->state_dir, &c->netns,
			  &c->host, &c->profile_dir, &c->audit_log, &c->worker_user,
			  &c->pull_dir, &c->pull_file };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(strs); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
}
