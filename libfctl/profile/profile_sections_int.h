/* SPDX-License-Identifier: MIT */
/* Sections of a profile parsed and checked outside profile.c and validate.c: a VLAN's
 * `qos:` (profile_qos.c), a port's `driver:` and the offload limits of drivers
 * (profile_offload.c). Internal. */
#ifndef FCTL_PROFILE_SECTIONS_INT_H
#define FCTL_PROFILE_SECTIONS_INT_H

#include "fctl/profile.h"
#include "yaml_tree_int.h"

/* The skb priority and PCP of the RoCE shorthand (`roce: true`): PCP 3, the priority on
 * which NVIDIA's lossless RoCE configuration enables PFC (docs/profile.md, "qos"). */
#define FCTL_QOS_ROCE_PCP 3
/* Egress mappings one VLAN of a profile may give. */
#define FCTL_QOS_PROFILE_MAX 16

/* Parses n (the value of a VLAN's `qos` key) into v->qos and v->qos_roce; findings with
 * file:line:col go to d. */
void fctl_profile_qos_parse(const char *file, struct fctl_diags *d, const struct ynode *n,
			    struct fctl_vlan *v);

/* Parses n (the value of a port's `driver` key: the kernel driver's name, as `ethtool -i`
 * prints it) into pt->driver. */
void fctl_profile_driver_parse(const char *file, struct fctl_diags *d, const struct ynode *n,
			       struct fctl_port *pt);

/* The MACsec offload limits of the drivers the profile names: a policy with `offload`
 * on a VLAN of a port whose driver refuses that SecY (docs/profile.md, "driver"). */
void fctl_profile_offload_check(const struct fctl_profile *p, struct fctl_diags *d);

#endif
