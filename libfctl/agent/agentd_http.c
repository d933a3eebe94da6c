// SPDX-License-Identifier: MIT
/* The agent's metrics endpoint: a minimal HTTP/1.0 server for GET /metrics (metrics.c formats). */
#include <errno.h>
#include <string.h>

#include "agentd_int.h"

/* The scrape's sources: the agent's counters, its audit log, the control connections
 * (the scrape's own connection and other scrapes are not counted). */
static void render(struct agent *a, struct fctl_buf *body)
{
	struct fctl_metrics_src src = {
		.eo = &a->eo,
		.st = &a->st,
		.host = a->host,
		.audit_open = a->audit != NULL,
		.audit_records = a->audit ? fctl_audit_size(a->audit) : 0,
		.audit_log = fctl_audit_log_path(a->cfg.audit_log, false),
		.now = fctl_agentd_wall(),
	};

	for (const struct conn *c = a->ct.conns; c; c = c->next)
		src.control_connections += c->kind != C_HTTP && !c->closing;
	fctl_metrics_render(&src, body);
}

void fctl_agentd_http_readable(struct agent *a, struct conn *c)
{
	struct aconn *ac = fctl_agentd_ac(c);
	struct fctl_buf body = { 0 }, resp = { 0 };
	ssize_t k = fctl_agentd_conn_read(c, ac->http + ac->http_len,
					  sizeof(ac->http) - 1 - ac->http_len);

	if (k == -EAGAIN)
		return;
	if (k <= 0) {
		fctl_agentd_conn_close(&a->ct, c);
		return;
	}
	ac->http_len += (size_t)k;
	ac->http[ac->http_len] = '\0';
	if (!strstr(ac->http, "\r\n\r\n") && !strstr(ac->http, "\n\n")) {
		if (ac->http_len < sizeof(ac->http) - 1)
			return;
		fctl_buf_puts(&resp, "HTTP/1.0 431 Request Header Fields Too Large\r\n\r\n");
	} else if (strncmp(ac->http, "GET /metrics ", 13) == 0 ||
		   strncmp(ac->http, "GET /metrics\r", 13) == 0) {
		render(a, &body);
		fctl_buf_printf(&resp, "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
				body.len);
		fctl_buf_append(&resp, body.data, body.len);
	} else if (strncmp(ac->http, "GET ", 4) == 0) {
		fctl_buf_puts(&resp, "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found\n");
	} else {
		fctl_buf_puts(&resp, "HTTP/1.0 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
	}
	fctl_buf_release(&c->out);
	c->out = resp;
	c->out_off = 0;
	c->writing = true;
	fctl_buf_release(&body);
	fctl_agentd_conn_flush(&a->ct, c);
}
