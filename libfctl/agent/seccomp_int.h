/* SPDX-License-Identifier: MIT */
/* The pieces every seccomp filter of the agent shares: the architecture, the prologue, ALLOW. */
#ifndef FCTL_AGENT_SECCOMP_INT_H
#define FCTL_AGENT_SECCOMP_INT_H

#include <stddef.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define FCTL_SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FCTL_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

/* a system call allowed */
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

#ifdef __x86_64__
/* the x32 ABI shares the architecture: its numbers have bit 30 set */
#define FCTL_SECCOMP_NO_X32 \
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#else
#define FCTL_SECCOMP_NO_X32
#endif

/*
 * The first instructions of every filter: another architecture (or x32) kills the
 * process; then the system call's number is loaded for the ALLOW list that follows.
 */
#define FCTL_SECCOMP_PROLOGUE \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FCTL_SECCOMP_ARCH, 1, 0), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
	FCTL_SECCOMP_NO_X32

#endif
