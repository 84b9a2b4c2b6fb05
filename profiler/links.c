/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * links.c - the load of every directed link under the job's traffic.
 *
 * ONE function, links_compute(), so that the route source can change in one
 * place: today it asks topod for the route of every ordered pair of the
 * job's hosts (tii_get_network_path_matrix, one request) and walks each pair
 * that carried bytes: host A's cable into the first switch, switch to
 * switch (consecutive GUIDs of the route), the last switch's cable to host
 * B. libtii's tii_get_matrix_load (topod's `load`, one analysis for every
 * client) gives every directed link's bytes for the same matrix, but not
 * which host pairs cross a link, and the report names each busy link's
 * largest host flows: so the walk stays here, and it is the one place to
 * change should `load` ever return them.
 *
 * A link is named by its two ends: "0x<GUID>" for a switch, the host's name
 * for a host end. Routes between two names of one host and failed routes
 * load nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"
#include "tii.h"

/* an end: a switch GUID, or a host index with HOST_BIT set (GUIDs of real
 * fabrics never have the top bit set in their vendor OUI byte) */
#define HOST_BIT (1ull << 63)

struct lslot {
	uint64_t from, to;   /* both 0: empty */
	uint64_t bytes, pairs;
	int top;             /* index in the kept list, -1 */
};

struct ltab {
	struct lslot *s;
	size_t cap, used;
};

static size_t lhash(uint64_t a, uint64_t b, size_t cap)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
	return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

static struct lslot *lfind(struct ltab *T, uint64_t a, uint64_t b, int add)
{
	if (add && 2 * (T->used + 1) > T->cap) {
		size_t ncap = T->cap ? 2 * T->cap : 1024;
		struct lslot *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return NULL;
		for (size_t i = 0; i < T->cap; i++) {
			if (!(T->s[i].from | T->s[i].to))
				continue;
			size_t h = lhash(T->s[i].from, T->s[i].to, ncap);
			while (ns[h].from | ns[h].to)
				h = (h + 1) & (ncap - 1);
			ns[h] = T->s[i];
		}
		free(T->s);
		T->s = ns;
		T->cap = ncap;
	}
	if (!T->cap)
		return NULL;
	size_t h = lhash(a, b, T->cap);
	while (T->s[h].from | T->s[h].to) {
		if (T->s[h].from == a && T->s[h].to == b)
			return &T->s[h];
		h = (h + 1) & (T->cap - 1);
	}
	if (!add)
		return NULL;
	T->s[h] = (struct lslot){ .from = a, .to = b, .top = -1 };
	T->used++;
	return &T->s[h];
}

/* calls fn for each directed link of the route a -> b */
typedef int link_fn(void *ctx, uint64_t from, uint64_t to);
static int walk(int a, int b, const uint64_t *g, size_t len, link_fn *fn, void *ctx)
{
	uint64_t prev = HOST_BIT | (uint64_t)a;
	for (size_t i = 0; i < len; i++) {
		if (fn(ctx, prev, g[i]))
			return -1;
		prev = g[i];
	}
	return fn(ctx, prev, HOST_BIT | (uint64_t)b);
}

struct addctx {
	struct ltab *T;
	uint64_t bytes;
};
static int add_link(void *p, uint64_t from, uint64_t to)
{
	struct addctx *c = p;
	struct lslot *s = lfind(c->T, from, to, 1);
	if (!s)
		return -1;
	s->bytes += c->bytes;
	s->pairs++;
	return 0;
}

struct flowctx {
	struct ltab *T;
	struct prof_link *kept;
	int a, b;
	uint64_t bytes;
};
static int add_flow(void *p, uint64_t from, uint64_t to)
{
	struct flowctx *c = p;
	struct lslot *s = lfind(c->T, from, to, 0);
	if (!s || s->top < 0)
		return 0;
	struct prof_link *L = &c->kept[s->top];
	int cap = (int)(sizeof(L->flows) / sizeof(L->flows[0]));
	/* keep the largest flows, largest first */
	int at = L->nflows < cap ? L->nflows : cap - 1;
	if (L->nflows == cap && L->flows[at].bytes >= c->bytes)
		return 0;
	while (at > 0 && L->flows[at - 1].bytes < c->bytes) {
		L->flows[at] = L->flows[at - 1];
		at--;
	}
	L->flows[at].src = c->a;
	L->flows[at].dst = c->b;
	L->flows[at].bytes = c->bytes;
	if (L->nflows < cap)
		L->nflows++;
	return 0;
}

static int by_bytes(const void *x, const void *y)
{
	const struct lslot *a = *(const struct lslot *const *)x, *b = *(const struct lslot *const *)y;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->to < b->to ? -1 : a->to > b->to;
}

static void end_name(const struct prof_rep *R, uint64_t e, char *buf, size_t n, int *host)
{
	if (e & HOST_BIT) {
		*host = (int)(e & ~HOST_BIT);
		snprintf(buf, n, "%s", R->hostname[*host]);
	} else {
		*host = -1;
		snprintf(buf, n, "0x%016" PRIx64, e);
	}
}

void links_compute(struct prof_rep *R, void *handle, int top)
{
	struct prof_fabric *F = &R->fab;
	tii_t *t = handle;
	size_t nh = (size_t)R->nh;
	snprintf(F->links_how, sizeof(F->links_how), "tii_get_network_path_matrix");
	if (!R->hostpair) {
		snprintf(F->links_why, PROF_WHY, "%zu hosts, more than %d", nh, PROF_HOSTPAIR_MAX);
		return;
	}
	const char **hosts = calloc(nh ? nh : 1, sizeof(*hosts));
	if (!hosts) {
		snprintf(F->links_why, PROF_WHY, "out of memory");
		return;
	}
	for (size_t h = 0; h < nh; h++)
		hosts[h] = R->hostname[h];
	tii_path_matrix_t *pm = NULL;
	int rc = tii_get_network_path_matrix(t, hosts, nh, &pm);
	free(hosts);
	if (rc) {
		snprintf(F->links_why, PROF_WHY, "path matrix of %zu hosts: %s (%s)", nh, tii_strerror(rc),
			 tii_last_message(t));
		return;
	}
	struct ltab T = { 0 };
	struct lslot **order = NULL;
	for (size_t a = 0; a < nh; a++)
		for (size_t b = 0; b < nh; b++) {
			uint64_t bytes = R->hostpair[a * nh + b];
			const uint64_t *g;
			size_t len;
			if (a == b || !bytes || tii_path_matrix_route(pm, a, b, &g, &len))
				continue;
			struct addctx c = { &T, bytes };
			if (walk((int)a, (int)b, g, len, add_link, &c))
				goto oom;
		}
	order = malloc((T.used ? T.used : 1) * sizeof(*order));
	if (!order)
		goto oom;
	size_t k = 0;
	for (size_t i = 0; i < T.cap; i++)
		if (T.s[i].from | T.s[i].to)
			order[k++] = &T.s[i];
	qsort(order, k, sizeof(*order), by_bytes);
	F->links_total = k;
	F->nlinks = k < (size_t)top ? k : (size_t)top;
	F->links = calloc(F->nlinks ? F->nlinks : 1, sizeof(*F->links));
	if (!F->links)
		goto oom;
	for (size_t i = 0; i < F->nlinks; i++) {
		struct prof_link *L = &F->links[i];
		order[i]->top = (int)i;
		end_name(R, order[i]->from, L->from, sizeof(L->from), &L->from_host);
		end_name(R, order[i]->to, L->to, sizeof(L->to), &L->to_host);
		L->bytes = order[i]->bytes;
		L->pairs = order[i]->pairs;
	}
	/* the hosts behind the kept links: a second walk, their largest flows */
	for (size_t a = 0; a < nh; a++)
		for (size_t b = 0; b < nh; b++) {
			uint64_t bytes = R->hostpair[a * nh + b];
			const uint64_t *g;
			size_t len;
			if (a == b || !bytes || tii_path_matrix_route(pm, a, b, &g, &len))
				continue;
			struct flowctx c = { &T, F->links, (int)a, (int)b, bytes };
			walk((int)a, (int)b, g, len, add_flow, &c);
		}
	F->links_ok = 1;
	free(order);
	free(T.s);
	tii_path_matrix_free(pm);
	return;
oom:
	free(order);
	free(T.s);
	tii_path_matrix_free(pm);
	snprintf(F->links_why, PROF_WHY, "out of memory");
}
