/*
 * place.c - host order, the figures of a host set, and a pick judged
 * against first-fit by the cost model (place.h). Pick is in
 * place_pick.c (its entry-link table in place_entry.c), the communication
 * graph and its cost in place_graph.c, the mapping in place_map.c.
 */
#include "place_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "load.h"
#include "pattern.h"
#include "rate.h"
#include "share.h"

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

/* ---- judged against first-fit ------------------------------------------------ */

int place_first_fit(const uint32_t *free_hosts, size_t nfree, size_t want, uint32_t *out)
{
	/* route_tab hosts are sorted by name: the want smallest indices */
	uint32_t *v = malloc((nfree ? nfree : 1) * sizeof(*v));
	if (!v)
		return AN_E_NOMEM;
	memcpy(v, free_hosts, nfree * sizeof(*v));
	qsort(v, nfree, sizeof(*v), cmp_u32);
	memcpy(out, v, want * sizeof(*out));
	free(v);
	return AN_OK;
}

/* The all-to-all, the pattern of every pick without another named. */
static const struct pattern alltoall = { .kind = PAT_ALLTOALL, .dim = { 1, 1, 1 } };

/* The predicted time of the pattern pat (pattern.h; rank i on hosts[i];
 * a regular pattern's flows carry `bytes`, a matrix's its own) and its
 * busiest cable (cost.h): ct->seconds -1 when a loaded cable has no known
 * rate. AN_E_INVAL for a pattern that does not fit n ranks. */
static int a2a_cost(const struct route_tab *rt, const struct pattern *pat, const uint32_t *hosts, size_t n,
		    uint64_t bytes, int threads, struct cost_time *ct, uint32_t *node, uint8_t *port)
{
	struct pattern p = *pat;   /* shares a matrix's arrays: never cleared here */
	char err[AN_ERR_LEN];
	struct load *L = NULL;
	ct->seconds = ct->bw_seconds = -1;
	*node = ROUTE_NONE, *port = 0;
	if (n > UINT32_MAX)
		return AN_E_RANGE;
	if (p.kind != PAT_MATRIX)
		p.msg_bytes = bytes;
	if (pattern_check(&p, (uint32_t)n, err))
		return AN_E_INVAL;
	struct pat_job job = { (uint32_t)n, (uint32_t *)hosts };
	int rc = load_build(rt, &job, &p, threads > 0 ? threads : 1, &L);
	if (rc == AN_OK && cost_load_time(rt, L, ct, err) == AN_OK) {
		if (ct->link != UINT32_MAX)
			*node = L->links[ct->link].node, *port = L->links[ct->link].port;
	} else {
		ct->seconds = ct->bw_seconds = -1;   /* a cable without a rate: unknown, not an error */
	}
	load_free(L);
	return rc;
}

static int pat_time(const struct route_tab *rt, const struct pattern *pat, const uint32_t *hosts, size_t n, uint64_t bytes,
		    int threads, double *t)
{
	struct cost_time ct;
	uint32_t node;
	uint8_t port;
	int rc = a2a_cost(rt, pat, hosts, n, bytes, threads, &ct, &node, &port);
	*t = ct.seconds;
	return rc;
}

int place_alltoall_time(const struct route_tab *rt, const uint32_t *hosts, size_t n, uint64_t bytes,
			int threads, double *t)
{
	return pat_time(rt, &alltoall, hosts, n, bytes, threads, t);
}

/* Between the sharing-aware pick and the packed one on the same leaves
 * (same leaves and pods: the promises hold either way), the one predicted
 * faster; the sharing-aware one on a tie. Sets out->pick_time. */
static int pick_packed_if_faster(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
				 const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
				 int threads, struct place_pick *out, char why[AN_ERR_LEN])
{
	struct place_pick alt;
	int rc = pat_time(rt, pat, out->hosts, want, bytes, threads, &out->pick_time);
	if (rc || out->min_leaves < 2)
		goto done;
	if ((rc = place_pick_mode(ctx, rt, h, free_hosts, nfree, want, 1, &alt, why)))
		goto done;
	if ((rc = pat_time(rt, pat, alt.hosts, want, bytes, threads, &alt.pick_time)) == AN_OK &&
	    alt.pick_time >= 0 && out->pick_time >= 0 && alt.pick_time < out->pick_time * (1 - 1e-6)) {
		place_pick_free(out);
		*out = alt;
		return AN_OK;
	}
	place_pick_free(&alt);
done:
	if (rc) {
		place_pick_free(out);
		snprintf(why, AN_ERR_LEN, "predicting the pick: %s", an_strerror(rc));
	}
	return rc;
}

/* The cables of a leaf switch that lead to other switches: how many, their
 * summed rate and the fastest. */
static void leaf_up(const struct route_tab *rt, uint32_t sw, uint32_t *count, uint64_t *sum, uint64_t *top)
{
	uint32_t node = rt->sw_node[sw];
	*count = 0, *sum = 0, *top = 0;
	for (unsigned p = 1; p <= rt->snap->nodes[node].nports; p++)
		if (rt->pt[rt->pt_off[sw] + p] < ROUTE_PT_EP) {
			uint64_t bps = rate_cable_bps(rt->snap, node, p);
			(*count)++, *sum += bps;
			if (bps > *top)
				*top = bps;
		}
}

/* The injection limit of the answer, and why its busiest cable sits above
 * it. A leaf with c of the n hosts and u uplinks: its uplinks carry
 * c (n - c) blocks each way, and, routes being by destination, each of its
 * hosts receives its n - c blocks from other leaves over one cable down,
 * so some cable down carries ceil(c / u) (n - c) blocks: either above the
 * limit is the leaves' (uplinks), else the routes'. */
static void pick_limit(const struct route_tab *rt, const struct place_pick *out, uint64_t bytes, double *limit,
		       enum place_limit_why *why)
{
	uint64_t slowest = UINT64_MAX;
	*limit = -1;
	*why = PLACE_NOLIMIT;
	for (size_t i = 0; i < out->n; i++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, out->hosts[i])];
		uint64_t bps = rate_cable_bps(rt->snap, e->node, e->port);
		if (!bps)
			return;
		if (bps < slowest)
			slowest = bps;
	}
	if (slowest == UINT64_MAX || out->bw_time < 0)
		return;
	*limit = (double)(out->n - 1) * (double)bytes * 8 / (double)slowest;
	if (out->bw_time <= *limit * PLACE_LIMIT_SLACK) {
		*why = PLACE_AT_LIMIT;
		return;
	}
	*why = PLACE_ROUTES;
	for (size_t i = 0; i < out->n;) {   /* hierarchy order: a leaf's hosts are a run */
		uint32_t sw = place_host_leaf_sw(rt, out->hosts[i]), u = 0;
		size_t j = i + 1;
		while (j < out->n && place_host_leaf_sw(rt, out->hosts[j]) == sw)
			j++;
		uint64_t sum = 0, top = 0;
		if (sw != ROUTE_NONE)
			leaf_up(rt, sw, &u, &sum, &top);
		double c = (double)(j - i), rest = (double)(out->n - (j - i)) * (double)bytes * 8;
		double need = sum ? c * rest / (double)sum : 0;
		double down = top ? (double)((j - i + u - 1) / u) * rest / (double)top : 0;
		if (need > *limit * PLACE_LIMIT_SLACK || down > *limit * PLACE_LIMIT_SLACK)
			*why = PLACE_UPLINKS;
		i = j;
	}
}

/* The pick's hosts traded within their leaves (place_pick_balance), from
 * the pick's counts per leaf and from counts as even as the free hosts
 * allow, when predicted faster: same leaves, so the promises hold. Sets
 * out->swaps, out->balanced and, when taken, out->pick_time. */
static int pick_balanced_if_faster(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts,
				   size_t nfree, const struct pattern *pat, uint64_t bytes, int threads, struct place_pick *out)
{
	if (out->figs.leaves < 2 || out->pick_time < 0)
		return AN_OK;
	/* already at the injection limit: no choice of hosts does better */
	struct cost_time ct;
	double limit, best = out->pick_time * (1 - 1e-6);
	enum place_limit_why lw;
	int rc = a2a_cost(rt, pat, out->hosts, out->n, bytes, threads, &ct, &out->bott_node, &out->bott_port);
	if (rc)
		return rc;
	out->bw_time = ct.bw_seconds;
	pick_limit(rt, out, bytes, &limit, &lw);
	if (pat->kind == PAT_ALLTOALL && lw == PLACE_AT_LIMIT && out->bw_time <= limit * (1 + 1e-9))
		return AN_OK;
	uint32_t *bh = malloc(out->n * sizeof(*bh)), *win = NULL, swaps;
	if (!bh)
		return AN_E_NOMEM;
	for (int even = 0; even < 2 && rc == AN_OK; even++) {
		double t = -1;
		memcpy(bh, out->hosts, out->n * sizeof(*bh));
		rc = even ? place_pick_even(rt, free_hosts, nfree, bh, out->n) : AN_OK;
		if (rc == AN_OK)
			rc = place_pick_balance(rt, free_hosts, nfree, bh, out->n, &swaps);
		if (rc == AN_E_RANGE) {   /* a host off the leaves: the pick stays */
			rc = AN_OK;
			break;
		}
		/* the pattern's rank order: hierarchy order, as answered */
		if (rc || (rc = place_order(rt, h, bh, out->n)) ||
		    (rc = pat_time(rt, pat, bh, out->n, bytes, threads, &t)))
			break;
		if (!even)
			out->swaps = swaps;
		if (t >= 0 && t < best) {
			uint32_t *sw = win ? win : malloc(out->n * sizeof(*sw));
			if (!sw) {
				rc = AN_E_NOMEM;
				break;
			}
			memcpy(sw, bh, out->n * sizeof(*sw));
			win = sw, best = t, out->swaps = swaps;
		}
	}
	if (rc == AN_OK && win) {
		struct place_figs figs;
		if ((rc = place_order(rt, h, win, out->n)) || (rc = place_figures(rt, h, win, out->n, &figs)))
			goto out;
		free(out->hosts);
		out->hosts = win;
		win = NULL;
		out->figs = figs;
		out->sharing_free = figs.sharing == 0;
		out->sharing_free_wider = out->sharing_free ? 0 : out->sharing_free_wider;
		out->balanced = 1;
		out->pick_time = best;
	}
out:
	free(bh);
	free(win);
	return rc;
}

/* The answer's bandwidth term, busiest cable, limit and why. */
static int pick_figures_of_answer(const struct route_tab *rt, const struct pattern *pat, uint64_t bytes, int threads,
				  struct place_pick *out)
{
	struct cost_time ct;
	int rc = a2a_cost(rt, pat, out->hosts, out->n, bytes, threads, &ct, &out->bott_node, &out->bott_port);
	if (rc)
		return rc;
	out->bw_time = ct.bw_seconds;
	/* the injection limit as stated is the all-to-all's */
	if (pat->kind != PAT_ALLTOALL)
		out->limit_time = -1, out->limit_why = PLACE_NOLIMIT;
	else
		pick_limit(rt, out, bytes, &out->limit_time, &out->limit_why);
	return AN_OK;
}

/* ---- wider picks (issue 27: what the promise of fewest leaves costs) -------- */

/* Tries of a wider pick at most, each a balancing and a prediction: the
 * leaf counts grow geometrically, so few tries span min_leaves to want. */
#define PICK_WIDE_TRIES 8

/* The free hosts on leaves, grouped by leaf switch, and the order in which
 * a wider pick takes the leaves. */
struct wide {
	uint32_t nl;
	uint32_t *first, *cnt;   /* [nl] leaf l's free hosts: fh[first[l] .. + cnt[l]), hierarchy order */
	uint32_t *fh;
	uint32_t *ord;           /* [nl] leaves, the first taken first */
	uint64_t *up;            /* [nl] uplinks x the slowest one's rate */
	uint64_t *usum, *utop;   /* [nl] their summed rate, the fastest's (pick_limit's terms) */
	uint32_t *ucnt;          /* [nl] how many */
	uint8_t *key;            /* [nl] 2: a leaf of the answer, 1: of its pods, 0 */
};

static void wide_free(struct wide *w)
{
	free(w->first), free(w->cnt), free(w->fh), free(w->ord), free(w->up), free(w->key);
	free(w->usum), free(w->utop), free(w->ucnt);
}

/* Leaves with the most uplink capacity first (a leaf whose cables up are
 * few or slow is what the all-to-all waits on), then the answer's own
 * leaves, then those of its pods (traffic between pods crosses one more
 * level), then the most free hosts, then hierarchy order. */
static int wide_cmp(const void *a, const void *b, void *ctx)
{
	const struct wide *w = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (w->up[x] != w->up[y])
		return w->up[x] > w->up[y] ? -1 : 1;
	if (w->key[x] != w->key[y])
		return w->key[x] > w->key[y] ? -1 : 1;
	if (w->cnt[x] != w->cnt[y])
		return w->cnt[x] > w->cnt[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}


static int wide_setup(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      const struct place_pick *ans, struct wide *w)
{
	uint32_t *lof = malloc((rt->nsw + 1) * sizeof(*lof)), *lsw = malloc((nfree + 1) * sizeof(*lsw));
	uint32_t *f = malloc((nfree + 1) * sizeof(*f));
	w->first = calloc(nfree + 1, sizeof(*w->first)), w->cnt = calloc(nfree + 1, sizeof(*w->cnt));
	w->fh = malloc((nfree + 1) * sizeof(*w->fh)), w->ord = malloc((nfree + 1) * sizeof(*w->ord));
	w->up = calloc(nfree + 1, sizeof(*w->up)), w->key = calloc(nfree + 1, 1);
	w->usum = calloc(nfree + 1, sizeof(*w->usum)), w->utop = calloc(nfree + 1, sizeof(*w->utop));
	w->ucnt = calloc(nfree + 1, sizeof(*w->ucnt));
	int rc = AN_E_NOMEM;
	if (!lof || !lsw || !f || !w->first || !w->cnt || !w->fh || !w->ord || !w->up || !w->key || !w->usum ||
	    !w->utop || !w->ucnt)
		goto out;
	memcpy(f, free_hosts, nfree * sizeof(*f));
	if ((rc = place_order(rt, h, f, nfree)))
		goto out;
	for (uint32_t s = 0; s < rt->nsw; s++)
		lof[s] = NONE32;
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, f[i]);
		if (sw == ROUTE_NONE)
			continue;
		if (lof[sw] == NONE32)
			lsw[w->nl] = sw, lof[sw] = w->nl++;
		w->cnt[lof[sw]]++;
	}
	for (uint32_t l = 1; l < w->nl; l++)
		w->first[l] = w->first[l - 1] + w->cnt[l - 1];
	memset(w->cnt, 0, w->nl * sizeof(*w->cnt));
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, f[i]);
		if (sw != ROUTE_NONE)
			w->fh[w->first[lof[sw]] + w->cnt[lof[sw]]++] = f[i];
	}
	for (uint32_t l = 0; l < w->nl; l++) {
		w->ord[l] = l;
		w->up[l] = place_leaf_uplinks(rt, lsw[l]);
		leaf_up(rt, lsw[l], &w->ucnt[l], &w->usum[l], &w->utop[l]);
		uint32_t pod = place_pod(h, w->fh[w->first[l]]);
		for (size_t i = 0; i < ans->n && w->key[l] < 2; i++) {
			uint32_t sw = place_host_leaf_sw(rt, ans->hosts[i]);
			if (sw == lsw[l])
				w->key[l] = 2;
			else if (place_pod(h, ans->hosts[i]) == pod)
				w->key[l] = 1;
		}
	}
	qsort_r(w->ord, w->nl, sizeof(*w->ord), wide_cmp, w);
	rc = AN_OK;
out:
	free(lof), free(lsw), free(f);
	return rc;
}

/* want hosts over the first nl leaves of w->ord, as evenly as their free
 * hosts allow (one more to every leaf with room, round by round), each
 * leaf's first in hierarchy order: into hosts. 0 if they hold too few. */
static int wide_fill(const struct wide *w, uint32_t nl, size_t want, uint32_t *hosts, uint32_t *take)
{
	size_t k = 0;
	memset(take, 0, nl * sizeof(*take));
	while (k < want) {
		size_t before = k;
		for (uint32_t a = 0; a < nl && k < want; a++)
			if (take[a] < w->cnt[w->ord[a]])
				take[a]++, k++;
		if (k == before)
			return 0;
	}
	k = 0;
	for (uint32_t a = 0; a < nl; a++)
		for (uint32_t t = 0; t < take[a]; t++)
			hosts[k++] = w->fh[w->first[w->ord[a]] + t];
	return 1;
}

/* The fewest leaves (more than from) over which wide_fill's counts pass
 * pick_limit's test on every leaf: c hosts of n on a leaf send c (n - c)
 * blocks up its uplinks and ceil(c / u) (n - c) down one of its cables,
 * both within the injection limit. 0 if none does (or no rates). Cheap
 * (fills, no routes): where to start trying. */
static uint32_t wide_cap(const struct wide *w, uint32_t from, uint32_t nmax, size_t n, uint64_t bytes, double limit,
			 uint32_t *hosts, uint32_t *take)
{
	for (uint32_t L = from + 1; limit > 0 && L <= nmax; L++) {
		if (!wide_fill(w, L, n, hosts, take))
			continue; /* a slow or dead uplink's leaf ranks last: a wider L may hold n */
		int fits = 1;
		for (uint32_t a = 0; a < L && fits; a++) {
			uint32_t l = w->ord[a], u = w->ucnt[l];
			double c = take[a], rest = (double)(n - take[a]) * (double)bytes * 8;
			fits = u && w->usum[l] && w->utop[l] && c * rest / (double)w->usum[l] <= limit * (1 + 1e-9) &&
			       (double)((take[a] + u - 1) / u) * rest / (double)w->utop[l] <= limit * (1 + 1e-9);
		}
		if (fits)
			return L;
	}
	return 0;
}

/* The best wider pick found: its hosts (malloc'ed, hierarchy order) and
 * the figures of its prediction. */
struct wbest {
	uint32_t *hosts;
	double t, bw;
	uint32_t leaves, node, swaps;
	uint8_t port;
	int balanced;
};

/* One try on the first L leaves of w->ord: the even fill in hierarchy
 * order predicted first (ftree numbers ports so that it often spreads over
 * the upper switches already: at the limit, no balancing does better),
 * then balanced (place_pick_balance) when above it. Keeps it in *b when
 * faster than *target. *at: the try reached the limit. */
static int wide_try(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		    const struct pattern *pat, uint64_t bytes, int threads, double limit, uint32_t L, uint32_t *hosts, size_t n,
		    double *target, struct wbest *b, int *at)
{
	int rc = AN_OK;
	*at = 0;
	for (int bal = 0; bal < 2 && rc == AN_OK && !*at; bal++) {
		struct cost_time ct;
		uint32_t node, swaps = 0;
		uint8_t port;
		if (bal && (rc = place_pick_balance(rt, free_hosts, nfree, hosts, n, &swaps))) {
			if (rc == AN_E_RANGE) /* beyond the balancing's bound: the even fill stands */
				rc = AN_OK;
			break;
		}
		if ((rc = place_order(rt, h, hosts, n)) || (rc = a2a_cost(rt, pat, hosts, n, bytes, threads, &ct, &node, &port)))
			break;
		*at = limit > 0 && ct.bw_seconds >= 0 && ct.bw_seconds <= limit * (1 + 1e-9);
		if (ct.seconds < 0 || ct.seconds >= *target)
			continue;
		uint32_t *keep = b->hosts ? b->hosts : malloc(n * sizeof(*keep));
		if (!keep)
			return AN_E_NOMEM;
		memcpy(keep, hosts, n * sizeof(*keep));
		*b = (struct wbest){ keep, ct.seconds, ct.bw_seconds, L, node, swaps, port, bal };
		*target = ct.seconds * (1 - 1e-6);
	}
	return rc;
}

/* The fastest pick on more leaves than the answer's: for growing leaf
 * counts (from wide_cap's), the leaves wide_cmp ranks first, hosts as even
 * over them as their free hosts allow, balanced within them when that
 * helps (wide_try), judged by the pattern's predicted time; stops once the
 * all-to-all's busiest cable is at the injection limit (more leaves cannot
 * beat it). b->hosts when one is predicted faster than the answer by more
 * than a millionth, else NULL. */
static int pick_wider(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      const struct pattern *pat, uint64_t bytes, int threads, const struct place_pick *ans, struct wbest *b)
{
	struct wide w = { 0 };
	size_t n = ans->n;
	uint32_t *hosts = malloc((n + 1) * sizeof(*hosts)), *take = malloc((nfree + 1) * sizeof(*take));
	double limit = -1, target = ans->time * (1 - 1e-6);
	int rc = hosts && take ? wide_setup(rt, h, free_hosts, nfree, ans, &w) : AN_E_NOMEM, at = 0;
	*b = (struct wbest){ 0 };
	if (pat->kind == PAT_ALLTOALL && ans->limit_time > 0)
		limit = ans->limit_time;
	uint32_t nmax = w.nl < n ? w.nl : (uint32_t)n, L = ans->figs.leaves + 1;
	/* fewer leaves than wide_cap's cannot reach the limit: start there */
	uint32_t cap = rc == AN_OK ? wide_cap(&w, ans->figs.leaves, nmax, n, bytes, limit, hosts, take) : 0;
	L = cap > L ? cap : L;
	for (uint32_t tries = 0; rc == AN_OK && !at && L <= nmax && tries < PICK_WIDE_TRIES;) {
		/* the first L leaves may hold too few hosts (wide_cmp ranks a
		 * leaf with a slow or dead uplink last): then the next L */
		if (wide_fill(&w, L, n, hosts, take)) {
			rc = wide_try(rt, h, free_hosts, nfree, pat, bytes, threads, limit, L, hosts, n, &target, b, &at);
			tries++;
		}
		/* not monotone: a leaf of c hosts and u uplinks sends ceil(c / u)
		 * hosts' traffic down one cable, so a count between two that
		 * help can hurt; the growth stays geometric, the tries few, and
		 * the widest (fewest hosts on each leaf) is always the last */
		uint32_t next = L + 1 > L * 3 / 2 ? L + 1 : L * 3 / 2;
		L = L < nmax && (next > nmax || tries + 1 == PICK_WIDE_TRIES) ? nmax : next;
	}
	free(hosts), free(take);
	wide_free(&w);
	if (rc) {
		free(b->hosts);
		b->hosts = NULL;
	}
	return rc;
}

/* The answer becomes b (a wider or a random pick): its hosts, figures and
 * prediction; pick_time stays the fewest-leaves pick's. */
static int pick_take(const struct route_tab *rt, const struct hier *h, uint64_t bytes, int a2a, struct wbest *b,
		     struct place_pick *out)
{
	struct place_figs figs;
	int rc = place_figures(rt, h, b->hosts, out->n, &figs);
	if (rc)
		return rc;
	free(out->hosts);
	out->hosts = b->hosts;
	b->hosts = NULL;
	out->figs = figs;
	out->sharing_free = figs.sharing == 0;
	out->sharing_free_wider = 0;
	out->first_fit = 0;
	out->balanced = b->balanced;
	out->swaps = b->swaps;
	/* the promise covers pods too: a random pick on the fewest leaves
	 * but more pods breaks it as well */
	out->widened = figs.leaves > out->min_leaves || figs.pods > out->min_pods;
	out->wider_time = out->widened ? b->t : -1, out->wider_leaves = out->widened ? figs.leaves : 0;
	out->time = b->t;
	/* the pick's prediction is the answer's: its busiest cable, the limit */
	out->bw_time = b->bw, out->bott_node = b->node, out->bott_port = b->port;
	if (a2a)
		pick_limit(rt, out, bytes, &out->limit_time, &out->limit_why);
	return AN_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* What a scheduler blind to the fabric may take: PICK_RANDOM_TRIES draws
 * of n hosts, uniform over the free list. Drawn from the list sorted by
 * host with a seed of nfree and n, so the answer still depends on the free
 * set alone. *mean: their predicted times' mean (-1 if one is unknown);
 * b: the fastest of them. */
#define PICK_RANDOM_TRIES 3
static int pick_random(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		       size_t n, const struct pattern *pat, uint64_t bytes, int threads, double *mean, struct wbest *b)
{
	uint32_t *pool = malloc((nfree + 1) * sizeof(*pool)), *hosts = malloc((n + 1) * sizeof(*hosts));
	int rc = pool && hosts ? AN_OK : AN_E_NOMEM;
	double sum = 0;
	*b = (struct wbest){ 0 };
	*mean = -1;
	if (rc == AN_OK) {
		memcpy(pool, free_hosts, nfree * sizeof(*pool));
		qsort(pool, nfree, sizeof(*pool), cmp_u32);
	}
	uint64_t seed = ((uint64_t)nfree << 32) ^ n;
	for (int t = 0; rc == AN_OK && t < PICK_RANDOM_TRIES; t++) {
		struct cost_time ct;
		uint32_t node;
		uint8_t port;
		for (size_t i = 0; i < n; i++) {   /* a partial Fisher-Yates shuffle */
			size_t j = i + (size_t)(splitmix64(&seed) % (nfree - i));
			uint32_t x = pool[i];
			pool[i] = pool[j], pool[j] = x;
		}
		memcpy(hosts, pool, n * sizeof(*hosts));
		if ((rc = place_order(rt, h, hosts, n)) || (rc = a2a_cost(rt, pat, hosts, n, bytes, threads, &ct, &node, &port)))
			break;
		sum = sum < 0 || ct.seconds < 0 ? -1 : sum + ct.seconds;
		if (ct.seconds < 0 || (b->hosts && ct.seconds >= b->t))
			continue;
		uint32_t *keep = b->hosts ? b->hosts : malloc(n * sizeof(*keep));
		if (!keep) {
			rc = AN_E_NOMEM;
			break;
		}
		memcpy(keep, hosts, n * sizeof(*keep));
		*b = (struct wbest){ keep, ct.seconds, ct.bw_seconds, 0, node, 0, port, 0 };
	}
	free(pool), free(hosts);
	if (rc) {
		free(b->hosts);
		b->hosts = NULL;
	} else if (sum >= 0) {
		*mean = sum / PICK_RANDOM_TRIES;
	}
	return rc;
}

/* The rule on leaves, once the answer is judged against first-fit. Above
 * the injection limit, AUTO predicts random picks first (random_time: what
 * a scheduler blind to the fabric may give the job), ANY after its wider
 * pick. PLACE_LEAVES_ANY, and PLACE_LEAVES_AUTO when the answer is
 * predicted slower than those random picks' mean: the fastest pick on
 * more leaves answers when predicted faster, and if the answer is still
 * slower than that mean, the fastest random pick does.
 * PLACE_LEAVES_FEWEST (and AUTO otherwise): a faster
 * pick on more leaves is only stated (wider_time, wider_leaves) when the
 * all-to-all's leaves hold it above the limit, so that a scheduler sees
 * what the promise costs. */
static int pick_widen(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      const struct pattern *pat, uint64_t bytes, int threads, int rule, struct place_pick *out)
{
	int a2a = pat->kind == PAT_ALLTOALL;
	out->wider_time = -1, out->wider_leaves = 0, out->widened = 0, out->random_time = -1;
	/* (one host a leaf: no wider pick, but random picks may be faster) */
	if (out->time < 0 || (a2a && out->bw_time >= 0 && out->bw_time <= out->limit_time * (1 + 1e-9)))
		return AN_OK;
	struct wbest r = { 0 }, b = { 0 };
	int rc = rule == PLACE_LEAVES_AUTO ?
		 pick_random(rt, h, free_hosts, nfree, out->n, pat, bytes, threads, &out->random_time, &r) : AN_OK;
	/* slower than the blind picks by more than a millionth: not the
	 * rounding of a maximum */
	int any = rule == PLACE_LEAVES_ANY ||
		  (rc == AN_OK && rule == PLACE_LEAVES_AUTO && out->random_time >= 0 &&
		   out->time > out->random_time * (1 + 1e-6));
	if (rc == AN_OK && (any || (a2a && out->limit_why == PLACE_UPLINKS)) &&
	    (rc = pick_wider(rt, h, free_hosts, nfree, pat, bytes, threads, out, &b)) == AN_OK && b.hosts) {
		if (any)
			rc = pick_take(rt, h, bytes, a2a, &b, out);
		else
			out->wider_time = b.t, out->wider_leaves = b.leaves;
	}
	/* any: never slower than the blind picks' mean either (ANY predicts
	 * them only now, and not once at the limit: nothing beats it) */
	if (rc == AN_OK && rule == PLACE_LEAVES_ANY &&
	    !(a2a && out->bw_time >= 0 && out->bw_time <= out->limit_time * (1 + 1e-9)))
		rc = pick_random(rt, h, free_hosts, nfree, out->n, pat, bytes, threads, &out->random_time, &r);
	if (rc == AN_OK && any && out->random_time >= 0 && out->time > out->random_time * (1 + 1e-6) && r.hosts &&
	    r.t < out->time)
		rc = pick_take(rt, h, bytes, a2a, &r, out);
	free(b.hosts), free(r.hosts);
	return rc;
}

int place_pick_advise(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, uint64_t bytes, int threads,
		      struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_pat(ctx, rt, h, free_hosts, nfree, want, &alltoall, bytes, threads, PLACE_LEAVES_FEWEST, out,
			      why);
}

int place_pick_pattern(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		       const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		       int threads, struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_leaves(ctx, rt, h, free_hosts, nfree, want, spec, bytes, threads, PLACE_LEAVES_FEWEST, out,
				 why);
}

int place_pick_leaves(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		      int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN])
{
	struct pattern pc;
	int rc = pattern_parse(spec, &pc, why);
	if (rc)
		return rc;
	rc = place_pick_pat(ctx, rt, h, free_hosts, nfree, want, &pc, bytes, threads, leaves, out, why);
	pattern_clear(&pc);
	return rc;
}

int place_pick_pat(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		   const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
		   int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN])
{
	int rc = AN_OK;
	if (want > UINT32_MAX || pattern_check(pat, (uint32_t)want, why))
		return AN_E_INVAL;
	if ((rc = place_pick(ctx, rt, h, free_hosts, nfree, want, out, why)))
		return rc;
	if ((rc = pick_packed_if_faster(ctx, rt, h, free_hosts, nfree, want, pat, bytes, threads, out, why)))
		return rc;
	struct cost_time ffc;
	uint32_t ffn;
	uint8_t ffp;
	uint32_t *ff = malloc(want * sizeof(*ff));
	if (!ff) {
		rc = AN_E_NOMEM;
		goto fail;
	}
	if ((rc = pick_balanced_if_faster(rt, h, free_hosts, nfree, pat, bytes, threads, out)) ||
	    (rc = place_first_fit(free_hosts, nfree, want, ff)) ||
	    (rc = a2a_cost(rt, pat, ff, want, bytes, threads, &ffc, &ffn, &ffp)))
		goto fail;
	out->ff_time = ffc.seconds;
	out->ff_bw_time = ffc.bw_seconds;
	out->time = out->pick_time;
	/* slower by more than a millionth: not the rounding of a maximum */
	if (out->pick_time >= 0 && out->ff_time >= 0 && out->pick_time > out->ff_time * (1 + 1e-6)) {
		if ((rc = place_order(rt, h, ff, want)) || (rc = place_figures(rt, h, ff, want, &out->figs)))
			goto fail;
		free(out->hosts);
		out->hosts = ff;
		ff = NULL;
		out->sharing_free = out->figs.sharing == 0;
		out->sharing_free_wider = 0;
		out->first_fit = 1;
		out->balanced = 0;
		out->time = out->ff_time;
	}
	if ((rc = pick_figures_of_answer(rt, pat, bytes, threads, out)) ||
	    (rc = pick_widen(rt, h, free_hosts, nfree, pat, bytes, threads, leaves, out)))
		goto fail;
	free(ff);
	return AN_OK;
fail:
	free(ff);
	place_pick_free(out);
	snprintf(why, AN_ERR_LEN, "predicting the pick: %s", an_strerror(rc));
	return rc;
}

int place_pick_trade(const struct route_tab *rt, const struct hier *h, const uint32_t *alloc, size_t n,
		     const uint32_t *free_hosts, size_t nfree, uint64_t bytes, int threads, struct place_pick *out,
		     size_t *trades, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	out->wider_time = out->random_time = -1;
	*trades = 0;
	struct cost_time ct;
	uint32_t *all = malloc((n + nfree + 1) * sizeof(*all));
	out->hosts = malloc((n + 1) * sizeof(*out->hosts));
	int rc = AN_E_NOMEM;
	if (!all || !out->hosts)
		goto fail;
	memcpy(all, alloc, n * sizeof(*all));
	memcpy(all + n, free_hosts, nfree * sizeof(*all));
	memcpy(out->hosts, alloc, n * sizeof(*out->hosts));
	out->n = n;
	if ((rc = place_order(rt, h, out->hosts, n)) ||
	    (rc = a2a_cost(rt, &alltoall, out->hosts, n, bytes, threads, &ct, &out->bott_node, &out->bott_port)))
		goto fail;
	out->ff_time = out->pick_time = ct.seconds;
	out->ff_bw_time = ct.bw_seconds;
	if ((rc = place_figures(rt, h, out->hosts, n, &out->figs)))
		goto fail;
	out->min_leaves = out->figs.leaves, out->min_pods = out->figs.pods;
	/* the pick's balancing, with the allocation as the pick and the union
	 * as the free list */
	if ((rc = pick_balanced_if_faster(rt, h, all, n + nfree, &alltoall, bytes, threads, out)) ||
	    (rc = pick_figures_of_answer(rt, &alltoall, bytes, threads, out)))
		goto fail;
	out->time = out->pick_time;
	out->sharing_free = out->figs.sharing == 0;
	memcpy(all, alloc, n * sizeof(*all));   /* sorted: who stays */
	qsort(all, n, sizeof(*all), cmp_u32);
	for (size_t i = 0; i < n; i++)
		*trades += !bsearch(&out->hosts[i], all, n, sizeof(*all), cmp_u32);
	free(all);
	return AN_OK;
fail:
	free(all);
	place_pick_free(out);
	snprintf(why, AN_ERR_LEN, "predicting the trade: %s", an_strerror(rc));
	return rc;
}
