/*
 * place_graph.c - the communication graph (CSR from a stencil or from
 * directed edges) and the cost of a rank -> host mapping on the fabric's
 * real routes (place.h).
 */
#include "place.h"

#include <stdlib.h>
#include <string.h>

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
