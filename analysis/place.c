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

int place_alltoall_time(const struct route_tab *rt, const uint32_t *hosts, size_t n, uint64_t bytes,
			int threads, double *t)
{
	struct pattern p;
	char err[AN_ERR_LEN];
	struct load *L = NULL;
	struct cost_time ct;
	*t = -1;
	if (n > UINT32_MAX)
		return AN_E_RANGE;
	int rc = pattern_parse("alltoall", &p, err);
	if (rc)
		return rc;
	p.msg_bytes = bytes;
	struct pat_job job = { (uint32_t)n, (uint32_t *)hosts };
	rc = load_build(rt, &job, &p, threads > 0 ? threads : 1, &L);
	if (rc == AN_OK && cost_load_time(rt, L, &ct, err) == AN_OK)
		*t = ct.seconds;   /* else a cable without a rate: unknown, not an error */
	load_free(L);
	pattern_clear(&p);
	return rc;
}

/* Between the sharing-aware pick and the packed one on the same leaves
 * (same leaves and pods: the promises hold either way), the one predicted
 * faster; the sharing-aware one on a tie. Sets out->pick_time. */
static int pick_packed_if_faster(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
				 const uint32_t *free_hosts, size_t nfree, size_t want, uint64_t bytes, int threads,
				 struct place_pick *out, char why[AN_ERR_LEN])
{
	struct place_pick alt;
	int rc = place_alltoall_time(rt, out->hosts, want, bytes, threads, &out->pick_time);
	if (rc || out->min_leaves < 2)
		goto done;
	if ((rc = place_pick_mode(ctx, rt, h, free_hosts, nfree, want, 1, &alt, why)))
		goto done;
	if ((rc = place_alltoall_time(rt, alt.hosts, want, bytes, threads, &alt.pick_time)) == AN_OK &&
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

int place_pick_advise(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, uint64_t bytes, int threads,
		      struct place_pick *out, char why[AN_ERR_LEN])
{
	int rc = place_pick(ctx, rt, h, free_hosts, nfree, want, out, why);
	if (rc)
		return rc;
	if ((rc = pick_packed_if_faster(ctx, rt, h, free_hosts, nfree, want, bytes, threads, out, why)))
		return rc;
	uint32_t *ff = malloc(want * sizeof(*ff));
	if (!ff) {
		rc = AN_E_NOMEM;
		goto fail;
	}
	if ((rc = place_first_fit(free_hosts, nfree, want, ff)) ||
	    (rc = place_alltoall_time(rt, ff, want, bytes, threads, &out->ff_time)))
		goto fail;
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
		out->time = out->ff_time;
	}
	free(ff);
	return AN_OK;
fail:
	free(ff);
	place_pick_free(out);
	snprintf(why, AN_ERR_LEN, "predicting the pick: %s", an_strerror(rc));
	return rc;
}
