/* SPDX-License-Identifier: MIT */
/* The host transaction's private helpers (libfctl/host/): its messages' lines. */
#ifndef FCTL_HOST_INT_H
#define FCTL_HOST_INT_H

#include <stdarg.h>
#include <stdbool.h>

#include "fctl/host_apply.h"

/* A line for the program's stderr: prefixed with its name (say) or as it is (plain). */
void fctl_hosti_vsay(struct fctl_host_msgs *m, bool plain, const char *fmt, va_list ap);
void fctl_hosti_say(struct fctl_host_msgs *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fctl_hosti_plain(struct fctl_host_msgs *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
