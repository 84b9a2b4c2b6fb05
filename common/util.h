/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.h - the small utility layer every component shares: monotonic time,
 * a growable byte buffer, growable arrays and the error-string helper.
 *
 * Nothing here prints, exits or aborts: the plugin and libtii run inside
 * other people's processes. Allocation failures are returned, never fatal.
 */
#ifndef TOPO_UTIL_H
#define TOPO_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---- time ------------------------------------------------------------------ */

/* Monotonic clock: durations, deadlines and timeouts (never wall time). */
static inline uint64_t util_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline int64_t util_now_ms(void)
{
	return (int64_t)(util_now_us() / 1000u);
}

static inline double util_ms_since(uint64_t t0_us)
{
	return (double)(util_now_us() - t0_us) / 1000.0;
}

/* clock's time ms from now: a deadline for pthread_cond_timedwait (on a
 * condition variable made with that clock). */
static inline struct timespec util_deadline(clockid_t clock, unsigned ms)
{
	struct timespec t;
	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* ---- memory kept mapped ------------------------------------------------------- */

/* Reads one byte of every 4 KiB of [p, p + n), and its last, through the
 * process's own mappings; returns n. Under shadow paging (a PVM guest, as
 * the lab's VM is, or nested virtualization without hardware support) the
 * hypervisor drops its entries for pages a process leaves alone, and the
 * next touch of each is a fault into it that the guest never counts: on
 * the lab's VM 200 MB left alone for 60 s took 34-130 ms to read again
 * instead of 1.5 ms. Reads through the kernel (process_vm_readv, or a
 * pipe's copy from the process's address) did not keep them: only the
 * process's own loads did (docs/performance.md, "Memory kept mapped"). */
static inline size_t util_touch(const void *p, size_t n)
{
	const volatile unsigned char *b = (const volatile unsigned char *)p;
	if (!p || !n)
		return 0;
	for (size_t i = 0; i < n; i += 4096)
		(void)b[i];
	(void)b[n - 1];
	return n;
}

/* n bytes aligned to 2 MiB, or NULL; freed with free(). The 2 MiB pages
 * that lie wholly within the first hot bytes are asked for as huge pages
 * (transparent huge pages, which Debian's kernels give on request:
 * "madvise" mode): fresh memory costs a page fault per 4 KiB page on its
 * first write, 512 times less often so; a hint only: where the kernel
 * declines, the pages are ordinary ones. For the tables of megabytes a
 * build writes at once (the hierarchy's hop table: 138 MB at k=56 when
 * every host is walked, whose 33,600 faults took longer than filling it
 * from distances). The rest, the part page at the end of what is written
 * and any room to grow, stays in ordinary pages: a huge page there holds
 * up to 2 MiB nothing uses (snap_dup's node and port arrays at k=56 held
 * 14 MiB for 11.9 MiB written), for at most 511 more faults. */
static inline void *util_alloc_huge(size_t n, size_t hot)
{
	const size_t huge = (size_t)2 << 20;
	if (n > SIZE_MAX - huge)
		return NULL;
	void *p = aligned_alloc(huge, n ? (n + huge - 1) & ~(huge - 1) : huge);
#ifdef MADV_HUGEPAGE
	hot = (hot < n ? hot : n) & ~(huge - 1);
	if (p && hot)
		(void)madvise(p, hot, MADV_HUGEPAGE);
#else
	(void)hot;
#endif
	return p;
}

/* n bytes for an array whose first hot bytes are written at once: past a
 * few MiB in huge pages (util_alloc_huge). On the lab's VM 19 MB of fresh
 * 4 KiB pages took 32 ms, in 2 MiB pages about 2 ms (snap_dup's node and
 * port arrays, a cable fault's 4.2 MB list of changed blocks). Freed
 * with free(), grown with realloc(). */
static inline void *util_alloc_big(size_t n, size_t hot)
{
	return hot < ((size_t)4 << 20) ? malloc(n) : util_alloc_huge(n, hot);
}

/* ---- errors ---------------------------------------------------------------- */

/* Formats a reason into err[len] and returns -1, so that a failing path is
 * `return util_fail(err, len, "...", ...);`. */
static inline int util_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int util_fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- parsing ----------------------------------------------------------------- */

static inline int util_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static inline int util_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

/* "0x" and 1..16 hex digits filling [p, end) exactly: GUIDs as every
 * infiniband-diags tool and our protocol write them. 0, or -1. */
static inline int util_parse_guid(const char *p, const char *end, uint64_t *out)
{
	if (end - p < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || end - p > 18)
		return -1;
	uint64_t v = 0;
	for (p += 2; p < end; p++) {
		int h = util_hexval((unsigned char)*p);
		if (h < 0)
			return -1;
		v = v << 4 | (uint64_t)h;
	}
	*out = v;
	return 0;
}

/* A decimal number filling s[0..end) (end NULL: to the NUL) exactly, at
 * most max: digits only (no sign, no space, no "0x"), never wrapped (strtoull
 * would take "-1" and clamp an overflow to ULLONG_MAX). 0, or -1. */
static inline int util_parse_u64(const char *s, const char *end, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	for (; end ? p < end : *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned d = (unsigned)(*p - '0');
		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (p == s)
		return -1;
	*out = v;
	return 0;
}

/*
 * "HOST:PORT" or "[V6ADDR]:PORT" in s[0..n): the one address parser of topod's
 * listeners, the producers' sinks and libtii's server lists. host and hostlen
 * point into s (without brackets); the port is 0..65535 (callers that need
 * a real port refuse 0). An unbracketed host may not contain ':' (an IPv6
 * address needs brackets). 0, or -1 for anything else.
 */
static inline int util_parse_hostport(const char *s, size_t n, const char **host, size_t *hostlen,
				      unsigned *port)
{
	const char *colon;
	if (n && s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		if (!rb || rb + 1 >= s + n || rb[1] != ':')
			return -1;
		*host = s + 1;
		*hostlen = (size_t)(rb - s - 1);
		colon = rb + 1;
	} else {
		colon = NULL;
		for (size_t i = 0; i < n; i++)
			if (s[i] == ':')
				colon = s + i;
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -1;
		*host = s;
		*hostlen = (size_t)(colon - s);
	}
	const char *p = colon + 1;
	size_t pn = (size_t)(s + n - p);
	if (!*hostlen || !pn || pn > 5)
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < pn; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* ---- growable arrays -------------------------------------------------------- */

/*
 * Makes room for `need` elements in *pp (element size `size`), doubling the
 * capacity *capp. Returns 0, or -1 on overflow or ENOMEM with *pp and *capp
 * untouched. The one realloc-doubling loop of the code base:
 *     if (util_grow((void **)&v, &cap, n + 1, sizeof(*v))) goto nomem;
 *     v[n++] = x;
 */
static inline int util_grow(void **pp, size_t *capp, size_t need, size_t size)
{
	if (need <= *capp)
		return 0;
	size_t cap = *capp ? *capp : 16;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	if (cap > SIZE_MAX / size)
		return -1;
	void *np = realloc(*pp, cap * size);
	if (!np)
		return -1;
	*pp = np;
	*capp = cap;
	return 0;
}

/* ---- a byte buffer ------------------------------------------------------------- */

/*
 * Invariants: buf is NULL or holds len + 1 bytes with buf[len] == '\0';
 * len < cap when buf is set; len never exceeds max (0 = no limit), so a
 * buffer fed by a peer is bounded. Initialise with TBUF_INIT(max).
 */
struct tbuf {
	char *buf;
	size_t len, cap, max;
};
#define TBUF_INIT(m) { NULL, 0, 0, (m) }

/* Room for extra more bytes: 0, or -1 (ENOMEM, or max would be passed). */
static inline int tbuf_grow(struct tbuf *b, size_t extra)
{
	if (extra > SIZE_MAX - b->len - 1 || (b->max && b->len + extra > b->max))
		return -1;
	return util_grow((void **)&b->buf, &b->cap, b->len + extra + 1, 1);
}

static inline int tbuf_add(struct tbuf *b, const void *p, size_t n)
{
	if (tbuf_grow(b, n))
		return -1;
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

static inline int tbuf_printf(struct tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tbuf_printf(struct tbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || tbuf_grow(b, (size_t)n))
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

/* The caller owns the result (free() it); the buffer is empty again. */
static inline char *tbuf_detach(struct tbuf *b, size_t *len)
{
	char *p = b->buf;
	if (len)
		*len = b->len;
	b->buf = NULL;
	b->len = b->cap = 0;
	return p;
}

static inline void tbuf_release(struct tbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

/* ---- "did you mean" ----------------------------------------------------------- */

/* The edit distance (insert, delete, substitute, swap two neighbours) of
 * two short words, capped: words longer than 31 bytes count as far apart. */
static inline unsigned util_edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 31 || m > 31)
		return 99;
	unsigned d[32][32];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			unsigned v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

/* The candidate (stride bytes apart from first, each starting with a
 * const char * name, n of them) nearest to word within 2 edits, or NULL:
 * for "unknown command 'hosp': did you mean 'hops'?". */
static inline const char *util_did_you_mean(const char *word, const void *first, size_t n, size_t stride)
{
	const char *best = NULL;
	unsigned bd = 3;
	for (size_t i = 0; i < n; i++) {
		const char *name = *(const char *const *)((const char *)first + i * stride);
		unsigned d = name ? util_edit_distance(word, name) : 99;
		if (d < bd) {
			bd = d;
			best = name;
		}
	}
	return best;
}

#endif
