/*
 * place.c - order, pick and map (definitions in place.h).
 *
 * pick works on "entry links": for a destination host j on leaf A and a
 * source leaf L != A, the last switch-to-switch link of the LFT walk from L
 * to j, i.e. the link by which L's traffic enters A. share.h's ingress(j)
 * for a set S is exactly { entry(j, L) : L a leaf of S, L != A }, so
 * sharing in S is decided by these codes alone. Sharing only grows with S
 * (ingress sets only grow), so a set found sharing-free against a larger
 * set of source leaves stays sharing-free for the leaves actually chosen:
 * that is why capacities are computed against every free leaf first.
 */
#include "place.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scotch/scotch.h>

#include "share.h"
#include "util.h"

#define NONE32 UINT32_MAX

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

long place_find_dup(const uint32_t *hosts, size_t n)
{
	/* a bitmap over host indices would need the host count; a sort of
	 * (value, position) pairs needs nothing else */
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -2;
	for (size_t i = 0; i < n; i++)
		v[i] = (uint64_t)hosts[i] << 32 | i;
	qsort(v, n, sizeof(*v), cmp_u64);
	long first = -1;
	for (size_t i = 1; i < n; i++)
		if (v[i] >> 32 == v[i - 1] >> 32) {
			long pos = (long)(v[i] & 0xFFFFFFFFu);   /* the later of the two */
			if (first < 0 || pos < first)
				first = pos;
		}
	free(v);
	return first;
}

/* ---- order ------------------------------------------------------------------ */

static int order_cmp(const void *a, const void *b, void *ctx)
{
	const struct hier *h = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	for (uint32_t l = 0; l < h->depth; l++) {
		uint32_t cx = h->anc[(size_t)x * h->depth + l], cy = h->anc[(size_t)y * h->depth + l];
		if (cx == cy)
			continue;
		uint64_t kx = h->clusters[cx].key, ky = h->clusters[cy].key;
		if (kx != ky)
			return kx < ky ? -1 : 1;
		return cx < cy ? -1 : 1;
	}
	return x < y ? -1 : x > y;   /* route_tab hosts are sorted by name */
}

int place_order(const struct route_tab *rt, const struct hier *h, uint32_t *hosts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hosts[i] >= rt->nhosts || hosts[i] >= h->nhosts)
			return AN_E_INVAL;
	qsort_r(hosts, n, sizeof(*hosts), order_cmp, (void *)h);
	return AN_OK;
}

uint32_t place_leaf_cluster(const struct hier *h, uint32_t host)
{
	return h->host_parent[host];
}

uint32_t place_pod(const struct hier *h, uint32_t host)
{
	uint32_t c = h->host_parent[host];
	if (c == HIER_NONE)
		return c;
	return h->clusters[c].parent != HIER_NONE ? h->clusters[c].parent : c;
}

/* ---- figures ---------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint32_t count_distinct(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	uint32_t d = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] != NONE32 && (i == 0 || v[i] != v[i - 1]))
			d++;
	return d;
}

int place_figures(const struct route_tab *rt, const struct hier *h, const uint32_t *hosts, size_t n,
		  struct place_figs *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return AN_OK;
	uint32_t *eps = malloc(n * sizeof(*eps));
	if (!eps)
		return AN_E_NOMEM;
	for (size_t i = 0; i < n; i++)
		eps[i] = route_host_ep(rt, hosts[i]);
	struct share *sh;
	int rc = share_build(rt, eps, n, 0, &sh);
	if (rc) {
		free(eps);
		return rc;
	}
	out->sharing = sh->nsharing;
	out->leaves = sh->nleaves;
	out->max_hops = sh->max_hops;
	out->pairs_failed = sh->npairs_failed;
	for (uint32_t l = 0; l < sh->nlinks; l++)
		if (sh->links[l].count > out->max_load)
			out->max_load = sh->links[l].count;
	share_free(sh);
	for (size_t i = 0; i < n; i++)
		eps[i] = place_pod(h, hosts[i]);
	out->pods = count_distinct(eps, n);
	free(eps);
	return AN_OK;
}

/* ---- pick ------------------------------------------------------------------- */

struct etab;
static void etab_unref(struct etab *t);

struct pk {
	const struct route_tab *rt;
	const struct hier *h;
	size_t nf;
	uint32_t *f;        /* free hosts, hierarchy order */
	uint32_t *lf;       /* [nf] leaf index (into leaves) or NONE32 */
	uint32_t nl;
	uint32_t *leaf_sw;  /* [nl] switch index */
	uint32_t *leaf_first, *leaf_n;  /* hosts of leaf l: f[leaf_first[l] ..+ leaf_n[l]) (contiguous? no: see lhosts) */
	uint32_t *lhosts;   /* positions into f, grouped by leaf */
	struct etab *tab;   /* the shared table, or NULL */
	uint32_t *own;      /* a table of the request's own when not cached */
	const uint32_t *e;  /* entry codes: e[rowof[i] * ncols + colof[l]], NONE32 */
	uint32_t *rowof, *colof;
	uint32_t ncols;
	uint32_t ncodes;
	uint32_t *stamp;    /* [ncodes] */
	uint32_t epoch;
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
	etab_unref(p->tab);
	free(p->stamp);
}

/* Entry codes of hosts (rows) from source leaf switches (columns): one walk
 * per (destination, source leaf), memoised over switches per destination.
 * leaf[r] is row r's own leaf switch or ROUTE_NONE. */
static int etab_fill(const struct route_tab *rt, const uint32_t *hosts, const uint32_t *leaf, size_t nrows,
		     const uint32_t *cols, uint32_t ncols, uint32_t *e)
{
	int rc = AN_OK;
#pragma omp parallel
	{
		uint32_t *memo = malloc((rt->nsw + 1) * sizeof(*memo));
		uint32_t *seen = calloc(rt->nsw + 1, sizeof(*seen));
		uint32_t *stack = malloc((rt->nsw + 1) * sizeof(*stack));
		if (!memo || !seen || !stack) {
#pragma omp atomic write
			rc = AN_E_NOMEM;
		}
#pragma omp for schedule(dynamic, 16)
		for (size_t i = 0; i < nrows; i++) {
			uint32_t *row = e + i * ncols;
			for (uint32_t l = 0; l < ncols; l++)
				row[l] = NONE32;
			if (rc || leaf[i] == ROUTE_NONE)
				continue;
			uint32_t stampv = (uint32_t)i + 1;
			uint32_t dep = route_host_ep(rt, hosts[i]);
			uint16_t dlid = rt->eps[dep].lid;
			uint32_t A = leaf[i];
			for (uint32_t l = 0; l < ncols; l++) {
				uint32_t cur = cols[l], top = 0, code = NONE32;
				if (cur == A)
					continue;
				for (;;) {
					if (seen[cur] == stampv) {   /* memo hit (or a loop: memo says NONE) */
						code = memo[cur];
						break;
					}
					seen[cur] = stampv;
					memo[cur] = NONE32;
					stack[top++] = cur;
					uint8_t port;
					uint32_t nx;
					int st = route_step(rt, cur, dlid, dep, &port, &nx);
					if (st != ROUTE_STEP_NEXT)
						break;          /* delivered without entering A from a switch, or failed */
					if (nx == A) {
						code = rt->pt_off[cur] + port;
						break;
					}
					cur = nx;
					if (top > rt->nsw)
						break;
				}
				while (top)
					memo[stack[--top]] = code;
				row[l] = code;
			}
		}
		free(memo);
		free(seen);
		free(stack);
	}
	return rc;
}

static uint32_t host_leaf_sw(const struct route_tab *rt, uint32_t host)
{
	const struct route_ep *e = &rt->eps[route_host_ep(rt, host)];
	return e->up == AN_OK && e->leaf != ROUTE_NONE ? rt->sw_of_node[e->leaf] : ROUTE_NONE;
}

/*
 * The entry table of every host from every leaf switch depends only on the
 * fabric, so it is kept for the last fabric seen (a few MiB: 3,456 hosts x
 * 288 leaves is 4 MiB) and reused by every pick until the fabric changes.
 * The fabric is recognised by a fingerprint of what the table depends on
 * (LFT bytes, port codes, host end ports and LIDs), not by pointers that a
 * new generation could reuse. Tables beyond ETAB_CACHE_MAX cells are built
 * per request for the free hosts only.
 */
#define ETAB_CACHE_MAX (1u << 25)

struct etab {
	uint64_t fp;
	uint32_t nhosts, ncols;
	uint32_t *col_of_sw;   /* [nsw] column or NONE32 */
	uint32_t *e;           /* [nhosts * ncols] */
	int refs;
};

static pthread_mutex_t etab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct etab *etab_cur;

static void etab_unref(struct etab *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&etab_lock);
	int last = --t->refs == 0;
	pthread_mutex_unlock(&etab_lock);
	if (last) {
		free(t->col_of_sw);
		free(t->e);
		free(t);
	}
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {   /* word at a time: 3 MiB of LFTs in well under a millisecond */
		uint64_t w;
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t fabric_fp(const struct route_tab *rt)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const struct snap *s = rt->snap;
	h = fnv(h, s->lft, (size_t)s->nlft);
	size_t npt = rt->nsw ? rt->pt_off[rt->nsw - 1] + s->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 0;
	h = fnv(h, rt->pt, npt * sizeof(*rt->pt));
	h = fnv(h, rt->sw_node, rt->nsw * sizeof(*rt->sw_node));
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, i)];
		uint64_t v[3] = { e->guid, e->lid, (uint64_t)e->leaf << 8 | (uint8_t)e->up };
		h = fnv(h, v, sizeof(v));
	}
	return h;
}

/* The table for rt, shared (etab_unref when done); NULL if too large or
 * out of memory (*rc says which). */
static struct etab *etab_get(const struct route_tab *rt, int *rc)
{
	uint64_t fp = fabric_fp(rt);
	*rc = AN_OK;
	pthread_mutex_lock(&etab_lock);
	struct etab *t = etab_cur;
	if (t && t->fp == fp && t->nhosts == rt->nhosts) {
		t->refs++;
		pthread_mutex_unlock(&etab_lock);
		return t;
	}
	/* built under the lock: concurrent picks on a new fabric wait for one build */
	t = calloc(1, sizeof(*t));
	uint32_t *leaf = malloc((rt->nhosts + 1) * sizeof(*leaf)), *cols = malloc((rt->nsw + 1) * sizeof(*cols));
	uint32_t *hosts = malloc((rt->nhosts + 1) * sizeof(*hosts));
	if (!t || !leaf || !cols || !hosts || !(t->col_of_sw = malloc((rt->nsw + 1) * sizeof(*t->col_of_sw))))
		goto nomem;
	for (uint32_t s = 0; s < rt->nsw; s++)
		t->col_of_sw[s] = NONE32;
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		hosts[i] = i;
		leaf[i] = host_leaf_sw(rt, i);
		if (leaf[i] != ROUTE_NONE && t->col_of_sw[leaf[i]] == NONE32) {
			t->col_of_sw[leaf[i]] = t->ncols;
			cols[t->ncols++] = leaf[i];
		}
	}
	if ((uint64_t)rt->nhosts * t->ncols > ETAB_CACHE_MAX) {
		free(t->col_of_sw);
		free(t);
		free(leaf), free(cols), free(hosts);
		pthread_mutex_unlock(&etab_lock);
		return NULL;
	}
	t->fp = fp;
	t->nhosts = rt->nhosts;
	if (!(t->e = malloc(((size_t)rt->nhosts * t->ncols + 1) * sizeof(*t->e))))
		goto nomem;
	if ((*rc = etab_fill(rt, hosts, leaf, rt->nhosts, cols, t->ncols, t->e)))
		goto fail;
	free(leaf), free(cols), free(hosts);
	struct etab *old = etab_cur;
	t->refs = 2;   /* the cache's and the caller's */
	etab_cur = t;
	pthread_mutex_unlock(&etab_lock);
	etab_unref(old);
	return t;
nomem:
	*rc = AN_E_NOMEM;
fail:
	if (t) {
		free(t->col_of_sw);
		free(t->e);
	}
	free(t);
	free(leaf), free(cols), free(hosts);
	pthread_mutex_unlock(&etab_lock);
	return NULL;
}

/* Entry codes for the request: rows and columns into the cached table, or
 * a table of the free hosts' own when the fabric is too large to cache. */
static int pk_entries(struct pk *p)
{
	const struct route_tab *rt = p->rt;
	int rc;
	p->rowof = malloc((p->nf + 1) * sizeof(*p->rowof));
	p->colof = malloc((p->nl + 1) * sizeof(*p->colof));
	if (!p->rowof || !p->colof)
		return AN_E_NOMEM;
	p->tab = etab_get(rt, &rc);
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
	rc = etab_fill(rt, p->f, leaf, p->nf, p->leaf_sw, p->nl, p->own);
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

/* The exact question for a small set: is S (positions) sharing-free? */
static int pk_set_free(struct pk *p, const uint32_t *S, size_t n, uint32_t *srcbuf)
{
	size_t ns = 0;
	for (size_t a = 0; a < n; a++) {
		uint32_t l = p->lf[S[a]];
		int dup = 0;
		for (size_t b = 0; b < ns && !dup; b++)
			dup = srcbuf[b] == l;
		if (l != NONE32 && !dup)
			srcbuf[ns++] = l;
	}
	for (size_t b = 0; b < ns; b++) {
		p->epoch++;
		for (size_t a = 0; a < n; a++)
			if (p->lf[S[a]] == srcbuf[b] && !pk_try(p, S[a], srcbuf, ns))
				return 0;
	}
	return 1;
}

/* Depth-first search for a sharing-free set of want positions, pruned by
 * monotonicity (a sharing set stays sharing when grown). */
struct dfs {
	struct pk *p;
	size_t want;
	uint32_t *S, *srcbuf;
	long budget;
	int found;
};

static void dfs_run(struct dfs *d, size_t from, size_t k)
{
	if (d->found || d->budget < 0)
		return;
	if (k == d->want) {
		d->found = 1;
		return;
	}
	for (size_t i = from; i + (d->want - k) <= d->p->nf && !d->found; i++) {
		if (--d->budget < 0)
			return;
		if (d->p->lf[i] == NONE32)
			continue;
		d->S[k] = (uint32_t)i;
		if (pk_set_free(d->p, d->S, k + 1, d->srcbuf))
			dfs_run(d, i + 1, k + 1);
	}
}

/* The exact search runs on free lists up to PICK_EXACT_HOSTS long, for at
 * most PICK_SEARCH_BUDGET set checks of O(want^2) each: tens of ms at worst.
 * Longer lists rely on the capacity argument (step 2) alone. */
#define PICK_EXACT_HOSTS 40
#define PICK_SEARCH_BUDGET 200000L

struct leafcap {
	uint32_t l, cap, pod, first;   /* first: position of its first host, for ties */
};

static int cap_desc(const void *a, const void *b)
{
	const struct leafcap *x = a, *y = b;
	if (x->cap != y->cap)
		return x->cap > y->cap ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

int place_pick(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
	       size_t want, struct place_pick *out, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	if (!want || want > nfree) {
		snprintf(why, AN_ERR_LEN, "asked for %zu hosts out of %zu free", want, nfree);
		return AN_E_RANGE;
	}
	struct pk p = { .rt = rt, .h = h, .nf = nfree };
	int rc = AN_E_NOMEM;
	uint32_t *sel = NULL, *src = NULL, *tmp = NULL;
	struct leafcap *lc = NULL;
	size_t nsel = 0;
	p.f = malloc(nfree * sizeof(*p.f));
	p.lf = malloc(nfree * sizeof(*p.lf));
	uint32_t *lofsw = malloc((rt->nsw + 1) * sizeof(*lofsw));
	if (!p.f || !p.lf || !lofsw)
		goto out;
	memcpy(p.f, free_hosts, nfree * sizeof(*p.f));
	if ((rc = place_order(rt, h, p.f, nfree)))
		goto out;
	rc = AN_E_NOMEM;
	/* leaves in hierarchy order of their first host */
	for (uint32_t s = 0; s <= rt->nsw; s++)
		lofsw[s] = NONE32;
	p.leaf_sw = malloc(nfree * sizeof(*p.leaf_sw));
	p.leaf_n = calloc(nfree, sizeof(*p.leaf_n));
	p.leaf_first = malloc(nfree * sizeof(*p.leaf_first));
	p.lhosts = malloc(nfree * sizeof(*p.lhosts));
	if (!p.leaf_sw || !p.leaf_n || !p.leaf_first || !p.lhosts)
		goto out;
	for (size_t i = 0; i < nfree; i++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, p.f[i])];
		uint32_t sw = e->up == AN_OK && e->leaf != ROUTE_NONE ? rt->sw_of_node[e->leaf] : ROUTE_NONE;
		p.lf[i] = NONE32;
		if (sw == ROUTE_NONE)
			continue;
		if (lofsw[sw] == NONE32) {
			lofsw[sw] = p.nl;
			p.leaf_sw[p.nl++] = sw;
		}
		p.lf[i] = lofsw[sw];
		p.leaf_n[p.lf[i]]++;
	}
	for (uint32_t l = 0, acc = 0; l < p.nl; l++) {
		p.leaf_first[l] = acc;
		acc += p.leaf_n[l];
		p.leaf_n[l] = 0;
	}
	for (size_t i = 0; i < nfree; i++)
		if (p.lf[i] != NONE32) {
			uint32_t l = p.lf[i];
			p.lhosts[p.leaf_first[l] + p.leaf_n[l]++] = (uint32_t)i;
		}
	p.ncodes = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 1;
	p.stamp = calloc(p.ncodes, sizeof(*p.stamp));
	sel = malloc(nfree * sizeof(*sel));
	src = malloc((p.nl + 1) * sizeof(*src));
	tmp = malloc(nfree * sizeof(*tmp));
	lc = malloc((p.nl + 1) * sizeof(*lc));
	if (!p.stamp || !sel || !src || !tmp || !lc)
		goto out;

	/* 1. One leaf holds them all: no traffic leaves it, nothing is shared.
	 * Best fit (the leaf with the fewest free hosts that suffices) keeps
	 * larger blocks free for later jobs. */
	long best = -1;
	for (uint32_t l = 0; l < p.nl; l++)
		if (p.leaf_n[l] >= want && (best < 0 || p.leaf_n[l] < p.leaf_n[best]))
			best = l;
	if (best >= 0) {
		for (size_t k = 0; k < want; k++)
			sel[nsel++] = p.lhosts[p.leaf_first[best] + k];
		out->sharing_free = 1;
		goto done;
	}

	/* 2. Capacities against every free leaf (conservative, see the top). */
	if ((rc = pk_entries(&p)))
		goto out;
	for (uint32_t l = 0; l < p.nl; l++)
		src[l] = l;
	uint64_t total = 0;
	for (uint32_t l = 0; l < p.nl; l++) {
		lc[l].l = l;
		lc[l].cap = pk_leaf(&p, l, src, p.nl, UINT32_MAX, tmp);
		lc[l].pod = place_pod(h, p.f[p.lhosts[p.leaf_first[l]]]);
		lc[l].first = p.lhosts[p.leaf_first[l]];
		total += lc[l].cap;
	}
	if (total >= want) {
		/* fewest leaves: largest capacities first; among the pods that can
		 * hold the job alone, the one needing fewest leaves wins if that
		 * is no more leaves than the global minimum. */
		qsort(lc, p.nl, sizeof(*lc), cap_desc);
		size_t gl = 0;
		for (uint64_t acc = 0; acc < want; gl++)
			acc += lc[gl].cap;
		long bpod = -1;
		size_t bneed = SIZE_MAX;
		uint64_t bcap = 0;
		for (uint32_t a = 0; a < p.nl; a++) {
			int seen = 0;
			for (uint32_t b = 0; b < a && !seen; b++)
				seen = lc[b].pod == lc[a].pod;
			if (seen)
				continue;
			uint64_t acc = 0, podcap = 0;
			size_t need = 0;
			for (uint32_t b = a; b < p.nl; b++)
				if (lc[b].pod == lc[a].pod) {
					if (acc < want) {
						acc += lc[b].cap;
						need++;
					}
					podcap += lc[b].cap;
				}
			if (acc >= want && (need < bneed || (need == bneed && podcap < bcap))) {
				bpod = lc[a].pod;
				bneed = need;
				bcap = podcap;
			}
		}
		size_t nsrc = 0;
		uint64_t acc = 0;
		if (bpod >= 0 && bneed <= gl) {
			for (uint32_t b = 0; b < p.nl && acc < want; b++)
				if (lc[b].pod == (uint32_t)bpod) {
					src[nsrc++] = lc[b].l;
					acc += lc[b].cap;
				}
		} else {
			/* across pods: the global minimum of leaves, then take whole
			 * pods' leaves before opening another pod where that costs
			 * no extra leaf */
			for (uint32_t b = 0; b < p.nl && acc < want; b++) {
				src[nsrc++] = lc[b].l;
				acc += lc[b].cap;
			}
		}
		/* hosts against the chosen leaves only (capacities can only grow) */
		for (size_t k = 0; k < nsrc && nsel < want; k++)
			nsel += pk_leaf(&p, src[k], src, nsrc, (uint32_t)(want - nsel), sel + nsel);
		if (nsel == want) {
			out->sharing_free = 1;
			goto done;
		}
		nsel = 0;   /* cannot happen (capacities only grow); fall through to be safe */
	}

	/* 3. Small free lists: an exact search before giving up on sharing-free. */
	if (nfree <= PICK_EXACT_HOSTS) {
		struct dfs d = { &p, want, tmp, src, PICK_SEARCH_BUDGET, 0 };
		dfs_run(&d, 0, 0);
		if (d.found) {
			memcpy(sel, d.S, want * sizeof(*sel));
			nsel = want;
			out->sharing_free = 1;
			out->exhaustive = 1;
			goto done;
		}
		out->exhaustive = d.budget >= 0;
	}

	/* 4. Sharing cannot be avoided: start from the largest sharing-free set
	 * (every leaf's own), then add the host that makes the fewest hosts
	 * sharing, preferring leaves and pods already used. Codes are against
	 * every free leaf (conservative). */
	{
		for (uint32_t l = 0; l < p.nl; l++)
			src[l] = l;
		/* each host's distinct entry codes, once (CSR): the loop below looks
		 * at every candidate for every host added */
		uint32_t *cstart = malloc((nfree + 1) * sizeof(*cstart)), *codes = NULL;
		size_t ncode = 0;
		if (!cstart) {
			rc = AN_E_NOMEM;
			goto out;
		}
		for (int pass = 0; pass < 2; pass++) {
			ncode = 0;
			for (size_t i = 0; i < nfree; i++) {
				cstart[i] = (uint32_t)ncode;
				p.epoch++;
				for (uint32_t l = 0; l < p.nl; l++) {
					uint32_t c = pk_code(&p, (uint32_t)i, l);
					if (c == NONE32 || p.stamp[c] == p.epoch)
						continue;
					p.stamp[c] = p.epoch;
					if (pass)
						codes[ncode] = c;
					ncode++;
				}
			}
			cstart[nfree] = (uint32_t)ncode;
			if (!pass && !(codes = malloc((ncode + 1) * sizeof(*codes)))) {
				free(cstart);
				rc = AN_E_NOMEM;
				goto out;
			}
		}
		uint8_t *chosen = calloc(nfree, 1), *shar = calloc(nfree, 1);
		uint32_t *users = calloc(p.ncodes, sizeof(*users)), *owner = malloc(p.ncodes * sizeof(*owner));
		uint32_t *lused = calloc(p.nl + 1, sizeof(*lused));
		if (!chosen || !shar || !users || !owner || !lused) {
			free(chosen), free(shar), free(users), free(owner), free(lused), free(cstart), free(codes);
			rc = AN_E_NOMEM;
			goto out;
		}
		size_t base = 0;
		for (uint32_t l = 0; l < p.nl && base < want; l++)
			base += pk_leaf(&p, l, src, p.nl, (uint32_t)(want - base), sel + base);
		nsel = 0;
		/* adds host i: a code already used makes both its holders sharing */
		for (size_t k = 0; k <= want; k++) {
			uint32_t i;
			if (k < base) {
				i = sel[k];
			} else {
				if (nsel == want)
					break;
				long bi = -1;
				uint64_t bcost = UINT64_MAX;
				for (size_t j = 0; j < nfree; j++) {
					if (chosen[j])
						continue;
					uint64_t cost = 0;
					int clash = 0;
					for (uint32_t q = cstart[j]; q < cstart[j + 1]; q++) {
						uint32_t c = codes[q];
						if (!users[c])
							continue;
						clash = 1;
						if (users[c] == 1 && !shar[owner[c]])
							cost++;
					}
					/* hosts without a leaf route nowhere: last resort */
					cost = (cost + (uint64_t)clash) * 4 + (p.lf[j] == NONE32 ? 3 : lused[p.lf[j]] ? 0 : 1);
					if (cost < bcost) {
						bcost = cost;
						bi = (long)j;
					}
				}
				i = (uint32_t)bi;
			}
			chosen[i] = 1;
			sel[nsel++] = i;
			if (p.lf[i] != NONE32)
				lused[p.lf[i]]++;
			for (uint32_t q = cstart[i]; q < cstart[i + 1]; q++) {
				uint32_t c = codes[q];
				if (users[c]++ == 0) {
					owner[c] = i;
				} else {
					shar[i] = 1;
					shar[owner[c]] = 1;
				}
			}
		}
		free(chosen), free(shar), free(users), free(owner), free(lused), free(cstart), free(codes);
	}

done:
	out->hosts = malloc(want * sizeof(*out->hosts));
	if (!out->hosts) {
		rc = AN_E_NOMEM;
		goto out;
	}
	for (size_t k = 0; k < want; k++)
		out->hosts[k] = p.f[sel[k]];
	out->n = want;
	if ((rc = place_order(rt, h, out->hosts, want)) || (rc = place_figures(rt, h, out->hosts, want, &out->figs))) {
		place_pick_free(out);
		goto out;
	}
	out->sharing_free = out->figs.sharing == 0;
out:
	free(lofsw);
	free(sel);
	free(src);
	free(tmp);
	free(lc);
	pk_free(&p);
	if (rc && rc != AN_E_RANGE)
		snprintf(why, AN_ERR_LEN, "%s", an_strerror(rc));
	return rc;
}

void place_pick_free(struct place_pick *p)
{
	if (!p)
		return;
	free(p->hosts);
	p->hosts = NULL;
	p->n = 0;
}

/* ---- graphs ----------------------------------------------------------------- */

void place_graph_free(struct place_graph *g)
{
	if (!g)
		return;
	free(g->xadj);
	free(g->adj);
	free(g->w);
	memset(g, 0, sizeof(*g));
}

struct edge {
	uint32_t a, b, w;
};

static int edge_cmp(const void *x, const void *y)
{
	const struct edge *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

/* CSR from directed edges, each already listed in both directions;
 * duplicates are summed. Takes e (sorted here). */
static int csr_from(struct place_graph *g, uint32_t n, struct edge *e, size_t m)
{
	qsort(e, m, sizeof(*e), edge_cmp);
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (k && e[k - 1].a == e[i].a && e[k - 1].b == e[i].b) {
			uint64_t s = (uint64_t)e[k - 1].w + e[i].w;
			e[k - 1].w = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
		} else {
			e[k++] = e[i];
		}
	}
	g->n = n;
	g->xadj = calloc((size_t)n + 1, sizeof(*g->xadj));
	g->adj = malloc((k ? k : 1) * sizeof(*g->adj));
	g->w = malloc((k ? k : 1) * sizeof(*g->w));
	if (!g->xadj || !g->adj || !g->w) {
		place_graph_free(g);
		return AN_E_NOMEM;
	}
	for (size_t i = 0; i < k; i++) {
		g->xadj[e[i].a + 1]++;
		g->adj[i] = e[i].b;
		g->w[i] = e[i].w;
	}
	for (uint32_t v = 0; v < n; v++)
		g->xadj[v + 1] += g->xadj[v];
	return AN_OK;
}

int place_graph_stencil(struct place_graph *g, uint32_t dx, uint32_t dy, uint32_t dz, int periodic)
{
	memset(g, 0, sizeof(*g));
	uint64_t n = (uint64_t)dx * dy * dz;
	if (!dx || !dy || !dz || n > (1u << 24))
		return AN_E_RANGE;
	struct edge *e = malloc(n * 6 * sizeof(*e));
	if (!e)
		return AN_E_NOMEM;
	size_t m = 0;
	uint32_t d[3] = { dx, dy, dz };
	for (uint32_t z = 0; z < dz; z++)
		for (uint32_t y = 0; y < dy; y++)
			for (uint32_t x = 0; x < dx; x++) {
				uint32_t c[3] = { x, y, z }, v = x + dx * (y + dy * z);
				for (int k = 0; k < 3; k++) {
					if (d[k] < 2)
						continue;
					for (int s = -1; s <= 1; s += 2) {
						int64_t q = (int64_t)c[k] + s;
						if (q < 0 || q >= d[k]) {
							if (!periodic || d[k] < 3)
								continue;
							q = (q + d[k]) % d[k];
						}
						uint32_t cc[3] = { c[0], c[1], c[2] };
						cc[k] = (uint32_t)q;
						e[m++] = (struct edge){ v, cc[0] + dx * (cc[1] + dy * cc[2]), 2 };
					}
				}
			}
	int rc = csr_from(g, (uint32_t)n, e, m);
	free(e);
	return rc;
}

int place_graph_from_edges(struct place_graph *g, uint32_t n, const uint32_t *src, const uint32_t *dst,
			   const uint32_t *w, size_t m)
{
	memset(g, 0, sizeof(*g));
	if (m > PLACE_GRAPH_EDGES_MAX)
		return AN_E_RANGE;
	struct edge *e = malloc((m ? 2 * m : 1) * sizeof(*e));
	if (!e)
		return AN_E_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (src[i] >= n || dst[i] >= n) {
			free(e);
			return AN_E_INVAL;
		}
		uint32_t wt = w ? w[i] : 1;
		if (src[i] == dst[i] || !wt)
			continue;
		e[k++] = (struct edge){ src[i], dst[i], wt };
		e[k++] = (struct edge){ dst[i], src[i], wt };
	}
	int rc = csr_from(g, n, e, k);
	free(e);
	return rc;
}

/* ---- cost ------------------------------------------------------------------- */

struct hpair {
	uint32_t a, b;
	uint64_t w;
};

static int hpair_cmp(const void *x, const void *y)
{
	const struct hpair *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

int place_cost(const struct route_tab *rt, const struct place_graph *g, const uint32_t *rank_host,
	       struct place_cost *out)
{
	memset(out, 0, sizeof(*out));
	size_t m = g->xadj[g->n], k = 0;
	struct hpair *hp = malloc((m ? m : 1) * sizeof(*hp));
	size_t nports = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 1;
	uint64_t *swl = calloc(nports, sizeof(*swl)), *epl = calloc(rt->neps + 1, sizeof(*epl));
	struct route_hop *hops = malloc((rt->nsw + 2) * sizeof(*hops));
	uint64_t hb2 = 0, max2 = 0;
	int rc = AN_E_NOMEM;
	if (!hp || !swl || !epl || !hops)
		goto out;
	/* each unordered rank pair once (v < u), as an unordered host pair */
	for (uint32_t v = 0; v < g->n; v++)
		for (uint32_t e = g->xadj[v]; e < g->xadj[v + 1]; e++) {
			uint32_t u = g->adj[e], a = rank_host[v], b = rank_host[u];
			if (u > v && a != b)
				hp[k++] = (struct hpair){ a < b ? a : b, a < b ? b : a, g->w[e] };
		}
	qsort(hp, k, sizeof(*hp), hpair_cmp);
	for (size_t i = 0; i < k;) {
		size_t j = i;
		uint64_t w = 0;
		for (; j < k && hp[j].a == hp[i].a && hp[j].b == hp[i].b; j++)
			w += hp[j].w;
		/* W is both directions' traffic together: half goes each way, so
		 * both routes are walked with W and the sums halved at the end */
		for (int dir = 0; dir < 2; dir++) {
			uint32_t s = route_host_ep(rt, dir ? hp[i].b : hp[i].a), d = route_host_ep(rt, dir ? hp[i].a : hp[i].b);
			struct route_res res;
			int wr = rt->eps[d].lid ? route_walk(rt, s, rt->eps[d].lid, hops, rt->nsw + 2, &res) : AN_E_NOLID;
			if (wr) {
				out->pairs_failed++;
				continue;
			}
			hb2 += w * res.hops;
			epl[s] += w;
			for (uint32_t t = 0; t < res.hops && t < rt->nsw + 2; t++) {
				uint32_t sw = rt->sw_of_node[hops[t].node];
				if (sw != ROUTE_NONE && hops[t].out)
					swl[rt->pt_off[sw] + hops[t].out] += w;
			}
		}
		i = j;
	}
	for (size_t i = 0; i < nports; i++)
		if (swl[i] > max2)
			max2 = swl[i];
	for (size_t i = 0; i < rt->neps; i++)
		if (epl[i] > max2)
			max2 = epl[i];
	out->hop_bytes = hb2 / 2;
	out->max_load = (max2 + 1) / 2;
	rc = AN_OK;
out:
	free(hp);
	free(swl);
	free(epl);
	free(hops);
	return rc;
}

/* ---- map -------------------------------------------------------------------- */

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

static pthread_mutex_t scotch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Scotch target: the hierarchy as a weighted tree whose terminals are the
 * job's hosts (load = slots); a cluster joined at distance D hangs its
 * children by edges of D - (child's D), hosts by D, so the tree distance of
 * two hosts is 2 x the distance of their lowest common cluster. Roots meet
 * at a virtual vertex far away. Scotch's decomposition-defined target
 * (archBuild2) then bipartitions this tree as it maps. */
static int scotch_map(const struct hier *h, const struct place_graph *g, const uint32_t *hosts,
		      const uint32_t *slots, size_t nh, SCOTCH_Num *part, char why[AN_ERR_LEN])
{
	uint32_t *vof = malloc((h->nclusters + 1) * sizeof(*vof));
	SCOTCH_Num nv = (SCOTCH_Num)nh, maxd = 1;
	if (!vof)
		return AN_E_NOMEM;
	for (uint32_t c = 0; c < h->nclusters; c++)
		vof[c] = NONE32;
	/* mark clusters on the hosts' chains */
	for (size_t i = 0; i < nh; i++)
		for (uint32_t c = h->host_parent[hosts[i]]; c != HIER_NONE && vof[c] == NONE32; c = h->clusters[c].parent) {
			vof[c] = (uint32_t)nv++;
			if (h->clusters[c].dist != HIER_INF && h->clusters[c].dist > maxd)
				maxd = h->clusters[c].dist;
		}
	SCOTCH_Num top = nv++;   /* virtual vertex joining the roots */
	size_t ne = 0, cap = 2 * (size_t)nv + 2;
	SCOTCH_Num *verttab = calloc((size_t)nv + 1, sizeof(*verttab)), *velotab = malloc((size_t)nv * sizeof(*velotab));
	SCOTCH_Num *ea = malloc(cap * sizeof(*ea)), *eb = malloc(cap * sizeof(*eb)), *ew = malloc(cap * sizeof(*ew));
	SCOTCH_Num *edgetab = malloc(2 * cap * sizeof(*edgetab)), *edlotab = malloc(2 * cap * sizeof(*edlotab));
	SCOTCH_Num *list = malloc((nh ? nh : 1) * sizeof(*list));
	SCOTCH_Num *gv = NULL, *ge = NULL, *gw = NULL;
	int rc = AN_E_NOMEM;
	if (!verttab || !velotab || !ea || !eb || !ew || !edgetab || !edlotab || !list)
		goto out;
	for (SCOTCH_Num v = 0; v < nv; v++)
		velotab[v] = 1;
	for (size_t i = 0; i < nh; i++) {
		uint32_t c = h->host_parent[hosts[i]];
		velotab[i] = (SCOTCH_Num)slots[i];
		list[i] = (SCOTCH_Num)i;
		uint32_t d = c == HIER_NONE || h->clusters[c].dist == HIER_INF ? (uint32_t)maxd : h->clusters[c].dist;
		ea[ne] = (SCOTCH_Num)i, eb[ne] = c == HIER_NONE ? top : (SCOTCH_Num)vof[c], ew[ne++] = d ? d : 1;
	}
	int has_top = 0;
	for (uint32_t c = 0; c < h->nclusters; c++) {
		if (vof[c] == NONE32)
			continue;
		uint32_t pc = h->clusters[c].parent, dc = h->clusters[c].dist == HIER_INF ? 0 : h->clusters[c].dist;
		if (pc == HIER_NONE) {
			has_top = 1;
			ea[ne] = (SCOTCH_Num)vof[c], eb[ne] = top, ew[ne++] = 2 * maxd + 2 - (dc < 2 * (uint32_t)maxd ? dc : 0);
		} else {
			uint32_t dp = h->clusters[pc].dist;
			ea[ne] = (SCOTCH_Num)vof[c], eb[ne] = (SCOTCH_Num)vof[pc], ew[ne++] = dp > dc ? dp - dc : 1;
		}
	}
	(void)has_top;
	/* CSR, both directions */
	for (size_t e = 0; e < ne; e++)
		verttab[ea[e] + 1]++, verttab[eb[e] + 1]++;
	for (SCOTCH_Num v = 0; v < nv; v++)
		verttab[v + 1] += verttab[v];
	SCOTCH_Num *fill = calloc((size_t)nv, sizeof(*fill));
	if (!fill)
		goto out;
	for (size_t e = 0; e < ne; e++) {
		SCOTCH_Num a = ea[e], b = eb[e];
		edgetab[verttab[a] + fill[a]] = b, edlotab[verttab[a] + fill[a]++] = ew[e];
		edgetab[verttab[b] + fill[b]] = a, edlotab[verttab[b] + fill[b]++] = ew[e];
	}
	free(fill);

	size_t m = g->xadj[g->n];
	gv = malloc(((size_t)g->n + 1) * sizeof(*gv));
	ge = malloc((m ? m : 1) * sizeof(*ge));
	gw = malloc((m ? m : 1) * sizeof(*gw));
	if (!gv || !ge || !gw)
		goto out;
	for (uint32_t v = 0; v <= g->n; v++)
		gv[v] = (SCOTCH_Num)g->xadj[v];
	for (size_t e = 0; e < m; e++) {
		ge[e] = (SCOTCH_Num)g->adj[e];
		gw[e] = (SCOTCH_Num)(g->w[e] > (1u << 30) ? (1u << 30) : g->w[e]);
	}

	rc = AN_E_RANGE;
	pthread_mutex_lock(&scotch_lock);
	/* the target's decomposition (archBuild2) draws from Scotch's global
	 * generator: reset it under the lock so every build is the same */
	SCOTCH_randomSeed(1);
	SCOTCH_randomReset();
	SCOTCH_Graph tg, tgc, sg, sgc;
	SCOTCH_Arch arch;
	SCOTCH_Strat strat;
	SCOTCH_Context ctx;
	int ok_tg = 0, ok_tgc = 0, ok_sg = 0, ok_sgc = 0, ok_arch = 0, ok_strat = 0, ok_ctx = 0;
	/* a context of our own: deterministic, fixed seed, its own random state */
	if (SCOTCH_contextInit(&ctx) || !(ok_ctx = 1) ||
	    SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1) ||
	    SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) || SCOTCH_contextRandomClone(&ctx) ||
	    SCOTCH_contextThreadSpawn(&ctx, 1, NULL)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused a deterministic context");
	} else if (SCOTCH_graphInit(&tg) || !(ok_tg = 1) ||
	    SCOTCH_graphBuild(&tg, 0, nv, verttab, NULL, velotab, NULL, verttab[nv], edgetab, edlotab) ||
	    SCOTCH_graphInit(&tgc) || !(ok_tgc = 1) || SCOTCH_contextBindGraph(&ctx, &tg, &tgc)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused the target tree");
	} else if (SCOTCH_archInit(&arch) || !(ok_arch = 1) || SCOTCH_stratInit(&strat) || !(ok_strat = 1) ||
		   SCOTCH_archBuild2(&arch, &tgc, (SCOTCH_Num)nh, list)) {
		snprintf(why, AN_ERR_LEN, "Scotch could not build the target architecture");
	} else if (SCOTCH_graphInit(&sg) || !(ok_sg = 1) ||
		   SCOTCH_graphBuild(&sg, 0, (SCOTCH_Num)g->n, gv, NULL, NULL, NULL, (SCOTCH_Num)m, ge, gw) ||
		   SCOTCH_graphInit(&sgc) || !(ok_sgc = 1) || SCOTCH_contextBindGraph(&ctx, &sg, &sgc)) {
		snprintf(why, AN_ERR_LEN, "Scotch refused the communication graph");
	} else if (SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATDEFAULT, (SCOTCH_Num)nh, 0.01) ||
		   SCOTCH_graphMap(&sgc, &arch, &strat, part)) {
		snprintf(why, AN_ERR_LEN, "SCOTCH_graphMap failed");
	} else {
		rc = AN_OK;
	}
	if (ok_sgc)
		SCOTCH_graphExit(&sgc);
	if (ok_sg)
		SCOTCH_graphExit(&sg);
	if (ok_strat)
		SCOTCH_stratExit(&strat);
	if (ok_arch)
		SCOTCH_archExit(&arch);
	if (ok_tgc)
		SCOTCH_graphExit(&tgc);
	if (ok_tg)
		SCOTCH_graphExit(&tg);
	if (ok_ctx)
		SCOTCH_contextExit(&ctx);
	pthread_mutex_unlock(&scotch_lock);
out:
	free(vof);
	free(verttab);
	free(velotab);
	free(ea);
	free(eb);
	free(ew);
	free(edgetab);
	free(edlotab);
	free(list);
	free(gv);
	free(ge);
	free(gw);
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

int place_map(const struct route_tab *rt, const struct hier *h, const struct place_graph *g,
	      const uint32_t *hosts, const uint32_t *slots, size_t nh, struct place_map *out,
	      char why[AN_ERR_LEN])
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
	int src = nh > 1 ? scotch_map(h, g, hosts, slots, nh, part, swhy) : AN_E_RANGE;
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
