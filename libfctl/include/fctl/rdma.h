/* SPDX-License-Identifier: MIT */
/*
 * RDMA probes (library fctl_rdma, over libibverbs): one RC queue pair between
 * two hosts, set up by an out-of-band exchange of its parameters over TCP
 * (perftest's fields, our own framing), and the latency and bandwidth loops
 * that run over it. Device counters (hw_counters in sysfs) are read here too.
 *
 * Conventions: int >= 0 on success, negative errno on failure (libibverbs'
 * positive errno is translated in this module only); output parameters are
 * written only on success; destructors accept NULL. Messages for the user go
 * to the caller's err buffer (lowercase, no trailing full stop).
 */
#ifndef FCTL_RDMA_H
#define FCTL_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fctl_rdma_test {
	FCTL_RDMA_SEND_LAT,
	FCTL_RDMA_WRITE_LAT,
	FCTL_RDMA_READ_LAT,
	FCTL_RDMA_SEND_BW,
	FCTL_RDMA_WRITE_BW,
	FCTL_RDMA_READ_BW,
	FCTL_RDMA_N_TESTS,
};

const char *fctl_rdma_test_name(enum fctl_rdma_test t);
int fctl_rdma_test_from_name(const char *s, enum fctl_rdma_test *out);
bool fctl_rdma_test_is_lat(enum fctl_rdma_test t);
/* 2 for send and write latency (a round trip stands for two one-way trips), 1 for read. */
unsigned fctl_rdma_test_rtt_factor(enum fctl_rdma_test t);

#define FCTL_RDMA_DEFAULT_PORT 18516 /* perftest uses 18515: both can listen side by side */
#define FCTL_RDMA_MAX_SIZE (1u << 26)

struct fctl_rdma_opts {
	const char *dev;       /* NULL: the first device */
	uint8_t ib_port;       /* 1 */
	int gid_index;	       /* -1: the first RoCE v2 GID with an IPv4 address, else 0 */
	uint8_t timeout;       /* QP local ACK timeout exponent: 4.096 us * 2^timeout */
	uint8_t retry_cnt;     /* 0..7 */
	uint8_t rnr_retry;     /* 0..7, 7 = infinite */
	uint32_t tx_depth;     /* outstanding work requests for bandwidth tests */
	uint32_t max_size;     /* largest message the QP will carry */
};

void fctl_rdma_opts_default(struct fctl_rdma_opts *o);

/* What the two ends exchange: perftest's lid:out_reads:qpn:psn:rkey:vaddr:srqn and the
 * GID, plus the path MTU each end can do. */
struct fctl_rdma_qpinfo {
	uint16_t lid;
	uint16_t out_reads;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	uint32_t srqn;
	uint8_t gid[16];
	uint32_t mtu; /* enum ibv_mtu */
};

#define FCTL_RDMA_QPINFO_LEN 128
/* "%04x:%04x:%06x:%06x:%08x:%016x:%08x:<32 hex GID>:<mtu>" */
int fctl_rdma_qpinfo_format(const struct fctl_rdma_qpinfo *q, char out[FCTL_RDMA_QPINFO_LEN]);
int fctl_rdma_qpinfo_parse(const char *s, struct fctl_rdma_qpinfo *out);

/* A device, protection domain, CQ, RC QP and one registered buffer. */
struct fctl_rdma_ep;

int fctl_rdma_ep_new(const struct fctl_rdma_opts *o, struct fctl_rdma_ep **out, char *err,
		     size_t errlen);
void fctl_rdma_ep_free(struct fctl_rdma_ep *ep);
void fctl_rdma_ep_info(const struct fctl_rdma_ep *ep, struct fctl_rdma_qpinfo *out);
const char *fctl_rdma_ep_dev_name(const struct fctl_rdma_ep *ep);
/* The network device under the GID in use ("" when unknown). */
const char *fctl_rdma_ep_netdev(const struct fctl_rdma_ep *ep);
int fctl_rdma_ep_gid_index(const struct fctl_rdma_ep *ep);
/* INIT -> RTR -> RTS towards the remote QP. */
int fctl_rdma_ep_connect(struct fctl_rdma_ep *ep, const struct fctl_rdma_qpinfo *remote,
			 char *err, size_t errlen);

/* One measurement. Latency tests need both ends running (the server answers);
 * bandwidth tests need the server only for send (it posts receives). */
struct fctl_rdma_params {
	enum fctl_rdma_test test;
	uint32_t size;
	uint64_t iters;	      /* 0: run for duration_ns */
	uint64_t duration_ns;
	uint64_t stall_ns;    /* give up when nothing completes for this long */
	int watch_fd;	      /* -1, or a socket whose hang-up aborts the loop (peer died) */
	const char *watch_ok; /* NULL, or data on watch_fd that begins with this does not
			       * abort (bidirectional: the peer's end-of-run line may come
			       * while this end still runs; anything else still aborts) */
	bool bidirectional;   /* bandwidth tests: both ends post at once (perftest -b) */
};

struct fctl_rdma_result {
	uint64_t iters;	      /* messages completed */
	uint64_t *post_ns;    /* latency, client: time of each post (iters entries) */
	uint64_t elapsed_ns;  /* first post to last completion */
	uint64_t bytes;
	double gbps;	      /* bandwidth: bytes * 8 / elapsed */
	double msg_rate_mpps; /* bandwidth: messages per microsecond */
	uint64_t cpu_ns;      /* user + system CPU of the loop */
	int wc_status;	      /* the first bad completion's enum ibv_wc_status, 0 if none */
	char err[200];	      /* why the loop failed */
};

void fctl_rdma_result_release(struct fctl_rdma_result *r);

/* Before a run, on the answering side (before it tells the client to go): clears
 * the buffer and posts receives. The client does the same inside its run. */
int fctl_rdma_prepare(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
		      struct fctl_rdma_result *r);
/* The measuring side. Returns 0, or a negative errno with r->err set (-EIO: a bad
 * completion, its status in r->wc_status and by name in r->err; -ETIMEDOUT: stalled;
 * -ECONNRESET: the watched socket hung up). */
int fctl_rdma_run_client(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
			 struct fctl_rdma_result *r);
/* The answering side: returns when the client's last message has arrived
 * (send and write latency, send bandwidth), at once otherwise. */
int fctl_rdma_run_server(struct fctl_rdma_ep *ep, const struct fctl_rdma_params *p,
			 struct fctl_rdma_result *r);
/* Whether the test needs fctl_rdma_run_server to run while the client measures. */
bool fctl_rdma_test_server_active(enum fctl_rdma_test t);
/* The same for a run's parameters: a bidirectional bandwidth run is active on both ends
 * (fctl_rdma_run_server then runs the client's loop towards the client, and fills
 * r->elapsed_ns, bytes and gbps of its direction). */
bool fctl_rdma_params_server_active(const struct fctl_rdma_params *p);

/*
 * rdma_cm connection setup (librdmacm), the alternative to the TCP exchange:
 * rdma_resolve_addr/route and rdma_connect on the client, rdma_listen and
 * rdma_accept on the server, each end's buffer (rkey, vaddr, size) in the
 * connection's private data. Every wait is bounded by timeout_ms; on any error
 * everything (QP, ids, event channel) is torn down before returning.
 */
#define FCTL_RDMA_CM_PDATA_LEN 24
struct fctl_rdma_cm_pdata {
	uint32_t rkey;
	uint64_t vaddr;
	uint32_t size; /* bytes the peer may address at vaddr (two areas of size / 2) */
	uint16_t out_reads;
};
/* "FCM1", rkey, vaddr, size, out_reads, 2 reserved bytes (zero): big-endian. */
void fctl_rdma_cm_pdata_encode(const struct fctl_rdma_cm_pdata *d,
			       uint8_t out[FCTL_RDMA_CM_PDATA_LEN]);
/* len may exceed FCTL_RDMA_CM_PDATA_LEN (the CM pads private data with zeros). */
int fctl_rdma_cm_pdata_decode(const void *buf, size_t len, struct fctl_rdma_cm_pdata *out);

struct fctl_rdma_cm_listener;
/* Listens on every address, rdma_cm port space TCP, port `port`. */
int fctl_rdma_cm_listen(uint16_t port, struct fctl_rdma_cm_listener **out, char *err,
			size_t errlen);
void fctl_rdma_cm_listener_free(struct fctl_rdma_cm_listener *l);
/* Waits for one connection request, builds the endpoint on the device it came to
 * (which must be o->dev when given) and accepts it. */
int fctl_rdma_cm_accept(struct fctl_rdma_cm_listener *l, const struct fctl_rdma_opts *o,
			int timeout_ms, struct fctl_rdma_ep **out, char *err, size_t errlen);
/* Resolves host (an IPv4/IPv6 address or name), connects to port. */
int fctl_rdma_cm_connect(const struct fctl_rdma_opts *o, const char *host, uint16_t port,
			 int timeout_ms, struct fctl_rdma_ep **out, char *err, size_t errlen);

/* Device counters: /sys/class/infiniband/DEV/ports/PORT/hw_counters/<name>. */
#define FCTL_RDMA_MAX_COUNTERS 96
struct fctl_rdma_counter {
	char name[48];
	uint64_t value;
};
struct fctl_rdma_counters {
	size_t n;
	struct fctl_rdma_counter c[FCTL_RDMA_MAX_COUNTERS];
};

int fctl_rdma_counters_read(const char *dev, uint8_t port, struct fctl_rdma_counters *out);
/* The same from any directory of counter files (tests use a fake one). */
int fctl_rdma_counters_read_dir(const char *dir, struct fctl_rdma_counters *out);
/* after - before, by name (a counter missing before counts from 0), sorted by name. */
void fctl_rdma_counters_delta(const struct fctl_rdma_counters *before,
			      const struct fctl_rdma_counters *after, struct fctl_rdma_counters *out);
/* Whether a device of that name exists (sysfs), and the first device's name. */
int fctl_rdma_dev_exists(const char *dev);

#endif
