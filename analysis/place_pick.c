/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_pick.c - pick: want hosts out of a free list (place.h).
 *
 * The rule, in order (docs/protocol.md, `pick`):
 *   1. one leaf switch if one has want free hosts: the one with the fewest
 *      that suffices (best fit keeps larger blocks free);
 *   2. else the fewest leaf switches that can hold want (their free counts,
 *      largest first), and among the sets of that many leaves the fewest
 *      pods: exact, by dynamic programming over pods (pk_compact);
 *   3. among the sets on that many leaves and pods, the fewest hosts
 *      sharing a link above the leaf, then the most free hosts on the
 *      leaves: sharing-free on step 2's leaves (the most free hosts) when
 *      their capacities against each other allow it, which is optimal;
 *      else a greedy fill on them, then on small free lists the exact
 *      search over every such set (place_search.c).
 * Compactness comes first because it is a property of leaf switches alone,
 * so it holds on every routing engine; sharing depends on the routes (under
 * updn, minhop or dfsssp the entry link into a leaf varies with the source
 * leaf, and a sharing-free set may need many more leaves). When sharing
 * was traded for compactness, sharing_free_wider says so.
 *
 * Sharing works on "entry links": for a destination host j on leaf A and a
 * source leaf L != A, the last switch-to-switch link of the LFT walk from L
 * to j, i.e. the link by which L's traffic enters A. share.h's ingress(j)
 * for a set S is exactly { entry(j, L) : L a leaf of S, L != A }, so
 * sharing in S is decided by these codes alone, and only between hosts of
 * one leaf. Sharing only grows with S (ingress sets only grow), so a set
 * found sharing-free against a larger set of source leaves stays
 * sharing-free for the leaves actually chosen.
 */
#include "place_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate.h"

struct leafcap;

/* One request's state. Host positions index f, leaves index leaf_sw. */
struct pk {
	struct place_ctx *ctx;
	const struct route_tab *rt;
	const struct hier *h;
	size_t nf, want;
	uint32_t *f;        /* free hosts, hierarchy order */
	uint32_t *lf;       /* [nf] leaf index (into leaves) or NONE32 */
	uint32_t nl;
	uint32_t *leaf_sw;  /* [nl] switch index */
	uint32_t *leaf_first, *leaf_n;  /* leaf l's hosts: lhosts[leaf_first[l] ..+ leaf_n[l]) */
	uint32_t *lhosts;   /* positions into f, grouped by leaf */
	struct etab *tab;   /* the context's shared table, or NULL */
	uint32_t *own;      /* a table of the request's own when not cached */
	const uint32_t *e;  /* entry codes: e[rowof[i] * ncols + colof[l]], NONE32 */
	uint32_t *rowof, *colof;
	uint32_t ncols;
	uint32_t ncodes;
	uint32_t *stamp;    /* [ncodes] */
	uint32_t epoch;
	uint32_t *sel;      /* [nf] the chosen positions, nsel of them */
	size_t nsel;
	uint32_t *src;      /* [nl] the chosen leaves, nsrc of them */
	size_t nsrc;
	uint32_t *scratch;  /* [nl] the exact search's source leaves */
	uint32_t *tmp;      /* [nf] scratch positions */
	struct leafcap *lc; /* [nl] capacities */
	uint32_t *lpod;     /* [nl] pod of each leaf (place_pod) */
	uint64_t *lup;      /* [nl] uplink capacity: cables to switches x the slowest's rate */
	uint8_t *inset;     /* [nl] 1 for a chosen leaf */
	uint32_t kmin, pmin;   /* fewest leaves, then fewest pods */
	int packed;            /* fill the fullest chosen leaves first (place_pick_packed) */
};

static void pk_free(struct pk *p)
{
	free(p->f);
	free(p->lf);
	free(p->leaf_sw);
	free(p->leaf_first);
	free(p->leaf_n);
	free(p->lhosts);
	free(p->own);
	free(p->rowof);
	free(p->colof);
	place_etab_unref(p->ctx, p->tab);
	free(p->stamp);
	free(p->sel);
	free(p->src);
	free(p->scratch);
	free(p->tmp);
	free(p->lc);
	free(p->lpod);
	free(p->lup);
	free(p->inset);
}

/* Entry codes for the request: rows and columns into the context's cached
 * table, or a table of the free hosts' own when there is no context or the
 * fabric is too large to cache (the same codes either way). */
static int pk_entries(struct pk *p)
{
	const struct route_tab *rt = p->rt;
	int rc = AN_OK;
	p->rowof = malloc((p->nf + 1) * sizeof(*p->rowof));
	p->colof = malloc((p->nl + 1) * sizeof(*p->colof));
	if (!p->rowof || !p->colof)
		return AN_E_NOMEM;
	if (p->ctx)
		p->tab = place_etab_get(p->ctx, rt, &rc);
	if (p->tab) {
		p->e = p->tab->e;
		p->ncols = p->tab->ncols;
		for (size_t i = 0; i < p->nf; i++)
			p->rowof[i] = p->f[i];
		for (uint32_t l = 0; l < p->nl; l++)
			p->colof[l] = p->tab->col_of_sw[p->leaf_sw[l]];
		return AN_OK;
	}
	if (rc)
		return rc;
	uint32_t *leaf = malloc((p->nf + 1) * sizeof(*leaf));
	p->own = malloc(((size_t)p->nf * p->nl + 1) * sizeof(*p->own));
	if (!leaf || !p->own) {
		free(leaf);
		return AN_E_NOMEM;
	}
	for (size_t i = 0; i < p->nf; i++) {
		leaf[i] = p->lf[i] == NONE32 ? ROUTE_NONE : p->leaf_sw[p->lf[i]];
		p->rowof[i] = (uint32_t)i;
	}
	for (uint32_t l = 0; l < p->nl; l++)
		p->colof[l] = l;
	rc = place_etab_fill(rt, p->f, leaf, p->nf, p->leaf_sw, p->nl, p->own);
	free(leaf);
	p->e = p->own;
	p->ncols = p->nl;
	return rc;
}

static inline uint32_t pk_code(const struct pk *p, uint32_t i, uint32_t l)
{
	return p->e[(size_t)p->rowof[i] * p->ncols + p->colof[l]];
}

/* Tries to add host position i with source leaves src[0..ns): 1 and marks
 * its codes if none is marked yet, else 0. */
static int pk_try(struct pk *p, uint32_t i, const uint32_t *src, size_t ns)
{
	for (size_t k = 0; k < ns; k++) {
		uint32_t c = pk_code(p, i, src[k]);
		if (c != NONE32 && p->stamp[c] == p->epoch)
			return 0;
	}
	for (size_t k = 0; k < ns; k++) {
		uint32_t c = pk_code(p, i, src[k]);
		if (c != NONE32)
			p->stamp[c] = p->epoch;
	}
	return 1;
}

/* Sharing-free greedy selection on leaf l against sources src: up to max
 * host positions into out (hierarchy order); returns how many. */
static uint32_t pk_leaf(struct pk *p, uint32_t l, const uint32_t *src, size_t ns, uint32_t max, uint32_t *out)
{
	p->epoch++;
	uint32_t k = 0;
	for (uint32_t t = 0; t < p->leaf_n[l] && k < max; t++) {
		uint32_t i = p->lhosts[p->leaf_first[l] + t];
		if (pk_try(p, i, src, ns))
			out[k++] = i;
	}
	return k;
}

/* The exact search (place_search.c) runs on free lists up to
 * PICK_EXACT_HOSTS long, visiting at most PICK_SEARCH_BUDGET sets: more
 * than the 2^20 subsets of 20 hosts, so it always ends on lists up to 20
 * hosts. Longer lists rely on the leaves of step 2 and the greedy fill. */
#define PICK_EXACT_HOSTS 40
#define PICK_SEARCH_BUDGET (1L << 21)

struct leafcap {
	uint32_t l, cap, pod, first;   /* first: position of its first host, for ties */
};

/* Leaves in hierarchy order of their first host, and each leaf's hosts
 * (lhosts) in hierarchy order. lofsw: [nsw + 1] scratch. */
static int pk_group_leaves(struct pk *p, uint32_t *lofsw)
{
	size_t nfree = p->nf;
	for (uint32_t s = 0; s <= p->rt->nsw; s++)
		lofsw[s] = NONE32;
	p->leaf_sw = malloc(nfree * sizeof(*p->leaf_sw));
	p->leaf_n = calloc(nfree, sizeof(*p->leaf_n));
	p->leaf_first = malloc(nfree * sizeof(*p->leaf_first));
	p->lhosts = malloc(nfree * sizeof(*p->lhosts));
	if (!p->leaf_sw || !p->leaf_n || !p->leaf_first || !p->lhosts)
		return AN_E_NOMEM;
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(p->rt, p->f[i]);
		p->lf[i] = NONE32;
		if (sw == ROUTE_NONE)
			continue;
		if (lofsw[sw] == NONE32) {
			lofsw[sw] = p->nl;
			p->leaf_sw[p->nl++] = sw;
		}
		p->lf[i] = lofsw[sw];
		p->leaf_n[p->lf[i]]++;
	}
	for (uint32_t l = 0, acc = 0; l < p->nl; l++) {
		p->leaf_first[l] = acc;
		acc += p->leaf_n[l];
		p->leaf_n[l] = 0;
	}
	for (size_t i = 0; i < nfree; i++)
		if (p->lf[i] != NONE32) {
			uint32_t l = p->lf[i];
			p->lhosts[p->leaf_first[l] + p->leaf_n[l]++] = (uint32_t)i;
		}
	return AN_OK;
}

/* A leaf switch's uplink capacity (bits/s): routes by destination spread
 * its traffic over its uplinks one host at a time, so the slowest one paces
 * them all: u x the slowest rate, not the sum. 0 without uplinks. */
uint64_t place_leaf_uplinks(const struct route_tab *rt, uint32_t sw)
{
	uint32_t node = rt->sw_node[sw];
	uint64_t slow = UINT64_MAX, u = 0;
	for (unsigned q = 1; q <= rt->snap->nodes[node].nports; q++)
		if (rt->pt[rt->pt_off[sw] + q] < ROUTE_PT_EP) {
			uint64_t bps = rate_cable_bps(rt->snap, node, q);
			slow = bps < slow ? bps : slow;
			u++;
		}
	return u ? u * slow : 0;
}

/* The free list in hierarchy order, grouped by leaf, and the working sets. */
static int pk_setup(struct pk *p, const uint32_t *free_hosts)
{
	const struct route_tab *rt = p->rt;
	size_t nfree = p->nf;
	int rc = AN_E_NOMEM;
	p->f = malloc(nfree * sizeof(*p->f));
	p->lf = malloc(nfree * sizeof(*p->lf));
	uint32_t *lofsw = malloc((rt->nsw + 1) * sizeof(*lofsw));
	if (!p->f || !p->lf || !lofsw)
		goto out;
	memcpy(p->f, free_hosts, nfree * sizeof(*p->f));
	if ((rc = place_order(rt, p->h, p->f, nfree)) || (rc = pk_group_leaves(p, lofsw)))
		goto out;
	rc = AN_E_NOMEM;
	p->ncodes = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 1;
	p->stamp = calloc(p->ncodes, sizeof(*p->stamp));
	p->sel = malloc(nfree * sizeof(*p->sel));
	p->src = malloc((p->nl + 1) * sizeof(*p->src));
	p->scratch = malloc((p->nl + 1) * sizeof(*p->scratch));
	p->tmp = malloc(nfree * sizeof(*p->tmp));
	p->lc = malloc((p->nl + 1) * sizeof(*p->lc));
	p->lpod = malloc((p->nl + 1) * sizeof(*p->lpod));
	p->lup = calloc(p->nl + 1, sizeof(*p->lup));
	p->inset = calloc(p->nl + 1, 1);
	if (p->stamp && p->sel && p->src && p->scratch && p->tmp && p->lc && p->lpod && p->inset && p->lup)
		rc = AN_OK;
	for (uint32_t l = 0; rc == AN_OK && l < p->nl; l++) {
		p->lpod[l] = place_pod(p->h, p->f[p->lhosts[p->leaf_first[l]]]);
		p->lup[l] = place_leaf_uplinks(rt, p->leaf_sw[l]);
	}
out:
	free(lofsw);
	return rc;
}

/* 1. One leaf holds them all: no traffic leaves it, nothing is shared.
 * Best fit (the leaf with the fewest free hosts that suffices) keeps
 * larger blocks free for later jobs. 1 if it chose. */
static int pk_one_leaf(struct pk *p)
{
	long best = -1;
	for (uint32_t l = 0; l < p->nl; l++)
		if (p->leaf_n[l] >= p->want && (best < 0 || p->leaf_n[l] < p->leaf_n[best]))
			best = l;
	if (best < 0)
		return 0;
	for (size_t k = 0; k < p->want; k++)
		p->sel[p->nsel++] = p->lhosts[p->leaf_first[best] + k];
	p->kmin = p->pmin = 1;
	return 1;
}

/* The dynamic programme beyond this many cells (pods x (k + 1)^2, 2 bytes
 * each) gives way to the leaves with the most free hosts: 16 MiB. */
#define PICK_DP_CELLS (1u << 23)

static int cmp_asc32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_desc32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x > y ? -1 : x < y;
}

/* Leaves grouped by pod (dense index pi), each pod's with the most free
 * hosts first, then the most uplink capacity (among leaves that
 * serve the promises equally, the ones whose cables up are not failed or
 * slow), then in hierarchy order. */
struct ordctx {
	const uint32_t *pi, *n;
	const uint64_t *up;
};

static int ord_cmp(const void *a, const void *b, void *c)
{
	const struct ordctx *o = c;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (o->pi[x] != o->pi[y])
		return o->pi[x] < o->pi[y] ? -1 : 1;
	if (o->n[x] != o->n[y])
		return o->n[x] > o->n[y] ? -1 : 1;
	if (o->up[x] != o->up[y])
		return o->up[x] > o->up[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The fewest pods among sets of exactly k leaves holding want: best[m][j]
 * is the most free hosts on j leaves of m pods among the pods seen so far,
 * ch[q][m][j] the leaves pod q gave to reach it (0: none; a pod gives its
 * fullest leaves). The chosen leaves into src. AN_E_RANGE (no harm done)
 * when the table would pass PICK_DP_CELLS. */
static int pk_dp(struct pk *p, const uint32_t *ord, const uint32_t *pstart, uint32_t npods, uint32_t k)
{
	uint32_t M = npods < k ? npods : k;
	size_t W = (size_t)(M + 1) * (k + 1);
	if ((uint64_t)W * npods > PICK_DP_CELLS || k > UINT16_MAX)
		return AN_E_RANGE;
	int64_t *best = malloc(W * sizeof(*best)), *nb = malloc(W * sizeof(*nb));
	uint16_t *ch = calloc(W * npods, sizeof(*ch));
	if (!best || !nb || !ch) {
		free(best), free(nb), free(ch);
		return AN_E_NOMEM;
	}
	for (size_t x = 0; x < W; x++)
		best[x] = -1;
	best[0] = 0;
	for (uint32_t q = 0; q < npods; q++) {
		memcpy(nb, best, W * sizeof(*nb));
		uint16_t *cq = ch + W * q;
		uint32_t sz = pstart[q + 1] - pstart[q];
		for (uint32_t m = 0; m < M; m++)
			for (uint32_t j = 0; j < k; j++) {
				int64_t acc = best[(size_t)m * (k + 1) + j];
				if (acc < 0)
					continue;
				for (uint32_t t = 1; t <= sz && j + t <= k; t++) {
					size_t x = (size_t)(m + 1) * (k + 1) + j + t;
					acc += p->leaf_n[ord[pstart[q] + t - 1]];
					if (acc > nb[x]) {
						nb[x] = acc;
						cq[x] = (uint16_t)t;
					}
				}
			}
		int64_t *sw = best;
		best = nb, nb = sw;
	}
	uint32_t m = 1;
	while (m < M && best[(size_t)m * (k + 1) + k] < (int64_t)p->want)
		m++;
	p->pmin = m;
	p->nsrc = 0;
	for (uint32_t q = npods, j = k; q-- > 0 && j;) {
		uint32_t t = ch[W * q + (size_t)m * (k + 1) + j];
		for (uint32_t u = 0; u < t; u++)
			p->src[p->nsrc++] = ord[pstart[q] + u];
		if (t)
			m--, j -= t;
	}
	free(best), free(nb), free(ch);
	return AN_OK;
}

/* 2. The fewest leaves that hold want (their free counts, most first),
 * then the fewest pods among such sets (pk_dp): into src, in hierarchy
 * order, with kmin and pmin. With too few hosts on leaves, every leaf. */
static int pk_compact(struct pk *p)
{
	uint32_t nl = p->nl, k = 0, npods = 0;
	uint64_t acc = 0;
	uint32_t *ord = malloc((nl + 1) * sizeof(*ord)), *pi = malloc((nl + 1) * sizeof(*pi));
	uint32_t *pstart = malloc((nl + 2) * sizeof(*pstart)), *rep = malloc((nl + 1) * sizeof(*rep));
	int rc = AN_E_NOMEM;
	if (!ord || !pi || !pstart || !rep)
		goto out;
	memcpy(rep, p->leaf_n, nl * sizeof(*rep));
	qsort(rep, nl, sizeof(*rep), cmp_desc32);
	while (k < nl && acc < p->want)
		acc += rep[k++];
	for (uint32_t l = 0; l < nl; l++) {   /* dense pod index, pods in hierarchy order */
		uint32_t q = 0;
		while (q < npods && p->lpod[rep[q]] != p->lpod[l])
			q++;
		if (q == npods)
			rep[npods++] = l;
		pi[l] = q;
		ord[l] = l;
	}
	struct ordctx oc = { pi, p->leaf_n, p->lup };
	qsort_r(ord, nl, sizeof(*ord), ord_cmp, &oc);
	for (uint32_t q = 0, l = 0; q <= npods; q++) {
		while (l < nl && pi[ord[l]] < q)
			l++;
		pstart[q] = l;
	}
	p->kmin = k;
	rc = acc >= p->want ? pk_dp(p, ord, pstart, npods, k) : AN_E_RANGE;
	if (rc == AN_E_RANGE) {
		/* every leaf (too few hosts on leaves), or a table too large:
		 * the fullest leaves, pods as they fall */
		memset(rep, 0, nl * sizeof(*rep));
		struct ordctx flat = { rep, p->leaf_n, p->lup };
		qsort_r(ord, nl, sizeof(*ord), ord_cmp, &flat);
		p->nsrc = 0;
		for (uint32_t l = 0; l < k; l++)
			p->src[p->nsrc++] = ord[l];
		p->pmin = 0;
		for (uint32_t a = 0; a < k; a++) {
			int seen = 0;
			for (uint32_t b = 0; b < a && !seen; b++)
				seen = p->lpod[p->src[b]] == p->lpod[p->src[a]];
			p->pmin += !seen;
		}
		rc = AN_OK;
	}
	if (rc == AN_OK) {
		qsort(p->src, p->nsrc, sizeof(*p->src), cmp_asc32);
		for (size_t a = 0; a < p->nsrc; a++)
			p->inset[p->src[a]] = 1;
	}
out:
	free(ord), free(pi), free(pstart), free(rep);
	return rc;
}

/* 3a. Sharing-free within the chosen leaves, by their capacities against
 * each other (each leaf filled up to its capacity, in hierarchy order).
 * 1 if they hold want. */
static int pk_within(struct pk *p)
{
	uint64_t total = 0;
	for (size_t a = 0; a < p->nsrc; a++)
		total += pk_leaf(p, p->src[a], p->src, p->nsrc, UINT32_MAX, p->tmp);
	if (total < p->want)
		return 0;
	p->nsel = 0;
	for (size_t a = 0; a < p->nsrc && p->nsel < p->want; a++)
		p->nsel += pk_leaf(p, p->src[a], p->src, p->nsrc, (uint32_t)(p->want - p->nsel), p->sel + p->nsel);
	return p->nsel == p->want;
}

/* Each leaf's sharing-free capacity against every free leaf: their sum
 * (conservative, see the top). At least want proves that a sharing-free
 * set exists in the free list. */
static uint64_t pk_capacities(struct pk *p)
{
	for (uint32_t l = 0; l < p->nl; l++)
		p->scratch[l] = l;
	uint64_t total = 0;
	for (uint32_t l = 0; l < p->nl; l++)
		total += pk_leaf(p, l, p->scratch, p->nl, UINT32_MAX, p->tmp);
	return total;
}

/* The search's input: entry codes of the free hosts on leaves from every
 * free leaf, renumbered densely, and pods numbered densely. Into in
 * (in->code and in->lpod malloc'ed: free them). */
static int pk_search_in(struct pk *p, struct psearch_in *in)
{
	uint32_t nl = p->nl, nlh = 0, npods = 0, nd = 0;
	uint32_t *code = malloc(((size_t)p->nf * nl + 1) * sizeof(*code)), *map = malloc(p->ncodes * sizeof(*map));
	uint32_t *dpod = malloc((nl + 1) * sizeof(*dpod));
	if (!code || !map || !dpod) {
		free(code), free(map), free(dpod);
		return AN_E_NOMEM;
	}
	p->epoch++;
	for (uint32_t i = 0; i < p->nf; i++)
		for (uint32_t l = 0; l < nl; l++) {
			uint32_t c = p->lf[i] == NONE32 ? NONE32 : pk_code(p, i, l);
			if (c != NONE32 && p->stamp[c] != p->epoch)
				p->stamp[c] = p->epoch, map[c] = nd++;
			code[(size_t)i * nl + l] = c == NONE32 ? NONE32 : map[c];
		}
	for (uint32_t l = 0; l < nl; l++) {   /* pods in order of first appearance */
		uint32_t q = 0;
		while (q < l && p->lpod[q] != p->lpod[l])
			q++;
		dpod[l] = q < l ? dpod[q] : npods++;
		nlh += p->leaf_n[l];
	}
	free(map);
	*in = (struct psearch_in){ .nf = (uint32_t)p->nf, .nl = nl, .nlh = nlh, .lhosts = p->lhosts,
				   .leaf_first = p->leaf_first, .leaf_n = p->leaf_n, .lf = p->lf, .lpod = dpod,
				   .code = code, .ncodes = nd, .want = (uint32_t)p->want, .kmax = p->kmin,
				   .pmax = p->pmin, .budget = PICK_SEARCH_BUDGET };
	return AN_OK;
}

/* 3b. Small free lists: the exact search over every set on kmin leaves and
 * pmin pods, from the greedy answer in sel (on step 2's leaves: the most
 * free hosts): the fewest sharing hosts, then the most free hosts on the
 * leaves. out->exhaustive: it ended, so the answer is exact. */
static int pk_exact(struct pk *p, struct place_pick *out)
{
	struct psearch_in in;
	struct psearch_out so;
	int rc = pk_search_in(p, &in);
	if (rc)
		return rc;
	in.incumbent = 1;
	rc = place_search(&in, p->sel, &so);
	free((void *)in.code), free((void *)in.lpod);
	out->exhaustive = rc == AN_OK && so.complete;
	return rc;
}

/* Whether some want hosts of the free list, on any leaves, share nothing:
 * each leaf's sharing-free hosts against every free leaf added up (a set
 * they make is sharing-free: see the top), else on small lists the exact
 * search (no when it ends without one; unknown, said no, when cut). */
static int pk_sf_exists(struct pk *p, int *exists)
{
	uint64_t onleaves = 0;
	for (uint32_t l = 0; l < p->nl; l++)
		onleaves += p->leaf_n[l];
	*exists = 0;
	if (!p->e || onleaves < p->want)
		return AN_OK;
	if (pk_capacities(p) >= p->want) {
		*exists = 1;
		return AN_OK;
	}
	if (p->nf > PICK_EXACT_HOSTS)
		return AN_OK;
	struct psearch_in in;
	struct psearch_out so;
	uint32_t *tmp = malloc(p->want * sizeof(*tmp));
	int rc = tmp ? pk_search_in(p, &in) : AN_E_NOMEM;
	if (rc) {
		free(tmp);
		return rc;
	}
	in.exist = 1, in.kmax = p->nl, in.pmax = p->nl;
	rc = place_search(&in, tmp, &so);
	free((void *)in.code), free((void *)in.lpod), free(tmp);
	*exists = rc == AN_OK && so.found;
	return rc;
}

/* The greedy fill's state: a code with users > 1 makes its holders
 * sharing. */
struct fill {
	uint32_t *cstart, *codes;   /* each candidate's distinct entry codes (CSR) */
	uint8_t *chosen, *shar;     /* [nf] */
	uint32_t *users, *owner;    /* [ncodes] chosen hosts using a code, the first of them */
	uint32_t *lused;            /* [nl] chosen hosts per leaf */
	int noleaf;                 /* hosts without a leaf may be taken (too few on leaves) */
};

static void fill_free(struct fill *f)
{
	free(f->chosen), free(f->shar), free(f->users), free(f->owner), free(f->lused), free(f->cstart), free(f->codes);
}

/* Each free host's distinct entry codes against the chosen leaves, once:
 * the fill looks at every candidate for every host added. */
static int fill_codes(struct pk *p, struct fill *f)
{
	size_t nfree = p->nf, ncode = 0;
	if (!(f->cstart = malloc((nfree + 1) * sizeof(*f->cstart))))
		return AN_E_NOMEM;
	for (int pass = 0; pass < 2; pass++) {
		ncode = 0;
		for (size_t i = 0; i < nfree; i++) {
			f->cstart[i] = (uint32_t)ncode;
			p->epoch++;
			for (size_t a = 0; a < p->nsrc; a++) {
				uint32_t c = pk_code(p, (uint32_t)i, p->src[a]);
				if (c == NONE32 || p->stamp[c] == p->epoch)
					continue;
				p->stamp[c] = p->epoch;
				if (pass)
					f->codes[ncode] = c;
				ncode++;
			}
		}
		f->cstart[nfree] = (uint32_t)ncode;
		if (!pass && !(f->codes = malloc((ncode + 1) * sizeof(*f->codes))))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

/* The candidate on a chosen leaf that makes the fewest hosts sharing,
 * preferring leaves already used; hosts without a leaf last, and only when
 * the leaves hold too few. */
static uint32_t fill_best(const struct pk *p, const struct fill *f)
{
	long bi = -1;
	uint64_t bcost = UINT64_MAX;
	for (size_t j = 0; j < p->nf; j++) {
		uint32_t l = p->lf[j];
		if (f->chosen[j] || (l == NONE32 ? !f->noleaf : !p->inset[l]))
			continue;
		uint64_t cost = 0;
		int clash = 0;
		for (uint32_t q = f->cstart[j]; q < f->cstart[j + 1]; q++) {
			uint32_t c = f->codes[q];
			if (!f->users[c])
				continue;
			clash = 1;
			if (f->users[c] == 1 && !f->shar[f->owner[c]])
				cost++;
		}
		cost = (l == NONE32 ? UINT32_MAX : cost + (uint64_t)clash) * 4 + (l == NONE32 ? 3 : f->lused[l] ? 0 : 1);
		if (cost < bcost) {
			bcost = cost;
			bi = (long)j;
		}
	}
	return (uint32_t)bi;
}

/* Adds host position i: a code already used makes both its holders
 * sharing. */
static void fill_add(struct pk *p, struct fill *f, uint32_t i)
{
	f->chosen[i] = 1;
	p->sel[p->nsel++] = i;
	if (p->lf[i] != NONE32)
		f->lused[p->lf[i]]++;
	for (uint32_t q = f->cstart[i]; q < f->cstart[i + 1]; q++) {
		uint32_t c = f->codes[q];
		if (f->users[c]++ == 0) {
			f->owner[c] = i;
		} else {
			f->shar[i] = 1;
			f->shar[f->owner[c]] = 1;
		}
	}
}

/* 3c. Sharing cannot be avoided on the chosen leaves: start from each
 * one's sharing-free hosts against the others, then add the host that
 * makes the fewest hosts sharing. */
static int pk_fill(struct pk *p)
{
	struct fill f = { 0 };
	int rc = fill_codes(p, &f);
	if (rc) {
		fill_free(&f);
		return rc;
	}
	f.chosen = calloc(p->nf, 1), f.shar = calloc(p->nf, 1);
	f.users = calloc(p->ncodes, sizeof(*f.users)), f.owner = malloc(p->ncodes * sizeof(*f.owner));
	f.lused = calloc(p->nl + 1, sizeof(*f.lused));
	if (!f.chosen || !f.shar || !f.users || !f.owner || !f.lused) {
		fill_free(&f);
		return AN_E_NOMEM;
	}
	uint64_t onleaves = 0;
	for (uint32_t l = 0; l < p->nl; l++)
		onleaves += p->leaf_n[l];
	f.noleaf = onleaves < p->want;
	size_t base = 0;
	for (size_t a = 0; a < p->nsrc && base < p->want; a++)
		base += pk_leaf(p, p->src[a], p->src, p->nsrc, (uint32_t)(p->want - base), p->sel + base);
	p->nsel = 0;
	for (size_t k = 0; k < base; k++)
		fill_add(p, &f, p->sel[k]);
	while (p->nsel < p->want)
		fill_add(p, &f, fill_best(p, &f));
	fill_free(&f);
	return AN_OK;
}

static int leaf_fuller(const void *a, const void *b, void *ctx)
{
	const struct pk *p = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (p->leaf_n[x] != p->leaf_n[y])
		return p->leaf_n[x] > p->leaf_n[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* 3'. The packed alternative on the same leaves: the fullest leaf first,
 * each filled whole, its sharing-free hosts (against the chosen leaves)
 * first. Less traffic leaves the leaves than a sharing-free spread. */
static void pk_packed(struct pk *p)
{
	uint32_t *ord = p->scratch;
	memcpy(ord, p->src, p->nsrc * sizeof(*ord));
	qsort_r(ord, p->nsrc, sizeof(*ord), leaf_fuller, p);
	p->nsel = 0;
	for (size_t i = 0; i < p->nf; i++)
		p->tmp[i] = 0;
	for (size_t a = 0; a < p->nsrc && p->nsel < p->want; a++) {
		uint32_t l = ord[a];
		size_t from = p->nsel;
		p->nsel += pk_leaf(p, l, p->src, p->nsrc, (uint32_t)(p->want - p->nsel), p->sel + p->nsel);
		for (size_t k = from; k < p->nsel; k++)
			p->tmp[p->sel[k]] = 1;
		for (uint32_t t = 0; t < p->leaf_n[l] && p->nsel < p->want; t++) {
			uint32_t i = p->lhosts[p->leaf_first[l] + t];
			if (!p->tmp[i])
				p->sel[p->nsel++] = i;
		}
	}
}

/* The steps in turn until one chooses want positions into sel. */
static int pk_choose(struct pk *p, struct place_pick *out)
{
	int rc;
	if (pk_one_leaf(p)) {
		out->exhaustive = 1;
		return AN_OK;
	}
	if ((rc = pk_entries(p)) || (rc = pk_compact(p)))
		return rc;
	if (p->packed && p->nsrc && p->nsel == 0) {
		uint64_t onleaves = 0;
		for (size_t a = 0; a < p->nsrc; a++)
			onleaves += p->leaf_n[p->src[a]];
		if (onleaves >= p->want) {
			pk_packed(p);
			return AN_OK;
		}
	}
	/* sharing-free on step 2's leaves (the most free hosts): the optimum */
	if (pk_within(p)) {
		out->exhaustive = 1;
		return AN_OK;
	}
	if ((rc = pk_fill(p)))
		return rc;
	uint64_t onleaves = 0;
	for (uint32_t l = 0; l < p->nl; l++)
		onleaves += p->leaf_n[l];
	return p->nf <= PICK_EXACT_HOSTS && onleaves >= p->want ? pk_exact(p, out) : AN_OK;
}

/* The chosen hosts into out, in hierarchy order, with their figures. */
static int pk_finish(struct pk *p, struct place_pick *out)
{
	int rc;
	out->hosts = malloc(p->want * sizeof(*out->hosts));
	if (!out->hosts)
		return AN_E_NOMEM;
	for (size_t k = 0; k < p->want; k++)
		out->hosts[k] = p->f[p->sel[k]];
	out->n = p->want;
	if ((rc = place_order(p->rt, p->h, out->hosts, p->want)) ||
	    (rc = place_figures(p->rt, p->h, out->hosts, p->want, &out->figs))) {
		place_pick_free(out);
		return rc;
	}
	out->sharing_free = out->figs.sharing == 0;
	out->min_leaves = p->kmin;
	out->min_pods = p->pmin;
	/* compactness won over sharing-freedom only if the free list held a
	 * sharing-free set at all */
	out->sf_exists = out->sharing_free;
	if (!out->sharing_free && (rc = pk_sf_exists(p, &out->sf_exists))) {
		place_pick_free(out);
		return rc;
	}
	out->sharing_free_wider = !out->sharing_free && out->sf_exists;
	out->time = out->pick_time = out->ff_time = -1;
	out->bw_time = out->ff_bw_time = out->limit_time = -1;
	out->bott_node = ROUTE_NONE;
	out->limit_why = PLACE_NOLIMIT;
	out->wider_time = out->random_time = -1;
	return AN_OK;
}

int place_pick_mode(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		    const uint32_t *free_hosts, size_t nfree, size_t want, int packed, struct place_pick *out,
		    char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	if (!want || want > nfree) {
		snprintf(why, AN_ERR_LEN, "asked for %zu hosts out of %zu free", want, nfree);
		return AN_E_RANGE;
	}
	struct pk p = { .ctx = ctx, .rt = rt, .h = h, .nf = nfree, .want = want, .packed = packed };
	int rc = pk_setup(&p, free_hosts);
	if (rc == AN_OK)
		rc = pk_choose(&p, out);
	if (rc == AN_OK)
		rc = pk_finish(&p, out);
	pk_free(&p);
	if (rc && rc != AN_E_RANGE)
		snprintf(why, AN_ERR_LEN, "%s", an_strerror(rc));
	return rc;
}

int place_pick(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts,
	       size_t nfree, size_t want, struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_mode(ctx, rt, h, free_hosts, nfree, want, 0, out, why);
}

void place_pick_free(struct place_pick *p)
{
	if (!p)
		return;
	free(p->hosts);
	p->hosts = NULL;
	p->n = 0;
}
