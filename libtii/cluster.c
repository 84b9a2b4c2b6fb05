/*
 * cluster.c - the switch-cluster hierarchy: tii_num_switch_clusters_at_depth,
 * tii_connected_switch_cluster(s)_at_depth, tii_cluster_colors and
 * tii_get_tree (protocol commands "clusters" and "tree").
 */
#include "tii_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- clusters LEVEL H1 ... Hn ------------------------------------------------ */

struct cl_ctx {
	size_t n;
	long level;
	long count;
	uint64_t *ids;   /* [n] or NULL when only the count is wanted */
};

static int cl_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct cl_ctx *c = ctx;
	long level;
	if (tii__kv_int(kv, "level", 0, 65535, &level) || level != c->level ||
	    tii__kv_int(kv, "count", 0, (long)c->n, &c->count) || nlines != c->n || (c->n && !c->count))
		return TII_E_PROTO;
	return 0;
}

static int cl_line(void *ctx, size_t i, char *line, size_t len)
{
	struct cl_ctx *c = ctx;
	char *p = line;
	uint64_t id;
	(void)len;
	/* The first word echoes the host as asked; the request order is what
	 * counts. */
	char *echo = tii__word(&p);
	if (!echo || strlen(echo) > TII_NAME_MAX || tii__parse_guid(tii__word(&p), &id) || tii__word(&p))
		return TII_E_PROTO;
	if (c->ids)
		c->ids[i] = id;
	return 0;
}

static int clusters(tii_t *t, const char *const *hosts, size_t n, int depth, uint64_t *ids, int *count)
{
	if (!t || !hosts || !n || depth < 0)
		return TII_E_INVAL;
	struct cl_ctx c = { n, depth, 0, ids };
	static const struct tii__handler h = { cl_head, cl_line, 0 };
	int rc = tii__req_begin(t, "clusters");
	rc = rc ? rc : tii__req_int(t, depth);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && count)
		*count = (int)c.count;
	return rc;
}

int tii_num_switch_clusters_at_depth(tii_t *t, const char *const *hosts, size_t n, int depth, int *count)
{
	if (!count)
		return TII_E_INVAL;
	return clusters(t, hosts, n, depth, NULL, count);
}

int tii_connected_switch_clusters_at_depth(tii_t *t, const char *const *hosts, size_t n, int depth,
					   uint64_t *ids, int *count)
{
	if (!ids)
		return TII_E_INVAL;
	return clusters(t, hosts, n, depth, ids, count);
}

int tii_connected_switch_cluster_at_depth(tii_t *t, const char *host, int depth, uint64_t *cluster_id)
{
	if (!cluster_id)
		return TII_E_INVAL;
	const char *one[1] = { host };
	return clusters(t, one, 1, depth, cluster_id, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int tii_cluster_colors(const uint64_t *ids, size_t n, int *colors, int *ncolors)
{
	if (!ids || !colors || !n || n > (size_t)INT32_MAX)
		return TII_E_INVAL;
	uint64_t *u = malloc(n * sizeof(*u));
	if (!u)
		return TII_E_NOMEM;
	memcpy(u, ids, n * sizeof(*u));
	qsort(u, n, sizeof(*u), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || u[k - 1] != u[i])
			u[k++] = u[i];
	for (size_t i = 0; i < n; i++) {
		const uint64_t *f = bsearch(&ids[i], u, k, sizeof(*u), cmp_u64);
		colors[i] = (int)(f - u);
	}
	free(u);
	if (ncolors)
		*ncolors = (int)k;
	return 0;
}

int tii_get_cluster_colors_at_depth(tii_t *t, const char *const *hosts, size_t n, int depth, int *colors,
				    int *ncolors)
{
	if (!colors || !n)
		return TII_E_INVAL;
	uint64_t *ids = malloc(n * sizeof(*ids));
	if (!ids)
		return TII_E_NOMEM;
	int rc = tii_connected_switch_clusters_at_depth(t, hosts, n, depth, ids, NULL);
	if (!rc)
		rc = tii_cluster_colors(ids, n, colors, ncolors);
	free(ids);
	return rc;
}

/* ---- tree ------------------------------------------------------------------ */

void tii_tree_free(tii_tree_t *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->nhosts; i++)
		free(tr->hosts[i].name);
	free(tr->hosts);
	free(tr->clusters);
	free(tr);
}

/* Arrays grow as lines arrive (clusters= and hosts= are only checked
 * against what arrived): a hostile header announcing 2^25 clusters costs
 * nothing until that many lines are actually read, within the deadline and
 * the handle's reply-size limit. */
struct tr_ctx {
	tii_tree_t *tr;
	size_t wantc, wanth, nlines;
	size_t capc, caph;
	uint64_t *cparent;   /* [capc] parent ID per cluster line (if has_parent) */
	unsigned char *has_parent;
	uint64_t *hparent;   /* [caph] */
};

static void tr_reset(struct tr_ctx *c)
{
	tii_tree_free(c->tr);
	free(c->cparent);
	free(c->has_parent);
	free(c->hparent);
	c->tr = NULL;
	c->cparent = c->hparent = NULL;
	c->has_parent = NULL;
	c->capc = c->caph = 0;
}

static int tr_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct tr_ctx *c = ctx;
	tr_reset(c);
	uint64_t nc, nh;
	long depth;
	if (tii__kv_int(kv, "depth", 0, 65535, &depth) || tii__kv_u64(kv, "clusters", &nc) ||
	    tii__kv_u64(kv, "hosts", &nh) || nc > nlines || nh != nlines - nc)
		return TII_E_PROTO;
	tii_tree_t *tr = calloc(1, sizeof(*tr));
	if (!tr)
		return TII_E_NOMEM;
	c->tr = tr;
	tr->depth = (int)depth;
	c->wantc = nc;
	c->wanth = nh;
	c->nlines = nlines;
	return 0;
}

/* Room for one more cluster line. */
static int tr_grow_clusters(struct tr_ctx *c)
{
	tii_tree_t *tr = c->tr;
	if (tr->nclusters < c->capc)
		return 0;
	size_t cap = c->capc ? c->capc * 2 : 64;
	struct tii_tree_cluster *ncl = realloc(tr->clusters, cap * sizeof(*ncl));
	if (ncl)
		tr->clusters = ncl;
	uint64_t *np = realloc(c->cparent, cap * sizeof(*np));
	if (np)
		c->cparent = np;
	unsigned char *nhp = realloc(c->has_parent, cap);
	if (nhp)
		c->has_parent = nhp;
	if (!ncl || !np || !nhp)
		return TII_E_NOMEM;
	c->capc = cap;
	return 0;
}

static int tr_grow_hosts(struct tr_ctx *c)
{
	tii_tree_t *tr = c->tr;
	if (tr->nhosts < c->caph)
		return 0;
	size_t cap = c->caph ? c->caph * 2 : 64;
	struct tii_tree_host *nh = realloc(tr->hosts, cap * sizeof(*nh));
	if (nh)
		tr->hosts = nh;
	uint64_t *np = realloc(c->hparent, cap * sizeof(*np));
	if (np)
		c->hparent = np;
	if (!nh || !np)
		return TII_E_NOMEM;
	c->caph = cap;
	return 0;
}

struct idx {
	uint64_t id;
	size_t i;
};

static int cmp_idx(const void *a, const void *b)
{
	return cmp_u64(&((const struct idx *)a)->id, &((const struct idx *)b)->id);
}

static long find_id(const struct idx *ix, size_t n, uint64_t id)
{
	struct idx key = { id, 0 };
	const struct idx *f = bsearch(&key, ix, n, sizeof(*ix), cmp_idx);
	return f ? (long)f->i : -1;
}

/* Turns parent IDs into indexes, checking the tree's shape. */
static int tr_resolve(struct tr_ctx *c)
{
	tii_tree_t *tr = c->tr;
	if (tr->nclusters != c->wantc || tr->nhosts != c->wanth)
		return TII_E_PROTO;
	size_t nc = tr->nclusters;
	struct idx *ix = malloc((nc ? nc : 1) * sizeof(*ix));
	if (!ix)
		return TII_E_NOMEM;
	for (size_t i = 0; i < nc; i++)
		ix[i] = (struct idx){ tr->clusters[i].id, i };
	qsort(ix, nc, sizeof(*ix), cmp_idx);
	int rc = 0;
	for (size_t i = 1; i < nc && !rc; i++)
		if (ix[i].id == ix[i - 1].id)
			rc = TII_E_PROTO;   /* IDs are unique */
	for (size_t i = 0; i < nc && !rc; i++) {
		struct tii_tree_cluster *cl = &tr->clusters[i];
		cl->parent = -1;
		if (!c->has_parent[i]) {
			if (cl->level != 0)
				rc = TII_E_PROTO;
			continue;
		}
		long p = find_id(ix, nc, c->cparent[i]);
		/* children first, and one level below the parent */
		if (p < 0 || (size_t)p <= i || cl->level != tr->clusters[p].level + 1)
			rc = TII_E_PROTO;
		cl->parent = p;
	}
	for (size_t i = 0; i < tr->nhosts && !rc; i++) {
		tr->hosts[i].parent = find_id(ix, nc, c->hparent[i]);
		if (tr->hosts[i].parent < 0)
			rc = TII_E_PROTO;
	}
	free(ix);
	return rc;
}

static int tr_line(void *ctx, size_t i, char *line, size_t len)
{
	struct tr_ctx *c = ctx;
	tii_tree_t *tr = c->tr;
	char *p = line, *kind = tii__word(&p);
	(void)len;
	if (kind && !strcmp(kind, "cluster")) {
		/* topod sends every cluster line before the host lines */
		if (tr->nclusters == c->wantc || tr->nhosts)
			return TII_E_PROTO;
		int rc = tr_grow_clusters(c);
		if (rc)
			return rc;
		size_t k = tr->nclusters;
		struct tii_tree_cluster *cl = &tr->clusters[k];
		struct tii__kv kv;
		long level, dist;
		uint64_t nh;
		c->has_parent[k] = 0;
		if (tii__parse_guid(tii__word(&p), &cl->id) || tii__kv_parse(p, &kv) ||
		    tii__kv_int(&kv, "level", 0, 65535, &level) || tii__kv_u64(&kv, "hosts", &nh) ||
		    nh > UINT32_MAX)
			return TII_E_PROTO;
		const char *d = tii__kv_get(&kv, "dist"), *par = tii__kv_get(&kv, "parent");
		/* "inf": members that never join at a finite distance, or a
		 * lone host; otherwise the hops at which they joined */
		if (d && !strcmp(d, "inf"))
			dist = TII_DIST_INF;
		else if (tii__parse_long(d, 0, TII_DIST_INF - 1, &dist))
			return TII_E_PROTO;
		if (!par)
			return TII_E_PROTO;
		if (strcmp(par, "-")) {
			if (tii__parse_guid(par, &c->cparent[k]))
				return TII_E_PROTO;
			c->has_parent[k] = 1;
		}
		cl->level = (int)level;
		cl->dist = (int)dist;
		cl->nhosts = (uint32_t)nh;
		tr->nclusters++;
	} else if (kind && !strcmp(kind, "host")) {
		if (tr->nhosts == c->wanth)
			return TII_E_PROTO;
		int rc = tr_grow_hosts(c);
		if (rc)
			return rc;
		size_t k = tr->nhosts;
		char *name = tii__word(&p);
		struct tii__kv kv;
		if (!name || strlen(name) > TII_HOSTNAME_MAX || tii__kv_parse(p, &kv) ||
		    tii__parse_guid(tii__kv_get(&kv, "parent"), &c->hparent[k]))
			return TII_E_PROTO;
		tr->hosts[k].name = strdup(name);
		if (!tr->hosts[k].name)
			return TII_E_NOMEM;
		tr->nhosts++;
	} else {
		return TII_E_PROTO;
	}
	return i + 1 == c->nlines ? tr_resolve(c) : 0;
}

int tii_get_tree(tii_t *t, tii_tree_t **out)
{
	if (!t || !out)
		return TII_E_INVAL;
	struct tr_ctx c = { 0 };
	static const struct tii__handler h = { tr_head, tr_line, 0 };
	int rc = tii__req_begin(t, "tree");
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && c.nlines == 0)
		rc = tr_resolve(&c);   /* an empty fabric: no line triggered it */
	if (!rc) {
		c.tr->generation = tii_last_generation(t);
		*out = c.tr;
		c.tr = NULL;
	}
	tr_reset(&c);
	return rc;
}
