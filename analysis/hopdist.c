/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hopdist.c - see hopdist.h.
 */
#include "hopdist.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"

struct hopdist *hopdist_ref(struct hopdist *hd)
{
	if (hd)
		atomic_fetch_add(&hd->refs, 1);
	return hd;
}

void hopdist_free(struct hopdist *hd)
{
	if (!hd || atomic_fetch_sub(&hd->refs, 1) != 1)
		return;
	free(hd->lid_leaf);
	free(hd->d);
	free(hd);
}

/* The links backwards, as CSR: in[off[x] .. off[x + 1]) are the switches
 * with an up link to x. A distance to a leaf is a breadth-first search
 * from it along these. */
static int reverse_links(const struct route_tab *rt, uint32_t **off, uint32_t **in)
{
	const struct snap *s = rt->snap;
	uint32_t nsw = rt->nsw;
	*off = calloc((size_t)nsw + 2, sizeof(**off));
	if (!*off)
		return AN_E_NOMEM;
	for (uint32_t sw = 0; sw < nsw; sw++)
		for (unsigned p = 1, np = s->nodes[rt->sw_node[sw]].nports; p <= np; p++)
			if (rt->pt[rt->pt_off[sw] + p] < ROUTE_PT_EP)
				(*off)[rt->pt[rt->pt_off[sw] + p] + 2]++;
	for (uint32_t x = 0; x < nsw; x++)
		(*off)[x + 2] += (*off)[x + 1];
	*in = malloc(((size_t)(*off)[nsw + 1] + 1) * sizeof(**in));
	if (!*in) {
		free(*off);
		return AN_E_NOMEM;
	}
	for (uint32_t sw = 0; sw < nsw; sw++)
		for (unsigned p = 1, np = s->nodes[rt->sw_node[sw]].nports; p <= np; p++)
			if (rt->pt[rt->pt_off[sw] + p] < ROUTE_PT_EP)
				(*in)[(*off)[rt->pt[rt->pt_off[sw] + p] + 1]++] = sw;
	return AN_OK;
}

/* The leaves (switches a host's or router's up port is cabled to)
 * numbered in switch order into leaf_of[nsw], and the leaf of every LID
 * such a port owns into lid_leaf (the candidates hopcover_run checks).
 * Returns how many leaves. */
static uint32_t number_leaves(const struct route_tab *rt, uint32_t *leaf_of, uint32_t *lid_leaf)
{
	uint32_t nleaf = 0;
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		leaf_of[sw] = ROUTE_NONE;
	for (uint32_t e = 0; e < rt->neps; e++) {
		const struct route_ep *ep = &rt->eps[e];
		if (ep->up == AN_OK && ep->leaf != ROUTE_NONE && rt->sw_of_node[ep->leaf] != ROUTE_NONE &&
		    rt->snap->nodes[ep->node].type != SNAP_NODE_SWITCH)
			leaf_of[rt->sw_of_node[ep->leaf]] = 0;
	}
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		if (leaf_of[sw] == 0)
			leaf_of[sw] = nleaf++;
	for (uint32_t l = 0; l <= rt->max_lid; l++) {
		uint32_t e = rt->lid_ep[l], sw;
		lid_leaf[l] = ROUTE_NONE;
		if (e == ROUTE_NONE || rt->eps[e].up != AN_OK || rt->eps[e].leaf == ROUTE_NONE ||
		    rt->snap->nodes[rt->eps[e].node].type == SNAP_NODE_SWITCH)
			continue;
		sw = rt->sw_of_node[rt->eps[e].leaf];
		if (sw != ROUTE_NONE)
			lid_leaf[l] = leaf_of[sw];
	}
	return nleaf;
}

/* Breadth-first along the reversed links from 64 leaves at once (leaf
 * indices k0 .. k0 + 63), a bit each: a switch's frontier and seen sets
 * are words, so a level costs one OR per link of the frontier, and a fat
 * tree's whole search a handful of levels. 0, or -1 when a distance does
 * not fit below HOPDIST_INF. w[3 * nsw] is scratch. */
static int fill64(struct hopdist *hd, const uint32_t *leaf_sw, const uint32_t *off, const uint32_t *in,
		  uint32_t k0, uint64_t *w)
{
	const uint32_t nsw = hd->nsw, nleaf = hd->nleaf, cnt = nleaf - k0 < 64 ? nleaf - k0 : 64;
	uint64_t *seen = w, *front = w + nsw, *next = w + 2 * (size_t)nsw;
	memset(w, 0, 3 * (size_t)nsw * sizeof(*w));
	for (uint32_t sw = 0; sw < nsw; sw++)
		memset(hd->d + (uint64_t)sw * nleaf + k0, HOPDIST_INF, cnt);
	for (uint32_t j = 0; j < cnt; j++)
		seen[leaf_sw[k0 + j]] = front[leaf_sw[k0 + j]] |= (uint64_t)1 << j;
	for (unsigned level = 0;; level++) {
		int any = 0;
		for (uint32_t x = 0; x < nsw; x++) {
			uint64_t f = front[x];
			if (!f)
				continue;
			if (level >= HOPDIST_INF)
				return -1;
			for (uint64_t b = f; b; b &= b - 1)
				hd->d[(uint64_t)x * nleaf + k0 + (uint32_t)__builtin_ctzll(b)] = (uint8_t)level;
			for (uint32_t i = off[x]; i < off[x + 1]; i++)
				next[in[i]] |= f;
			front[x] = 0;
		}
		for (uint32_t y = 0; y < nsw; y++) {
			front[y] = next[y] & ~seen[y];
			seen[y] |= front[y];
			next[y] = 0;
			any |= front[y] != 0;
		}
		if (!any)
			return 0;
	}
}

static int fill(struct hopdist *hd, const uint32_t *leaf_sw, const uint32_t *off, const uint32_t *in)
{
	int bad = 0;
#pragma omp parallel reduction(| : bad)
	{
		uint64_t *w = malloc(3 * ((size_t)hd->nsw + 1) * sizeof(*w));
		bad |= !w;
#pragma omp for schedule(dynamic, 1)
		for (uint32_t k0 = 0; k0 < hd->nleaf; k0 += 64)
			if (w)
				bad |= fill64(hd, leaf_sw, off, in, k0, w);
		free(w);
	}
	return bad ? -1 : 0;
}

int hopdist_build(const struct route_tab *rt, uint64_t max_bytes, struct hopdist **out)
{
	struct hopdist *hd = calloc(1, sizeof(*hd));
	uint32_t *leaf_of = malloc(((size_t)rt->nsw + 1) * sizeof(*leaf_of)), *leaf_sw = NULL;
	uint32_t *off = NULL, *in = NULL;
	int rc = AN_E_NOMEM;
	if (!hd || !leaf_of || !(hd->lid_leaf = malloc(((size_t)rt->max_lid + 1) * sizeof(*hd->lid_leaf))))
		goto out;
	atomic_init(&hd->refs, 1);
	hd->pt = rt->pt;
	hd->nsw = rt->nsw;
	hd->nlid = (uint32_t)rt->max_lid + 1;
	hd->nleaf = number_leaves(rt, leaf_of, hd->lid_leaf);
	rc = AN_E_RANGE;
	if (!hd->nleaf || hd->nleaf >= UINT16_MAX || (uint64_t)hd->nsw * hd->nleaf > max_bytes)
		goto out;
	rc = AN_E_NOMEM;
	if (!(leaf_sw = malloc((size_t)hd->nleaf * sizeof(*leaf_sw))) || !(hd->d = malloc((size_t)hd->nsw * hd->nleaf)) ||
	    reverse_links(rt, &off, &in))
		goto out;
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		if (leaf_of[sw] != ROUTE_NONE)
			leaf_sw[leaf_of[sw]] = sw;
	rc = fill(hd, leaf_sw, off, in) ? AN_E_RANGE : AN_OK;
out:
	free(leaf_of);
	free(leaf_sw);
	free(off);
	free(in);
	if (rc) {
		hopdist_free(hd);
		return rc;
	}
	*out = hd;
	return AN_OK;
}

/* Marks in bad[] the covered LIDs switch sw does not route along a
 * shortest path: its table read once, in order (the hardware streams it),
 * against its own row of distances and its neighbours' (L2-sized). This
 * reads every entry of the fabric (193 million at k=56), so the per-entry
 * test is as short as hopdist_closer allows: each out port's neighbour row
 * is looked up once per switch, and an entry one step from its leaf is
 * one byte compare. The leaf's own entries (distance 0) take the exact
 * route_step_code path. */
static void cover_switch(const struct route_tab *rt, const struct hopdist *hd, uint32_t sw, const uint16_t *lk,
			 uint8_t *dx, uint8_t *bad)
{
	const struct snap_node *n = &rt->snap->nodes[rt->sw_node[sw]];
	const uint32_t *pt = rt->pt + rt->pt_off[sw];
	const uint8_t *drow = hd->d + (uint64_t)sw * hd->nleaf;
	/* dx: this row and, at nleaf, the INF that lk gives LIDs of no leaf */
	memcpy(dx, drow, hd->nleaf);
	dx[hd->nleaf] = HOPDIST_INF;
	/* nrow[p]: the distance row of the switch port p leads to, NULL where
	 * the step is not to a switch (no entry, no link, down, an end port) */
	const uint8_t *nrow[256] = {NULL};
	for (unsigned p = 0; p <= n->nports && p < SNAP_LFT_NONE; p++)
		if (pt[p] < ROUTE_PT_EP)
			nrow[p] = hd->d + (uint64_t)pt[p] * hd->nleaf;
	/* chunk by chunk: one table lookup per 512 entries, not per entry */
	for (uint32_t l0 = 1, run; l0 <= rt->max_lid; l0 += run) {
		const uint8_t *c = snap_lft_span(n, l0, &run);
		if (!c || run > rt->max_lid + 1 - l0) /* past the table: every entry SNAP_LFT_NONE */
			run = rt->max_lid + 1 - l0;
		for (uint32_t l = l0; l < l0 + run; l++) {
			uint32_t k = lk[l], next = 0;
			uint8_t dd = dx[k];
			if (dd == HOPDIST_INF)
				continue;
			uint8_t p = c ? c[l - l0] : SNAP_LFT_NONE;
			if (dd) {
				bad[l] |= !nrow[p] || nrow[p][k] != dd - 1;
				continue;
			}
			int st = route_step_code(pt, n->nports, p, rt->lid_ep[l], &next);
			bad[l] |= !hopdist_closer(hd, dd, st, next, k);
		}
	}
}

int hopcover_new(struct hopdist *hd, struct hopcover **out)
{
	struct hopcover *c = calloc(1, sizeof(*c));
	if (!c || !(c->done = calloc((size_t)hd->nsw + 1, 1)) || !(c->bad = calloc(hd->nlid, 1))) {
		if (c)
			free(c->done);
		free(c);
		return AN_E_NOMEM;
	}
	atomic_init(&c->refs, 1);
	c->hd = hopdist_ref(hd);
	*out = c;
	return AN_OK;
}

struct hopcover *hopcover_ref(struct hopcover *c)
{
	if (c)
		atomic_fetch_add(&c->refs, 1);
	return c;
}

void hopcover_free(struct hopcover *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	hopdist_free(c->hd);
	free(c->done);
	free(c->bad);
	free(c);
}

static void count_covered(struct hopcover *c)
{
	uint32_t covered = 0;
	for (uint32_t l = 0; l < c->hd->nlid; l++)
		covered += !c->bad[l] && c->hd->lid_leaf[l] != ROUTE_NONE;
	c->covered = covered;
}

int hopcover_run(const struct route_tab *rt, struct hopcover *c, uint32_t sw0, uint32_t sw1,
		 const atomic_int *cancel)
{
	const struct hopdist *hd = c->hd;
	const size_t nl = hd->nlid;
	const uint32_t end = sw1 < hd->nsw ? sw1 : hd->nsw;
	/* cover_switch writes bad[l] up to rt's top LID */
	if (rt->pt != hd->pt || rt->nsw != hd->nsw || (size_t)rt->max_lid + 1 != nl)
		return AN_E_INVAL;
	/* lk[l]: lid_leaf in 16 bits (hopdist_build refuses more leaves),
	 * nleaf where none (dx's INF sentinel): half the bytes every switch
	 * streams, one test less per entry */
	uint16_t *lk = malloc(nl * sizeof(*lk));
	if (!lk)
		return AN_E_NOMEM;
	for (size_t l = 0; l < nl; l++)
		lk[l] = hd->lid_leaf[l] == ROUTE_NONE ? (uint16_t)hd->nleaf : (uint16_t)hd->lid_leaf[l];
	uint32_t ndone = 0;
	int nomem = 0;
#pragma omp parallel reduction(| : nomem) reduction(+ : ndone)
	{
		uint8_t *mine = calloc(nl, 1), *dx = malloc((size_t)hd->nleaf + 1);
		nomem |= !mine || !dx;
		/* A switch is done once its whole table is read: what a pause
		 * leaves is exact for the switches marked. */
#pragma omp for schedule(dynamic, 16)
		for (uint32_t sw = sw0; sw < end; sw++)
			if (mine && dx && !c->done[sw] && !AN_CANCELLED(cancel)) {
				cover_switch(rt, hd, sw, lk, dx, mine);
				c->done[sw] = 1;
				ndone++;
			}
#pragma omp critical
		for (size_t l = 0; mine && l < nl; l++)
			c->bad[l] |= mine[l];
		free(mine);
		free(dx);
	}
	free(lk);
	c->ndone += ndone;
	if (hopcover_complete(c))
		count_covered(c);
	if (nomem)
		return AN_E_NOMEM;
	for (uint32_t sw = sw0; sw < end; sw++)
		if (!c->done[sw])
			return AN_E_CANCEL;
	return AN_OK;
}

int hopcover_carry(const struct hopcover *c, const struct route_tab *rt, const uint64_t *block, uint32_t n,
		   struct hopcover **out)
{
	const struct hopdist *hd = c->hd;
	struct hopcover *x;
	if (hopcover_new(c->hd, &x))
		return AN_E_NOMEM;
	memcpy(x->done, c->done, hd->nsw);
	memcpy(x->bad, c->bad, hd->nlid);
	x->ndone = c->ndone;
	/* The switches not yet checked will be, against the tables of their
	 * time; those checked keep their verdicts where their entries did
	 * not change. A failed step marks its LID; none is unmarked, so a
	 * LID whose routes became shortest again stays uncovered (its
	 * proofs walk) until a full build makes a new cover. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t node = (uint32_t)(block[i] >> 16), sw = node < rt->snap->nnodes ? rt->sw_of_node[node] : ROUTE_NONE;
		if (sw == ROUTE_NONE || sw >= hd->nsw || !x->done[sw])
			continue;
		uint32_t l0 = (uint32_t)(block[i] & 0xFFFF) * SNAP_DELTA_BLOCK;
		for (uint32_t l = l0 ? l0 : 1; l < l0 + SNAP_DELTA_BLOCK && l < hd->nlid && l <= rt->max_lid; l++) {
			uint32_t k = hd->lid_leaf[l];
			if (k != ROUTE_NONE && !x->bad[l] && !hopdist_step_ok(rt, hd, sw, (uint16_t)l, k, rt->lid_ep[l]))
				x->bad[l] = 1;
		}
	}
	if (hopcover_complete(x))
		count_covered(x);
	*out = x;
	return AN_OK;
}
