/*
 * gone.c - see gone.h.
 */
#include "gone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
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

struct gone *gone_next(const struct fabric *prev, const struct route_tab *rt, struct history *hist)
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
	for (uint32_t i = 0; i < pr->nhosts; i++) {
		if (!route_find_host(rt, pr->hosts[i].name, &x))
			continue;
		const struct route_ep *e = &pr->eps[route_host_ep(pr, i)];
		struct gone_host *o = &v[n++];
		snprintf(o->name, sizeof(o->name), "%s", pr->hosts[i].name);
		o->leaf = e->leaf == ROUTE_NONE ? 0 : pr->snap->nodes[e->leaf].guid;
		o->last_gen = prev->snap->generation;
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
