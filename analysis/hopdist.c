/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hopdist.c - see hopdist.h.
 */
#include "hopdist.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "util.h"

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
	if (hd->owner) {
		hopdist_free(hd->owner);
	} else {
		free(hd->lid_leaf);
		free(hd->d);
	}
	for (uint32_t j = 0; j < hd->nocol; j++)
		free(hd->ocol[hd->okey[j]]);
	free(hd->ocol);
	free(hd->okey);
	free(hd);
}

int hopdist_same(const struct hopdist *a, const struct hopdist *b)
{
	if (a->nsw != b->nsw || a->nleaf != b->nleaf)
		return 0;
	if (!a->ocol && !b->ocol)
		return !memcmp(a->d, b->d, (size_t)a->nsw * a->nleaf);
	for (uint32_t sw = 0; sw < a->nsw; sw++)
		for (uint32_t k = 0; k < a->nleaf; k++)
			if (hopdist_at(a, sw, k) != hopdist_at(b, sw, k))
				return 0;
	return 1;
}

uint64_t hopdist_touch(const struct hopdist *hd)
{
	uint64_t n = util_touch(hd->lid_leaf, (size_t)hd->nlid * sizeof(*hd->lid_leaf)) +
		     util_touch(hd->d, (size_t)hd->nsw * hd->nleaf);
	for (uint32_t j = 0; j < hd->nocol; j++)
		n += util_touch(hd->ocol[hd->okey[j]], hd->nsw);
	return n;
}

/* Where switch sw's distance to leaf k is written: its column kept apart,
 * or the table. */
static inline uint8_t *cell(struct hopdist *hd, uint32_t sw, uint32_t k)
{
	return hd->ocol && hd->ocol[k] ? &hd->ocol[k][sw] : &hd->d[(uint64_t)sw * hd->nleaf + k];
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

/* Breadth-first along the reversed links from up to 64 leaves at once
 * (leaf indices col[0 .. cnt)), a bit each: a switch's frontier and seen
 * sets are words, so a level costs one OR per link of the frontier, and a
 * fat tree's whole search a handful of levels. 0, or -1 when a distance
 * does not fit below HOPDIST_INF. w[3 * nsw] is scratch. */
static int fill64(struct hopdist *hd, const uint32_t *leaf_sw, const uint32_t *off, const uint32_t *in,
		  const uint32_t *col, uint32_t cnt, uint64_t *w)
{
	const uint32_t nsw = hd->nsw;
	uint64_t *seen = w, *front = w + nsw, *next = w + 2 * (size_t)nsw;
	memset(w, 0, 3 * (size_t)nsw * sizeof(*w));
	for (uint32_t sw = 0; sw < nsw; sw++)
		for (uint32_t j = 0; j < cnt; j++)
			*cell(hd, sw, col[j]) = HOPDIST_INF;
	for (uint32_t j = 0; j < cnt; j++)
		seen[leaf_sw[col[j]]] = front[leaf_sw[col[j]]] |= (uint64_t)1 << j;
	for (unsigned level = 0;; level++) {
		int any = 0;
		for (uint32_t x = 0; x < nsw; x++) {
			uint64_t f = front[x];
			if (!f)
				continue;
			if (level >= HOPDIST_INF)
				return -1;
			for (uint64_t b = f; b; b &= b - 1)
				*cell(hd, x, col[__builtin_ctzll(b)]) = (uint8_t)level;
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

/* The columns col[0 .. ncol) of hd's distances searched over rt's links,
 * 64 at a time, written through cell(): into hd's own table, or for a
 * relinked one into the columns kept apart, which every searched leaf of
 * it has (the shared table is its owner's, never written). AN_OK;
 * AN_E_RANGE when a distance does not fit a byte; AN_E_NOMEM (which must
 * not read as RANGE: that one is kept for good in the index's cover_rc). */
static int fill(struct hopdist *hd, const struct route_tab *rt, const uint32_t *leaf_sw, const uint32_t *col,
		uint32_t ncol)
{
	uint32_t *off = NULL, *in = NULL;
	int bad = 0, nomem = 0;
	if (reverse_links(rt, &off, &in))
		return AN_E_NOMEM;
#pragma omp parallel reduction(| : bad, nomem)
	{
		uint64_t *w = malloc(3 * ((size_t)hd->nsw + 1) * sizeof(*w));
		nomem |= !w;
#pragma omp for schedule(dynamic, 1)
		for (uint32_t k0 = 0; k0 < ncol; k0 += 64)
			if (w)
				bad |= fill64(hd, leaf_sw, off, in, col + k0, ncol - k0 < 64 ? ncol - k0 : 64, w);
		free(w);
	}
	free(off);
	free(in);
	return nomem ? AN_E_NOMEM : bad ? AN_E_RANGE : AN_OK;
}

/* leaf_sw[nleaf] from leaf_of[nsw]; NULL when out of memory. */
static uint32_t *leaf_switches(const uint32_t *leaf_of, uint32_t nsw, uint32_t nleaf)
{
	uint32_t *leaf_sw = malloc(((size_t)nleaf + 1) * sizeof(*leaf_sw));
	if (leaf_sw)
		for (uint32_t sw = 0; sw < nsw; sw++)
			if (leaf_of[sw] != ROUTE_NONE)
				leaf_sw[leaf_of[sw]] = sw;
	return leaf_sw;
}

int hopdist_build(const struct route_tab *rt, uint64_t max_bytes, struct hopdist **out)
{
	struct hopdist *hd = calloc(1, sizeof(*hd));
	uint32_t *leaf_of = malloc(((size_t)rt->nsw + 1) * sizeof(*leaf_of)), *leaf_sw = NULL, *col = NULL;
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
	if (!(leaf_sw = leaf_switches(leaf_of, rt->nsw, hd->nleaf)) || !(hd->d = malloc((size_t)hd->nsw * hd->nleaf)) ||
	    !(col = malloc((size_t)hd->nleaf * sizeof(*col))))
		goto out;
	for (uint32_t k = 0; k < hd->nleaf; k++)
		col[k] = k;
	rc = fill(hd, rt, leaf_sw, col, hd->nleaf);
out:
	free(leaf_of);
	free(leaf_sw);
	free(col);
	if (rc) {
		hopdist_free(hd);
		return rc;
	}
	*out = hd;
	return AN_OK;
}

/* Marks in moved[] the leaves to which switch sw's row of distances no
 * longer follows from its links in rt: one more than the least of its
 * linked neighbours' rows, 0 at its own leaf (own, or ROUTE_NONE). m[nleaf]
 * is scratch. */
static void row_moves(const struct hopdist *hd, const struct route_tab *rt, uint32_t sw, uint32_t own, uint8_t *m,
		      uint8_t *moved)
{
	const uint32_t nleaf = hd->nleaf;
	const uint32_t *pt = rt->pt + rt->pt_off[sw];
	memset(m, HOPDIST_INF, nleaf);
	const unsigned np = rt->snap->nodes[rt->sw_node[sw]].nports;
	for (unsigned p = 1; p <= np; p++) {
		if (pt[p] >= ROUTE_PT_EP)
			continue;
		const uint8_t *y = hd->d + (uint64_t)pt[p] * nleaf;
		for (uint32_t k = 0; k < nleaf; k++)
			m[k] = y[k] < m[k] ? y[k] : m[k];
	}
	for (uint32_t j = 0; j < hd->nocol; j++) { /* the table's rows are wrong there */
		uint32_t k = hd->okey[j];
		m[k] = HOPDIST_INF;
		for (unsigned p = 1; p <= np; p++)
			if (pt[p] < ROUTE_PT_EP && hd->ocol[k][pt[p]] < m[k])
				m[k] = hd->ocol[k][pt[p]];
	}
	for (uint32_t k = 0; k < nleaf; k++) {
		/* a neighbour at 254 puts sw past a byte: searched again,
		 * the search says so */
		uint8_t want = k == own ? 0 : m[k] >= HOPDIST_INF - 1 ? HOPDIST_INF : (uint8_t)(m[k] + 1);
		moved[k] |= hopdist_at(hd, sw, k) != want || (k != own && m[k] == HOPDIST_INF - 1);
	}
}

/* Only the switches whose port codes differ between was and rt can break
 * a row: every other switch's equation held for was and reads the same
 * neighbours. moved[nleaf] gets the leaves whose column broke somewhere
 * (leaf_of: rt's leaves). Returns how many, or -1 when out of memory. */
static int64_t moved_leaves(const struct hopdist *hd, const struct route_tab *was, const struct route_tab *rt,
			    const uint32_t *leaf_of, uint8_t *moved)
{
	int nomem = 0;
	memset(moved, 0, hd->nleaf);
#pragma omp parallel reduction(| : nomem)
	{
		uint8_t *m = malloc((size_t)hd->nleaf + 1), *mine = calloc((size_t)hd->nleaf + 1, 1);
		nomem |= !m || !mine;
#pragma omp for schedule(dynamic, 16)
		for (uint32_t sw = 0; sw < rt->nsw; sw++) {
			size_t np = rt->snap->nodes[rt->sw_node[sw]].nports + 1u;
			if (m && mine && memcmp(was->pt + was->pt_off[sw], rt->pt + rt->pt_off[sw], np * sizeof(*rt->pt)))
				row_moves(hd, rt, sw, leaf_of[sw], m, mine);
		}
#pragma omp critical
		for (uint32_t k = 0; mine && k < hd->nleaf; k++)
			moved[k] |= mine[k];
		free(m);
		free(mine);
	}
	if (nomem)
		return -1;
	int64_t n = 0;
	for (uint32_t k = 0; k < hd->nleaf; k++)
		n += moved[k];
	return n;
}

/* A hopdist for rt over hd's table, its owner's (chains stay one deep):
 * hd's columns kept apart copied, and a column of its own for each leaf
 * moved[] marks, which fill searches again. Past HOPDIST_OCOL_MAX such
 * columns, a copy of hd's whole distances instead, its own. NULL when out
 * of memory. */
static struct hopdist *relinked(struct hopdist *hd, const struct route_tab *rt, const uint8_t *moved)
{
	struct hopdist *x = calloc(1, sizeof(*x)), *own = hd->owner ? hd->owner : hd;
	if (!x)
		return NULL;
	atomic_init(&x->refs, 1);
	x->pt = rt->pt;
	x->nsw = hd->nsw;
	x->nleaf = hd->nleaf;
	x->nlid = hd->nlid;
	uint32_t apart = 0;
	for (uint32_t k = 0; k < hd->nleaf; k++)
		apart += moved[k] || (hd->ocol && hd->ocol[k]);
	if (apart <= HOPDIST_OCOL_MAX) {
		x->owner = hopdist_ref(own);
		x->lid_leaf = own->lid_leaf;
		x->d = own->d;
		if (!apart)
			return x;
		if (!(x->ocol = calloc(hd->nleaf, sizeof(*x->ocol))) || !(x->okey = malloc(apart * sizeof(*x->okey))))
			goto nomem;
		for (uint32_t k = 0; k < hd->nleaf; k++) {
			const uint8_t *kept = hd->ocol ? hd->ocol[k] : NULL;
			if (!kept && !moved[k])
				continue;
			if (!(x->ocol[k] = malloc(hd->nsw)))
				goto nomem;
			x->okey[x->nocol++] = k;
			if (kept)
				memcpy(x->ocol[k], kept, hd->nsw);
		}
		return x;
	}
	x->lid_leaf = malloc(hd->nlid * sizeof(*x->lid_leaf));
	size_t cells = (size_t)hd->nsw * hd->nleaf;
	x->d = util_alloc_huge(cells, cells);
	if (!x->lid_leaf || !x->d)
		goto nomem;
	memcpy(x->lid_leaf, hd->lid_leaf, hd->nlid * sizeof(*x->lid_leaf));
	memcpy(x->d, hd->d, (size_t)hd->nsw * hd->nleaf);
	for (uint32_t j = 0; j < hd->nocol; j++)
		for (uint32_t sw = 0, k = hd->okey[j]; sw < hd->nsw; sw++)
			x->d[(uint64_t)sw * hd->nleaf + k] = hd->ocol[k][sw];
	return x;
nomem:
	hopdist_free(x);
	return NULL;
}

/* The moved leaves' columns of x that a search found equal to the shared
 * table's again (a cable back where it was) no longer kept apart. */
static void drop_returned(struct hopdist *x, const uint8_t *moved)
{
	uint32_t keep = 0;
	for (uint32_t j = 0; j < x->nocol; j++) {
		uint32_t k = x->okey[j], sw = 0;
		for (; moved[k] && sw < x->nsw; sw++)
			if (x->ocol[k][sw] != x->d[(uint64_t)sw * x->nleaf + k])
				break;
		if (moved[k] && sw == x->nsw) {
			free(x->ocol[k]);
			x->ocol[k] = NULL;
		} else {
			x->okey[keep++] = k;
		}
	}
	x->nocol = keep;
	if (!keep) {
		free(x->ocol);
		free(x->okey);
		x->ocol = NULL;
		x->okey = NULL;
	}
}

/* The leaves of rt as number_leaves gives them: leaf_of[nsw] and the
 * LIDs' leaves, lid_leaf[max_lid + 1]. AN_OK or AN_E_NOMEM. */
static int leaves_of(const struct route_tab *rt, uint32_t **leaf_of, uint32_t **lid_leaf, uint32_t *nleaf)
{
	*leaf_of = malloc(((size_t)rt->nsw + 1) * sizeof(**leaf_of));
	*lid_leaf = malloc(((size_t)rt->max_lid + 1) * sizeof(**lid_leaf));
	if (!*leaf_of || !*lid_leaf) {
		free(*leaf_of);
		free(*lid_leaf);
		*leaf_of = *lid_leaf = NULL;
		return AN_E_NOMEM;
	}
	*nleaf = number_leaves(rt, *leaf_of, *lid_leaf);
	return AN_OK;
}

/* The same leaves, numbered alike (each of rt's at distance 0 from its
 * number, which only the leaf itself is), and the same candidate LIDs? */
static int same_leaves(const struct hopdist *hd, const struct route_tab *rt, const uint32_t *leaf_of,
		       const uint32_t *lid_leaf, uint32_t nleaf)
{
	if (nleaf != hd->nleaf || memcmp(lid_leaf, hd->lid_leaf, hd->nlid * sizeof(*lid_leaf)))
		return 0;
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		if (leaf_of[sw] != ROUTE_NONE && hopdist_at(hd, sw, leaf_of[sw]) != 0)
			return 0;
	return 1;
}

int hopdist_relink(struct hopdist *hd, const struct route_tab *was, const struct route_tab *rt, uint32_t max_moved,
		   uint8_t *moved, struct hopdist **out)
{
	if (hd->pt != was->pt || was->nsw != hd->nsw || rt->nsw != hd->nsw || (size_t)was->max_lid + 1 != hd->nlid ||
	    rt->max_lid != was->max_lid || memcmp(was->sw_node, rt->sw_node, rt->nsw * sizeof(*rt->sw_node)) ||
	    memcmp(was->pt_off, rt->pt_off, rt->nsw * sizeof(*rt->pt_off)))
		return AN_E_INVAL;
	for (uint32_t sw = 0; sw < rt->nsw; sw++)
		if (was->snap->nodes[was->sw_node[sw]].nports != rt->snap->nodes[rt->sw_node[sw]].nports)
			return AN_E_INVAL;
	uint32_t *leaf_of = NULL, *lid_leaf = NULL, *leaf_sw = NULL, *col = NULL, nleaf = 0;
	int rc = leaves_of(rt, &leaf_of, &lid_leaf, &nleaf);
	if (rc)
		return rc;
	struct hopdist *x = NULL;
	int64_t n = 0;
	rc = AN_E_NOTAPPLIC;
	if (!same_leaves(hd, rt, leaf_of, lid_leaf, nleaf))
		goto out;
	rc = AN_E_NOMEM;
	if ((n = moved_leaves(hd, was, rt, leaf_of, moved)) < 0)
		goto out;
	rc = AN_E_NOTAPPLIC;
	if (n > max_moved) /* before the copy and the searches */
		goto out;
	rc = AN_E_NOMEM;
	if (!(x = relinked(hd, rt, moved)))
		goto out;
	rc = AN_OK;
	if (n) {
		if (!(leaf_sw = leaf_switches(leaf_of, rt->nsw, nleaf)) || !(col = malloc((size_t)n * sizeof(*col)))) {
			rc = AN_E_NOMEM;
			goto out;
		}
		for (uint32_t k = 0, i = 0; k < nleaf; k++)
			if (moved[k])
				col[i++] = k;
		rc = fill(x, rt, leaf_sw, col, (uint32_t)n);
		if (!rc && x->owner)
			drop_returned(x, moved);
	}
out:
	free(leaf_of);
	free(lid_leaf);
	free(leaf_sw);
	free(col);
	if (rc) {
		hopdist_free(x);
		return rc;
	}
	*out = x;
	return AN_OK;
}

/* What the per-entry test reads of one switch: its row of distances in
 * dx (with, at nleaf, the INF that lk gives LIDs of no leaf) and, per out
 * port, the distance row of the switch it leads to (NULL where the step
 * is not to a switch: no entry, no link, down, an end port). Rows of the
 * table: wrong for a leaf whose column is kept apart, whose LIDs lk
 * sends to entry_off_apart. */
struct sw_view {
	uint32_t sw;
	const struct snap_node *n;
	const uint32_t *pt;
	const uint8_t *nrow[256];
};

static void view_switch(const struct route_tab *rt, const struct hopdist *hd, uint32_t sw, uint8_t *dx,
			struct sw_view *v)
{
	v->sw = sw;
	v->n = &rt->snap->nodes[rt->sw_node[sw]];
	v->pt = rt->pt + rt->pt_off[sw];
	memcpy(dx, hd->d + (uint64_t)sw * hd->nleaf, hd->nleaf);
	dx[hd->nleaf] = HOPDIST_INF;
	memset(v->nrow, 0, sizeof(v->nrow));
	for (unsigned p = 0; p <= v->n->nports && p < SNAP_LFT_NONE; p++)
		if (v->pt[p] < ROUTE_PT_EP)
			v->nrow[p] = hd->d + (uint64_t)v->pt[p] * hd->nleaf;
}

/* Marks in bad[] the covered LIDs of [l0, l1) (1 <= l0, l1 <= max_lid + 1)
 * the viewed switch does not route along a shortest path: its table read
 * in order (the hardware streams it), against its own row of distances
 * and its neighbours' (L2-sized). A full cover reads every entry of the
 * fabric (193 million at k=56), so the per-entry test is as short as
 * hopdist_closer allows: an entry one step from its leaf is one byte
 * compare. The leaf's own entries (distance 0) take the exact
 * route_step_code path. */
static int entry_off_apart(const struct route_tab *rt, const struct hopdist *hd, const struct sw_view *v,
			   uint8_t p, uint32_t l);

static inline int entry_off(const struct route_tab *rt, const struct hopdist *hd, const struct sw_view *v,
			    const uint8_t *dx, uint32_t nleaf, uint32_t k, uint8_t p, uint32_t l)
{
	if (__builtin_expect(k > nleaf, 0))
		return entry_off_apart(rt, hd, v, p, l);
	uint8_t dd = dx[k];
	uint32_t next = 0;
	if (dd == HOPDIST_INF)
		return 0;
	if (dd)
		return !v->nrow[p] || v->nrow[p][k] != dd - 1;
	int st = route_step_code(v->pt, v->n->nports, p, rt->lid_ep[l], &next);
	return !hopdist_closer(hd, dd, st, next, k);
}

/* entry_off for a LID of a leaf whose column is kept apart (ocol): the
 * rows dx and nrow[] hold are the shared table's, wrong for it. */
static int entry_off_apart(const struct route_tab *rt, const struct hopdist *hd, const struct sw_view *v,
			   uint8_t p, uint32_t l)
{
	uint32_t k = hd->lid_leaf[l], next = 0;
	uint8_t dd = hopdist_at(hd, v->sw, k);
	if (dd == HOPDIST_INF)
		return 0;
	if (dd)
		return !v->nrow[p] || hopdist_at(hd, v->pt[p], k) != dd - 1;
	int st = route_step_code(v->pt, v->n->nports, p, rt->lid_ep[l], &next);
	return !hopdist_closer(hd, dd, st, next, k);
}

static void cover_range(const struct route_tab *rt, const struct hopdist *hd, const struct sw_view *v,
			const uint16_t *lk, const uint8_t *dx, uint32_t l0, uint32_t l1, uint8_t *bad)
{
	/* chunk by chunk: one table lookup per 512 entries, not per entry;
	 * nleaf a local, which bad[]'s byte stores cannot be said to change */
	const uint32_t nleaf = hd->nleaf;
	for (uint32_t run; l0 < l1; l0 += run) {
		const uint8_t *c = snap_lft_span(v->n, l0, &run);
		if (!c || run > l1 - l0) /* past the table: every entry SNAP_LFT_NONE */
			run = l1 - l0;
		for (uint32_t l = l0; l < l0 + run; l++)
			bad[l] |= entry_off(rt, hd, v, dx, nleaf, lk[l], c ? c[l - l0] : SNAP_LFT_NONE, l);
	}
}

/* lk[l]: hd's lid_leaf in 16 bits (hopdist_build refuses more leaves),
 * nleaf where none (dx's INF sentinel), nleaf + 1 for a leaf whose
 * column is kept apart (entry_off_apart): half the bytes every switch
 * streams, one test less per entry. NULL when out of memory. */
static uint16_t *leaf_codes(const struct hopdist *hd)
{
	uint16_t *lk = malloc((size_t)hd->nlid * sizeof(*lk));
	for (size_t l = 0; lk && l < hd->nlid; l++) {
		uint32_t k = hd->lid_leaf[l];
		lk[l] = (uint16_t)(k == ROUTE_NONE ? hd->nleaf : hd->ocol && hd->ocol[k] ? hd->nleaf + 1 : k);
	}
	return lk;
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
	/* cover_range writes bad[l] up to rt's top LID */
	if (rt->pt != hd->pt || rt->nsw != hd->nsw || (size_t)rt->max_lid + 1 != nl)
		return AN_E_INVAL;
	uint16_t *lk = leaf_codes(hd);
	if (!lk)
		return AN_E_NOMEM;
	uint32_t ndone = 0;
	int nomem = 0;
#pragma omp parallel reduction(| : nomem) reduction(+ : ndone)
	{
		uint8_t *mine = calloc(nl, 1), *dx = malloc((size_t)hd->nleaf + 1);
		struct sw_view v;
		nomem |= !mine || !dx;
		/* A switch is done once its whole table is read: what a pause
		 * leaves is exact for the switches marked. */
#pragma omp for schedule(dynamic, 16)
		for (uint32_t sw = sw0; sw < end; sw++)
			if (mine && dx && !c->done[sw] && !AN_CANCELLED(cancel)) {
				view_switch(rt, hd, sw, dx, &v);
				cover_range(rt, hd, &v, lk, dx, 1, rt->max_lid + 1, mine);
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

/* Every checked switch's step to each candidate LID of a moved leaf,
 * against x's distances: whatever was found for them before was found
 * against other distances. */
static void recheck_moved(struct hopcover *x, const struct route_tab *rt, const uint8_t *moved)
{
	const struct hopdist *hd = x->hd;
	for (uint32_t l = 1; l < hd->nlid; l++) {
		uint32_t k = hd->lid_leaf[l];
		if (k == ROUTE_NONE || !moved[k])
			continue;
		x->bad[l] = 0;
		for (uint32_t sw = 0; sw < hd->nsw && !x->bad[l]; sw++)
			if (x->done[sw] && !hopdist_step_ok(rt, hd, sw, (uint16_t)l, k, rt->lid_ep[l]))
				x->bad[l] = 1;
	}
}

/* The entries of one block [l0, l1) of the viewed switch (node) that
 * may have a new verdict: those *mk names (the entries of the block the
 * delta changed; mk NULL: those whose LFT byte differs from was's, the
 * tables before; was NULL too: all of them) or whose port's code changed (chg,
 * by rt->pt_off; NULL: none of this switch's). A cable fault's delta
 * rewrites 4.8 of a block's 64 entries on average (k=56): the others keep
 * their verdicts, as the entries of blocks it did not bring do. A block
 * is at most 64 entries (SNAP_DELTA_BLOCK). */
static void carry_block(const struct route_tab *rt, const struct hopdist *hd, const struct sw_view *v,
			const uint16_t *lk, const uint8_t *dx, const struct route_tab *was, const uint8_t *chg,
			const uint64_t *mk, uint32_t node, uint32_t l0, uint32_t l1, uint8_t *bad)
{
	uint32_t run, wrun = 0;
	const uint8_t *now = snap_lft_span(v->n, l0, &run);
	const uint8_t *before = was && !mk ? snap_lft_span(&was->snap->nodes[node], l0, &wrun) : NULL;
	if (!now || run < l1 - l0 || (!mk && (!before || wrun < l1 - l0))) {
		cover_range(rt, hd, v, lk, dx, l0, l1, bad);
		return;
	}
	/* The apply's mask spares reading the old table: a cache miss a
	 * block, 262,195 of them in a k=56 cable fault. */
	uint64_t m = mk ? (*mk >> (l0 % SNAP_DELTA_BLOCK)) & snap_lft_first(l1 - l0)
			: snap_lft_diff_mask(before, now, l1 - l0);
	for (uint32_t l = l0; chg && l < l1; l++)
		if (now[l - l0] <= v->n->nports && chg[now[l - l0]])
			m |= 1ull << (l - l0);
	for (; m; m &= m - 1) {
		uint32_t l = l0 + (uint32_t)__builtin_ctzll(m);
		bad[l] |= entry_off(rt, hd, v, dx, hd->nleaf, lk[l], now[l - l0], l);
	}
}

/* One switch's share of a carry: the delta's blocks [i0, i1) of its
 * list, and with all set every block of the switch's table (chg marks a
 * port of it: any entry may now step elsewhere). */
struct carry_unit {
	uint32_t node, i0, i1;
	int all;
};

/* The units of a carry, in node order (route.c's build_eps numbers the
 * switches so, and route_relink and route_repoint keep it): one
 * per switch of rt the delta brought blocks of or chg (may be NULL) marks
 * a port of; at most one per switch, so a cable fault's 262,000 blocks
 * at k=56 need 3,920 (their list is not copied). NULL: out of memory. */
static struct carry_unit *carry_units(const struct route_tab *rt, const uint8_t *chg, const uint64_t *block,
				      uint32_t n, uint32_t *nu, uint64_t *work)
{
	*work = n;
	struct carry_unit *u = malloc(((size_t)rt->nsw + 1) * sizeof(*u));
	uint32_t k = 0, i = 0;
	for (uint32_t sw = 0; u && sw < rt->nsw; sw++) {
		uint32_t node = rt->sw_node[sw], i0;
		while (i < n && block[i] >> 16 < node) /* not a switch of rt: nothing to carry */
			i++;
		for (i0 = i; i < n && block[i] >> 16 == node; i++)
			;
		const struct snap_node *nd = &rt->snap->nodes[node];
		int all = chg && memchr(chg + rt->pt_off[sw], 1, nd->nports + 1u) != NULL;
		if (i > i0 || all)
			u[k++] = (struct carry_unit){ node, i0, i, all };
		*work += all ? (nd->lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK : 0;
	}
	*nu = k;
	return u;
}

/* The entries of one block [l0, l1) of a unit (block b of its switch),
 * clipped to rt's LIDs. */
static void carry_lids(const struct route_tab *rt, uint32_t b, uint32_t *l0, uint32_t *l1)
{
	*l0 = b * SNAP_DELTA_BLOCK;
	*l1 = *l0 + SNAP_DELTA_BLOCK;
	*l0 = *l0 ? *l0 : 1;
	*l1 = *l1 < rt->max_lid + 1 ? *l1 : rt->max_lid + 1;
}

/* A unit's blocks are lines of its table no cache holds (the apply's
 * copies went through since): each asked for this many blocks ahead. */
#define CARRY_AHEAD 8

/* The entries of block[0 .. n) (sorted by node, as snap_delta_info lists
 * them), and of every block of a switch chg marks a port of, at the
 * switches x has checked, tested as cover_range tests them (only those
 * carry_block says may have changed), switch by switch over the cores.
 * Marks x->bad. AN_OK or AN_E_NOMEM. */
static int carry_blocks(struct hopcover *x, const struct route_tab *rt, const struct route_tab *was,
			const uint8_t *chg, const uint64_t *block, const uint64_t *mask, uint32_t n)
{
	const struct hopdist *hd = x->hd;
	uint32_t nu = 0;
	uint64_t work = 0; /* blocks to visit */
	struct carry_unit *unit = carry_units(rt, chg, block, n, &nu, &work);
	uint16_t *lk = leaf_codes(hd);
	int nomem = !unit || !lk;
	static const uint64_t none = 0; /* a block the delta did not bring changed no byte */
#pragma omp parallel if (work >= 1024) reduction(| : nomem)
	{
		uint8_t *mine = calloc(hd->nlid, 1), *dx = malloc((size_t)hd->nleaf + 1);
		struct sw_view v;
		nomem |= !mine || !dx;
#pragma omp for schedule(dynamic, 4)
		for (uint32_t g = 0; g < nu; g++) {
			const struct carry_unit *un = &unit[g];
			uint32_t sw = rt->sw_of_node[un->node], l0, l1;
			if (!mine || !dx || nomem || sw >= hd->nsw || !x->done[sw])
				continue;
			view_switch(rt, hd, sw, dx, &v);
			/* Most switches have no port whose code changed: their
			 * entries are tested only where their bytes changed. */
			const uint8_t *pc = un->all ? chg + rt->pt_off[sw] : NULL;
			for (uint32_t i = un->i0; !un->all && i < un->i1; i++) {
				if (i + CARRY_AHEAD < un->i1)
					snap_lft_prefetch(v.n, (uint32_t)(block[i + CARRY_AHEAD] & 0xFFFF) *
								       SNAP_DELTA_BLOCK);
				carry_lids(rt, (uint32_t)(block[i] & 0xFFFF), &l0, &l1);
				if (l0 < l1)
					carry_block(rt, hd, &v, lk, dx, was, NULL, mask ? &mask[i] : NULL, un->node, l0,
						    l1, mine);
			}
			for (uint32_t b = 0, i = un->i0; un->all && b * SNAP_DELTA_BLOCK < v.n->lft_len; b++) {
				const uint64_t *mk = mask ? &none : NULL;
				if (i < un->i1 && (block[i] & 0xFFFF) == b) {
					mk = mask ? &mask[i] : NULL;
					i++;
				}
				carry_lids(rt, b, &l0, &l1);
				if (l0 < l1)
					carry_block(rt, hd, &v, lk, dx, was, pc, mk, un->node, l0, l1, mine);
			}
		}
#pragma omp critical
		for (size_t l = 0; mine && l < hd->nlid; l++)
			x->bad[l] |= mine[l];
		free(mine);
		free(dx);
	}
	free(unit);
	free(lk);
	return nomem ? AN_E_NOMEM : AN_OK;
}

int hopcover_carry(const struct hopcover *c, struct hopdist *hd, const uint8_t *moved, const struct route_tab *rt,
		   const struct route_tab *was, const uint8_t *chg, const uint64_t *block, const uint64_t *mask,
		   uint32_t n, struct hopcover **out)
{
	struct hopcover *x;
	if (hd->pt != rt->pt || hd->nsw != c->hd->nsw || hd->nlid != c->hd->nlid || hd->nleaf != c->hd->nleaf ||
	    (size_t)rt->max_lid + 1 != hd->nlid)
		return AN_E_INVAL;
	if (hopcover_new(hd, &x))
		return AN_E_NOMEM;
	memcpy(x->done, c->done, hd->nsw);
	memcpy(x->bad, c->bad, hd->nlid);
	x->ndone = c->ndone;
	if (moved)
		recheck_moved(x, rt, moved);
	/* The switches not yet checked will be, against the tables of their
	 * time; those checked keep their verdicts where their entries did
	 * not change. A failed step marks its LID; none is unmarked, so a
	 * LID whose routes became shortest again stays uncovered (its
	 * proofs walk) until a full build makes a new cover. */
	if (carry_blocks(x, rt, was, chg, block, mask, n)) {
		hopcover_free(x);
		return AN_E_NOMEM;
	}
	if (hopcover_complete(x))
		count_covered(x);
	*out = x;
	return AN_OK;
}
