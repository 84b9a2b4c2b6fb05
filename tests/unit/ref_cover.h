/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ref_cover.h - the plain reference for hopdist.c's cover, for tests only:
 * every switch's walked hop count to every end port (route_switch_hops, no
 * distances), and from those the LIDs routed along shortest paths, the
 * leaves numbered here on their own.
 */
#ifndef REF_COVER_H
#define REF_COVER_H

#include <stdint.h>
#include <stdlib.h>

#include "hopdist.h"
#include "route.h"
#include "testfab.h"

/* Hop counts from every switch to every end port, hops[ep * nsw + sw]:
 * what the hierarchy and every route's length are made of. */
static inline uint16_t *all_hops(const struct route_tab *rt)
{
	uint32_t *dst = malloc(rt->neps * sizeof(*dst));
	uint16_t *out = malloc((size_t)rt->neps * rt->nsw * sizeof(*out));
	if (!dst || !out)
		tf_die("out of memory");
	for (uint32_t e = 0; e < rt->neps; e++)
		dst[e] = e;
	if (route_switch_hops(rt, rt->sw_node, rt->nsw, dst, rt->neps, out))
		tf_die("route_switch_hops");
	free(dst);
	return out;
}

/* out[max_lid + 1]: 1 for the LID of a host's up port whose walked hop
 * count from every switch is its distance (hd) to the LID's leaf plus
 * one, or none where no link path leads. Returns 0 when hd's leaves are
 * not those numbered here in switch order (hopdist.c's numbering). */
static inline int ref_shortest(const struct route_tab *rt, const struct hopdist *hd, const uint16_t *hops,
			       uint8_t *out)
{
	uint32_t *leaf_k = malloc(rt->nsw * sizeof(*leaf_k)), nleaf = 0;
	if (!leaf_k)
		tf_die("out of memory");
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		leaf_k[sw] = ROUTE_NONE;
	for (uint32_t e = 0; e < rt->neps; e++)
		if (rt->eps[e].up == AN_OK && rt->eps[e].leaf != ROUTE_NONE &&
		    rt->snap->nodes[rt->eps[e].node].type != SNAP_NODE_SWITCH)
			leaf_k[rt->sw_of_node[rt->eps[e].leaf]] = 0;
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		if (leaf_k[sw] == 0)
			leaf_k[sw] = nleaf++;
	int same = nleaf == hd->nleaf;
	for (uint32_t l = 0; l <= rt->max_lid; l++) {
		uint32_t e = rt->lid_ep[l];
		out[l] = 0;
		if (!l || e == ROUTE_NONE || rt->snap->nodes[rt->eps[e].node].type == SNAP_NODE_SWITCH ||
		    rt->eps[e].up != AN_OK)
			continue;
		uint32_t k = leaf_k[rt->sw_of_node[rt->eps[e].leaf]];
		same &= hd->lid_leaf[l] == k;
		int shortest = 1;
		for (uint32_t sw = 0; sw < rt->nsw && shortest && same; sw++) {
			uint8_t d = hopdist_at(hd, sw, k);
			uint16_t w = hops[(size_t)e * rt->nsw + sw];
			shortest = d == HOPDIST_INF ? w == ROUTE_HOPS_INF : w == d + 1u;
		}
		out[l] = (uint8_t)shortest;
	}
	free(leaf_k);
	return same;
}

/* Is complete cover c exactly the LIDs routed along shortest paths by the
 * walked hop counts? */
static inline int cover_is_exact(const struct route_tab *rt, const struct hopcover *c, const uint16_t *hops)
{
	uint8_t *ref = malloc((size_t)rt->max_lid + 1);
	if (!ref)
		tf_die("out of memory");
	int exact = hopcover_complete(c) && ref_shortest(rt, c->hd, hops, ref);
	uint32_t n = 0;
	for (uint32_t l = 0; exact && l <= rt->max_lid; l++) {
		exact = ref[l] == (hopcover_leaf(c, l) != ROUTE_NONE);
		n += ref[l];
	}
	free(ref);
	return exact && n == c->covered;
}

#endif
