/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - see log.h. One fprintf per line: stderr is unbuffered and a single
 * write of a short line is not interleaved with other threads' lines.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int log_verbosity = TLOG_INFO;

void tlog(enum log_level lvl, const char *fmt, ...)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	if ((int)lvl > log_verbosity)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ topod[%ld]: %s: %s\n", when, ts.tv_nsec / 1000000, (long)getpid(),
		names[lvl], msg);
}

char *log_clean(const char *in, size_t len, char *out, size_t n)
{
	size_t o = 0;
	if (!n)
		return out;
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		unsigned char c = (unsigned char)in[i];
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
	return out;
}
