/*
 * place_pick.c - pick: want hosts out of a free list (place.h).
 *
 * pick works on "entry links": for a destination host j on leaf A and a
 * source leaf L != A, the last switch-to-switch link of the LFT walk from L
 * to j, i.e. the link by which L's traffic enters A. share.h's ingress(j)
 * for a set S is exactly { entry(j, L) : L a leaf of S, L != A }, so
 * sharing in S is decided by these codes alone. Sharing only grows with S
 * (ingress sets only grow), so a set found sharing-free against a larger
 * set of source leaves stays sharing-free for the leaves actually chosen:
 * that is why capacities are computed against every free leaf first.
 *
 * The steps, cheapest first, each answering when it can: one leaf holds
 * the job; leaves chosen by their sharing-free capacities; an exact search
 * on small free lists; a greedy fill with the least sharing.
 */
#include "place_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	uint32_t *src;      /* [nl] source leaves (also the exact search's scratch) */
	uint32_t *tmp;      /* [nf] scratch positions */
	struct leafcap *lc; /* [nl] capacities */
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
	free(p->tmp);
	free(p->lc);
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
	p->tmp = malloc(nfree * sizeof(*p->tmp));
	p->lc = malloc((p->nl + 1) * sizeof(*p->lc));
	if (p->stamp && p->sel && p->src && p->tmp && p->lc)
		rc = AN_OK;
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
	return 1;
}

/* Each leaf's sharing-free capacity against every free leaf (conservative,
 * see the top) into lc; returns their sum. */
static uint64_t pk_capacities(struct pk *p)
{
	for (uint32_t l = 0; l < p->nl; l++)
		p->src[l] = l;
	uint64_t total = 0;
	for (uint32_t l = 0; l < p->nl; l++) {
		struct leafcap *c = &p->lc[l];
		c->l = l;
		c->cap = pk_leaf(p, l, p->src, p->nl, UINT32_MAX, p->tmp);
		c->pod = place_pod(p->h, p->f[p->lhosts[p->leaf_first[l]]]);
		c->first = p->lhosts[p->leaf_first[l]];
		total += c->cap;
	}
	return total;
}

/* Among the pods that can hold the job alone (lc sorted by capacity), the
 * one needing fewest leaves (then the least capacity: keep big pods free);
 * -1 if none, else the pod with its leaf count in *bneed. */
static long pk_best_pod(const struct pk *p, size_t *bneed)
{
	const struct leafcap *lc = p->lc;
	long bpod = -1;
	uint64_t bcap = 0;
	*bneed = SIZE_MAX;
	for (uint32_t a = 0; a < p->nl; a++) {
		int seen = 0;
		for (uint32_t b = 0; b < a && !seen; b++)
			seen = lc[b].pod == lc[a].pod;
		if (seen)
			continue;
		uint64_t acc = 0, podcap = 0;
		size_t need = 0;
		for (uint32_t b = a; b < p->nl; b++)
			if (lc[b].pod == lc[a].pod) {
				if (acc < p->want) {
					acc += lc[b].cap;
					need++;
				}
				podcap += lc[b].cap;
			}
		if (acc >= p->want && (need < *bneed || (need == *bneed && podcap < bcap))) {
			bpod = lc[a].pod;
			*bneed = need;
			bcap = podcap;
		}
	}
	return bpod;
}

/* Fewest leaves: largest capacities first; the best single pod wins if it
 * needs no more leaves than the global minimum. The leaves into src;
 * returns how many. */
static size_t pk_choose_leaves(struct pk *p)
{
	const struct leafcap *lc = p->lc;
	qsort(p->lc, p->nl, sizeof(*p->lc), cap_desc);
	size_t gl = 0;
	for (uint64_t acc = 0; acc < p->want; gl++)
		acc += lc[gl].cap;
	size_t bneed, nsrc = 0;
	long bpod = pk_best_pod(p, &bneed);
	uint64_t acc = 0;
	if (bpod >= 0 && bneed <= gl) {
		for (uint32_t b = 0; b < p->nl && acc < p->want; b++)
			if (lc[b].pod == (uint32_t)bpod) {
				p->src[nsrc++] = lc[b].l;
				acc += lc[b].cap;
			}
	} else {
		/* across pods: the global minimum of leaves, then take whole
		 * pods' leaves before opening another pod where that costs
		 * no extra leaf */
		for (uint32_t b = 0; b < p->nl && acc < p->want; b++) {
			p->src[nsrc++] = lc[b].l;
			acc += lc[b].cap;
		}
	}
	return nsrc;
}

/* 2. Leaves by their sharing-free capacities: *done if the chosen leaves
 * gave want hosts. */
static int pk_by_capacity(struct pk *p, int *done)
{
	int rc = pk_entries(p);
	if (rc)
		return rc;
	if (pk_capacities(p) < p->want)
		return AN_OK;
	size_t nsrc = pk_choose_leaves(p);
	/* hosts against the chosen leaves only (capacities can only grow) */
	for (size_t k = 0; k < nsrc && p->nsel < p->want; k++)
		p->nsel += pk_leaf(p, p->src[k], p->src, nsrc, (uint32_t)(p->want - p->nsel), p->sel + p->nsel);
	if (p->nsel == p->want) {
		*done = 1;
		return AN_OK;
	}
	p->nsel = 0;   /* cannot happen (capacities only grow); fall through to be safe */
	return AN_OK;
}

/* 3. Small free lists: an exact search before giving up on sharing-free.
 * 1 if it found a set. */
static int pk_exact(struct pk *p, struct place_pick *out)
{
	struct dfs d = { p, p->want, p->tmp, p->src, PICK_SEARCH_BUDGET, 0 };
	dfs_run(&d, 0, 0);
	if (d.found) {
		memcpy(p->sel, d.S, p->want * sizeof(*p->sel));
		p->nsel = p->want;
		out->sharing_free = 1;
		out->exhaustive = 1;
		return 1;
	}
	out->exhaustive = d.budget >= 0;
	return 0;
}

/* The greedy fill's state: a code with users > 1 makes its holders
 * sharing. */
struct fill {
	uint32_t *cstart, *codes;   /* each free host's distinct entry codes (CSR) */
	uint8_t *chosen, *shar;     /* [nf] */
	uint32_t *users, *owner;    /* [ncodes] chosen hosts using a code, the first of them */
	uint32_t *lused;            /* [nl] chosen hosts per leaf */
};

static void fill_free(struct fill *f)
{
	free(f->chosen), free(f->shar), free(f->users), free(f->owner), free(f->lused), free(f->cstart), free(f->codes);
}

/* Each host's distinct entry codes against every free leaf, once: the fill
 * looks at every candidate for every host added. */
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
			for (uint32_t l = 0; l < p->nl; l++) {
				uint32_t c = pk_code(p, (uint32_t)i, l);
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

/* The candidate that makes the fewest hosts sharing, preferring leaves
 * already used, then new leaves, then hosts without a leaf. */
static uint32_t fill_best(const struct pk *p, const struct fill *f)
{
	long bi = -1;
	uint64_t bcost = UINT64_MAX;
	for (size_t j = 0; j < p->nf; j++) {
		if (f->chosen[j])
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
		/* hosts without a leaf route nowhere: last resort */
		cost = (cost + (uint64_t)clash) * 4 + (p->lf[j] == NONE32 ? 3 : f->lused[p->lf[j]] ? 0 : 1);
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

/* 4. Sharing cannot be avoided: start from the largest sharing-free set
 * (every leaf's own), then add the host that makes the fewest hosts
 * sharing, preferring leaves and pods already used. Codes are against
 * every free leaf (conservative). */
static int pk_fill(struct pk *p)
{
	for (uint32_t l = 0; l < p->nl; l++)
		p->src[l] = l;
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
	size_t base = 0;
	for (uint32_t l = 0; l < p->nl && base < p->want; l++)
		base += pk_leaf(p, l, p->src, p->nl, (uint32_t)(p->want - base), p->sel + base);
	p->nsel = 0;
	for (size_t k = 0; k < base; k++)
		fill_add(p, &f, p->sel[k]);
	while (p->nsel < p->want)
		fill_add(p, &f, fill_best(p, &f));
	fill_free(&f);
	return AN_OK;
}

/* The steps in turn until one chooses want positions into sel. */
static int pk_choose(struct pk *p, struct place_pick *out)
{
	int rc, done = 0;
	if (pk_one_leaf(p)) {
		out->sharing_free = 1;
		return AN_OK;
	}
	if ((rc = pk_by_capacity(p, &done)) || done) {
		out->sharing_free = done;
		return rc;
	}
	if (p->nf <= PICK_EXACT_HOSTS && pk_exact(p, out))
		return AN_OK;
	return pk_fill(p);
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
	return AN_OK;
}

int place_pick(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts,
	       size_t nfree, size_t want, struct place_pick *out, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	if (!want || want > nfree) {
		snprintf(why, AN_ERR_LEN, "asked for %zu hosts out of %zu free", want, nfree);
		return AN_E_RANGE;
	}
	struct pk p = { .ctx = ctx, .rt = rt, .h = h, .nf = nfree, .want = want };
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

void place_pick_free(struct place_pick *p)
{
	if (!p)
		return;
	free(p->hosts);
	p->hosts = NULL;
	p->n = 0;
}
