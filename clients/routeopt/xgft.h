/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xgft.h - recognise an XGFT(h; m1..mh; w1..wh) in a fabric snapshot.
 *
 * Labelling (seed 001, section 3.1, the "dual representation"): a level-l
 * node is the pair (mt, wt) of an MT-tree node and a WT-tree node.  The MT
 * class of a switch is found bottom-up (switches sharing a child class are
 * one class: they cover the same hosts), the WT class top-down (switches
 * sharing a parent class reach the same roots).  Neither uses port numbers,
 * so any cabling order is recognised, and a failed link only removes an edge
 * (the classes stay connected through the node's other links).
 *
 * Numbering used everywhere in routeopt:
 *   MT index at level l: 0 .. MT(l)-1, MT(l) = m_{l+1}*..*m_h; the children of
 *     mt at level l are mt*m_l + c (c < m_l); host index = MT index at level 0.
 *   WT index at level l: 0 .. WT(l)-1, WT(l) = w_1*..*w_l; going up link w
 *     from wt leads to wt*w_{l+1} + w; going down from wt leads to wt / w_l.
 *   node id at level l: mt * WT(l) + wt.
 *
 * Error convention: 0, or -1 with a reason in err[XGFT_ERR_LEN].
 */
#ifndef ROUTEOPT_XGFT_H
#define ROUTEOPT_XGFT_H

#include <stdint.h>
#include "snapshot.h"

#define XGFT_HMAX 8
#define XGFT_ERR_LEN 512

struct xgft {
	int h;
	uint32_t m[XGFT_HMAX + 2];  /* m[1..h]; m[h+1] = 1 */
	uint32_t w[XGFT_HMAX + 2];  /* w[1..h]; w[h+1] = 0 (roots have no up links) */
	uint32_t mtn[XGFT_HMAX + 1], wtn[XGFT_HMAX + 1]; /* MT(l), WT(l) */
	uint32_t nhosts;
	uint32_t *node[XGFT_HMAX + 1];  /* level l node id -> snapshot node index (l=0: hosts) */
	uint8_t *up[XGFT_HMAX + 1];     /* [id * w[l+1] + w] -> port, 0 = failed link */
	uint8_t *down[XGFT_HMAX + 1];   /* [id * m[l] + c] -> port, 0 = failed link (l >= 1) */
	uint32_t nfailed;               /* switch-switch links of the full XGFT that are missing */
	uint32_t *level_of;             /* snapshot node -> level, UINT32_MAX if not in the tree */
	uint32_t *id_of;                /* snapshot node -> node id at its level */
};

int xgft_recognise(const struct snap *s, struct xgft *x, char err[XGFT_ERR_LEN]);
void xgft_free(struct xgft *x);
/* "h;m1,..,mh;w1,..,wh" -> a clean in-memory snapshot of that XGFT (no LFTs,
 * LIDs assigned: hosts 1..N, then switches), for benchmarks and tests. */
int xgft_build_snap(const char *spec, struct snap **out, char err[XGFT_ERR_LEN]);
/* "XGFT(h; m1,..; w1,..)" */
void xgft_describe(const struct xgft *x, char *buf, size_t n);

#endif
