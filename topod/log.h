/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h - topod's log: one line per event on stderr (the journal under
 * systemd), "topod[pid]: LEVEL message". Messages that quote untrusted text
 * (NodeDescriptions, protocol bytes) must pass it through log_clean() first.
 */
#ifndef TOPOD_LOG_H
#define TOPOD_LOG_H

#include <stddef.h>

/* TLOG_, not LOG_: <syslog.h> defines LOG_ERR, LOG_WARNING, LOG_INFO and
 * LOG_DEBUG as macros with other values, and any file that includes both
 * would silently log at the wrong level. */
enum log_level { TLOG_ERR = 0, TLOG_WARN = 1, TLOG_INFO = 2, TLOG_DEBUG = 3 };

extern int log_verbosity; /* messages above this level are dropped; set by main() only */

void tlog(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies at most n-1 bytes of in (len bytes) to out, replacing control and
 * non-ASCII bytes with '?', so that a peer's bytes can be quoted in a log
 * line without forging lines or terminal escapes. Returns out. */
char *log_clean(const char *in, size_t len, char *out, size_t n);

#endif
