/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fabric.c - see fabric.h.
 */
#include "fabric.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "util.h"

static struct fabric_index *index_new(int threads, char err[AN_ERR_LEN])
{
	struct fabric_index *x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, AN_ERR_LEN, "out of memory");
		return NULL;
	}
	/* The builder thread is the only one that runs OpenMP regions, so
	 * setting its team size here affects nothing else. */
	if (threads > 0)
		omp_set_num_threads(threads);
	return x;
}

/* A distance table costs switches x leaves bytes (6 MB at k=56); past
 * this the walks are cheaper than the memory. */
#define HOPDIST_MAX_BYTES ((uint64_t)256 << 20)

static uint64_t route_touch(const struct route_tab *rt)
{
	uint64_t rails = 0;
	for (uint32_t h = 0; h < rt->nhosts; h++)
		rails += rt->hosts[h].nrails;
	/* as route.c sizes pt: every switch's ports and port 0 */
	size_t npt = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1u : 0;
	uint64_t n = util_touch(rt->eps, (size_t)rt->neps * sizeof(*rt->eps)) +
		     util_touch(rt->hosts, (size_t)rt->nhosts * sizeof(*rt->hosts)) +
		     util_touch(rt->rails, (size_t)rails * sizeof(*rt->rails)) +
		     util_touch(rt->lid_ep, ((size_t)rt->max_lid + 1) * sizeof(*rt->lid_ep)) +
		     util_touch(rt->guid_ep, (size_t)rt->nguid * sizeof(*rt->guid_ep)) +
		     util_touch(rt->sw_node, (size_t)rt->nsw * sizeof(*rt->sw_node)) +
		     util_touch(rt->sw_of_node, (size_t)rt->snap->nnodes * sizeof(*rt->sw_of_node)) +
		     util_touch(rt->pt_off, (size_t)rt->nsw * sizeof(*rt->pt_off)) +
		     util_touch(rt->pt, npt * sizeof(*rt->pt)) +
		     util_touch(rt->swlft, (size_t)rt->nsw * sizeof(*rt->swlft));
	if (rt->pt_base && rt->pt_base != rt->pt)
		n += util_touch(rt->pt_base, npt * sizeof(*rt->pt_base));
	return n;
}

static uint64_t hier_touch(const struct hier *h)
{
	return util_touch(h->clusters, (size_t)h->nclusters * sizeof(*h->clusters)) +
	       util_touch(h->host_parent, (size_t)h->nhosts * sizeof(*h->host_parent)) +
	       util_touch(h->anc, (size_t)h->nhosts * h->depth * sizeof(*h->anc)) +
	       util_touch(h->names, (size_t)h->nclusters * sizeof(*h->names)) +
	       util_touch(h->swnames, (size_t)h->nsw * sizeof(*h->swnames));
}

uint64_t fabric_index_touch(const struct fabric_index *x, const atomic_int *stop)
{
	uint64_t n = 0;
	if (!x)
		return 0;
	if (x->rt)
		n += route_touch(x->rt);
	if (x->hier && !(stop && atomic_load_explicit(stop, memory_order_relaxed)))
		n += hier_touch(x->hier);
	const struct hopcover *c = x->hc;
	if (c && !(stop && atomic_load_explicit(stop, memory_order_relaxed))) {
		const struct hopdist *d = c->hd;
		n += util_touch(c->done, (size_t)d->nsw * sizeof(*c->done)) +
		     util_touch(c->bad, (size_t)d->nlid * sizeof(*c->bad)) + hopdist_touch(d);
	}
	return n;
}

int fabric_index_prepare(struct fabric_index *x, const atomic_int *cancel)
{
	if (x->cover_rc)
		return x->cover_rc;
	if (!x->hc) {
		struct hopdist *hd = NULL;
		int rc = hopdist_build(x->rt, HOPDIST_MAX_BYTES, &hd);
		if (!rc)
			rc = hopcover_new(hd, &x->hc);
		hopdist_free(hd);
		if (rc == AN_E_RANGE)
			x->cover_rc = rc;
		if (rc)
			return rc;
	}
	if (!hopcover_complete(x->hc)) {
		int rc = hopcover_run(x->rt, x->hc, 0, x->rt->nsw, cancel);
		if (rc)
			return rc;
	}
	return x->hc->covered ? AN_OK : AN_E_NOTAPPLIC;
}

/* x's hierarchy, its hop table by distance where x's tables route along
 * shortest paths: the cover that makes a delta's proof cheap costs a pass
 * over the tables (~0.3 s of CPU at k=56), the hop table it replaces a
 * walk per leaf and host (~0.9 s). Without a cover (none possible, out of
 * memory) the walks make it. */
static int build_hier(struct fabric_index *x)
{
	int rc = fabric_index_prepare(x, NULL);
	if (rc && rc != AN_E_NOTAPPLIC && x->hc && !hopcover_complete(x->hc)) {
		hopcover_free(x->hc);
		x->hc = NULL;
	}
	return hier_build_cover(x->rt, x->hc, &x->hier);
}

int fabric_index_build(const struct snap *s, const struct route_namemap *map, int threads,
		       struct fabric_index **out, char err[AN_ERR_LEN])
{
	struct fabric_index *x = index_new(threads, err);
	if (!x)
		return AN_E_NOMEM;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		x->switches += n->type == SNAP_NODE_SWITCH;
		x->cas += n->type == SNAP_NODE_CA;
		x->routers += n->type == SNAP_NODE_ROUTER;
	}
	x->links = snap_count_links(s);
	uint64_t t0 = snap_now_us();
	x->map = map;
	int rc = route_build(s, map, &x->rt);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "route index: %s", an_strerror(rc));
		goto bad;
	}
	uint64_t t1 = snap_now_us();
	rc = build_hier(x);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "hierarchy: %s", an_strerror(rc));
		goto bad;
	}
	x->route_ms = (double)(t1 - t0) / 1000.0;
	x->hier_ms = (double)(snap_now_us() - t1) / 1000.0;
	*out = x;
	return AN_OK;
bad:
	fabric_index_free(x);
	return rc;
}

void fabric_index_free(struct fabric_index *x)
{
	if (!x)
		return;
	hier_free(x->hier);
	route_free(x->rt);
	hopcover_free(x->hc);
	free(x);
}

/* Hop counts to one destination in one generation's tables, memoised per
 * LID: val[] is valid for switches whose stamp is cur. */
struct hop_memo {
	uint16_t *val;
	uint32_t *stamp, *stack;
	uint32_t cur;
};

#define MEMO_PENDING 0xFFFEu

/* Switches traversed from switch x (entered from outside) to lid, owned by
 * end port dst, in rt's tables; ROUTE_HOPS_INF when that walk fails or
 * loops. Iterative, as route.c's dp_eval, for the same reason. */
static uint16_t memo_hops(const struct route_tab *rt, struct hop_memo *m, uint32_t x, uint16_t lid, uint32_t dst)
{
	uint32_t top = 0, r;
	for (;;) {
		if (m->stamp[x] == m->cur) {
			r = m->val[x] == MEMO_PENDING ? ROUTE_HOPS_INF : m->val[x];
			break;
		}
		m->stamp[x] = m->cur;
		m->val[x] = MEMO_PENDING;
		m->stack[top++] = x;
		uint8_t port;
		uint32_t next = 0;
		int st = route_step(rt, x, lid, dst, &port, &next);
		if (st == ROUTE_STEP_NEXT) {
			x = next;
			continue;
		}
		r = st == ROUTE_STEP_DONE ? 0 : ROUTE_HOPS_INF;
		break;
	}
	while (top) {
		if (r != ROUTE_HOPS_INF)
			r = r + 1 >= MEMO_PENDING ? ROUTE_HOPS_INF : r + 1;
		m->val[m->stack[--top]] = (uint16_t)r;
	}
	return (uint16_t)r;
}

/*
 * Does the changed entry (switch sw, lid) keep every hop count? With d the
 * old tables' hop counts and d' the new ones': when d(sw) is finite, the
 * new entry must deliver if d(sw) = 1, else lead to a switch nxt with
 * d(nxt) = d(sw) - 1; when d(sw) is infinite, d'(sw) must be too. If every
 * changed entry does, induction on d shows that a switch with a finite d
 * keeps it (its next switch, changed or not, is one closer by d), and a
 * switch with an infinite d cannot reach one with a finite d' (the last
 * switch before it on the way would be a changed entry with d infinite
 * and d' finite); so no hop count to any LID changed. Conversely, if none
 * changed, every changed entry passes: the check is exact. Both tables
 * number switches and end ports alike (same_ends); a changed entry is any
 * step that differs, its LFT byte or its port's link (step_changed).
 */
static int entry_holds(const struct route_tab *ra, const struct route_tab *rb, struct hop_memo *ma,
		       struct hop_memo *mb, uint32_t sw, uint16_t lid)
{
	uint32_t dst = rb->lid_ep[lid];
	uint16_t d = memo_hops(ra, ma, sw, lid, dst);
	if (d == ROUTE_HOPS_INF)
		return memo_hops(rb, mb, sw, lid, dst) == ROUTE_HOPS_INF;
	uint8_t port;
	uint32_t next = 0;
	int st = route_step(rb, sw, lid, dst, &port, &next);
	if (st == ROUTE_STEP_DONE)
		return d == 1;
	return st == ROUTE_STEP_NEXT && memo_hops(ra, ma, next, lid, dst) == d - 1;
}

/* Do ra and rb number switches and end ports alike, with the same hosts,
 * LIDs, leaves and port states at the end ports? Then a step's switch and
 * end-port indices mean the same in both, and what the hierarchy reads
 * besides hop counts and links (hosts, their leaves) is the same. */
static int same_ends(const struct route_tab *ra, const struct route_tab *rb)
{
	/* one set of tables (route_repoint, route_relink): equal by making */
	if (ra->shared == rb->shared)
		return 1;
	if (ra->nsw != rb->nsw || ra->neps != rb->neps || ra->nhosts != rb->nhosts || ra->max_lid != rb->max_lid ||
	    memcmp(ra->sw_node, rb->sw_node, ra->nsw * sizeof(*ra->sw_node)) ||
	    memcmp(ra->pt_off, rb->pt_off, ra->nsw * sizeof(*ra->pt_off)) ||
	    memcmp(ra->lid_ep, rb->lid_ep, ((size_t)ra->max_lid + 1) * sizeof(*ra->lid_ep)))
		return 0;
	for (uint32_t e = 0; e < ra->neps; e++) {
		const struct route_ep *x = &ra->eps[e], *y = &rb->eps[e];
		if (x->guid != y->guid || x->node != y->node || x->host != y->host || x->leaf != y->leaf ||
		    x->lid != y->lid || x->port != y->port || x->lmc != y->lmc || x->up != y->up)
			return 0;
	}
	for (uint32_t h = 0; h < ra->nhosts; h++)
		if (ra->hosts[h].rail0 != rb->hosts[h].rail0 || ra->hosts[h].nrails != rb->hosts[h].nrails ||
		    strcmp(ra->hosts[h].name, rb->hosts[h].name) ||
		    memcmp(ra->rails + ra->hosts[h].rail0, rb->rails + rb->hosts[h].rail0,
			   ra->hosts[h].nrails * sizeof(*ra->rails)))
			return 0;
	return 1;
}
/*
 * After a delta that changed ports (a cable down or up): marks in *chg
 * (by rb->pt_off) every switch port whose code differs between ra and rb,
 * and lists in *extra[*nextra] every block of the switches with a marked
 * port, sorted: their every entry may step elsewhere. A cable marks two
 * switches, some 1,400 blocks at k=56; the delta's own blocks (262,000
 * in a cable fault) are not copied beside them, as 4.2 MB of fresh pages
 * cost 10-15 ms on the lab's VM: hops_differ merges the two lists
 * (merge_blocks), hopcover_carry reads chg. -1: out of memory.
 */
static int links_changed(const struct route_tab *ra, const struct route_tab *rb, uint8_t **chg, uint64_t **extra,
			 uint32_t *nextra)
{
	const struct snap *s = rb->snap;
	size_t npt = 0, nx = 0;
	for (uint32_t sw = 0; sw < rb->nsw; sw++)
		npt += s->nodes[rb->sw_node[sw]].nports + 1u;
	uint8_t *c = calloc(npt + 1, 1);
	if (!c)
		return -1;
	for (uint32_t sw = 0; sw < rb->nsw; sw++) {
		const struct snap_node *n = &s->nodes[rb->sw_node[sw]];
		int any = 0;
		for (uint32_t p = rb->pt_off[sw], e = p + n->nports; p <= e; p++)
			any |= c[p] = ra->pt[p] != rb->pt[p];
		if (any)
			nx += (n->lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
	}
	uint64_t *x = malloc((nx + 1) * sizeof(*x));
	if (!x) {
		free(c);
		return -1;
	}
	nx = 0;
	for (uint32_t sw = 0; sw < rb->nsw; sw++) {
		const struct snap_node *nd = &s->nodes[rb->sw_node[sw]];
		if (!memchr(c + rb->pt_off[sw], 1, nd->nports + 1u))
			continue;
		for (uint32_t k = 0; k * SNAP_DELTA_BLOCK < nd->lft_len; k++)
			x[nx++] = (uint64_t)rb->sw_node[sw] << 16 | k;
	}
	*chg = c;
	*extra = x;
	*nextra = (uint32_t)nx;
	return 0;
}

/*
 * The blocks of a[na] and b[nb] (both sorted, as snap_delta_apply and
 * links_changed list them) each once, in order, keeping with walk[] (by
 * LID block, nlb of them; NULL: all) only those whose LID block it marks,
 * in *out[*nout] (malloc'd, sized by what is kept: the cover leaves a
 * cable fault's proof a few hundred of its 262,000). -1: out of memory.
 */
static int merge_blocks(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb, const uint8_t *walk,
			uint32_t nlb, uint64_t **out, uint32_t *nout)
{
	uint64_t *o = NULL;
	uint32_t u = 0;
	for (int fill = 0; fill < 2; fill++) {
		if (fill && !(o = malloc(((size_t)u + 1) * sizeof(*o))))
			return -1;
		uint64_t last = UINT64_MAX;
		u = 0;
		for (uint32_t i = 0, j = 0; i < na || j < nb;) {
			uint64_t v = j >= nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
			if (v == last || (walk && ((v & 0xFFFF) >= nlb || !walk[v & 0xFFFF])))
				continue;
			last = v;
			if (fill)
				o[u] = v;
			u++;
		}
	}
	*out = o;
	*nout = u;
	return 0;
}

/* What hops_differ proves. With leaf NULL: that no hop count from any
 * switch to any LID changed (exact for that table). With leaf[nleaf] (the
 * switches hosts' default ports are cabled to, up) and want[] (the LIDs of
 * those ports): that none from a leaf to a host changed, exact for the
 * table the hierarchy reads; a cable down between an upper switch and a
 * leaf changes the upper switch's counts to the leaf's hosts (it must go
 * round), not the leaves' (they go up another way). chg (may be NULL)
 * marks the switch ports whose codes changed, by rb->pt_off; ra and rb
 * then have same_ends(), and extra[nextra] lists every block of the
 * switches it marks (links_changed). */
struct proof {
	const struct route_tab *ra, *rb;
	const uint8_t *chg, *want;
	const uint64_t *extra;
	uint32_t nextra;
	const uint32_t *leaf;
	uint32_t nleaf;
	/* complete: the LIDs ra routes along shortest paths, its distances
	 * holding for rb's links too (chg marks where those changed) but to
	 * the leaves moved[] marks (NULL: none), whose LIDs walk */
	const struct hopcover *hc;
	const uint8_t *moved;
	/* hc carried to rb's tables (hopcover_carry), or NULL. A LID hc
	 * covers, moved[] does not mark and next does not mark keeps every
	 * hop count. One next marks (a step that no longer goes one closer)
	 * has a changed hop count at some switch: for the all-switch proof
	 * it differs; the leaf-to-host one walks it, as a changed count
	 * that no leaf's route passes keeps the clusters. */
	const struct hopcover *next;
};

/* Does the step at switch node `node` to lid differ between the tables?
 * Its LFT byte, or the code of the port it names when chg marks it. */
static int step_changed(const struct proof *p, uint32_t node, uint32_t l)
{
	const struct snap_node *na = &p->ra->snap->nodes[node], *nb = &p->rb->snap->nodes[node];
	if (l >= nb->lft_len)
		return l < na->lft_len;
	uint8_t e = snap_lft_get(nb, l);
	if (l >= na->lft_len || snap_lft_get(na, l) != e)
		return 1;
	uint32_t sw = p->rb->sw_of_node[node];
	return p->chg && sw != ROUTE_NONE && e <= nb->nports && p->chg[p->rb->pt_off[sw] + e];
}

/* The leaves' walks to one LID start at lines of two tables no cache
 * holds: each leaf's asked for this many leaves ahead. */
#define WALK_AHEAD 8

static inline void ask_leaf(const struct proof *p, uint32_t j, uint32_t l)
{
	if (j >= p->nleaf)
		return;
	uint32_t node = p->rb->sw_node[p->leaf[j]];
	snap_lft_prefetch(&p->ra->snap->nodes[node], l);
	snap_lft_prefetch(&p->rb->snap->nodes[node], l);
}

/* Does a hop count p covers to LID l differ? The changed steps of nodes
 * by_lid[k0..k1) are checked locally first (entry_holds: when all hold,
 * no switch's count to l changed); where one fails, the leaf-to-host proof
 * compares every leaf's walk. m[] are l's memos, old tables then new. */
static int lid_differs(const struct proof *p, struct hop_memo m[2], const uint64_t *by_lid, uint32_t k0,
		       uint32_t k1, uint32_t l)
{
	for (uint32_t k = k0; k < k1; k++) {
		uint32_t node = (uint32_t)by_lid[k], sw = p->rb->sw_of_node[node];
		if (!step_changed(p, node, l) ||
		    (sw != ROUTE_NONE && entry_holds(p->ra, p->rb, &m[0], &m[1], sw, (uint16_t)l)))
			continue;
		if (!p->leaf)
			return 1;
		if (!p->want[l])
			return 0;
		uint32_t dst = p->rb->lid_ep[l];
		for (uint32_t j = 0; j < WALK_AHEAD; j++)
			ask_leaf(p, j, l);
		for (uint32_t j = 0; j < p->nleaf; j++) {
			ask_leaf(p, j + WALK_AHEAD, l);
			if (memo_hops(p->ra, &m[0], p->leaf[j], (uint16_t)l, dst) !=
			    memo_hops(p->rb, &m[1], p->leaf[j], (uint16_t)l, dst))
				return 1;
		}
		return 0;
	}
	return 0;
}

/* lid_differs for a LID p->hc covers (leaf index k), which the old tables
 * route along shortest paths: the old hop count from a switch is its
 * distance plus one, so entry_holds reduces to the changed step going one
 * closer (hopdist_step_ok), with no walk. */
static int lid_differs_by_distance(const struct proof *p, const uint64_t *by_lid, uint32_t k0, uint32_t k1,
				   uint32_t l, uint32_t k)
{
	uint32_t dst = p->rb->lid_ep[l];
	for (uint32_t i = k0; i < k1; i++) {
		uint32_t node = (uint32_t)by_lid[i], sw = p->rb->sw_of_node[node];
		if (!step_changed(p, node, l))
			continue;
		if (sw == ROUTE_NONE || !hopdist_step_ok(p->rb, p->hc->hd, sw, (uint16_t)l, k, dst))
			return 1;
	}
	return 0;
}

/* Does LID l's hop count matter to p? The leaf-to-host proof wants the
 * hosts' alone: for any other LID lid_differs says 0 whatever it walks. */
static int proved(const struct proof *p, uint32_t l)
{
	return !p->leaf || p->want[l];
}

/* The leaf index of LID l when p decides it by distance, else
 * ROUTE_NONE. */
static uint32_t covered_leaf(const struct proof *p, uint32_t l)
{
	uint32_t k = p->hc ? hopcover_leaf(p->hc, l) : ROUTE_NONE;
	if (k != ROUTE_NONE && p->moved && p->moved[k])
		return ROUTE_NONE;
	/* marked after the change: the leaf-to-host proof walks it */
	if (k != ROUTE_NONE && p->next && p->leaf && p->next->bad[l])
		return ROUTE_NONE;
	return k;
}

/* The LIDs p->next decides: 1 when one of them differs; else 0 with
 * (*out)[*nout] the blocks of block[n] and p->extra whose LID block holds
 * a LID it does not decide (a switch's, a moved leaf's host, one next
 * marks under the leaf-to-host proof), which walk. -1: out of memory. */
static int decide_by_cover(const struct proof *p, const uint64_t *block, uint32_t n, uint64_t **out,
			   uint32_t *nout)
{
	const struct route_tab *rb = p->rb;
	const uint32_t nlb = rb->max_lid / SNAP_DELTA_BLOCK + 1;
	uint8_t *walk = calloc(nlb, 1);
	*out = NULL;
	*nout = 0;
	int rc = walk ? 0 : -1;
	for (uint32_t l = 1; !rc && l <= rb->max_lid; l++) {
		if (rb->lid_ep[l] == ROUTE_NONE || !proved(p, l))
			continue;
		if (covered_leaf(p, l) == ROUTE_NONE)
			walk[l / SNAP_DELTA_BLOCK] = 1;
		else if (p->next->bad[l])
			rc = 1;
	}
	if (!rc)
		rc = merge_blocks(block, n, p->extra, p->nextra, walk, nlb, out, nout);
	free(walk);
	return rc;
}

/* block[n] (node << 16 | LID block, sorted) regrouped by LID block into
 * by_lid (LID block << 32 | node, sorted) with grp[] the start of each
 * group and grp[ngrp] = n; returns ngrp, UINT32_MAX when out of memory. A
 * counting sort: the input is in node order, so each bucket keeps it, and
 * a cable fault's 56,000 blocks took 4-5 ms through qsort. */
static uint32_t group_by_lid(const uint64_t *block, uint32_t n, uint64_t *by_lid, uint32_t *grp)
{
	uint32_t nb = 0, ngrp = 0;
	for (uint32_t k = 0; k < n; k++)
		nb = (block[k] & 0xFFFF) >= nb ? (uint32_t)(block[k] & 0xFFFF) + 1 : nb;
	uint32_t *at = calloc((size_t)nb + 1, sizeof(*at));
	if (!at)
		return UINT32_MAX;
	for (uint32_t k = 0; k < n; k++)
		at[(block[k] & 0xFFFF) + 1]++;
	for (uint32_t b = 0; b < nb; b++) {
		if (at[b + 1])
			grp[ngrp++] = at[b];
		at[b + 1] += at[b];
	}
	grp[ngrp] = n;
	for (uint32_t k = 0; k < n; k++)
		by_lid[at[block[k] & 0xFFFF]++] = (block[k] & 0xFFFF) << 32 | block[k] >> 16;
	free(at);
	return ngrp;
}

/* Is a hop count p covers different, the steps differing only in the LFT
 * blocks listed and p->extra's? Blocks are taken by LID block, so that
 * the walks of one LID block share their 64-byte LFT lines, and each
 * LID's walks are memoised over all switches. -1: out of memory. */
static int hops_differ(const struct proof *p, const uint64_t *block, uint32_t n)
{
	const struct route_tab *rb = p->rb;
	uint64_t *walked = NULL;
	if (p->next || p->nextra) {
		int rc = p->next ? decide_by_cover(p, block, n, &walked, &n)
				 : merge_blocks(block, n, p->extra, p->nextra, NULL, 0, &walked, &n);
		if (rc)
			return rc;
		block = walked;
	}
	uint64_t *by_lid = malloc(((size_t)n + 1) * sizeof(*by_lid));
	uint32_t *grp = malloc(((size_t)n + 1) * sizeof(*grp));
	uint32_t ngrp = by_lid && grp ? group_by_lid(block, n, by_lid, grp) : UINT32_MAX;
	if (ngrp == UINT32_MAX) {
		free(by_lid);
		free(grp);
		free(walked);
		return -1;
	}
	const uint32_t nsw = rb->nsw ? rb->nsw : 1;
	int differ = 0;
	/* Below ~1,000 blocks (a few ms of walks) one thread is quicker than
	 * waking a team, whose barrier waits for its slowest thread on a
	 * loaded machine. */
#pragma omp parallel if (n >= 1024) reduction(| : differ)
	{
		struct hop_memo m[2];
		for (int i = 0; i < 2; i++)
			m[i] = (struct hop_memo){ malloc(nsw * sizeof(*m[i].val)), calloc(nsw, sizeof(*m[i].stamp)),
						  malloc(nsw * sizeof(*m[i].stack)), 0 };
		if (!m[0].val || !m[0].stamp || !m[0].stack || !m[1].val || !m[1].stamp || !m[1].stack)
			differ = 1;
#pragma omp for schedule(dynamic, 1)
		for (uint32_t g = 0; g < ngrp; g++) {
			uint32_t l0 = (uint32_t)(by_lid[grp[g]] >> 32) * SNAP_DELTA_BLOCK;
			for (uint32_t l = l0; l < l0 + SNAP_DELTA_BLOCK && !differ; l++) {
				/* A LID nobody owns is no host's or switch's destination. */
				if (l > rb->max_lid || rb->lid_ep[l] == ROUTE_NONE || !proved(p, l))
					continue;
				uint32_t k = covered_leaf(p, l);
				if (k != ROUTE_NONE) {
					if (!p->next) /* decided already when there is one */
						differ = lid_differs_by_distance(p, by_lid, grp[g], grp[g + 1], l, k);
					continue;
				}
				m[0].cur++;
				m[1].cur++;
				differ = lid_differs(p, m, by_lid, grp[g], grp[g + 1], l);
			}
		}
		for (int i = 0; i < 2; i++) {
			free(m[i].val);
			free(m[i].stamp);
			free(m[i].stack);
		}
	}
	free(by_lid);
	free(grp);
	free(walked);
	return differ;
}

/* The leaves and host LIDs of p's leaf-to-host proof, from rb. -1: out of
 * memory or a host without a LID (not worth proving: rebuild). */
static int leaf_proof(struct proof *p, uint32_t **leaf, uint8_t **want)
{
	const struct route_tab *rb = p->rb;
	uint8_t *isleaf = calloc((size_t)rb->nsw + 1, 1);
	*leaf = malloc(((size_t)rb->nsw + 1) * sizeof(**leaf));
	*want = calloc((size_t)rb->max_lid + 1, 1);
	int rc = isleaf && *leaf && *want ? 0 : -1;
	p->nleaf = 0;
	for (uint32_t x = 0; !rc && x < rb->nhosts; x++) {
		const struct route_ep *e = &rb->eps[route_host_ep(rb, x)];
		if (!e->lid || e->lid > rb->max_lid) {
			rc = -1;
			break;
		}
		(*want)[e->lid] = 1;
		uint32_t sw = e->up == AN_OK && e->leaf != ROUTE_NONE ? rb->sw_of_node[e->leaf] : ROUTE_NONE;
		if (sw != ROUTE_NONE && !isleaf[sw]) {
			isleaf[sw] = 1;
			(*leaf)[p->nleaf++] = sw;
		}
	}
	free(isleaf);
	p->leaf = *leaf;
	p->want = *want;
	return rc;
}

/* The leaves whose distances a carried cover may have moved: their LIDs
 * are checked again at every switch and walked by the proof, each leaf
 * about 1/nleaf of a whole cover pass (180 ms at k=56). Past that, the
 * preparation thread makes the cover off the serving path. */
#define RELINK_MOVED_MAX(nleaf) ((nleaf) / 64 > 4 ? (nleaf) / 64 : 4)

/* old's complete cover when its distances can be carried to x's links,
 * with *hd the distances for x's links and (*moved)[leaf] the leaves
 * whose distances changed (a cable down or back changes a few leaves'
 * distances from the switches it joined); else NULL. */
static struct hopcover *relinked_cover(const struct fabric_index *old, const struct fabric_index *x,
				       struct hopdist **hd, uint8_t **moved)
{
	*hd = NULL;
	*moved = NULL;
	if (!hopcover_complete(old->hc) || old->hc->hd->pt != old->rt->pt ||
	    !(*moved = malloc((size_t)old->hc->hd->nleaf + 1)))
		return NULL;
	if (hopdist_relink(old->hc->hd, old->rt, x->rt, RELINK_MOVED_MAX(old->hc->hd->nleaf), *moved, hd) != AN_OK) {
		free(*moved);
		*moved = NULL;
		return NULL;
	}
	return old->hc;
}

/* The hierarchy of x (its route index built anew or relinked) after a
 * delta that changed ports, or with another name map: old's clusters, renamed, when
 * the hosts are the same and no hop count changed, else built. Where old's
 * cover holds for the new links, the proof is by distance and the cover
 * is carried over every block the delta brought and every block of a
 * switch whose links changed, in them over the entries whose byte or
 * whose port's code changed (hopcover_carry). */
static int hier_renamed(const struct fabric_index *old, struct fabric_index *x,
			    const struct snap_delta_info *info, int *reused)
{
	uint8_t *chg = NULL, *want = NULL;
	uint64_t *extra = NULL;
	uint32_t nextra = 0, *leaf = NULL;
	struct hopdist *hd = NULL;
	uint8_t *moved = NULL;
	struct proof p = { .ra = old->rt, .rb = x->rt };
	int differ = 1;
	if (same_ends(old->rt, x->rt) && links_changed(old->rt, x->rt, &chg, &extra, &nextra) == 0 &&
	    leaf_proof(&p, &leaf, &want) == 0) {
		p.chg = chg;
		p.extra = extra;
		p.nextra = nextra;
		/* For the LIDs of leaves not moved, the old hop counts are
		 * old's distances plus one, which are x's too: each changed
		 * step is checked against them. The moved ones walk. */
		p.hc = relinked_cover(old, x, &hd, &moved);
		p.moved = moved;
		if (p.hc && hopcover_carry(p.hc, hd, moved, x->rt, old->rt, chg, info->block, info->mask, info->blocks,
					   &x->hc))
			x->hc = NULL; /* out of memory: the walks decide */
		if (p.hc)
			x->cover_rc = old->cover_rc;
		p.next = x->hc;
		differ = hops_differ(&p, info->block, info->blocks);
	}
	hopdist_free(hd);
	free(moved);
	free(chg);
	free(extra);
	free(leaf);
	free(want);
	if (differ == 0 && hier_rename(old->hier, x->rt, &x->hier) == AN_OK) {
		*reused = 2;
		return AN_OK;
	}
	return build_hier(x);
}

/* old's cover (complete or not) when its distances hold for x's links,
 * else NULL. */
static struct hopcover *same_links_cover(const struct fabric_index *old, const struct fabric_index *x)
{
	return old->hc && old->hc->hd->pt == old->rt->pt && x->rt->pt == old->rt->pt ? old->hc : NULL;
}

/* x's hierarchy and cover after a delta that changed LFT blocks alone:
 * old's hierarchy when no hop count changed (by distance where old's
 * cover is complete, else by the walks), else built (build_hier); old's
 * cover shared when it was complete and every changed entry it covers
 * went one closer (the new tables route those LIDs along shortest paths
 * too), else carried over the changed entries (hopcover_carry), so that a
 * preparation a delta interrupted is not lost. */
static int hier_after_blocks(const struct fabric_index *old, struct fabric_index *x,
			     const struct snap_delta_info *info, int *reused)
{
	struct hopcover *hc = same_links_cover(old, x), *whole = hopcover_complete(hc) ? hc : NULL, *next = NULL;
	if (x->rt->pt == old->rt->pt)
		x->cover_rc = old->cover_rc;
	/* carried first: where old's is complete, it decides the proof too */
	if (hc &&
	    hopcover_carry(hc, hc->hd, NULL, x->rt, old->rt, NULL, info->block, info->mask, info->blocks, &next))
		next = NULL; /* out of memory: the walks remain */
	struct proof p = { .ra = old->rt, .rb = x->rt, .hc = whole, .next = whole ? next : NULL };
	int differ = hops_differ(&p, info->block, info->blocks);
	if (whole && !differ) {
		x->hc = hopcover_ref(whole);
		hopcover_free(next);
	} else {
		x->hc = next;
	}
	if (differ) /* with the carried cover, completed first */
		return build_hier(x);
	x->hier = hier_ref(old->hier);
	*reused = 1;
	return AN_OK;
}

int fabric_index_update(const struct snap *s, const struct fabric_index *old,
			const struct snap_delta_info *info, const struct route_namemap *map, int threads,
			int *reused, struct fabric_index **out, char err[AN_ERR_LEN])
{
	*reused = 0;
	if (!old || !info || info->descs || (info->blocks && !info->block) || (info->ports && map != old->map))
		return fabric_index_build(s, map, threads, out, err);
	struct fabric_index *x = index_new(threads, err);
	if (!x)
		return AN_E_NOMEM;
	x->switches = old->switches;
	x->cas = old->cas;
	x->routers = old->routers;
	x->links = info->ports ? snap_count_links(s) : old->links;
	x->map = map;
	uint64_t t0 = snap_now_us();
	/* Names come from descriptions and the map, end ports and links from
	 * the ports: with none of them changed, the index is old's. */
	int rc = AN_E_NOTAPPLIC;
	if (map == old->map && !info->ports)
		rc = route_repoint(old->rt, s, &x->rt);
	else if (map == old->map) /* a cable's ports: the rest is old's */
		rc = route_relink(old->rt, s, &x->rt);
	if (rc == AN_E_NOTAPPLIC)
		rc = route_build(s, map, &x->rt);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "route index: %s", an_strerror(rc));
		fabric_index_free(x);
		return rc;
	}
	uint64_t t1 = snap_now_us();
	if (info->ports || map != old->map) {
		rc = hier_renamed(old, x, info, reused);
	} else {
		rc = hier_after_blocks(old, x, info, reused);
	}
	if (rc) {
		snprintf(err, AN_ERR_LEN, "hierarchy: %s", an_strerror(rc));
		fabric_index_free(x);
		return rc;
	}
	x->route_ms = (double)(t1 - t0) / 1000.0;
	x->hier_ms = (double)(snap_now_us() - t1) / 1000.0;
	*out = x;
	return AN_OK;
}
