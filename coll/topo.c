/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.c - the job's delay matrix: for every ordered pair of its hosts the
 * latency of the route the subnet manager programmed and the rate of its
 * slowest cable (docs/collectives.md, "How it chooses").
 *
 * The source is a SimGrid platform (docs/protocol.md `simgrid`): topod
 * writes one per job with the LFT routes and each cable's rate, so the one
 * parser serves the live job (rank 0 asks topod at MPI_Init) and the
 * simulated one (TOPOCOLL_TOPOLOGY=FILE, the very platform SMPI runs on,
 * where topod is out of reach). The platform is untrusted text: every
 * count is bounded, every name checked, a route naming an unknown link or
 * host refuses the whole file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cost.h"
#include "topo_limits.h"

#define TC_PLAT_HOSTS 4096      /* hosts in one platform */
#define TC_PLAT_LINKS (1 << 20) /* links in one platform */
#define TC_LINK_ID 48

struct plink {
	char id[TC_LINK_ID];
	double bps, lat;
};

static int cmp_link(const void *a, const void *b)
{
	return strcmp(((const struct plink *)a)->id, ((const struct plink *)b)->id);
}

/* The value of attribute `attr` inside the tag starting at tag (up to '>'),
 * copied into out[n]; 0, or -1 when absent or too long. */
static int attr_of(const char *tag, const char *attr, char *out, size_t n)
{
	const char *end = strchr(tag, '>');
	size_t al = strlen(attr);
	for (const char *p = tag; end && p < end; p++) {
		if (strncmp(p, attr, al) || p[al] != '=' || p[al + 1] != '"' || (p > tag && p[-1] != ' '))
			continue;
		const char *v = p + al + 2, *q = strchr(v, '"');
		if (!q || q > end || (size_t)(q - v) >= n)
			return -1;
		memcpy(out, v, (size_t)(q - v));
		out[q - v] = '\0';
		return 0;
	}
	return -1;
}

static const struct tc_platform *sort_ctx;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(sort_ctx->names + (size_t)*(const int *)a * TC_NAME,
		      sort_ctx->names + (size_t)*(const int *)b * TC_NAME);
}

int tc_platform_find(const struct tc_platform *p, const char *name)
{
	int lo = 0, hi = p->n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, i = p->sorted[mid];
		int c = strcmp(name, p->names + (size_t)i * TC_NAME);
		if (!c)
			return i;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

void tc_platform_free(struct tc_platform *p)
{
	free(p->names);
	free(p->sorted);
	free(p->leaf);
	free(p->lat);
	free(p->rate);
	free(p->host_rate);
	free(p->rstart);
	free(p->rlen);
	free(p->links);
	free(p->bps);
	memset(p, 0, sizeof(*p));
}

/* Hosts and links: the first pass. */
static int hosts_links(struct tc_platform *p, const char *xml, struct plink **lk, int *nlk, char *why, size_t whyn)
{
	int nh = 0, nl = 0;
	for (const char *s = xml; (s = strchr(s, '<')); s++) {
		nh += !strncmp(s, "<host ", 6);
		nl += !strncmp(s, "<link ", 6);
	}
	if (nh < 1 || nh > TC_PLAT_HOSTS || nl > TC_PLAT_LINKS) {
		snprintf(why, whyn, "platform: %d hosts, %d links (1..%d hosts, %d links)", nh, nl, TC_PLAT_HOSTS,
			 TC_PLAT_LINKS);
		return -1;
	}
	size_t nn = (size_t)nh * nh;
	p->names = calloc((size_t)nh, TC_NAME);
	p->sorted = malloc((size_t)nh * sizeof(int));
	p->leaf = calloc((size_t)nh, sizeof(uint64_t));
	p->lat = calloc(nn, sizeof(float));
	p->rate = calloc(nn, sizeof(float));
	p->host_rate = calloc((size_t)nh, sizeof(float));
	*lk = calloc(nl ? (size_t)nl : 1, sizeof(**lk));
	if (!p->names || !p->sorted || !p->leaf || !p->lat || !p->rate || !p->host_rate || !*lk) {
		snprintf(why, whyn, "out of memory for a platform of %d hosts", nh);
		return -1;
	}
	char bw[32], lat[32];
	for (const char *s = xml; (s = strchr(s, '<')); s++) {
		if (!strncmp(s, "<host ", 6)) {
			if (attr_of(s, "id", p->names + (size_t)p->n * TC_NAME, TC_NAME)) {
				snprintf(why, whyn, "platform: host %d has no usable id", p->n);
				return -1;
			}
			p->sorted[p->n] = p->n;
			p->n++;
		} else if (!strncmp(s, "<link ", 6)) {
			struct plink *l = &(*lk)[*nlk];
			char *e1, *e2;
			/* the negated ranges also refuse strtod's nan */
			if (attr_of(s, "id", l->id, sizeof(l->id)) || attr_of(s, "bandwidth", bw, sizeof(bw)) ||
			    attr_of(s, "latency", lat, sizeof(lat)) ||
			    !((l->bps = strtod(bw, &e1)) > 0 && l->bps <= TOPO_LINK_BPS_MAX) || strcmp(e1, "bps") ||
			    !((l->lat = strtod(lat, &e2)) >= 0 && l->lat <= TOPO_LINK_LAT_NS_MAX) || strcmp(e2, "ns")) {
				snprintf(why, whyn,
					 "platform: link %d is not id, bandwidth=Nbps, latency=Nns (rate in (0, %g], "
					 "latency in [0, %g])", *nlk, TOPO_LINK_BPS_MAX, TOPO_LINK_LAT_NS_MAX);
				return -1;
			}
			l->lat *= 1e-9;
			(*nlk)++;
		}
	}
	if (tc_platform_sort(p)) {
		snprintf(why, whyn, "platform: a host twice");
		return -1;
	}
	qsort(*lk, (size_t)*nlk, sizeof(**lk), cmp_link);
	return 0;
}

int tc_platform_sort(struct tc_platform *p)
{
	sort_ctx = p;
	qsort(p->sorted, (size_t)p->n, sizeof(int), cmp_name);
	for (int i = 1; i < p->n; i++)
		if (!strcmp(p->names + (size_t)p->sorted[i] * TC_NAME, p->names + (size_t)p->sorted[i - 1] * TC_NAME))
			return -1;
	return 0;
}

/* One <route>: its latency, slowest rate, and the switch after the source. */
static int one_route(struct tc_platform *p, const char *s, const struct plink *lk, int nlk, char *why, size_t whyn)
{
	char a[TC_NAME], b[TC_NAME];
	if (attr_of(s, "src", a, sizeof(a)) || attr_of(s, "dst", b, sizeof(b))) {
		snprintf(why, whyn, "platform: a route without src and dst");
		return -1;
	}
	int i = tc_platform_find(p, a), j = tc_platform_find(p, b);
	if (i < 0 || j < 0 || i == j) {
		snprintf(why, whyn, "platform: route %.60s -> %.60s between unknown hosts", a, b);
		return -1;
	}
	const char *end = strstr(s, "</route>");
	double lat = 0, bps = 0;
	int k = 0;
	struct plink key;
	for (const char *q = s; end && (q = strstr(q, "<link_ctn ")) && q < end; q++, k++) {
		const struct plink *l = NULL;
		if (!attr_of(q, "id", key.id, sizeof(key.id)))
			l = bsearch(&key, lk, (size_t)nlk, sizeof(*lk), cmp_link);
		if (!l) {
			snprintf(why, whyn, "platform: route %.60s -> %.60s names an unknown link", a, b);
			return -1;
		}
		lat += l->lat;
		bps = k == 0 || l->bps < bps ? l->bps : bps;
		if (k == 0)
			p->rstart[(size_t)i * p->n + j] = p->nused;
		if (p->nused == p->ncap) {
			uint32_t cap = p->ncap ? 2 * p->ncap : 1024;
			uint32_t *nl = cap > p->ncap ? realloc(p->links, (size_t)cap * sizeof(uint32_t)) : NULL;
			if (!nl) {
				snprintf(why, whyn, "out of memory for the platform's routes");
				return -1;
			}
			p->links = nl;
			p->ncap = cap;
		}
		p->links[p->nused++] = (uint32_t)(l - lk);
		p->rlen[(size_t)i * p->n + j] = (uint32_t)k + 1;
		if (k == 0)
			p->host_rate[i] = (float)(l->bps / 8);
		/* the link after the host's own is its leaf switch's port */
		if (k == 1)
			p->leaf[i] = strtoull(key.id, NULL, 16);
	}
	if (!end || k == 0) {
		snprintf(why, whyn, "platform: route %.60s -> %.60s is empty or unterminated", a, b);
		return -1;
	}
	p->lat[(size_t)i * p->n + j] = (float)lat;
	p->rate[(size_t)i * p->n + j] = (float)(bps / 8);
	return 0;
}

int tc_platform_parse(struct tc_platform *p, const char *xml, char *why, size_t whyn)
{
	struct plink *lk = NULL;
	int nlk = 0, rc = hosts_links(p, xml, &lk, &nlk, why, whyn);
	if (!rc) {
		size_t n = (size_t)p->n;
		p->rstart = calloc(n * n, sizeof(uint32_t));
		p->rlen = calloc(n * n, sizeof(uint32_t));
		p->bps = malloc(((size_t)nlk + 1) * sizeof(uint64_t));
		if (!p->rstart || !p->rlen || !p->bps) {
			snprintf(why, whyn, "out of memory for a platform of %d hosts", p->n);
			rc = -1;
		}
	}
	for (int l = 0; !rc && l < nlk; l++)
		p->bps[l] = (uint64_t)lk[l].bps;
	p->nlinks = (uint32_t)nlk;
	for (const char *s = xml; !rc && (s = strstr(s, "<route ")); s++)
		rc = one_route(p, s, lk, nlk, why, whyn);
	for (int i = 0; !rc && i < p->n; i++)
		for (int j = 0; j < p->n && !rc; j++)
			if (i != j && p->rate[(size_t)i * p->n + j] <= 0) {
				snprintf(why, whyn, "platform: no route %.60s -> %.60s", p->names + (size_t)i * TC_NAME,
					 p->names + (size_t)j * TC_NAME);
				rc = -1;
			}
	free(lk);
	if (rc)
		tc_platform_free(p);
	return rc;
}

void tc_topo_free(struct tc_topo *t)
{
	free(t->host_of);
	free(t->node_of_host);
	free(t->leaf_of_host);
	free(t->pos_of_host);
	free(t->roff);
	free(t->rlink);
	free(t->lbps);
	free(t->hbps);
	free(t->cbps);
	memset(t, 0, sizeof(*t));
}

/* The routes between the job's nodes (platform hosts pidx[nn]), their
 * cables renumbered densely; each job host's own cable rate (big jobs:
 * its node's). No routes (a hops-only platform, a route too long for the
 * cost model): nroutes 0, the model has nothing to time. */
static int topo_routes(struct tc_topo *t, const struct tc_platform *p, const int *pidx, int nn)
{
	if (!p->rstart || !p->links)
		return 0;
	size_t pairs = (size_t)nn * nn, total = 0;
	for (int a = 0; a < nn; a++)
		for (int b = 0; b < nn; b++) {
			uint32_t l = a == b ? 0 : p->rlen[(size_t)pidx[a] * p->n + pidx[b]];
			if (l > COST_ROUTE_MAX - 2 || (a != b && !l))
				return 0;
			total += l;
		}
	uint32_t *map = malloc(((size_t)p->nlinks + 1) * sizeof(uint32_t));
	t->roff = malloc((pairs + 1) * sizeof(uint32_t));
	t->rlink = malloc((total + 1) * sizeof(uint32_t));
	t->lbps = malloc(((size_t)p->nlinks + 1) * sizeof(uint64_t));
	t->hbps = malloc(((size_t)t->nhosts + 1) * sizeof(uint64_t));
	if (!map || !t->roff || !t->rlink || !t->lbps || !t->hbps || total > UINT32_MAX) {
		free(map);
		return -1;
	}
	for (uint32_t l = 0; l < p->nlinks; l++)
		map[l] = UINT32_MAX;
	size_t k = 0;
	int nc = 0;
	for (int a = 0; a < nn; a++)
		for (int b = 0; b < nn; b++) {
			t->roff[(size_t)a * nn + b] = (uint32_t)k;
			size_t i = (size_t)pidx[a] * p->n + pidx[b];
			for (uint32_t j = 0; a != b && j < p->rlen[i]; j++) {
				uint32_t l = p->links[p->rstart[i] + j];
				if (map[l] == UINT32_MAX) {
					map[l] = (uint32_t)nc;
					t->lbps[nc++] = p->bps[l];
				}
				t->rlink[k++] = map[l];
			}
		}
	t->roff[pairs] = (uint32_t)k;
	t->ncables = nc;
	t->nroutes = 1;
	free(map);
	return 0;
}

/* Distinct names of names[n]: host_of[r], and the first rank of each host. */
static int distinct(const char *names, int n, int *host_of, int *first)
{
	int nh = 0;
	for (int r = 0; r < n; r++) {
		host_of[r] = -1;
		for (int h = 0; h < nh && host_of[r] < 0; h++)
			if (!strcmp(names + (size_t)first[h] * TC_NAME, names + (size_t)r * TC_NAME))
				host_of[r] = h;
		if (host_of[r] < 0) {
			first[nh] = r;
			host_of[r] = nh++;
		}
	}
	return nh;
}

int tc_topo_build(struct tc_topo *t, const struct tc_platform *p, const char *names, const char *alias, int nworld,
		  char *why, size_t whyn)
{
	int *first = malloc((size_t)nworld * sizeof(int)), *pidx = malloc((size_t)nworld * sizeof(int));
	t->host_of = malloc((size_t)nworld * sizeof(int));
	if (!first || !pidx || !t->host_of) {
		free(first);
		free(pidx);
		snprintf(why, whyn, "out of memory");
		return -1;
	}
	t->nworld = nworld;
	t->nhosts = distinct(names, nworld, t->host_of, first);
	t->node_of_host = malloc((size_t)t->nhosts * sizeof(int));
	t->leaf_of_host = calloc((size_t)t->nhosts, sizeof(uint64_t));
	t->pos_of_host = calloc((size_t)t->nhosts, sizeof(int));
	int rc = !t->node_of_host || !t->leaf_of_host || !t->pos_of_host ? -1 : 0;
	if (rc)
		snprintf(why, whyn, "out of memory");
	/* nodes: the platform's hosts this job uses, numbered in host order */
	int nn = 0;
	for (int h = 0; !rc && h < t->nhosts; h++) {
		const char *nm = (alias ? alias : names) + (size_t)first[h] * TC_NAME;
		int i = tc_platform_find(p, nm);
		if (i < 0) {
			snprintf(why, whyn, "host %.100s is not in the platform", nm);
			rc = -1;
			break;
		}
		int node = -1;
		for (int k = 0; k < nn && node < 0; k++)
			if (pidx[k] == i)
				node = k;
		if (node < 0) {
			pidx[nn] = i;
			node = nn++;
		}
		t->node_of_host[h] = node;
		t->leaf_of_host[h] = p->leaf[i];
		t->pos_of_host[h] = i;
	}
	t->nnodes = nn;
	t->rates_known = 1;
	if (!rc && topo_routes(t, p, pidx, nn)) {
		snprintf(why, whyn, "out of memory");
		rc = -1;
	}
	for (int h = 0; !rc && t->hbps && h < t->nhosts; h++)
		t->hbps[h] = (uint64_t)(p->host_rate[t->pos_of_host[h]] * 8.0);
	free(first);
	free(pidx);
	if (rc)
		tc_topo_free(t);
	return rc;
}

int tc_topo_bcast(struct tc_topo *t, MPI_Comm w)
{
	int hdr[7] = { t->nworld, t->nhosts, t->nnodes, t->rates_known, t->nroutes, t->ncables,
		       t->nroutes ? (int)t->roff[(size_t)t->nnodes * t->nnodes] : 0 },
	    rank, bad = 0, any;
	PMPI_Comm_rank(w, &rank);
	PMPI_Bcast(hdr, 7, MPI_INT, 0, w);
	PMPI_Bcast(t->source, (int)sizeof(t->source), MPI_CHAR, 0, w);
	if (!hdr[0])
		return -1;
	if (rank) {
		t->nworld = hdr[0];
		t->nhosts = hdr[1];
		t->nnodes = hdr[2];
		t->rates_known = hdr[3];
		size_t nn = (size_t)hdr[2] * hdr[2];
		t->host_of = malloc((size_t)hdr[0] * sizeof(int));
		t->node_of_host = malloc((size_t)hdr[1] * sizeof(int));
		t->leaf_of_host = malloc((size_t)hdr[1] * sizeof(uint64_t));
		t->pos_of_host = malloc((size_t)hdr[1] * sizeof(int));
		bad = !t->host_of || !t->node_of_host || !t->leaf_of_host || !t->pos_of_host;
		t->nroutes = hdr[4];
		t->ncables = hdr[5];
		if (t->nroutes) {
			t->roff = malloc((nn + 1) * sizeof(uint32_t));
			t->rlink = malloc(((size_t)hdr[6] + 1) * sizeof(uint32_t));
			t->lbps = malloc(((size_t)hdr[5] + 1) * sizeof(uint64_t));
			t->hbps = malloc(((size_t)hdr[1] + 1) * sizeof(uint64_t));
			bad |= !t->roff || !t->rlink || !t->lbps || !t->hbps;
		}
	}
	PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, w);
	if (any) {
		if (rank)
			tc_topo_free(t);
		else
			t->nworld = 0;
		return -1;
	}
	PMPI_Bcast(t->host_of, t->nworld, MPI_INT, 0, w);
	PMPI_Bcast(t->node_of_host, t->nhosts, MPI_INT, 0, w);
	PMPI_Bcast(t->leaf_of_host, t->nhosts, MPI_UINT64_T, 0, w);
	PMPI_Bcast(t->pos_of_host, t->nhosts, MPI_INT, 0, w);
	if (t->nroutes) {
		PMPI_Bcast(t->roff, t->nnodes * t->nnodes + 1, MPI_UINT32_T, 0, w);
		PMPI_Bcast(t->rlink, hdr[6], MPI_UINT32_T, 0, w);
		PMPI_Bcast(t->lbps, t->ncables, MPI_UINT64_T, 0, w);
		PMPI_Bcast(t->hbps, t->nhosts, MPI_UINT64_T, 0, w);
	}
	return 0;
}

uint32_t tc_route(const struct tc_topo *t, int ha, int hb, uint32_t *out)
{
	if (ha == hb || !t->nroutes)
		return 0;
	int na = t->node_of_host[ha], nb = t->node_of_host[hb], nn = t->nnodes;
	size_t i = (size_t)na * nn + nb;
	uint32_t n = 0, from = t->roff[i], to = t->roff[i + 1];
	if (nn == t->nhosts) {
		for (uint32_t k = from; k < to; k++)
			out[n++] = t->rlink[k];
		return n;
	}
	/* nodes are leaves: the hosts' own cables around the leaves' route */
	out[n++] = (uint32_t)t->ncables + 2 * (uint32_t)ha;
	for (uint32_t k = from + 1; k + 1 < to; k++)
		out[n++] = t->rlink[k];
	out[n++] = (uint32_t)t->ncables + 2 * (uint32_t)hb + 1;
	return n;
}
