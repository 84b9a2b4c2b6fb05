/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * matrix.c - see matrix.h.
 */
#include "matrix.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "rate.h"
#include "util.h"

int matrix_hops(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, int16_t *out)
{
	/* The host whose row each leaf's hosts copy: a job on 288 leaves
	 * walks 288 rows, not 1,024. */
	uint32_t *rep_of_leaf = malloc((size_t)rt->snap->nnodes * sizeof(*rep_of_leaf));
	if (!rep_of_leaf)
		return AN_E_NOMEM;
	memset(rep_of_leaf, 0xff, (size_t)rt->snap->nnodes * sizeof(*rep_of_leaf));
	for (size_t i = 0; i < n; i++) {
		const struct route_ep *e = &rt->eps[eps[i]];
		int16_t *row = out + i * n;
		int shared = e->up == AN_OK && e->leaf != ROUTE_NONE && e->host != ROUTE_NONE;
		if (shared && rep_of_leaf[e->leaf] != UINT32_MAX) {
			uint32_t r = eps[rep_of_leaf[e->leaf]];
			memcpy(row, out + (size_t)rep_of_leaf[e->leaf] * n, n * sizeof(*row));
			/* The shared route ends where the two rows differ: to the
			 * representative's port (0 in its row) and to this port
			 * itself (0 here, a port to itself crossing nothing). */
			for (size_t j = 0; j < n; j++)
				if (eps[j] == r || eps[j] == eps[i]) {
					int h = route_hops(rt, eps[i], dlids[j]);
					row[j] = (int16_t)(h < 0 || h > INT16_MAX ? -1 : h);
				}
			continue;
		}
		if (shared)
			rep_of_leaf[e->leaf] = (uint32_t)i;
		for (size_t j = 0; j < n; j++) {
			int h = route_hops(rt, eps[i], dlids[j]);
			row[j] = (int16_t)(h < 0 || h > INT16_MAX ? -1 : h);
		}
	}
	/* Only now: a copied row needs its representative's own entry. */
	for (size_t i = 0; i < n; i++)
		out[i * n + i] = 0;
	free(rep_of_leaf);
	return AN_OK;
}

int matrix_groups_build(const struct share *sh, struct matrix_groups *mg)
{
	uint32_t G = sh->G;
	memset(mg, 0, sizeof(*mg));
	mg->start = calloc((size_t)G + 1, sizeof(*mg->start));
	mg->members = malloc((sh->n ? sh->n : 1) * sizeof(*mg->members));
	uint32_t *fill = calloc((size_t)G + 1, sizeof(*fill));
	if (!mg->start || !mg->members || !fill) {
		free(fill);
		matrix_groups_free(mg);
		return AN_E_NOMEM;
	}
	/* A counting sort on grp_of keeps each group's members ascending. */
	for (uint32_t i = 0; i < sh->n; i++)
		mg->start[sh->grp_of[i] + 1]++;
	for (uint32_t g = 0; g < G; g++)
		mg->start[g + 1] += mg->start[g];
	for (uint32_t i = 0; i < sh->n; i++) {
		uint32_t g = sh->grp_of[i];
		mg->members[mg->start[g] + fill[g]++] = i;
	}
	free(fill);
	mg->G = G;
	return AN_OK;
}

void matrix_groups_free(struct matrix_groups *mg)
{
	free(mg->start);
	free(mg->members);
	memset(mg, 0, sizeof(*mg));
}

/* Leaf-mates first, each leaf's hosts together, so that one walked tail row
 * serves them all; other end ports each stand alone. */
static uint64_t delay_key(const struct route_tab *rt, uint32_t ep, size_t i)
{
	const struct route_ep *e = &rt->eps[ep];
	if (e->up == AN_OK && e->leaf != ROUTE_NONE && e->host != ROUTE_NONE)
		return e->leaf;
	return ((uint64_t)1 << 32) + i;
}

struct delay_ord {
	uint64_t key;
	size_t i;
};

static int cmp_ord(const void *a, const void *b)
{
	const struct delay_ord *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* One walk: *hops (-1: no route) and the least cable rate after the
 * source's own cable (UINT64_MAX: none crossed, 0: one of unknown rate). */
static void delay_walk(const struct route_tab *rt, uint32_t src, uint16_t dlid, struct route_hop *walk, size_t cap,
		       int32_t *hops, uint64_t *tail)
{
	struct route_res res;
	if (route_walk(rt, src, dlid, walk, cap, &res) || res.hops > cap) {
		*hops = -1;
		return;
	}
	uint64_t m = UINT64_MAX;
	for (uint32_t k = 0; k < res.hops; k++) {
		if (!walk[k].out)
			continue; /* delivered to the switch itself: no cable */
		uint64_t b = rate_cable_bps(rt->snap, walk[k].node, walk[k].out);
		m = b < m ? b : m;
	}
	*hops = (int32_t)res.hops;
	*tail = m;
}

/* One source's walks to every destination. */
static void delay_tail(const struct route_tab *rt, uint32_t src, const uint16_t *dlids, size_t n,
		       struct route_hop *walk, size_t cap, int32_t *hops, uint64_t *tail)
{
	for (size_t j = 0; j < n; j++)
		delay_walk(rt, src, dlids[j], walk, cap, &hops[j], &tail[j]);
}

/* Row i from a tail row and its own cable's rate. */
static int delay_row(const struct route_tab *rt, uint32_t ep, const uint16_t *dlids, const int32_t *hops,
		     const uint64_t *tail, size_t n, uint64_t bytes, int64_t *row, char err[AN_ERR_LEN])
{
	const struct route_ep *e = &rt->eps[ep];
	const struct snap *s = rt->snap;
	uint64_t own = s->nodes[e->node].type == SNAP_NODE_SWITCH ? UINT64_MAX : rate_cable_bps(s, e->node, e->port);
	for (size_t j = 0; j < n; j++) {
		if (hops[j] < 0) {
			row[j] = -1;
			continue;
		}
		if (hops[j] == 0 && dlids[j] >= e->lid && dlids[j] <= e->lid + ((1u << e->lmc) - 1)) {
			row[j] = 0; /* its own port (a host listed twice): no network at all */
			continue;
		}
		uint64_t bps = tail[j] < own ? tail[j] : own;
		double ns = cost_route_latency((uint32_t)hops[j]) * 1e9;
		if (bytes && !bps) {
			util_fail(err, AN_ERR_LEN, "the route from end port 0x%016" PRIx64 " to LID %u crosses a cable "
				  "of unknown rate (width/speed)", e->guid, (unsigned)dlids[j]);
			return AN_E_RANGE;
		}
		if (bytes && bps != UINT64_MAX)
			ns += (double)bytes * 8e9 / (double)bps;
		row[j] = (int64_t)(ns + 0.5);
	}
	return AN_OK;
}

/* For a leaf-mate src of the walker first: the columns naming first's
 * port or src's own are walked from src (on), then walked from first
 * again (off) so that the next mate starts from the walker's row. */
static int patch_mates(const struct route_tab *rt, uint32_t first, uint32_t src, const uint32_t *eps,
		       const uint16_t *dlids, size_t n, struct route_hop *walk, size_t cap, int32_t *hops, uint64_t *tail,
		       int on)
{
	if (src == first)
		return AN_OK;
	for (size_t j = 0; j < n; j++)
		if (eps[j] == first || eps[j] == src)
			delay_walk(rt, on ? src : first, dlids[j], walk, cap, &hops[j], &tail[j]);
	return AN_OK;
}

int matrix_delay(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, uint64_t bytes,
		 int64_t *out, char err[AN_ERR_LEN])
{
	if (bytes > MATRIX_DELAY_BYTES_MAX) {
		util_fail(err, AN_ERR_LEN, "%" PRIu64 " bytes: at most 2^53", bytes);
		return AN_E_INVAL;
	}
	/* A loop-free walk crosses each switch at most once. */
	size_t cap = (size_t)rt->nsw + 1;
	struct delay_ord *ord = malloc((n ? n : 1) * sizeof(*ord));
	struct route_hop *walk = malloc(cap * sizeof(*walk));
	int32_t *hops = malloc((n ? n : 1) * sizeof(*hops));
	uint64_t *tail = malloc((n ? n : 1) * sizeof(*tail));
	int rc = ord && walk && hops && tail ? AN_OK : AN_E_NOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		ord[i] = (struct delay_ord){ delay_key(rt, eps[i], i), i };
	if (!rc)
		qsort(ord, n, sizeof(*ord), cmp_ord);
	uint32_t first = 0;
	for (size_t k = 0; k < n && !rc; k++) {
		size_t i = ord[k].i;
		/* The first of a leaf walks for all its leaf-mates: their routes
		 * after their own cables are its routes, but for the columns of
		 * the first's own port (0 hops for it, the leaf for them) and of
		 * their own port (0 hops for them), walked again from theirs. */
		if (k == 0 || ord[k].key != ord[k - 1].key) {
			first = eps[i];
			delay_tail(rt, first, dlids, n, walk, cap, hops, tail);
		}
		rc = patch_mates(rt, first, eps[i], eps, dlids, n, walk, cap, hops, tail, 1);
		if (!rc)
			rc = delay_row(rt, eps[i], dlids, hops, tail, n, bytes, out + i * n, err);
		if (!rc)
			rc = patch_mates(rt, first, eps[i], eps, dlids, n, walk, cap, hops, tail, 0);
		if (!rc)
			out[i * n + i] = 0;
	}
	free(ord);
	free(walk);
	free(hops);
	free(tail);
	return rc;
}
