/* SPDX-License-Identifier: MIT */
/* fabricctl-probe's program files (main.c, serve.c, run.c, evidence.c). */
#ifndef FCTL_PROBE_PROG_H
#define FCTL_PROBE_PROG_H

#include "fctl/nl.h"
#include "fctl/rdma.h"
#include "probe.h"

/* Counters and MACsec state of one end, taken before a run and compared after. */
struct evidence {
	char dev[64];
	uint8_t port;
	char netdev[16];
	struct fctl_rdma_counters before;
	bool ctr_ok;
	char ctr_err[160];
	struct fctl_macsec_stats ms_before;
	struct probe_macsec ms; /* configuration now; deltas filled by evidence_end */
	uint8_t encoding_sa;
};

void evidence_begin(struct evidence *ev, struct fctl_nl *nl, const char *dev, uint8_t port,
		    const char *netdev);
void evidence_end(struct evidence *ev, struct fctl_nl *nl, struct probe_end *out);

int probe_serve(int argc, char **argv);

/* A fabric probe's end (fabric_end.c). The device and GID index of the RDMA GID whose
 * network device is ifname, into o (dev, gid_index): 0, or -ENODEV (none) / -EPERM (the
 * only GID is on ifname's cleartext carrier; err names both GIDs). */
int probe_netdev_pick(const char *ifname, struct fctl_rdma_opts *o, char *err, size_t errlen);
/* Don't-fragment ICMP echoes of mtu bytes to peer (IPv4) out of ifname: 1 passed
 * (*largest = mtu), 0 failed (*largest = the largest size that passed, 0 none), or a
 * negative errno (err says why). Needs CAP_NET_RAW. */
int probe_pmtu(const char *peer, const char *ifname, unsigned mtu, unsigned *largest, char *err,
	       size_t errlen);
/* The path MTU line both ends print: "pmtu end=ROLE ifname=IF peer=IP mtu=M ok=0|1
 * largest=N" (or "error=TEXT" when it could not be checked). */
void probe_pmtu_line(const char *role, const char *peer, const char *ifname, unsigned mtu);

/* Verdicts to the audit log (audit.c). */
struct fctl_audit;
const char *probe_audit_log_path(const char *opt); /* --audit-log, FCTL_AUDIT_LOG, default */
int probe_audit_open(const char *log_opt, struct fctl_audit **out);
/* One record per result of rep, then a sync; profile_sha256: 64 hex digits or NULL. */
int probe_audit_report(struct fctl_audit *a, const struct probe_report *rep, const char *change,
		       const char *profile_sha256);
int probe_run(int argc, char **argv);

/* Common options of both ends. */
extern const char *prog;
void perr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int parse_u8_opt(const char *name, const char *v, unsigned max, uint8_t *out);

#endif
