/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * load.c - link loads of a job's pattern over the LFT routes; see load.h.
 *
 * A directed link is identified by the snapshot port slot of its tail
 * (nodes[n].port0 + port), so per-thread load arrays are snap->nports long
 * and need no hashing.
 *
 * load_build's steps (build_steps), in order: count the flows (dense:
 * from the rank counts; sparse: bucketed by destination), walk the routes
 * by blocks of destinations over the threads (route_all), reduce the
 * threads' tallies, classify the links by level, then below(), seed 000's
 * bounds and the busiest links with the hosts behind them.
 */
#include "load.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* The job, compacted to its distinct hosts. */
struct jobh {
	uint32_t H;          /* distinct hosts */
	uint32_t *host;      /* [H] fabric host index, ascending */
	uint32_t *cnt;       /* [H] ranks on it */
	uint32_t *rank_j;    /* [nranks] job-host index of each rank */
	uint32_t *ep;        /* [H] default end port */
	uint32_t *leaf;      /* [H] switch index of its leaf, or ROUTE_NONE ("odd": walked in full) */
	uint32_t *cable;     /* [H] port slot of its cable */
};

/* Flows into one destination job host (sparse patterns). */
struct fin {
	uint32_t src;        /* job-host index */
	uint64_t bytes;
};

struct tstate {
	uint64_t *m, *b;          /* [nports] */
	uint64_t *lw_m, *lw_b;    /* [nsw] weight per source leaf for the current destination */
	int32_t *lhops;           /* [nsw] hops of the leaf's route (-1 failed) */
	uint32_t *touched, ntouched;
	struct route_hop *hops;   /* [nsw + 2] */
	uint64_t *okw;            /* [nsw] dense: sum of c_d over ok routes from the leaf */
	uint8_t *col;             /* [LOAD_BLOCK][nsw] LFT ports of a block of destinations */
	/* the memoised route tree of the current destination (resolve, push_tree) */
	uint32_t *stamp, *nxt, *pslot, *chain, *vis, *order, *cnt;
	int32_t *dist;
	uint32_t nchain, nvis, maxd;
	uint64_t hop_m[LOAD_HOPS_MAX + 1], hop_b[LOAD_HOPS_MAX + 1];
	uint64_t fail_m, fail_b;
	uint32_t max_hops;
};

static inline uint32_t slot(const struct route_tab *rt, uint32_t node, uint8_t port)
{
	return rt->snap->nodes[node].port0 + port;
}

/*
 * The route tree towards one destination, memoised over switches: routes
 * are by destination, so walks from different leaves merge and share their
 * rest. resolve() walks from sw until it meets a switch already resolved
 * for this destination (stamp), then fills in the chain's hop counts
 * backwards: dist = switches still to cross (>= 1), or a AN_E_* code.
 * Each switch is stepped at most once per destination, and a revisit within
 * one chain is a loop (what route_walk finds after nsw + 1 steps).
 */
#define LOAD_PENDING INT32_MIN

/* Per-switch facts resolve() needs, copied out of the snapshot's node
 * table (100-byte entries) so that the hot loop reads dense arrays. */
struct swfacts {
	const uint32_t *pt, *pt_off;
	const uint32_t *p0;     /* [nsw] port slot of port 0 */
	const uint8_t *np;      /* [nsw] ports */
};

/* route_step_port() over swfacts: the same definition, denser tables. */
static inline int step_fast(const struct swfacts *F, uint32_t sw, uint8_t p, uint32_t dst_ep,
			    uint32_t *next)
{
	return route_step_code(F->pt + F->pt_off[sw], F->np[sw], p, dst_ep, next);
}

static int resolve(const struct swfacts *F, struct tstate *t, uint32_t sw, uint16_t dlid,
		   uint32_t dst, const uint8_t *row, uint32_t stamp)
{
	uint32_t n0 = t->nchain;
	int v;
	if (dlid == 0)
		return AN_E_NOLID;
	for (;;) {
		if (t->stamp[sw] == stamp) {
			v = t->dist[sw] == LOAD_PENDING ? AN_E_LOOP : t->dist[sw];
			break;
		}
		t->stamp[sw] = stamp;
		t->dist[sw] = LOAD_PENDING;
		t->chain[t->nchain++] = sw;
		uint8_t port = row[sw];
		uint32_t next;
		int rc = step_fast(F, sw, port, dst, &next);
		if (rc < 0) {
			v = rc;
			break;
		}
		t->pslot[sw] = F->p0[sw] + port;
		if (rc == ROUTE_STEP_DONE) {
			t->nxt[sw] = ROUTE_NONE;
			v = 0;
			break;
		}
		t->nxt[sw] = next;
		sw = next;
	}
	for (uint32_t i = t->nchain; i > n0; i--) {
		uint32_t c = t->chain[i - 1];
		v = v < 0 ? v : v + 1;
		t->dist[c] = v;
		if (v > 0) {
			t->vis[t->nvis++] = c;
			if ((uint32_t)v > t->maxd)
				t->maxd = (uint32_t)v;
		}
	}
	t->nchain = n0;
	return v;
}

/* Pushes the weights in lw_m/lw_b (at resolved switches) down the route
 * tree, farthest switches first, onto the links; clears them. */
static void push_tree(struct tstate *t)
{
	uint32_t *cnt = t->cnt;
	memset(cnt, 0, ((size_t)t->maxd + 2) * sizeof *cnt);
	for (uint32_t i = 0; i < t->nvis; i++)
		cnt[t->dist[t->vis[i]]]++;
	/* descending dist: start offsets from the top */
	uint32_t at = 0;
	for (uint32_t d = t->maxd + 1; d-- > 0;) {
		uint32_t c = cnt[d];
		cnt[d] = at;
		at += c;
	}
	for (uint32_t i = 0; i < t->nvis; i++) {
		uint32_t sw = t->vis[i];
		t->order[cnt[t->dist[sw]]++] = sw;
	}
	for (uint32_t i = 0; i < t->nvis; i++) {
		uint32_t sw = t->order[i];
		uint64_t m = t->lw_m[sw], b = t->lw_b[sw];
		if (!m && !b)
			continue;
		t->m[t->pslot[sw]] += m;
		t->b[t->pslot[sw]] += b;
		if (t->nxt[sw] != ROUTE_NONE) {
			t->lw_m[t->nxt[sw]] += m;
			t->lw_b[t->nxt[sw]] += b;
		}
		t->lw_m[sw] = t->lw_b[sw] = 0;
	}
	t->nvis = 0;
	t->maxd = 0;
}

static void add_hist(struct tstate *t, uint32_t h, uint64_t m, uint64_t b)
{
	if (h > t->max_hops)
		t->max_hops = h;
	if (h > LOAD_HOPS_MAX)
		h = LOAD_HOPS_MAX;
	t->hop_m[h] += m;
	t->hop_b[h] += b;
}

/* A source without a usable leaf switch: the full walk (route_walk). */
static void walk_full(const struct route_tab *rt, struct tstate *t, const struct jobh *J,
		      uint32_t s, uint32_t d, uint64_t m, uint64_t b)
{
	struct route_res res;
	uint16_t dlid = rt->eps[J->ep[d]].lid;
	int rc = dlid ? route_walk(rt, J->ep[s], dlid, t->hops, rt->nsw + 2, &res) : AN_E_NOLID;
	if (rc != AN_OK || res.hops > rt->nsw + 1) {
		t->fail_m += m;
		t->fail_b += b;
		return;
	}
	t->m[J->cable[s]] += m;
	t->b[J->cable[s]] += b;
	for (uint32_t i = 0; i < res.hops; i++)
		if (t->hops[i].out) {
			uint32_t k = slot(rt, t->hops[i].node, t->hops[i].out);
			t->m[k] += m;
			t->b[k] += b;
		}
	add_hist(t, res.hops, m, b);
}

static void jobh_free(struct jobh *J)
{
	free(J->host);
	free(J->cnt);
	free(J->rank_j);
	free(J->ep);
	free(J->leaf);
	free(J->cable);
}

static int jobh_build(const struct route_tab *rt, const struct pat_job *job, struct jobh *J)
{
	memset(J, 0, sizeof *J);
	uint32_t *map = malloc((size_t)rt->nhosts * sizeof *map);
	J->rank_j = malloc((size_t)job->nranks * sizeof *J->rank_j);
	if (!map || !J->rank_j) {
		free(map);
		return AN_E_NOMEM;
	}
	for (uint32_t h = 0; h < rt->nhosts; h++)
		map[h] = ROUTE_NONE;
	for (uint32_t r = 0; r < job->nranks; r++) {
		if (job->host[r] >= rt->nhosts) {
			free(map);
			return AN_E_INVAL;
		}
		map[job->host[r]] = 0;
	}
	uint32_t H = 0;
	for (uint32_t h = 0; h < rt->nhosts; h++)
		if (map[h] != ROUTE_NONE)
			map[h] = H++;
	J->H = H;
	J->host = malloc(H * sizeof *J->host);
	J->cnt = calloc(H, sizeof *J->cnt);
	J->ep = malloc(H * sizeof *J->ep);
	J->leaf = malloc(H * sizeof *J->leaf);
	J->cable = malloc(H * sizeof *J->cable);
	if (!J->host || !J->cnt || !J->ep || !J->leaf || !J->cable) {
		free(map);
		return AN_E_NOMEM;
	}
	for (uint32_t h = 0; h < rt->nhosts; h++)
		if (map[h] != ROUTE_NONE) {
			uint32_t j = map[h], e = route_host_ep(rt, h);
			const struct route_ep *ep = &rt->eps[e];
			J->host[j] = h;
			J->ep[j] = e;
			J->cable[j] = slot(rt, ep->node, ep->port);
			uint32_t sw = ep->leaf == ROUTE_NONE ? ROUTE_NONE : rt->sw_of_node[ep->leaf];
			J->leaf[j] = ep->up == AN_OK ? sw : ROUTE_NONE;
		}
	for (uint32_t r = 0; r < job->nranks; r++) {
		J->rank_j[r] = map[job->host[r]];
		J->cnt[J->rank_j[r]]++;
	}
	free(map);
	return AN_OK;
}

/* ---- sparse patterns: flows grouped by destination host ---------------------- */

struct collect {
	const struct jobh *J;
	uint32_t *off;            /* [H + 1] */
	struct fin *f;            /* NULL on the counting pass */
	uint64_t intra_m, intra_b, flows, msgs, bytes;
};

static int collect_fn(void *arg, uint32_t s, uint32_t d, uint64_t b)
{
	struct collect *c = arg;
	uint32_t js = c->J->rank_j[s], jd = c->J->rank_j[d];
	if (!c->f) {
		c->flows++;
		c->msgs++;
		c->bytes += b;
		if (js == jd) {
			c->intra_m++;
			c->intra_b += b;
		} else {
			c->off[jd + 1]++;
		}
		return 0;
	}
	if (js != jd)
		c->f[c->off[jd]++] = (struct fin){ .src = js, .bytes = b };
	return 0;
}

/* ---- levels -------------------------------------------------------------------- */

/* Levels of every node (LOAD_LVL_NONE where unreached), [snap->nnodes]:
 * malloc'd, the caller frees. NULL on ENOMEM. */
static uint8_t *load_node_levels(const struct route_tab *rt)
{
	const struct snap *s = rt->snap;
	uint8_t *lvl = malloc(s->nnodes ? s->nnodes : 1);
	uint32_t *q = malloc((rt->nsw ? rt->nsw : 1) * sizeof *q);
	if (!lvl || !q) {
		free(lvl);
		free(q);
		return NULL;
	}
	memset(lvl, LOAD_LVL_NONE, s->nnodes);
	uint32_t qh = 0, qt = 0;
	for (uint32_t e = 0; e < rt->neps; e++) {
		const struct route_ep *ep = &rt->eps[e];
		if (s->nodes[ep->node].type == SNAP_NODE_SWITCH)
			continue;
		lvl[ep->node] = 0;
		if (ep->up == AN_OK && ep->leaf != ROUTE_NONE &&
		    rt->sw_of_node[ep->leaf] != ROUTE_NONE && lvl[ep->leaf] == LOAD_LVL_NONE) {
			lvl[ep->leaf] = 1;
			q[qt++] = rt->sw_of_node[ep->leaf];
		}
	}
	while (qh < qt) {
		uint32_t sw = q[qh++], n = rt->sw_node[sw];
		for (uint32_t p = 1; p <= s->nodes[n].nports; p++) {
			uint32_t c = rt->pt[rt->pt_off[sw] + p];
			if (c < ROUTE_PT_EP && lvl[rt->sw_node[c]] == LOAD_LVL_NONE &&
			    lvl[n] + 1u < LOAD_LVL_NONE) {
				lvl[rt->sw_node[c]] = (uint8_t)(lvl[n] + 1);
				q[qt++] = c;
			}
		}
	}
	free(q);
	return lvl;
}

/* Head node of the directed link leaving node n by port p (ROUTE_NONE if
 * it is not an up link). */
static uint32_t link_head(const struct route_tab *rt, uint32_t n, uint8_t p)
{
	const struct snap *s = rt->snap;
	uint32_t sw = rt->sw_of_node[n];
	if (sw != ROUTE_NONE) {
		uint32_t c = rt->pt[rt->pt_off[sw] + p];
		if (c < ROUTE_PT_EP)
			return rt->sw_node[c];
		if (c >= ROUTE_PT_DOWN)
			return ROUTE_NONE;
		return rt->eps[c - ROUTE_PT_EP].node;
	}
	const struct snap_port *sp = &s->ports[s->nodes[n].port0 + p];
	return sp->peer_node;
}

/* ---- the build -------------------------------------------------------------------- */

static int find_class(struct load_level *lv, uint32_t *n, uint32_t cap, uint8_t from, uint8_t to)
{
	for (uint32_t i = 0; i < *n; i++)
		if (lv[i].from == from && lv[i].to == to)
			return (int)i;
	if (*n == cap)
		return -1;
	lv[*n] = (struct load_level){ .from = from, .to = to, .bound_msgs = -1, .bound_bytes = -1 };
	return (int)(*n)++;
}

static int lv_cmp(const void *a, const void *b)
{
	const struct load_level *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

#define LOAD_CLASSES_MAX 256
#define LOAD_BLOCK 32   /* destinations whose LFT ports are gathered at once */

void load_free(struct load *l)
{
	if (!l)
		return;
	free(l->links);
	free(l->max);
	free(l->behind_off);
	free(l->behind);
	free(l->levels);
	free(l);
}

static void ts_free(struct tstate *t)
{
	free(t->m);
	free(t->b);
	free(t->lw_m);
	free(t->lw_b);
	free(t->lhops);
	free(t->touched);
	free(t->hops);
	free(t->okw);
	free(t->col);
	free(t->stamp);
	free(t->nxt);
	free(t->pslot);
	free(t->chain);
	free(t->vis);
	free(t->order);
	free(t->cnt);
	free(t->dist);
}

/* Switches with equal below-sets, for qsort_r: the sets' hashes first. */
struct grp_ctx {
	const uint64_t *below;    /* [nsw][W] */
	const uint64_t *hash;     /* [nsw] */
	uint32_t W;
};

static int grp_cmp(const void *x, const void *y, void *arg)
{
	const struct grp_ctx *g = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (g->hash[a] != g->hash[b])
		return g->hash[a] < g->hash[b] ? -1 : 1;
	return memcmp(&g->below[(size_t)a * g->W], &g->below[(size_t)b * g->W], g->W * sizeof(uint64_t));
}

/* One load_build: the job, the flows' bookkeeping and the per-thread state
 * shared by its steps, in the order they run. */
struct build {
	const struct route_tab *rt;
	const struct snap *s;
	const struct pat_job *job;
	const struct pattern *p;
	int threads, dense;
	uint32_t H, nsw, NP;
	uint64_t mb;              /* bytes of one message */
	struct jobh J;
	struct load *L;
	struct collect col;       /* sparse: flows by destination host */
	uint64_t *leafsum;        /* dense: [nsw] job ranks on each leaf */
	uint64_t *okself;         /* dense: [H] set if the host's own leaf routes to it */
	struct tstate *ts;        /* [threads] */
	uint32_t *leaves, nleaves; /* dense: the leaves with ranks */
	uint32_t *odd, nodd;      /* dense: the hosts without a usable leaf */
	uint32_t *sw_p0;
	uint8_t *sw_np;
	struct swfacts F;
	uint8_t *lvl;             /* [nnodes] load_node_levels() */
	uint32_t W, maxl;         /* words of a below-set; the top switch level */
	uint64_t *below;          /* [nsw][W] */
};

/* Dense patterns never list their flows: the totals and the per-leaf rank
 * counts follow from the ranks per host. */
static int count_dense(struct build *b)
{
	const struct jobh *J = &b->J;
	struct load *L = b->L;
	uint64_t R = b->job->nranks;
	L->flows = L->msgs = R * (R - 1);
	L->bytes = L->msgs * b->mb;
	for (uint32_t j = 0; j < b->H; j++)
		L->intra_msgs += (uint64_t)J->cnt[j] * (J->cnt[j] - 1);
	L->intra_bytes = L->intra_msgs * b->mb;
	b->leafsum = calloc(b->nsw ? b->nsw : 1, sizeof *b->leafsum);
	b->okself = calloc(b->H ? b->H : 1, sizeof *b->okself);
	if (!b->leafsum || !b->okself)
		return AN_E_NOMEM;
	for (uint32_t j = 0; j < b->H; j++)
		if (J->leaf[j] != ROUTE_NONE)
			b->leafsum[J->leaf[j]] += J->cnt[j];
	return AN_OK;
}

/* Sparse patterns: the flows bucketed by destination host in two passes
 * (count, then fill), so no pattern is held as rank pairs twice. */
static int count_sparse(struct build *b)
{
	struct collect *col = &b->col;
	struct load *L = b->L;
	const uint32_t H = b->H;
	col->off = calloc((size_t)H + 1, sizeof *col->off);
	if (!col->off)
		return AN_E_NOMEM;
	pattern_for_each(b->p, b->job->nranks, collect_fn, col);
	for (uint32_t j = 0; j < H; j++)
		col->off[j + 1] += col->off[j];
	col->f = malloc((col->off[H] ? col->off[H] : 1) * sizeof *col->f);
	if (!col->f)
		return AN_E_NOMEM;
	pattern_for_each(b->p, b->job->nranks, collect_fn, col); /* off[j] moves to off[j+1] */
	for (uint32_t j = H; j > 0; j--)
		col->off[j] = col->off[j - 1];
	col->off[0] = 0;
	L->flows = col->flows;
	L->msgs = col->msgs;
	L->bytes = col->bytes;
	L->intra_msgs = col->intra_m;
	L->intra_bytes = col->intra_b;
	return AN_OK;
}

static int ts_alloc(struct tstate *t, uint32_t nsw, uint32_t NP)
{
	size_t ns = nsw ? nsw : 1;
	t->m = calloc(NP, sizeof *t->m);
	t->b = calloc(NP, sizeof *t->b);
	t->lw_m = calloc(ns, sizeof *t->lw_m);
	t->lw_b = calloc(ns, sizeof *t->lw_b);
	t->lhops = calloc(ns, sizeof *t->lhops);
	t->touched = malloc(ns * sizeof *t->touched);
	t->hops = malloc((ns + 2) * sizeof *t->hops);
	t->okw = calloc(ns, sizeof *t->okw);
	t->col = malloc(ns * LOAD_BLOCK);
	t->stamp = calloc(ns, sizeof *t->stamp);
	t->nxt = malloc(ns * sizeof *t->nxt);
	t->pslot = malloc(ns * sizeof *t->pslot);
	t->chain = malloc((ns + 1) * sizeof *t->chain);
	t->vis = malloc(ns * sizeof *t->vis);
	t->order = malloc(ns * sizeof *t->order);
	t->cnt = malloc((ns + 3) * sizeof *t->cnt);
	t->dist = malloc(ns * sizeof *t->dist);
	if (!t->stamp || !t->nxt || !t->pslot || !t->chain || !t->vis || !t->order || !t->cnt || !t->dist ||
	    !t->col || !t->m || !t->b || !t->lw_m || !t->lw_b || !t->lhops || !t->touched ||
	    !t->hops || !t->okw)
		return AN_E_NOMEM;
	return AN_OK;
}

/* What the walks read but never write: for dense patterns the loaded leaves
 * (one walk each per destination) and the hosts without a usable leaf
 * (walked in full); for all, resolve()'s dense per-switch tables. */
static int walk_prep(struct build *b)
{
	const struct route_tab *rt = b->rt;
	const uint32_t H = b->H, nsw = b->nsw;
	if (b->dense) {
		b->leaves = malloc((size_t)(nsw ? nsw : 1) * sizeof *b->leaves);
		b->odd = malloc((size_t)(H ? H : 1) * sizeof *b->odd);
		if (!b->leaves || !b->odd)
			return AN_E_NOMEM;
		for (uint32_t j = 0; j < H; j++)
			if (b->J.leaf[j] == ROUTE_NONE)
				b->odd[b->nodd++] = j;
		for (uint32_t sw = 0; sw < nsw; sw++)
			if (b->leafsum[sw])
				b->leaves[b->nleaves++] = sw;
	}
	b->sw_p0 = malloc((size_t)(nsw ? nsw : 1) * sizeof *b->sw_p0);
	b->sw_np = malloc(nsw ? nsw : 1);
	if (!b->sw_p0 || !b->sw_np)
		return AN_E_NOMEM;
	for (uint32_t sw = 0; sw < nsw; sw++) {
		b->sw_p0[sw] = b->s->nodes[rt->sw_node[sw]].port0;
		b->sw_np[sw] = b->s->nodes[rt->sw_node[sw]].nports;
	}
	b->F = (struct swfacts){ rt->pt, rt->pt_off, b->sw_p0, b->sw_np };
	return AN_OK;
}

/* The LFT ports of destinations d0 .. d1-1 at every switch, one row per
 * destination: each switch's LFT is read once per block, not once per
 * destination. */
static void gather_block(const struct build *b, struct tstate *t, uint32_t d0, uint32_t d1)
{
	const struct route_tab *rt = b->rt;
	const uint32_t nsw = b->nsw;
	for (uint32_t sw = 0; sw < nsw; sw++) {
		const struct snap_node *nd = &b->s->nodes[rt->sw_node[sw]];
		for (uint32_t d = d0; d < d1; d++)
			t->col[(size_t)(d - d0) * nsw + sw] = snap_lft_get(nd, rt->eps[b->J.ep[d]].lid);
	}
}

/* Dense, destination d: every loaded leaf sends c_d per rank on it (less
 * d's own ranks on d's leaf) up its route. The host cables are loaded
 * after the reduction, from okw (reduce()). */
static void dest_dense(const struct build *b, struct tstate *t, uint32_t d, const uint8_t *row)
{
	const struct route_tab *rt = b->rt;
	const struct jobh *J = &b->J;
	const uint64_t mb = b->mb, cd = J->cnt[d];
	const uint32_t E = J->ep[d];
	const uint16_t dlid = rt->eps[E].lid;
	for (uint32_t li = 0; li < b->nleaves; li++) {
		uint32_t sw = b->leaves[li];
		uint64_t w = cd * (b->leafsum[sw] - (sw == J->leaf[d] ? cd : 0));
		int h = resolve(&b->F, t, sw, dlid, E, row, d + 1);
		if (h < 0) {
			t->fail_m += w;
			t->fail_b += w * mb;
			continue;
		}
		t->okw[sw] += cd;
		if (sw == J->leaf[d])
			b->okself[d] = 1;  /* only d's destination writes it */
		if (w) {
			t->lw_m[sw] += w;
			t->lw_b[sw] += w * mb;
			add_hist(t, (uint32_t)h, w, w * mb);
		}
	}
	push_tree(t);
	for (uint32_t oi = 0; oi < b->nodd; oi++) {
		uint32_t j = b->odd[oi];
		if (j == d)
			continue;
		uint64_t w = (uint64_t)J->cnt[j] * cd;
		walk_full(rt, t, J, j, d, w, w * mb);
	}
}

/* Sparse, destination d: its flows summed per source leaf, one walk per
 * leaf; then each flow's own cable and hop count. */
static void dest_sparse(const struct build *b, struct tstate *t, uint32_t d, const uint8_t *row)
{
	const struct route_tab *rt = b->rt;
	const struct jobh *J = &b->J;
	const struct collect *col = &b->col;
	const uint32_t E = J->ep[d];
	const uint16_t dlid = rt->eps[E].lid;
	t->ntouched = 0;
	for (uint32_t i = col->off[d]; i < col->off[d + 1]; i++) {
		uint32_t sl = J->leaf[col->f[i].src];
		if (sl == ROUTE_NONE)
			continue;
		if (!t->lw_m[sl] && !t->lw_b[sl])
			t->touched[t->ntouched++] = sl;
		t->lw_m[sl]++;
		t->lw_b[sl] += col->f[i].bytes;
	}
	for (uint32_t i = 0; i < t->ntouched; i++) {
		uint32_t sl = t->touched[i];
		int h = resolve(&b->F, t, sl, dlid, E, row, d + 1);
		t->lhops[sl] = h < 0 ? -1 : h;
		if (h < 0)
			t->lw_m[sl] = t->lw_b[sl] = 0;
	}
	push_tree(t);
	for (uint32_t i = col->off[d]; i < col->off[d + 1]; i++) {
		uint32_t sj = col->f[i].src, sl = J->leaf[sj];
		uint64_t by = col->f[i].bytes;
		if (sl == ROUTE_NONE) {
			walk_full(rt, t, J, sj, d, 1, by);
		} else if (t->lhops[sl] < 0) {
			t->fail_m++;
			t->fail_b += by;
		} else {
			t->m[J->cable[sj]]++;
			t->b[J->cable[sj]] += by;
			add_hist(t, (uint32_t)t->lhops[sl], 1, by);
		}
	}
}

/* The walks, by blocks of destinations over the threads, each into its own
 * tstate. */
static void route_all(const struct build *b)
{
	const uint32_t H = b->H, nblk = (H + LOAD_BLOCK - 1) / LOAD_BLOCK;
#pragma omp parallel for num_threads(b->threads) schedule(dynamic, 1)
	for (uint32_t blk = 0; blk < nblk; blk++) {
#ifdef _OPENMP
		struct tstate *t = &b->ts[omp_get_thread_num()];
#else
		struct tstate *t = &b->ts[0];
#endif
		uint32_t d0 = blk * LOAD_BLOCK, d1 = d0 + LOAD_BLOCK < H ? d0 + LOAD_BLOCK : H;
		gather_block(b, t, d0, d1);
		for (uint32_t d = d0; d < d1; d++) {
			const uint8_t *row = t->col + (size_t)(d - d0) * b->nsw;
			if (b->dense)
				dest_dense(b, t, d, row);
			else
				dest_sparse(b, t, d, row);
		}
	}
}

/* The threads' tallies summed into ts[0]. For dense patterns a host's cable
 * carries its ranks' share of every leaf route that reached a destination:
 * only the sums over all threads (okw) know it. */
static void reduce(const struct build *b)
{
	struct tstate *T = &b->ts[0];
	const struct jobh *J = &b->J;
	for (int i = 1; i < b->threads; i++) {
		const struct tstate *t = &b->ts[i];
		for (uint32_t k = 0; k < b->NP; k++) {
			T->m[k] += t->m[k];
			T->b[k] += t->b[k];
		}
		for (uint32_t k = 0; k < b->nsw; k++)
			T->okw[k] += t->okw[k];
		for (int h = 0; h <= LOAD_HOPS_MAX; h++) {
			T->hop_m[h] += t->hop_m[h];
			T->hop_b[h] += t->hop_b[h];
		}
		T->fail_m += t->fail_m;
		T->fail_b += t->fail_b;
		if (t->max_hops > T->max_hops)
			T->max_hops = t->max_hops;
	}
	if (b->dense)
		for (uint32_t j = 0; j < b->H; j++) {
			uint32_t sl = J->leaf[j];
			if (sl == ROUTE_NONE)
				continue;
			uint64_t w = (uint64_t)J->cnt[j] * (T->okw[sl] - (b->okself[j] ? J->cnt[j] : 0));
			T->m[J->cable[j]] += w;
			T->b[J->cable[j]] += w * b->mb;
		}
	struct load *L = b->L;
	L->fail_msgs = T->fail_m;
	L->fail_bytes = T->fail_b;
	L->max_hops = T->max_hops;
	memcpy(L->hop_msgs, T->hop_m, sizeof L->hop_msgs);
	memcpy(L->hop_bytes, T->hop_b, sizeof L->hop_bytes);
}

/* The head of the directed link leaving node n by port pp: for a switch
 * link_head(); for a CA port its cable, wherever it leads. */
static uint32_t port_head(const struct route_tab *rt, uint32_t n, uint32_t pp)
{
	const struct snap *s = rt->snap;
	if (s->nodes[n].type == SNAP_NODE_SWITCH)
		return link_head(rt, n, (uint8_t)pp);
	const struct snap_port *sp = &s->ports[s->nodes[n].port0 + pp];
	return sp->present && sp->peer_node != SNAP_NONE ? sp->peer_node : ROUTE_NONE;
}

/* Every directed link counted in the class of its ends' levels; the loaded
 * ones listed in L->links, by (node, port). */
static int classify_links(struct build *b)
{
	const struct snap *s = b->s;
	const struct tstate *T = &b->ts[0];
	struct load *L = b->L;
	b->lvl = load_node_levels(b->rt);
	struct load_level *lv = calloc(LOAD_CLASSES_MAX, sizeof *lv);
	if (!b->lvl || !lv) {
		free(lv);
		return AN_E_NOMEM;
	}
	L->levels = lv;
	const uint8_t *lvl = b->lvl;
	uint32_t nlv = 0, nl = 0;
	for (uint32_t k = 0; k < b->NP; k++)
		nl += T->m[k] != 0;
	L->links = malloc((nl ? nl : 1) * sizeof *L->links);
	if (!L->links)
		return AN_E_NOMEM;
	for (uint32_t n = 0; n < s->nnodes; n++) {
		const struct snap_node *nd = &s->nodes[n];
		for (uint32_t pp = 1; pp <= nd->nports; pp++) {
			uint32_t k = nd->port0 + pp;
			uint32_t head = port_head(b->rt, n, pp);
			if (head == ROUTE_NONE && !T->m[k])
				continue;
			uint8_t hl = head == ROUTE_NONE ? LOAD_LVL_NONE : lvl[head];
			int ci = find_class(lv, &nlv, LOAD_CLASSES_MAX, lvl[n], hl);
			if (ci < 0)
				continue;
			struct load_level *c = &lv[ci];
			c->nlinks++;
			if (!T->m[k])
				continue;
			c->nused++;
			/* A level's total may count a flow on several of its
			 * links (lateral classes): checked, unlike the rest. */
			if (__builtin_add_overflow(c->tot_msgs, T->m[k], &c->tot_msgs) ||
			    __builtin_add_overflow(c->tot_bytes, T->b[k], &c->tot_bytes) ||
			    c->tot_bytes > TOPO_BYTES_TOTAL_MAX)
				return AN_E_RANGE;
			if (T->m[k] > c->max_msgs)
				c->max_msgs = T->m[k];
			if (T->b[k] > c->max_bytes)
				c->max_bytes = T->b[k];
			L->links[L->nlinks++] = (struct load_link){ .node = n, .port = (uint8_t)pp,
				.from = lvl[n], .to = hl, .head = head, .msgs = T->m[k], .bytes = T->b[k] };
			if (T->b[k] > L->max_bytes)
				L->max_bytes = T->b[k];
			if (T->m[k] > L->max_msgs)
				L->max_msgs = T->m[k];
		}
	}
	L->nlevels = nlv;
	return AN_OK;
}

/* below(): the job hosts each switch reaches going only down, as bitsets of
 * job-host indices, filled level by level from the leaves up. */
static int below_sets(struct build *b)
{
	const struct route_tab *rt = b->rt;
	const uint8_t *lvl = b->lvl;
	const uint32_t nsw = b->nsw, W = (b->H + 63) / 64;
	b->W = W;
	uint64_t *below = b->below = calloc((size_t)(nsw ? nsw : 1) * (W ? W : 1), sizeof *below);
	if (!below)
		return AN_E_NOMEM;
	uint32_t maxl = 0;
	for (uint32_t sw = 0; sw < nsw; sw++) {
		uint8_t l = lvl[rt->sw_node[sw]];
		if (l != LOAD_LVL_NONE && l > maxl)
			maxl = l;
	}
	b->maxl = maxl;
	for (uint32_t j = 0; j < b->H; j++)
		if (b->J.leaf[j] != ROUTE_NONE)
			below[(size_t)b->J.leaf[j] * W + j / 64] |= 1ull << (j % 64);
	for (uint32_t l = 2; l <= maxl; l++)
		for (uint32_t sw = 0; sw < nsw; sw++) {
			uint32_t n = rt->sw_node[sw];
			if (lvl[n] != l)
				continue;
			for (uint32_t pp = 1; pp <= b->s->nodes[n].nports; pp++) {
				uint32_t c = rt->pt[rt->pt_off[sw] + pp];
				if (c < ROUTE_PT_EP && lvl[rt->sw_node[c]] == l - 1)
					for (uint32_t w = 0; w < W; w++)
						below[(size_t)sw * W + w] |= below[(size_t)c * W + w];
			}
		}
	return AN_OK;
}

/* Dense: a host cable carries exactly c_h (R - c_h) messages each way, so
 * the bound of 0>1 and 1>0 is the largest of those. */
static void host_bound(const struct build *b)
{
	const uint64_t R = b->job->nranks;
	struct load_level *lv = b->L->levels;
	uint64_t best = 0;
	for (uint32_t j = 0; j < b->H; j++) {
		uint64_t v = (uint64_t)b->J.cnt[j] * (R - b->J.cnt[j]);
		if (v > best)
			best = v;
	}
	for (uint32_t i = 0; i < b->L->nlevels; i++)
		if ((lv[i].from == 0 && lv[i].to == 1) || (lv[i].from == 1 && lv[i].to == 0)) {
			lv[i].bound_msgs = (int64_t)best;
			lv[i].bound_bytes = (int64_t)(best * b->mb);
		}
}

/* Directed up links of switch sw: its ports to a switch at level `up`. An
 * up link is up at both ends: one each way. */
static uint64_t up_links(const struct build *b, uint32_t sw, uint32_t up)
{
	const struct route_tab *rt = b->rt;
	uint64_t n = 0;
	for (uint32_t pp = 1; pp <= b->s->nodes[rt->sw_node[sw]].nports; pp++) {
		uint32_t c = rt->pt[rt->pt_off[sw] + pp];
		if (c < ROUTE_PT_EP && b->lvl[rt->sw_node[c]] == up)
			n++;
	}
	return n;
}

/* Seed 000's bound of the classes a>a+1 and a+1>a: the level's switches
 * grouped by equal below-sets (sorted by the sets, so O(n log n * W)); each
 * group's messages to and from the other ranks cross its up links, both
 * ways alike. Left undefined if two groups' sets overlap (no tree). */
static void level_bound(const struct build *b, const struct grp_ctx *g, uint32_t a, uint32_t *grp,
			uint64_t *uni)
{
	const uint64_t R = b->job->nranks;
	const uint32_t W = b->W;
	uint32_t ng = 0;
	for (uint32_t sw = 0; sw < b->nsw; sw++)
		if (b->lvl[b->rt->sw_node[sw]] == a)
			grp[ng++] = sw;
	qsort_r(grp, ng, sizeof *grp, grp_cmp, (void *)g);
	memset(uni, 0, W * sizeof *uni);
	uint64_t best = 0;
	for (uint32_t i = 0; i < ng;) {
		const uint64_t *bs = &b->below[(size_t)grp[i] * W];
		uint64_t RS = 0, up = 0;
		uint32_t e = i;
		while (e < ng && !grp_cmp(&grp[i], &grp[e], (void *)g))
			up += up_links(b, grp[e++], a + 1);
		i = e;
		for (uint32_t w = 0; w < W; w++) {
			if (uni[w] & bs[w])
				return;
			uni[w] |= bs[w];
			for (uint64_t x = bs[w]; x; x &= x - 1)
				RS += b->J.cnt[w * 64 + (uint32_t)__builtin_ctzll(x)];
		}
		if (!RS || RS == R || !up)
			continue;
		uint64_t need = RS * (R - RS), bnd = (need + up - 1) / up;
		if (bnd > best)
			best = bnd;
	}
	struct load_level *lv = b->L->levels;
	for (uint32_t i = 0; i < b->L->nlevels; i++)
		if ((lv[i].from == a && lv[i].to == a + 1) || (lv[i].from == a + 1 && lv[i].to == a)) {
			lv[i].bound_msgs = (int64_t)best;
			lv[i].bound_bytes = (int64_t)(best * b->mb);
		}
}

/* The switch levels' bounds: dense patterns on trees only (no lateral
 * class; see load.h). */
static int tree_bounds(const struct build *b)
{
	const struct load_level *lv = b->L->levels;
	for (uint32_t i = 0; i < b->L->nlevels; i++)
		if (lv[i].from == lv[i].to && lv[i].from >= 1 && lv[i].from != LOAD_LVL_NONE)
			return AN_OK;
	if (!b->dense)
		return AN_OK;
	const uint32_t nsw = b->nsw, W = b->W;
	uint32_t *grp = malloc((size_t)(nsw ? nsw : 1) * sizeof *grp);
	uint64_t *uni = calloc(W ? W : 1, sizeof *uni);
	uint64_t *hash = malloc((size_t)(nsw ? nsw : 1) * sizeof *hash);
	int rc = AN_E_NOMEM;
	if (grp && uni && hash) {
		for (uint32_t sw = 0; sw < nsw; sw++) {
			uint64_t h = 1469598103934665603ull;
			for (uint32_t w = 0; w < W; w++)
				h = (h ^ b->below[(size_t)sw * W + w]) * 1099511628211ull;
			hash[sw] = h;
		}
		const struct grp_ctx g = { b->below, hash, W };
		for (uint32_t a = 1; a < b->maxl; a++)
			level_bound(b, &g, a, grp, uni);
		rc = AN_OK;
	}
	free(grp);
	free(uni);
	free(hash);
	return rc;
}

/* Appends the job hosts behind link ln to L->behind: below() of its lower
 * end if a switch, else the CA's own host (node_j). */
static int add_behind(struct build *b, const struct load_link *ln, const uint32_t *node_j, size_t *nb,
		      size_t *capb)
{
	const struct route_tab *rt = b->rt;
	struct load *L = b->L;
	uint32_t head = link_head(rt, ln->node, ln->port);
	uint32_t low = ln->node;
	if (head != ROUTE_NONE && ln->to < ln->from)
		low = head;
	uint32_t lsw = rt->sw_of_node[low];
	if (*capb < *nb + b->H) {
		*capb = *nb + b->H;
		uint32_t *nbh = realloc(L->behind, *capb * sizeof *nbh);
		if (!nbh)
			return AN_E_NOMEM;
		L->behind = nbh;
	}
	if (lsw != ROUTE_NONE) {
		const uint64_t *bs = &b->below[(size_t)lsw * b->W];
		for (uint32_t w = 0; w < b->W; w++)
			for (uint64_t x = bs[w]; x; x &= x - 1)
				L->behind[(*nb)++] = b->J.host[w * 64 + (uint32_t)__builtin_ctzll(x)];
	} else if (node_j[low] != ROUTE_NONE) {
		L->behind[(*nb)++] = b->J.host[node_j[low]];
	}
	return AN_OK;
}

/* The busiest links (bytes == max_bytes) and the hosts behind each. */
static int busiest(struct build *b)
{
	struct load *L = b->L;
	const uint32_t nnodes = b->s->nnodes;
	for (uint32_t i = 0; i < L->nlinks; i++)
		L->nmax += L->max_bytes && L->links[i].bytes == L->max_bytes;
	L->max = malloc((L->nmax ? L->nmax : 1) * sizeof *L->max);
	L->behind_off = calloc((size_t)L->nmax + 1, sizeof *L->behind_off);
	if (!L->max || !L->behind_off)
		return AN_E_NOMEM;
	/* a CA node's job host (its default rail's node) */
	uint32_t *node_j = malloc((size_t)(nnodes ? nnodes : 1) * sizeof *node_j);
	if (!node_j)
		return AN_E_NOMEM;
	for (uint32_t n = 0; n < nnodes; n++)
		node_j[n] = ROUTE_NONE;
	for (uint32_t j = 0; j < b->H; j++)
		node_j[b->rt->eps[b->J.ep[j]].node] = j;
	uint32_t k = 0;
	size_t nb = 0, capb = 0;
	int rc = AN_OK;
	for (uint32_t i = 0; i < L->nlinks; i++) {
		if (!L->max_bytes || L->links[i].bytes != L->max_bytes)
			continue;
		L->max[k] = i;
		rc = add_behind(b, &L->links[i], node_j, &nb, &capb);
		if (rc)
			break;
		L->behind_off[++k] = (uint32_t)nb;
	}
	free(node_j);
	return rc;
}

static int build_steps(struct build *b)
{
	int rc = b->dense ? count_dense(b) : count_sparse(b);
	for (int i = 0; !rc && i < b->threads; i++)
		rc = ts_alloc(&b->ts[i], b->nsw, b->NP);
	if (!rc)
		rc = walk_prep(b);
	if (rc)
		return rc;
	route_all(b);   /* allocates nothing: every thread's state is sized above */
	reduce(b);
	rc = classify_links(b);
	if (!rc)
		rc = below_sets(b);
	if (rc)
		return rc;
	if (b->dense)
		host_bound(b);
	rc = tree_bounds(b);
	if (rc)
		return rc;
	qsort(b->L->levels, b->L->nlevels, sizeof *b->L->levels, lv_cmp);
	return busiest(b);
}

static void build_free(struct build *b)
{
	if (b->ts)
		for (int i = 0; i < b->threads; i++)
			ts_free(&b->ts[i]);
	free(b->ts);
	free(b->col.off);
	free(b->col.f);
	free(b->leafsum);
	free(b->okself);
	free(b->lvl);
	free(b->below);
	free(b->leaves);
	free(b->sw_p0);
	free(b->sw_np);
	free(b->odd);
	jobh_free(&b->J);
}

int load_build(const struct route_tab *rt, const struct pat_job *job, const struct pattern *p,
	       int threads, struct load **out)
{
	uint64_t total;
	if (!job || !p || !job->nranks || job->nranks > TOPO_RANKS_MAX ||
	    pattern_check(p, job->nranks, NULL) != AN_OK)
		return AN_E_INVAL;
	if (pattern_total_bytes(p, job->nranks, &total, NULL))
		return AN_E_RANGE;
	if (threads < 1)
		threads = 1;
	struct build b = { .rt = rt, .s = rt->snap, .job = job, .p = p, .threads = threads,
			   .dense = pattern_is_dense(p), .nsw = rt->nsw, .NP = rt->snap->nports,
			   .mb = p->msg_bytes };
	int rc = jobh_build(rt, job, &b.J);
	if (rc) {
		jobh_free(&b.J);
		return rc;
	}
	b.H = b.J.H;
	b.col.J = &b.J;
	b.L = calloc(1, sizeof *b.L);
	b.ts = calloc((size_t)threads, sizeof *b.ts);
	rc = AN_E_NOMEM;
	if (b.L && b.ts) {
		b.L->nranks = job->nranks;
		b.L->nhosts = b.H;
		rc = build_steps(&b);
	}
	build_free(&b);
	if (rc) {
		load_free(b.L);
		return rc;
	}
	*out = b.L;
	return AN_OK;
}
