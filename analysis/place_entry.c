/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_entry.c - the entry-link table pick reads (why it decides sharing:
 * the top of place_pick.c), and the placement context that caches it per
 * fabric and serialises Scotch (place.h, place_impl.h).
 *
 * The entry table of every host from every leaf switch depends only on the
 * fabric, so a context keeps it for the last fabric seen (a few MiB: 3,456
 * hosts x 288 leaves is 4 MiB) and every pick through that context reuses
 * it until the fabric changes. The fabric is recognised by a fingerprint
 * of what the table depends on (LFT bytes, port codes, host end ports and
 * LIDs), not by pointers that a new generation could reuse. Tables beyond
 * ETAB_CACHE_MAX cells are not cached: pick builds one per request for the
 * free hosts only.
 */
#include "place_impl.h"

#include <stdlib.h>
#include <string.h>

#define ETAB_CACHE_MAX (1u << 25)

struct place_ctx *place_ctx_new(void)
{
	struct place_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->etab_lock, NULL);
	pthread_mutex_init(&ctx->scotch_lock, NULL);
	return ctx;
}

void place_ctx_free(struct place_ctx *ctx)
{
	if (!ctx)
		return;
	place_etab_unref(ctx, ctx->etab_cur);
	pthread_mutex_destroy(&ctx->etab_lock);
	pthread_mutex_destroy(&ctx->scotch_lock);
	free(ctx);
}

uint32_t place_host_leaf_sw(const struct route_tab *rt, uint32_t host)
{
	const struct route_ep *e = &rt->eps[route_host_ep(rt, host)];
	return e->up == AN_OK && e->leaf != ROUTE_NONE ? rt->sw_of_node[e->leaf] : ROUTE_NONE;
}

/* One walk per (destination, source leaf), memoised over switches per
 * destination: the walks to one host from all leaves form an in-tree. */
int place_etab_fill(const struct route_tab *rt, const uint32_t *hosts, const uint32_t *leaf, size_t nrows,
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

static void etab_free(struct etab *t)
{
	if (!t)
		return;
	free(t->col_of_sw);
	free(t->e);
	free(t);
}

void place_etab_unref(struct place_ctx *ctx, struct etab *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&ctx->etab_lock);
	int last = --t->refs == 0;
	pthread_mutex_unlock(&ctx->etab_lock);
	if (last)
		etab_free(t);
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
	for (uint32_t i = 0; i < s->nnodes; i++) {
		uint32_t run;
		for (uint32_t l = 0; l < s->nodes[i].lft_len; l += run) {
			/* run is set by the span, before fnv() reads it */
			const uint8_t *p = snap_lft_span(&s->nodes[i], l, &run);
			h = fnv(h, p, run);
		}
	}
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

/* A new table of every host from every leaf switch of rt, refs 0; NULL if
 * beyond ETAB_CACHE_MAX (*rc AN_OK) or on failure (*rc says which). */
static struct etab *etab_build(const struct route_tab *rt, uint64_t fp, int *rc)
{
	*rc = AN_E_NOMEM;
	struct etab *t = calloc(1, sizeof(*t));
	uint32_t *leaf = malloc((rt->nhosts + 1) * sizeof(*leaf)), *cols = malloc((rt->nsw + 1) * sizeof(*cols));
	uint32_t *hosts = malloc((rt->nhosts + 1) * sizeof(*hosts));
	if (!t || !leaf || !cols || !hosts || !(t->col_of_sw = malloc((rt->nsw + 1) * sizeof(*t->col_of_sw))))
		goto fail;
	/* columns: leaf switches in the order of their first host */
	for (uint32_t s = 0; s < rt->nsw; s++)
		t->col_of_sw[s] = NONE32;
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		hosts[i] = i;
		leaf[i] = place_host_leaf_sw(rt, i);
		if (leaf[i] != ROUTE_NONE && t->col_of_sw[leaf[i]] == NONE32) {
			t->col_of_sw[leaf[i]] = t->ncols;
			cols[t->ncols++] = leaf[i];
		}
	}
	if ((uint64_t)rt->nhosts * t->ncols > ETAB_CACHE_MAX) {
		*rc = AN_OK;
		goto fail;
	}
	t->fp = fp;
	t->nhosts = rt->nhosts;
	if (!(t->e = malloc(((size_t)rt->nhosts * t->ncols + 1) * sizeof(*t->e))))
		goto fail;
	if ((*rc = place_etab_fill(rt, hosts, leaf, rt->nhosts, cols, t->ncols, t->e)))
		goto fail;
	free(leaf), free(cols), free(hosts);
	return t;
fail:
	etab_free(t);
	free(leaf), free(cols), free(hosts);
	return NULL;
}

struct etab *place_etab_get(struct place_ctx *ctx, const struct route_tab *rt, int *rc)
{
	uint64_t fp = fabric_fp(rt);
	*rc = AN_OK;
	pthread_mutex_lock(&ctx->etab_lock);
	struct etab *t = ctx->etab_cur;
	if (t && t->fp == fp && t->nhosts == rt->nhosts) {
		t->refs++;
		pthread_mutex_unlock(&ctx->etab_lock);
		return t;
	}
	/* built under the lock: concurrent picks on a new fabric wait for one build */
	t = etab_build(rt, fp, rc);
	if (!t) {
		pthread_mutex_unlock(&ctx->etab_lock);
		return NULL;
	}
	struct etab *old = ctx->etab_cur;
	t->refs = 2;   /* the cache's and the caller's */
	ctx->etab_cur = t;
	pthread_mutex_unlock(&ctx->etab_lock);
	place_etab_unref(ctx, old);
	return t;
}
