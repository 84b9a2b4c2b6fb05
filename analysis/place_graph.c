/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_graph.c - the communication graph (CSR from a stencil or from
 * directed edges) and the cost of a rank -> host mapping on the fabric's
 * real routes (place.h): hop-bytes and link loads, and the predicted time
 * of one phase by the one cost model (cost.h).
 */
#include "place.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "load.h"
#include "pattern.h"

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

/* ---- predicted time ------------------------------------------------------- */

static int tri_cmp(const void *x, const void *y)
{
	const struct pat_triple *p = x, *q = y;
	if (p->src != q->src)
		return p->src < q->src ? -1 : 1;
	return p->dst < q->dst ? -1 : p->dst > q->dst;
}

/* The host-pair flows of a mapping: jhost[0..*k) the distinct hosts of
 * ranks with traffic off their host, triples between their positions,
 * merged. Each CSR entry (v, u) is the direction v -> u: W x bytes / 2. */
static int host_flows(const struct route_tab *rt, const struct place_graph *g, const uint32_t *rank_host,
		      uint64_t bytes, uint32_t *jhost, uint32_t *k, struct pat_triple **tri, size_t *nt)
{
	size_t m = g->xadj[g->n], n = 0;
	uint32_t *pos = malloc((rt->nhosts ? rt->nhosts : 1) * sizeof(*pos));
	struct pat_triple *t = malloc((m ? m : 1) * sizeof(*t));
	if (!pos || !t) {
		free(pos);
		free(t);
		return AN_E_NOMEM;
	}
	memset(pos, 0xff, rt->nhosts * sizeof(*pos));
	*k = 0;
	for (uint32_t v = 0; v < g->n; v++)
		for (uint32_t e = g->xadj[v]; e < g->xadj[v + 1]; e++) {
			uint32_t a = rank_host[v], b = rank_host[g->adj[e]];
			if (a == b)
				continue;
			if (pos[a] == UINT32_MAX)
				jhost[pos[a] = (*k)++] = a;
			if (pos[b] == UINT32_MAX)
				jhost[pos[b] = (*k)++] = b;
			t[n++] = (struct pat_triple){ pos[a], pos[b], (uint64_t)g->w[e] * bytes / 2 };
		}
	qsort(t, n, sizeof(*t), tri_cmp);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (j && t[j - 1].src == t[i].src && t[j - 1].dst == t[i].dst)
			t[j - 1].bytes += t[i].bytes;   /* within the graph's total (place_graph_bytes) */
		else
			t[j++] = t[i];
	}
	free(pos);
	*tri = t;
	*nt = j;
	return AN_OK;
}

int place_graph_bytes(const struct place_graph *g, uint64_t bytes, uint64_t *total, char err[AN_ERR_LEN])
{
	uint64_t w = 0, t;
	for (uint32_t e = 0; e < g->xadj[g->n]; e++)
		w += g->w[e];   /* at most 2^24 edges of 2^32: no wrap */
	/* W x bytes / 2 within 2^62 means W x bytes within 2^63: a product
	 * that wraps is too large anyway */
	if (__builtin_mul_overflow(w, bytes, &t) || t / 2 > TOPO_BYTES_TOTAL_MAX) {
		snprintf(err, AN_ERR_LEN, "edge weights of %" PRIu64 " in all at %" PRIu64 " bytes each total more than 2^62 bytes",
			 w, bytes);
		return AN_E_RANGE;
	}
	*total = t / 2;
	return AN_OK;
}

int place_time(const struct route_tab *rt, const struct place_graph *g, const uint32_t *rank_host, uint64_t bytes,
	       struct place_time *out, char err[AN_ERR_LEN])
{
	*out = (struct place_time){ .seconds = -1, .node = ROUTE_NONE };
	uint64_t total;
	if (!bytes || bytes > PLACE_BYTES_MAX) {
		snprintf(err, AN_ERR_LEN, "bytes per unit of weight must be 1..2^53");
		return AN_OK;
	}
	if (place_graph_bytes(g, bytes, &total, err))
		return AN_OK;
	uint32_t *jhost = malloc(((size_t)g->n + 1) * sizeof(*jhost)), k = 0;
	struct pat_triple *tri = NULL;
	size_t nt = 0;
	int rc = jhost ? host_flows(rt, g, rank_host, bytes, jhost, &k, &tri, &nt) : AN_E_NOMEM;
	if (rc) {
		free(jhost);
		return rc;
	}
	struct pattern p = { .kind = PAT_MATRIX };
	struct pat_job job = { k, jhost };
	struct load *L = NULL;
	struct cost_time ct;
	if (!nt) {
		out->seconds = 0;   /* every rank talks to its own host only */
	} else if (nt > PAT_TRIPLES_MAX || k > TOPO_MATRIX_MAX) {
		snprintf(err, AN_ERR_LEN, "%zu host pairs on %u hosts: more than a load takes", nt, k);
	} else if ((rc = pattern_set_matrix(&p, tri, nt, k, err)) == AN_OK &&
		   (rc = load_build(rt, &job, &p, 1, &L)) == AN_OK) {
		out->fail_bytes = L->fail_bytes;
		/* a cable without a rate leaves the time unknown, err says which */
		if (cost_load_time(rt, L, &ct, err) == AN_OK) {
			out->seconds = ct.seconds;
			if (ct.link != UINT32_MAX) {
				out->node = L->links[ct.link].node;
				out->port = L->links[ct.link].port;
				out->bps = ct.link_bps;
			}
		}
	}
	if (rc && rc != AN_E_NOMEM)
		snprintf(err, AN_ERR_LEN, "no load for the mapping: %s", an_strerror(rc));
	load_free(L);
	pattern_clear(&p);
	free(tri);
	free(jhost);
	return rc == AN_E_NOMEM ? rc : AN_OK;
}
