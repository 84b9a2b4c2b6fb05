/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_map.c - ranks of a communication graph onto hosts with slots
 * (place.h): the two reference mappings, Scotch's mapping onto a target
 * tree built from the hierarchy, the repair of over-filled hosts, swaps
 * against the busiest cable, and the choice of whichever is predicted
 * fastest on the real routes and rates (never one slower than block).
 */
#include "place_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scotch/scotch.h>

#include "rate.h"

void place_block(const uint32_t *hosts, const uint32_t *slots, size_t nh, uint32_t n, uint32_t *rank_host)
{
	uint32_t r = 0;
	for (size_t i = 0; i < nh && r < n; i++)
		for (uint32_t s = 0; s < slots[i] && r < n; s++)
			rank_host[r++] = hosts[i];
}

static void place_rr(const uint32_t *hosts, const uint32_t *slots, size_t nh, uint32_t n, uint32_t *rank_host)
{
	uint32_t *used = calloc(nh ? nh : 1, sizeof(*used));
	size_t i = 0;
	for (uint32_t r = 0; r < n; r++) {
		/* slots add up to >= n (checked by the caller): a host with room exists */
		while (used ? used[i] >= slots[i] : 0)
			i = (i + 1) % nh;
		rank_host[r] = hosts[i];
		if (used)
			used[i]++;
		i = (i + 1) % nh;
	}
	free(used);
}

/* Distance the target tree gives two hosts: the joining distance of their
 * lowest common cluster (the hop count inside it on a tree). */
static uint32_t tree_dist(const struct hier *h, uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	uint32_t best = HIER_INF * 2u;
	for (uint32_t l = h->depth; l-- > 0;) {
		uint32_t ca = h->anc[(size_t)a * h->depth + l], cb = h->anc[(size_t)b * h->depth + l];
		if (ca == cb && ca != HIER_NONE) {
			best = h->clusters[ca].dist;
			break;
		}
	}
	return best;
}

/*
 * Scotch target: the hierarchy as a weighted tree whose terminals are the
 * job's hosts (load = slots); a cluster joined at distance D hangs its
 * children by edges of D - (child's D), hosts by D, so the tree distance of
 * two hosts is 2 x the distance of their lowest common cluster. Roots meet
 * at a virtual vertex far away. Scotch's decomposition-defined target
 * (archBuild2) then bipartitions this tree as it maps.
 */
struct target {
	SCOTCH_Num nv;                 /* hosts 0..nh-1, their clusters, the virtual top last */
	SCOTCH_Num *verttab, *velotab; /* CSR, both directions */
	SCOTCH_Num *edgetab, *edlotab;
	SCOTCH_Num *list;              /* [nh] the terminals: the hosts' vertices */
};

/* The tree's edges before CSR: a[k] - b[k] of weight w[k]. */
struct tedges {
	size_t ne;
	SCOTCH_Num *a, *b, *w;
};

static void target_free(struct target *t)
{
	free(t->verttab);
	free(t->velotab);
	free(t->edgetab);
	free(t->edlotab);
	free(t->list);
}

/* Numbers the clusters on the hosts' chains after the hosts (vof[c], NONE32
 * off the chains); returns the vertex count so far and the largest joining
 * distance in *maxd. */
static SCOTCH_Num target_mark(const struct hier *h, const uint32_t *hosts, size_t nh, uint32_t *vof, SCOTCH_Num *maxd)
{
	SCOTCH_Num nv = (SCOTCH_Num)nh;
	for (uint32_t c = 0; c < h->nclusters; c++)
		vof[c] = NONE32;
	for (size_t i = 0; i < nh; i++)
		for (uint32_t c = h->host_parent[hosts[i]]; c != HIER_NONE && vof[c] == NONE32; c = h->clusters[c].parent) {
			vof[c] = (uint32_t)nv++;
			if (h->clusters[c].dist != HIER_INF && h->clusters[c].dist > *maxd)
				*maxd = h->clusters[c].dist;
		}
	return nv;
}

/* Vertex loads, terminals and the tree's edges: each host to its leaf
 * cluster, each marked cluster to its parent (a root to the top). */
static void target_edges(const struct hier *h, const uint32_t *hosts, const uint32_t *slots, size_t nh,
			 const uint32_t *vof, SCOTCH_Num maxd, SCOTCH_Num top, struct target *t, struct tedges *e)
{
	size_t ne = 0;
	for (SCOTCH_Num v = 0; v < t->nv; v++)
		t->velotab[v] = 1;
	for (size_t i = 0; i < nh; i++) {
		uint32_t c = h->host_parent[hosts[i]];
		t->velotab[i] = (SCOTCH_Num)slots[i];
		t->list[i] = (SCOTCH_Num)i;
		uint32_t d = c == HIER_NONE || h->clusters[c].dist == HIER_INF ? (uint32_t)maxd : h->clusters[c].dist;
		e->a[ne] = (SCOTCH_Num)i, e->b[ne] = c == HIER_NONE ? top : (SCOTCH_Num)vof[c], e->w[ne++] = d ? d : 1;
	}
	for (uint32_t c = 0; c < h->nclusters; c++) {
		if (vof[c] == NONE32)
			continue;
		uint32_t pc = h->clusters[c].parent, dc = h->clusters[c].dist == HIER_INF ? 0 : h->clusters[c].dist;
		if (pc == HIER_NONE) {
			e->a[ne] = (SCOTCH_Num)vof[c], e->b[ne] = top,
			e->w[ne++] = 2 * maxd + 2 - (dc < 2 * (uint32_t)maxd ? dc : 0);
		} else {
			uint32_t dp = h->clusters[pc].dist;
			e->a[ne] = (SCOTCH_Num)vof[c], e->b[ne] = (SCOTCH_Num)vof[pc], e->w[ne++] = dp > dc ? dp - dc : 1;
		}
	}
	e->ne = ne;
}

/* The edges into t's CSR, both directions, in edge order. */
static int target_csr(struct target *t, const struct tedges *e)
{
	SCOTCH_Num nv = t->nv, *verttab = t->verttab;
	for (size_t k = 0; k < e->ne; k++)
		verttab[e->a[k] + 1]++, verttab[e->b[k] + 1]++;
	for (SCOTCH_Num v = 0; v < nv; v++)
		verttab[v + 1] += verttab[v];
	SCOTCH_Num *fill = calloc((size_t)nv, sizeof(*fill));
	if (!fill)
		return AN_E_NOMEM;
	for (size_t k = 0; k < e->ne; k++) {
		SCOTCH_Num a = e->a[k], b = e->b[k];
		t->edgetab[verttab[a] + fill[a]] = b, t->edlotab[verttab[a] + fill[a]++] = e->w[k];
		t->edgetab[verttab[b] + fill[b]] = a, t->edlotab[verttab[b] + fill[b]++] = e->w[k];
	}
	free(fill);
	return AN_OK;
}

/* The target for hosts[0..nh) with their slots; target_free it, built or
 * not. */
static int target_build(const struct hier *h, const uint32_t *hosts, const uint32_t *slots, size_t nh,
			struct target *t)
{
	memset(t, 0, sizeof(*t));
	uint32_t *vof = malloc((h->nclusters + 1) * sizeof(*vof));
	if (!vof)
		return AN_E_NOMEM;
	SCOTCH_Num maxd = 1;
	SCOTCH_Num nv = target_mark(h, hosts, nh, vof, &maxd);
	SCOTCH_Num top = nv++;   /* virtual vertex joining the roots */
	t->nv = nv;
	size_t cap = 2 * (size_t)nv + 2;
	t->verttab = calloc((size_t)nv + 1, sizeof(*t->verttab));
	t->velotab = malloc((size_t)nv * sizeof(*t->velotab));
	t->edgetab = malloc(2 * cap * sizeof(*t->edgetab));
	t->edlotab = malloc(2 * cap * sizeof(*t->edlotab));
	t->list = malloc((nh ? nh : 1) * sizeof(*t->list));
	struct tedges e = { 0, malloc(cap * sizeof(*e.a)), malloc(cap * sizeof(*e.b)), malloc(cap * sizeof(*e.w)) };
	int rc = AN_E_NOMEM;
	if (t->verttab && t->velotab && t->edgetab && t->edlotab && t->list && e.a && e.b && e.w) {
		target_edges(h, hosts, slots, nh, vof, maxd, top, t, &e);
		rc = target_csr(t, &e);
	}
	free(vof);
	free(e.a);
	free(e.b);
	free(e.w);
	return rc;
}

/* The communication graph in Scotch's integer type, weights capped at 2^30. */
struct source {
	SCOTCH_Num n, m;
	SCOTCH_Num *verttab, *edgetab, *edlotab;
};

static void source_free(struct source *s)
{
	free(s->verttab);
	free(s->edgetab);
	free(s->edlotab);
}

static int source_build(const struct place_graph *g, struct source *s)
{
	size_t m = g->xadj[g->n];
	s->n = (SCOTCH_Num)g->n;
	s->m = (SCOTCH_Num)m;
	s->verttab = malloc(((size_t)g->n + 1) * sizeof(*s->verttab));
	s->edgetab = malloc((m ? m : 1) * sizeof(*s->edgetab));
	s->edlotab = malloc((m ? m : 1) * sizeof(*s->edlotab));
	if (!s->verttab || !s->edgetab || !s->edlotab)
		return AN_E_NOMEM;
	for (uint32_t v = 0; v <= g->n; v++)
		s->verttab[v] = (SCOTCH_Num)g->xadj[v];
	for (size_t e = 0; e < m; e++) {
		s->edgetab[e] = (SCOTCH_Num)g->adj[e];
		s->edlotab[e] = (SCOTCH_Num)(g->w[e] > (1u << 30) ? (1u << 30) : g->w[e]);
	}
	return AN_OK;
}

/* Scotch's objects for one mapping, and which of them were initialised. */
struct sco {
	SCOTCH_Context ctx;
	SCOTCH_Graph tg, tgc, sg, sgc;   /* target and source graphs, and their bindings to ctx */
	SCOTCH_Arch arch;
	SCOTCH_Strat strat;
	int ok_ctx, ok_tg, ok_tgc, ok_sg, ok_sgc, ok_arch, ok_strat;
};

static void sco_exit(struct sco *s)
{
	if (s->ok_sgc)
		SCOTCH_graphExit(&s->sgc);
	if (s->ok_sg)
		SCOTCH_graphExit(&s->sg);
	if (s->ok_strat)
		SCOTCH_stratExit(&s->strat);
	if (s->ok_arch)
		SCOTCH_archExit(&s->arch);
	if (s->ok_tgc)
		SCOTCH_graphExit(&s->tgc);
	if (s->ok_tg)
		SCOTCH_graphExit(&s->tg);
	if (s->ok_ctx)
		SCOTCH_contextExit(&s->ctx);
}

/* SCOTCH_graphMap of src onto the target, part[rank] = terminal; under the
 * context's lock if any. AN_E_RANGE with why when Scotch refuses. */
static int scotch_run(struct place_ctx *pc, const struct target *t, const struct source *src, size_t nh,
		      SCOTCH_Num *part, char why[AN_ERR_LEN])
{
	int rc = AN_E_RANGE;
	if (pc)
		pthread_mutex_lock(&pc->scotch_lock);
	/* the target's decomposition (archBuild2) draws from Scotch's global
	 * generator: reset it under the lock so every build is the same */
	SCOTCH_randomSeed(1);
	SCOTCH_randomReset();
	struct sco s = { .ok_ctx = 0 };
	/* a context of our own: deterministic, fixed seed, its own random state */
	if (SCOTCH_contextInit(&s.ctx) || !(s.ok_ctx = 1) ||
	    SCOTCH_contextOptionSetNum(&s.ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1) ||
	    SCOTCH_contextOptionSetNum(&s.ctx, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) || SCOTCH_contextRandomClone(&s.ctx) ||
	    SCOTCH_contextThreadSpawn(&s.ctx, 1, NULL)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused a deterministic context");
	} else if (SCOTCH_graphInit(&s.tg) || !(s.ok_tg = 1) ||
		   SCOTCH_graphBuild(&s.tg, 0, t->nv, t->verttab, NULL, t->velotab, NULL, t->verttab[t->nv], t->edgetab,
				     t->edlotab) ||
		   SCOTCH_graphInit(&s.tgc) || !(s.ok_tgc = 1) || SCOTCH_contextBindGraph(&s.ctx, &s.tg, &s.tgc)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused the target tree");
	} else if (SCOTCH_archInit(&s.arch) || !(s.ok_arch = 1) || SCOTCH_stratInit(&s.strat) || !(s.ok_strat = 1) ||
		   SCOTCH_archBuild2(&s.arch, &s.tgc, (SCOTCH_Num)nh, t->list)) {
		snprintf(why, AN_ERR_LEN, "Scotch could not build the target architecture");
	} else if (SCOTCH_graphInit(&s.sg) || !(s.ok_sg = 1) ||
		   SCOTCH_graphBuild(&s.sg, 0, src->n, src->verttab, NULL, NULL, NULL, src->m, src->edgetab,
				     src->edlotab) ||
		   SCOTCH_graphInit(&s.sgc) || !(s.ok_sgc = 1) || SCOTCH_contextBindGraph(&s.ctx, &s.sg, &s.sgc)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused the communication graph");
	} else if (SCOTCH_stratGraphMapBuild(&s.strat, SCOTCH_STRATDEFAULT, (SCOTCH_Num)nh, 0.01) ||
		   SCOTCH_graphMap(&s.sgc, &s.arch, &s.strat, part)) {
		snprintf(why, AN_ERR_LEN, "SCOTCH_graphMap failed");
	} else {
		rc = AN_OK;
	}
	sco_exit(&s);
	if (pc)
		pthread_mutex_unlock(&pc->scotch_lock);
	return rc;
}

static int scotch_map(struct place_ctx *pc, const struct hier *h, const struct place_graph *g,
		      const uint32_t *hosts, const uint32_t *slots, size_t nh, SCOTCH_Num *part, char why[AN_ERR_LEN])
{
	struct target t;
	struct source src = { 0 };
	int rc = target_build(h, hosts, slots, nh, &t);
	if (rc == AN_OK)
		rc = source_build(g, &src);
	if (rc == AN_OK)
		rc = scotch_run(pc, &t, &src, nh, part, why);
	target_free(&t);
	source_free(&src);
	return rc;
}

/* Moves ranks off hosts Scotch filled beyond their slots: the ranks with
 * the least traffic to their own host go to the host with room that is
 * closest (tree distance, weighted by traffic) to their neighbours. */
static uint32_t repair(const struct hier *h, const struct place_graph *g, const uint32_t *hosts,
		       const uint32_t *slots, size_t nh, SCOTCH_Num *part)
{
	uint32_t *cnt = calloc(nh, sizeof(*cnt)), moved = 0;
	if (!cnt)
		return 0;
	for (uint32_t r = 0; r < g->n; r++)
		cnt[part[r]]++;
	for (size_t t = 0; t < nh; t++) {
		while (cnt[t] > slots[t]) {
			/* the rank on t with the least weight to ranks on t */
			uint32_t br = NONE32;
			uint64_t bw = UINT64_MAX;
			for (uint32_t r = 0; r < g->n; r++) {
				if ((size_t)part[r] != t)
					continue;
				uint64_t in = 0;
				for (uint32_t e = g->xadj[r]; e < g->xadj[r + 1]; e++)
					if ((size_t)part[g->adj[e]] == t)
						in += g->w[e];
				if (in < bw) {
					bw = in;
					br = r;
				}
			}
			size_t bt = t;
			uint64_t bc = UINT64_MAX;
			for (size_t u = 0; u < nh; u++) {
				if (cnt[u] >= slots[u])
					continue;
				uint64_t c = 0;
				for (uint32_t e = g->xadj[br]; e < g->xadj[br + 1]; e++)
					c += (uint64_t)g->w[e] * tree_dist(h, hosts[u], hosts[part[g->adj[e]]]);
				if (c < bc) {
					bc = c;
					bt = u;
				}
			}
			part[br] = (SCOTCH_Num)bt;
			cnt[t]--;
			cnt[bt]++;
			moved++;
		}
	}
	free(cnt);
	return moved;
}

/* ---- swaps against the busiest cable ---------------------------------------
 * Scotch sees the target tree, neither the routes nor the rates. This pass
 * takes a rank with a flow over the cable that bounds the predicted time
 * and tries it on the hosts of its neighbours (moved where a host has room,
 * else swapped with each rank there); it keeps the first move that lowers
 * (busiest cable's time, cables at that time, sum of every cable's time),
 * in that order, and starts again. It reads each cable's bytes over its
 * rate as cost.h does, kept up to date move by move; the figures answered
 * are place_time's. Work is counted in cable visits and bounded, so the
 * pass is deterministic and its time bounded (~0.1 s). */
#define SWAP_WORK 100000000ull
#define SWAP_RANKS 32   /* ranks over the busiest cable tried per round */
#define SWAP_EPS 1e-9   /* relative: times closer than this are equal */

struct swp {
	const struct route_tab *rt;
	const struct place_graph *g;
	uint64_t bytes;
	size_t nsw_slots, nslots;
	int64_t *lb;             /* bytes per directed cable: switch out ports (pt_off + port), then end ports */
	double *spb;             /* seconds per byte of each, 0 where the rate is unknown */
	size_t *rs;              /* one route's cables */
	struct route_hop *hops;
	uint64_t work;
};

struct swp_obj {
	double max, sum;
	uint32_t cnt;
	size_t at;               /* first cable at max, SIZE_MAX if none */
};

/* The cables of the route a -> b (hosts) into w->rs: the source's cable,
 * then each switch's out port; 0 if a == b or the route fails. */
static size_t swp_route(struct swp *w, uint32_t a, uint32_t b)
{
	const struct route_tab *rt = w->rt;
	uint32_t s = route_host_ep(rt, a), d = route_host_ep(rt, b);
	struct route_res res;
	if (a == b || !rt->eps[d].lid || route_walk(rt, s, rt->eps[d].lid, w->hops, rt->nsw + 2, &res))
		return 0;
	size_t n = 0;
	w->rs[n++] = w->nsw_slots + s;
	for (uint32_t t = 0; t < res.hops && t < rt->nsw + 2; t++) {
		uint32_t sw = rt->sw_of_node[w->hops[t].node];
		if (sw != ROUTE_NONE && w->hops[t].out)
			w->rs[n++] = rt->pt_off[sw] + w->hops[t].out;
	}
	w->work += n;
	return n;
}

/* Adds (sign 1) or removes (-1) the traffic of a rank pair of weight wt
 * between hosts a and b: wt x bytes / 2 each way, as place_time. */
static void swp_pair(struct swp *w, uint32_t a, uint32_t b, uint32_t wt, int sign)
{
	/* A cable carries at most the graph's total, at most 2^62 (checked by
	 * place_map_bytes): exact in int64, whatever the weights. */
	int64_t x = (int64_t)((uint64_t)wt * w->bytes / 2) * sign;
	for (int dir = 0; dir < 2; dir++) {
		size_t n = swp_route(w, dir ? b : a, dir ? a : b);
		for (size_t i = 0; i < n; i++)
			w->lb[w->rs[i]] += x;
	}
}

/* Rank r to host x and, unless s is NONE32, rank s to r's host. */
static void swp_move(struct swp *w, uint32_t *rh, uint32_t r, uint32_t x, uint32_t s)
{
	const struct place_graph *g = w->g;
	uint32_t a = rh[r];
	for (uint32_t e = g->xadj[r]; e < g->xadj[r + 1]; e++)
		if (g->adj[e] != s) {
			swp_pair(w, a, rh[g->adj[e]], g->w[e], -1);
			swp_pair(w, x, rh[g->adj[e]], g->w[e], 1);
		}
	if (s != NONE32)
		for (uint32_t e = g->xadj[s]; e < g->xadj[s + 1]; e++)
			if (g->adj[e] != r) {
				swp_pair(w, x, rh[g->adj[e]], g->w[e], -1);
				swp_pair(w, a, rh[g->adj[e]], g->w[e], 1);
			}
	rh[r] = x;
	if (s != NONE32)
		rh[s] = a;
}

static struct swp_obj swp_eval(struct swp *w)
{
	struct swp_obj o = { 0, 0, 0, SIZE_MAX };
	for (size_t i = 0; i < w->nslots; i++) {
		if (!w->lb[i])
			continue;
		double t = (double)w->lb[i] * w->spb[i];
		o.sum += t;
		if (t > o.max * (1 + SWAP_EPS)) {
			o.max = t, o.cnt = 1, o.at = i;
		} else if (t >= o.max * (1 - SWAP_EPS)) {
			o.cnt++;
		}
	}
	w->work += w->nslots;
	return o;
}

static int swp_better(const struct swp_obj *n, const struct swp_obj *o)
{
	if (n->max < o->max * (1 - SWAP_EPS))
		return 1;
	if (n->max > o->max * (1 + SWAP_EPS))
		return 0;
	return n->cnt < o->cnt || (n->cnt == o->cnt && n->sum < o->sum * (1 - SWAP_EPS));
}

/* The state of the hosts during the pass. */
struct swp_hosts {
	const uint32_t *slots;
	size_t nh;
	uint32_t *pos;     /* [rt->nhosts] fabric host -> position in hosts[] */
	uint32_t *cnt;     /* [nh] ranks on each */
	uint32_t *start;   /* [nh + 1] ranks of each, in order[] (rebuilt per round) */
	uint32_t *order;   /* [n] */
	uint32_t *cand;    /* [SWAP_RANKS] */
};

/* Ranks with a flow over cable `at`, at most SWAP_RANKS, ascending. */
static uint32_t swp_over(struct swp *w, const uint32_t *rh, size_t at, uint32_t *cand)
{
	const struct place_graph *g = w->g;
	uint32_t nc = 0;
	for (uint32_t v = 0; v < g->n && nc < SWAP_RANKS; v++) {
		int hit = 0;
		for (uint32_t e = g->xadj[v]; e < g->xadj[v + 1] && !hit; e++)
			for (int dir = 0; dir < 2 && !hit; dir++) {
				uint32_t a = rh[v], b = rh[g->adj[e]];
				size_t n = swp_route(w, dir ? b : a, dir ? a : b);
				for (size_t i = 0; i < n; i++)
					hit |= w->rs[i] == at;
			}
		if (hit)
			cand[nc++] = v;
	}
	return nc;
}

/* Tries rank r on host x: moved if x has room, else swapped with each of
 * x's ranks; keeps the first that improves *o. 1 if kept. */
static int swp_try(struct swp *w, struct swp_hosts *sh, uint32_t *rh, uint32_t r, uint32_t x, struct swp_obj *o)
{
	uint32_t a = rh[r], pa = sh->pos[a], px = sh->pos[x];
	int room = sh->cnt[px] < sh->slots[px];
	uint32_t lo = room ? 0 : sh->start[px], hi = room ? 1 : sh->start[px + 1];
	for (uint32_t k = lo; k < hi && w->work < SWAP_WORK; k++) {
		uint32_t s = room ? NONE32 : sh->order[k];
		swp_move(w, rh, r, x, s);
		struct swp_obj n = swp_eval(w);
		if (swp_better(&n, o)) {
			*o = n;
			if (room)
				sh->cnt[pa]--, sh->cnt[px]++;
			return 1;
		}
		swp_move(w, rh, r, a, s);
	}
	return 0;
}

/* One round from the busiest cable; 1 if a move was kept. */
static int swp_round(struct swp *w, struct swp_hosts *sh, uint32_t *rh, struct swp_obj *o)
{
	const struct place_graph *g = w->g;
	if (o->at == SIZE_MAX)
		return 0;
	memset(sh->start, 0, (sh->nh + 1) * sizeof(*sh->start));
	for (uint32_t r = 0; r < g->n; r++)
		sh->start[sh->pos[rh[r]] + 1]++;
	for (size_t i = 0; i < sh->nh; i++)
		sh->start[i + 1] += sh->start[i];
	for (uint32_t r = 0; r < g->n; r++)
		sh->order[sh->start[sh->pos[rh[r]]]++] = r;
	for (size_t i = sh->nh; i > 0; i--)
		sh->start[i] = sh->start[i - 1];
	sh->start[0] = 0;
	uint32_t nc = swp_over(w, rh, o->at, sh->cand);
	for (uint32_t c = 0; c < nc && w->work < SWAP_WORK; c++) {
		uint32_t r = sh->cand[c];
		for (uint32_t e = g->xadj[r]; e < g->xadj[r + 1] && w->work < SWAP_WORK; e++) {
			uint32_t x = rh[g->adj[e]], seen = x == rh[r];
			for (uint32_t f = g->xadj[r]; f < e && !seen; f++)
				seen = rh[g->adj[f]] == x;
			if (!seen && swp_try(w, sh, rh, r, x, o))
				return 1;
		}
	}
	return 0;
}

/* The cables' rates and the mapping's loads. */
static int swp_init(struct swp *w, const struct route_tab *rt, const struct place_graph *g, uint64_t bytes,
		    const uint32_t *rh)
{
	*w = (struct swp){ .rt = rt, .g = g, .bytes = bytes };
	w->nsw_slots = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 1;
	w->nslots = w->nsw_slots + rt->neps;
	w->lb = calloc(w->nslots, sizeof(*w->lb));
	w->spb = calloc(w->nslots, sizeof(*w->spb));
	w->rs = malloc((rt->nsw + 3) * sizeof(*w->rs));
	w->hops = malloc((rt->nsw + 2) * sizeof(*w->hops));
	if (!w->lb || !w->spb || !w->rs || !w->hops)
		return AN_E_NOMEM;
	for (uint32_t sw = 0; sw < rt->nsw; sw++) {
		uint32_t node = rt->sw_node[sw];
		for (unsigned p = 1; p <= rt->snap->nodes[node].nports; p++) {
			uint64_t bps = rate_cable_bps(rt->snap, node, p);
			w->spb[rt->pt_off[sw] + p] = bps ? 8.0 / (double)bps : 0;
		}
	}
	for (uint32_t i = 0; i < rt->neps; i++) {
		uint64_t bps = rt->eps[i].host == ROUTE_NONE ? 0 : rate_cable_bps(rt->snap, rt->eps[i].node, rt->eps[i].port);
		w->spb[w->nsw_slots + i] = bps ? 8.0 / (double)bps : 0;
	}
	for (uint32_t v = 0; v < g->n; v++)
		for (uint32_t e = g->xadj[v]; e < g->xadj[v + 1]; e++)
			if (g->adj[e] > v)
				swp_pair(w, rh[v], rh[g->adj[e]], g->w[e], 1);
	return AN_OK;
}

static void swp_free(struct swp *w)
{
	free(w->lb);
	free(w->spb);
	free(w->rs);
	free(w->hops);
}

/* Improves rh (every rank on a host of hosts[] within its slots) in place;
 * the number of moves kept, or a negative AN_E_NOMEM. */
static long swap_pass(const struct route_tab *rt, const struct place_graph *g, const uint32_t *hosts,
		      const uint32_t *slots, size_t nh, uint64_t bytes, uint32_t *rh)
{
	struct swp w;
	struct swp_hosts sh = { slots, nh, malloc((rt->nhosts ? rt->nhosts : 1) * sizeof(*sh.pos)),
				calloc(nh, sizeof(*sh.cnt)), malloc((nh + 1) * sizeof(*sh.start)),
				malloc(((size_t)g->n + 1) * sizeof(*sh.order)), malloc(SWAP_RANKS * sizeof(*sh.cand)) };
	long kept = AN_E_NOMEM;
	if (swp_init(&w, rt, g, bytes, rh) == AN_OK && sh.pos && sh.cnt && sh.start && sh.order && sh.cand) {
		for (size_t i = 0; i < nh; i++)
			sh.pos[hosts[i]] = (uint32_t)i;
		for (uint32_t r = 0; r < g->n; r++)
			sh.cnt[sh.pos[rh[r]]]++;
		struct swp_obj o = swp_eval(&w);
		kept = 0;
		while (w.work < SWAP_WORK && swp_round(&w, &sh, rh, &o))
			kept++;
	}
	swp_free(&w);
	free(sh.pos);
	free(sh.cnt);
	free(sh.start);
	free(sh.order);
	free(sh.cand);
	return kept;
}

/* ---- the answer -------------------------------------------------------------- */

/* Scotch's mapping, repaired into the slots and improved by swaps, into
 * res with its cost and time in out (cost, scotch_time, moved, swaps).
 * AN_E_RANGE (why) if Scotch did not run: block stands. */
static int scotch_candidate(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
			    const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh,
			    uint64_t bytes, uint32_t *res, struct place_map *out, char why[AN_ERR_LEN])
{
	SCOTCH_Num *part = malloc(g->n * sizeof(*part));
	uint32_t *sw = malloc(g->n * sizeof(*sw));
	int rc = part && sw ? (nh > 1 ? scotch_map(ctx, h, g, hosts, slots, nh, part, why) : AN_E_RANGE) : AN_E_NOMEM;
	if (rc == AN_OK) {
		out->moved = repair(h, g, hosts, slots, nh, part);
		for (uint32_t r = 0; r < g->n; r++)
			res[r] = hosts[part[r]];
		rc = place_time(rt, g, res, bytes, &out->scotch_time, why);
	}
	if (rc == AN_OK && out->scotch_time.seconds > 0) {
		memcpy(sw, res, g->n * sizeof(*sw));
		long k = swap_pass(rt, g, hosts, slots, nh, bytes, sw);
		struct place_time t;
		rc = k < 0 ? (int)k : place_time(rt, g, sw, bytes, &t, why);
		/* kept only when the one cost model agrees (it adds the latency) */
		if (rc == AN_OK && k > 0 && t.seconds >= 0 && t.seconds < out->scotch_time.seconds) {
			memcpy(res, sw, g->n * sizeof(*res));
			out->scotch_time = t;
			out->swaps = (uint32_t)k;
		}
	}
	if (rc == AN_OK)
		rc = place_cost(rt, g, res, &out->cost);
	free(part);
	free(sw);
	return rc;
}

/* a predicted faster than b by more than a millionth (not rounding) */
static int faster(const struct place_time *a, const struct place_time *b)
{
	return a->seconds >= 0 && b->seconds >= 0 && a->seconds < b->seconds * (1 - 1e-6);
}

/* Which of Scotch's (sc: it ran), block and round-robin is answered. */
static void choose(struct place_map *out, int sc)
{
	int timed = out->block_time.seconds >= 0 && (!sc || out->scotch_time.seconds >= 0);
	out->method = PLACE_BLOCK;
	if (!timed) {
		/* no rates: the hop-bytes rule of old */
		out->reason = PLACE_UNKNOWN;
		if (sc && (out->cost.hop_bytes < out->block.hop_bytes ||
			   (out->cost.hop_bytes == out->block.hop_bytes && out->cost.max_load <= out->block.max_load)))
			out->method = PLACE_SCOTCH;
		return;
	}
	const struct place_time *best = &out->block_time;
	if (sc && faster(&out->scotch_time, best))
		out->method = PLACE_SCOTCH, best = &out->scotch_time;
	if (faster(&out->rr_time, best))
		out->method = PLACE_RR, best = &out->rr_time;
	out->reason = out->method != PLACE_BLOCK ? PLACE_FASTER
		      : sc && faster(&out->block_time, &out->scotch_time) ? PLACE_SLOWER
									 : PLACE_EQUAL;
}

int place_map_bytes(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		    const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh, uint64_t bytes,
		    struct place_map *out, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	out->scotch_time = (struct place_time){ .seconds = -1, .node = ROUTE_NONE };
	out->bytes = bytes;
	uint64_t total = 0;
	for (size_t i = 0; i < nh; i++)
		total += slots[i];
	if (!nh || total < g->n) {
		snprintf(why, AN_ERR_LEN, "%u ranks but only %" PRIu64 " slots", g->n, total);
		return AN_E_RANGE;
	}
	if (!g->n) {
		snprintf(why, AN_ERR_LEN, "the graph has no vertex");
		return AN_E_RANGE;
	}
	uint64_t phase;
	if (!bytes || bytes > PLACE_BYTES_MAX) {
		snprintf(why, AN_ERR_LEN, "bytes per unit of weight must be 1..2^53, got %" PRIu64, bytes);
		return AN_E_RANGE;
	}
	if (place_graph_bytes(g, bytes, &phase, why))
		return AN_E_RANGE;
	uint32_t *blk = malloc(g->n * sizeof(*blk)), *rr = malloc(g->n * sizeof(*rr));
	uint32_t *res = malloc(g->n * sizeof(*res));
	char twhy[AN_ERR_LEN] = "";
	int rc = AN_E_NOMEM;
	if (!blk || !rr || !res)
		goto fail;
	place_block(hosts, slots, nh, g->n, blk);
	place_rr(hosts, slots, nh, g->n, rr);
	if ((rc = place_cost(rt, g, blk, &out->block)) || (rc = place_cost(rt, g, rr, &out->rr)) ||
	    (rc = place_time(rt, g, blk, bytes, &out->block_time, twhy)) ||
	    (rc = place_time(rt, g, rr, bytes, &out->rr_time, twhy)))
		goto fail;
	char swhy[AN_ERR_LEN] = "";
	int src = scotch_candidate(ctx, rt, h, g, hosts, slots, nh, bytes, res, out, swhy);
	if (src == AN_E_NOMEM) {
		rc = src;
		goto fail;
	}
	choose(out, src == AN_OK);
	if (out->method == PLACE_BLOCK) {
		memcpy(res, blk, g->n * sizeof(*res));
		out->cost = out->block, out->time = out->block_time;
	} else if (out->method == PLACE_RR) {
		memcpy(res, rr, g->n * sizeof(*res));
		out->cost = out->rr, out->time = out->rr_time;
	} else {
		out->time = out->scotch_time;
	}
	out->rank_host = res;
	free(blk);
	free(rr);
	return AN_OK;
fail:
	free(blk);
	free(rr);
	free(res);
	snprintf(why, AN_ERR_LEN, "%s", an_strerror(rc));
	return rc;
}

int place_map(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
	      const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh,
	      struct place_map *out, char why[AN_ERR_LEN])
{
	return place_map_bytes(ctx, rt, h, g, hosts, slots, nh, PLACE_BYTES_DEFAULT, out, why);
}

void place_map_free(struct place_map *m)
{
	if (!m)
		return;
	free(m->rank_host);
	m->rank_host = NULL;
}
