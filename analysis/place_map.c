/*
 * place_map.c - ranks of a communication graph onto hosts with slots
 * (place.h): the two reference mappings, Scotch's mapping onto a target
 * tree built from the hierarchy, the repair of over-filled hosts, and the
 * choice of whichever costs less on the real routes.
 */
#include "place_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scotch/scotch.h>

void place_block(const uint32_t *hosts, const uint32_t *slots, size_t nh, uint32_t n, uint32_t *rank_host)
{
	uint32_t r = 0;
	for (size_t i = 0; i < nh && r < n; i++)
		for (uint32_t s = 0; s < slots[i] && r < n; s++)
			rank_host[r++] = hosts[i];
}

void place_rr(const uint32_t *hosts, const uint32_t *slots, size_t nh, uint32_t n, uint32_t *rank_host)
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

int place_map(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
	      const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh,
	      struct place_map *out, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
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
	uint32_t *blk = malloc(g->n * sizeof(*blk)), *rr = malloc(g->n * sizeof(*rr));
	uint32_t *res = malloc(g->n * sizeof(*res));
	SCOTCH_Num *part = malloc(g->n * sizeof(*part));
	int rc = AN_E_NOMEM;
	if (!blk || !rr || !res || !part)
		goto fail;
	place_block(hosts, slots, nh, g->n, blk);
	place_rr(hosts, slots, nh, g->n, rr);
	if ((rc = place_cost(rt, g, blk, &out->block)) || (rc = place_cost(rt, g, rr, &out->rr)))
		goto fail;
	char swhy[AN_ERR_LEN] = "";
	int src = nh > 1 ? scotch_map(ctx, h, g, hosts, slots, nh, part, swhy) : AN_E_RANGE;
	if (src == AN_E_NOMEM) {
		rc = src;
		goto fail;
	}
	out->method = PLACE_BLOCK;
	out->cost = out->block;
	if (src == AN_OK) {
		out->moved = repair(h, g, hosts, slots, nh, part);
		for (uint32_t r = 0; r < g->n; r++)
			res[r] = hosts[part[r]];
		struct place_cost c;
		if ((rc = place_cost(rt, g, res, &c)))
			goto fail;
		/* never worse than block: Scotch's view of distance is the tree's,
		 * the truth is the LFTs' */
		if (c.hop_bytes < out->block.hop_bytes ||
		    (c.hop_bytes == out->block.hop_bytes && c.max_load <= out->block.max_load)) {
			out->method = PLACE_SCOTCH;
			out->cost = c;
		}
	}
	if (out->method == PLACE_BLOCK)
		memcpy(res, blk, g->n * sizeof(*res));
	out->rank_host = res;
	free(blk);
	free(rr);
	free(part);
	return AN_OK;
fail:
	free(blk);
	free(rr);
	free(res);
	free(part);
	snprintf(why, AN_ERR_LEN, "%s", an_strerror(rc));
	return rc;
}

void place_map_free(struct place_map *m)
{
	if (!m)
		return;
	free(m->rank_host);
	m->rank_host = NULL;
}
