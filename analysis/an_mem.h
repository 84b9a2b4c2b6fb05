/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * an_mem.h - memory for the few tables of megabytes and more that a build
 * writes at once (the hierarchy's hop table: 138 MB at k=56 when every
 * host is walked, 5 MB with a complete cover).
 *
 * Why: fresh memory costs a page fault per 4 KiB page on its first write,
 * and at k=56 the hop table's 33,600 faults (a row per host, as it was)
 * took longer than filling it from distances. Asked for in 2 MiB pages (transparent huge pages, which
 * Debian's kernels give on request: "madvise" mode), it faults 512 times
 * less often. A hint only: where the kernel declines, the pages are
 * ordinary ones.
 */
#ifndef AN_MEM_H
#define AN_MEM_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define AN_HUGE_PAGE ((size_t)2 << 20)

/* bytes of memory aligned to AN_HUGE_PAGE, or NULL; freed with free(). */
static inline void *an_alloc_big(size_t bytes)
{
	if (bytes > SIZE_MAX - AN_HUGE_PAGE)
		return NULL;
	size_t n = (bytes + AN_HUGE_PAGE - 1) & ~(AN_HUGE_PAGE - 1);
	void *p = aligned_alloc(AN_HUGE_PAGE, n ? n : AN_HUGE_PAGE);
#ifdef MADV_HUGEPAGE
	if (p)
		(void)madvise(p, n ? n : AN_HUGE_PAGE, MADV_HUGEPAGE);
#endif
	return p;
}

#endif
