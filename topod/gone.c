/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gone.c - see gone.h.
 */
#include "gone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "fabric.h"
#include "snapshot.h"
#include "history.h"
#include "store.h"

void gone_free(struct gone *g)
{
	if (!g)
		return;
	free(g->v);
	free(g);
}

static int cmp_gone(const void *a, const void *b)
{
	const struct gone_host *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	/* the same name twice: the most recent sighting first */
	if (c)
		return c;
	return x->last_gen > y->last_gen ? -1 : x->last_gen < y->last_gen;
}

static int cmp_recent(const void *a, const void *b)
{
	const struct gone_host *x = a, *y = b;
	return x->last_gen > y->last_gen ? -1 : x->last_gen < y->last_gen;
}

static int gen_kept(const struct history_meta *m, size_t n, uint64_t gen)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].generation == gen)
			return 1;
	return 0;
}

struct gone *gone_next(const struct fabric *prev, const struct route_tab *rt, struct history *hist,
		       int same_hosts)
{
	if (!prev || !prev->index)
		return NULL;
	const struct route_tab *pr = prev->index->rt;
	const struct gone *pg = prev->gone;
	size_t cap = (size_t)pr->nhosts + (pg ? pg->n : 0), n = 0, nm = 0;
	struct history_meta *meta = NULL;
	if (!cap || (hist && history_list(hist, &meta, &nm)))
		return NULL;
	struct gone_host *v = malloc(cap * sizeof(*v));
	struct gone *g = calloc(1, sizeof(*g));
	if (!v || !g) {
		free(v);
		free(g);
		free(meta);
		return NULL;
	}
	uint32_t x;
	for (uint32_t i = 0; !same_hosts && i < pr->nhosts; i++) {
		if (!route_find_host(rt, pr->hosts[i].name, &x))
			continue;
		const struct route_ep *e = &pr->eps[route_host_ep(pr, i)];
		struct gone_host *o = &v[n++];
		snprintf(o->name, sizeof(o->name), "%s", pr->hosts[i].name);
		o->leaf = e->leaf == ROUTE_NONE ? 0 : pr->snap->nodes[e->leaf].guid;
		o->last_gen = prev->snap->generation;
		o->since_gen = rt->snap->generation;
		o->since_us = rt->snap->timestamp;
	}
	/* an older entry whose generation the history has let go is forgotten */
	for (size_t i = 0; pg && i < pg->n; i++)
		if (route_find_host(rt, pg->v[i].name, &x) && (!hist || gen_kept(meta, nm, pg->v[i].last_gen)))
			v[n++] = pg->v[i];
	free(meta);
	qsort(v, n, sizeof(*v), cmp_gone);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || strcmp(v[k - 1].name, v[i].name))
			v[k++] = v[i];
	if (k > GONE_MAX) {
		qsort(v, k, sizeof(*v), cmp_recent);
		k = GONE_MAX;
		qsort(v, k, sizeof(*v), cmp_gone);
	}
	if (!k) {
		free(v);
		free(g);
		return NULL;
	}
	g->n = k;
	g->v = v;
	return g;
}

const struct gone_host *gone_find(const struct gone *g, const char *name)
{
	if (!g || strlen(name) > ROUTE_NAME_MAX)
		return NULL;
	/* names are unique after gone_next's merge: a binary search by name */
	size_t lo = 0, hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->v[mid].name, name);
		if (!c)
			return &g->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void gone_cables_free(struct gone_cables *g)
{
	if (!g)
		return;
	free(g->v);
	free(g);
}

/* Node i of ps in s: at the same index when it is there (a delta keeps
 * every node where it was), else searched by GUID. A cable fault's check
 * runs over all 131,712 cables at k=56: two binary searches each took
 * 10 ms of the time before the new generation is served. */
static int64_t node_in(const struct snap *s, const struct snap *ps, uint32_t i)
{
	uint64_t guid = ps->nodes[i].guid;
	return i < s->nnodes && s->nodes[i].guid == guid ? (int64_t)i : snap_find_node(s, guid);
}

/* The cable of ps between node ia port pa and node ib port pb: both ends
 * present in s and linked to nothing, then into v. */
static void keep_if_unlinked(const struct snap *s, const struct snap *ps, uint32_t ia, unsigned pa, uint32_t ib,
			     unsigned pb, struct gone_cable *v, size_t *n)
{
	int64_t a = node_in(s, ps, ia), b = node_in(s, ps, ib);
	if (a < 0 || b < 0 || pa > s->nodes[a].nports || pb > s->nodes[b].nports)
		return;
	const struct snap_port *p = &s->ports[s->nodes[a].port0 + pa], *q = &s->ports[s->nodes[b].port0 + pb];
	if (!p->present || !q->present || p->peer_node != SNAP_NONE || q->peer_node != SNAP_NONE)
		return;
	struct gone_cable *c = &v[(*n)++];
	/* GUID order is index order in a canonical snapshot */
	int swap = b < a || (a == b && pb < pa);
	c->node[0] = (uint32_t)(swap ? b : a);
	c->port[0] = (uint8_t)(swap ? pb : pa);
	c->node[1] = (uint32_t)(swap ? a : b);
	c->port[1] = (uint8_t)(swap ? pa : pb);
}

static int cmp_cable(const void *x, const void *y)
{
	const struct gone_cable *a = x, *b = y;
	if (a->node[0] != b->node[0])
		return a->node[0] < b->node[0] ? -1 : 1;
	return (int)a->port[0] - (int)b->port[0];
}

/* g's entries, copied (same nodes and ports: the same indices hold). */
static struct gone_cables *cables_copy(const struct gone_cables *g)
{
	struct gone_cables *c = g ? calloc(1, sizeof(*c)) : NULL;
	if (c && !(c->v = malloc(g->n * sizeof(*c->v)))) {
		free(c);
		return NULL;
	}
	if (c) {
		memcpy(c->v, g->v, g->n * sizeof(*c->v));
		c->n = g->n;
	}
	return c;
}

/* The cables of ps now unlinked at both ends in s, into v (room for
 * cap): among all of ps's, or with keys (a delta's port_key, n of them)
 * among those with an end the delta rewrote (a k=56 cable fault: 2
 * ports, not 263,000). That is enough: a delta keeps every node at its
 * index and rewrites a port's record whole, and a valid snapshot's links
 * are symmetric, so both ends of a cable that lost its link are among
 * the keys. Found from both, such a cable comes twice: gone_cables_next
 * drops the second. */
static size_t newly_unlinked(const struct snap *s, const struct snap *ps, const uint64_t *keys, uint32_t nkeys,
			     struct gone_cable *v, size_t cap)
{
	size_t n = 0;
	for (uint32_t i = 0; keys && i < nkeys && n < cap; i++) {
		uint32_t a = (uint32_t)(keys[i] >> 8);
		unsigned pa = (unsigned)(keys[i] & 0xFF);
		if (a >= ps->nnodes || !pa || pa > ps->nodes[a].nports)
			continue;
		const struct snap_port *p = &ps->ports[ps->nodes[a].port0 + pa];
		if (p->present && p->peer_node != SNAP_NONE)
			keep_if_unlinked(s, ps, a, pa, p->peer_node, p->peer_port, v, &n);
	}
	for (uint32_t a = 0; !keys && a < ps->nnodes; a++)
		for (unsigned pa = 1; pa <= ps->nodes[a].nports; pa++) {
			const struct snap_port *p = &ps->ports[ps->nodes[a].port0 + pa];
			if (!p->present || p->peer_node == SNAP_NONE || p->peer_node < a ||
			    (p->peer_node == a && p->peer_port < pa) || n >= cap)
				continue;
			keep_if_unlinked(s, ps, a, pa, p->peer_node, p->peer_port, v, &n);
		}
	return n;
}

struct gone_cables *gone_cables_next(const struct fabric *prev, const struct snap *s, int same_links,
				     const struct snap_delta_info *info)
{
	if (!prev || !prev->index || !s->nnodes)
		return NULL;
	if (same_links)
		return cables_copy(prev->gone_cables);
	const struct snap *ps = prev->snap;
	const struct gone_cables *pg = prev->gone_cables;
	/* the delta's keys only when it leads from ps to s, else the search */
	const uint64_t *keys = info && info->ports <= SNAP_DELTA_PORT_KEYS && info->generation == s->generation &&
				       info->base_generation == ps->generation && info->base_sm_guid == ps->sm_guid &&
				       info->base_timestamp == ps->timestamp
				   ? info->port_key
				   : NULL;
	/* every candidate is a cable of prev, or one of its list: each port of
	 * s is in at most one that survives, so nports bounds the result; a
	 * delta's, its ports rewritten and the list */
	size_t cap = keys ? (size_t)info->ports + (pg ? pg->n : 0) : (size_t)s->nports / 2 + 1;
	struct gone_cable *v = malloc((cap + 1) * sizeof(*v));
	struct gone_cables *g = calloc(1, sizeof(*g));
	if (!v || !g) {
		free(v);
		free(g);
		return NULL;
	}
	size_t n = newly_unlinked(s, ps, keys, keys ? info->ports : 0, v, cap);
	for (size_t i = 0; pg && i < pg->n && n < cap; i++) {
		const struct gone_cable *c = &pg->v[i];
		keep_if_unlinked(s, ps, c->node[0], c->port[0], c->node[1], c->port[1], v, &n);
	}
	qsort(v, n, sizeof(*v), cmp_cable);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || cmp_cable(&v[u - 1], &v[i]))
			v[u++] = v[i];
	if (!u) {
		free(v);
		free(g);
		return NULL;
	}
	g->n = u;
	g->v = v;
	return g;
}
