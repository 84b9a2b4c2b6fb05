/* SPDX-License-Identifier: BSD-3-Clause */
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
	/* a level counted from the leaves (negative) comes back resolved */
	if (tii__kv_int(kv, "level", 0, 65535, &level) || (c->level >= 0 && level != c->level) ||
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
	if (!t || !hosts || !n || depth < -TII_LEVELS_MAX || depth >= TII_LEVELS_MAX)
		return TII_E_INVAL;
	struct cl_ctx c = { n, depth, 0, ids };
	static const struct tii__handler h = { cl_head, cl_line, 0 };
	int rc = tii__req_begin(t, TII__CLUSTERS);
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
	for (size_t i = 0; tr->names && i < tr->nclusters; i++)
		free(tr->names[i]);
	for (size_t i = 0; i < tr->ngone; i++)
		free(tr->gone[i].name);
	free(tr->gone);
	free(tr->names);
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
	size_t wantc, wanth, wantg, nlines;
	size_t capc, caph, capg;
	uint64_t *gparent;   /* [capg] parent ID per gone line, 0 for "-" */
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
	free(c->gparent);
	c->tr = NULL;
	c->cparent = c->hparent = c->gparent = NULL;
	c->has_parent = NULL;
	c->capc = c->caph = c->capg = 0;
}

static int tr_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct tr_ctx *c = ctx;
	tr_reset(c);
	uint64_t nc, nh, ng = 0;
	long depth;
	if (tii__kv_get(kv, "gone") && tii__kv_u64(kv, "gone", &ng))
		return TII_E_PROTO;
	if (tii__kv_int(kv, "depth", 0, 65535, &depth) || tii__kv_u64(kv, "clusters", &nc) ||
	    tii__kv_u64(kv, "hosts", &nh) || nc > nlines || nh > nlines - nc || ng != nlines - nc - nh)
		return TII_E_PROTO;
	tii_tree_t *tr = calloc(1, sizeof(*tr));
	if (!tr)
		return TII_E_NOMEM;
	c->tr = tr;
	tr->depth = (int)depth;
	c->wantc = nc;
	c->wanth = nh;
	c->wantg = ng;
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
	char **nn = realloc(tr->names, cap * sizeof(*nn));
	if (nn)
		tr->names = nn;
	if (!ncl || !np || !nhp || !nn)
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

static int tr_grow_gone(struct tr_ctx *c)
{
	tii_tree_t *tr = c->tr;
	if (tr->ngone < c->capg)
		return 0;
	size_t cap = c->capg ? c->capg * 2 : 64;
	struct tii_tree_gone *ng = realloc(tr->gone, cap * sizeof(*ng));
	if (ng)
		tr->gone = ng;
	uint64_t *np = realloc(c->gparent, cap * sizeof(*np));
	if (np)
		c->gparent = np;
	if (!ng || !np)
		return TII_E_NOMEM;
	c->capg = cap;
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
	if (tr->nclusters != c->wantc || tr->nhosts != c->wanth || tr->ngone != c->wantg)
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
	for (size_t i = 0; i < tr->ngone && !rc; i++) {
		tr->gone[i].parent = -1;
		if (c->gparent[i] && (tr->gone[i].parent = find_id(ix, nc, c->gparent[i])) < 0)
			rc = TII_E_PROTO;
	}
	free(ix);
	return rc;
}

/* gone NAME parent=0xID|- leaf=0xGUID last=GEN, after every host line */
static int tr_gone_line(struct tr_ctx *c, char *p)
{
	tii_tree_t *tr = c->tr;
	if (tr->ngone == c->wantg || tr->nhosts != c->wanth)
		return TII_E_PROTO;
	int rc = tr_grow_gone(c);
	if (rc)
		return rc;
	size_t k = tr->ngone;
	struct tii_tree_gone *g = &tr->gone[k];
	char *name = tii__word(&p);
	struct tii__kv kv;
	const char *par;
	if (!name || strlen(name) > TII_HOSTNAME_MAX || tii__kv_parse(p, &kv) ||
	    !(par = tii__kv_get(&kv, "parent")) || tii__parse_guid(tii__kv_get(&kv, "leaf"), &g->leaf) ||
	    tii__kv_u64(&kv, "last", &g->last_gen))
		return TII_E_PROTO;
	c->gparent[k] = 0;
	if (strcmp(par, "-") && (tii__parse_guid(par, &c->gparent[k]) || !c->gparent[k]))
		return TII_E_PROTO;
	g->name = strdup(name);
	if (!g->name)
		return TII_E_NOMEM;
	tr->ngone++;
	return 0;
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
		/* name=: absent from an older topod; checked like a host name */
		const char *nm = tii__kv_get(&kv, "name");
		if (nm && (strlen(nm) > TII_NAME_MAX || tii__check_name(nm)))
			return TII_E_PROTO;
		tr->names[k] = strdup(nm ? nm : "");
		if (!tr->names[k])
			return TII_E_NOMEM;
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
	} else if (kind && !strcmp(kind, "gone")) {
		int rc = tr_gone_line(c, p);
		if (rc)
			return rc;
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
	int rc = tii__req_begin(t, TII__TREE);
	rc = rc ? rc : tii__req_word(t, "gone", 4);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (rc == TII_E_SERVER) {
		/* a topod before "tree gone" refuses the word: ask the old way */
		rc = tii__req_begin(t, TII__TREE);
		rc = rc ? rc : tii__request(t, &h, &c);
	}
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

/* ---- switches ----------------------------------------------------------------- */

struct sw_ctx {
	struct tii_switch_name *v;
	size_t n, cap;
};

static int sw_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct sw_ctx *c = ctx;
	uint64_t ns;
	/* a reply retried after a cut starts over */
	tii_switch_names_free(c->v, c->n);
	c->v = NULL;
	c->n = c->cap = 0;
	if (tii__kv_u64(kv, "switches", &ns) || ns != nlines)
		return TII_E_PROTO;
	return 0;
}

static int sw_line(void *ctx, size_t i, char *line, size_t len)
{
	struct sw_ctx *c = ctx;
	char *p = line, *g = tii__word(&p), *name = tii__word(&p);
	uint64_t guid;
	(void)i;
	(void)len;
	if (tii__parse_guid(g, &guid) || !name || strlen(name) > TII_NAME_MAX || tii__check_name(name) ||
	    tii__word(&p))
		return TII_E_PROTO;
	if (c->n == c->cap) {
		/* grows as lines arrive, never by the announced count */
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct tii_switch_name *nv = realloc(c->v, cap * sizeof(*nv));
		if (!nv)
			return TII_E_NOMEM;
		c->v = nv;
		c->cap = cap;
	}
	c->v[c->n].guid = guid;
	c->v[c->n].name = strdup(name);
	if (!c->v[c->n].name)
		return TII_E_NOMEM;
	c->n++;
	return 0;
}

static int cmp_swname(const void *a, const void *b)
{
	return cmp_u64(&((const struct tii_switch_name *)a)->guid, &((const struct tii_switch_name *)b)->guid);
}

void tii_switch_names_free(struct tii_switch_name *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

int tii_get_switch_names(tii_t *t, struct tii_switch_name **out, size_t *n)
{
	if (!t || !out || !n)
		return TII_E_INVAL;
	struct sw_ctx c = { 0 };
	static const struct tii__handler h = { sw_head, sw_line, 0 };
	int rc = tii__req_begin(t, TII__SWITCHES);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (rc) {
		tii_switch_names_free(c.v, c.n);
		return rc;
	}
	/* An empty fabric's reply leaves c.v NULL, which qsort may not take. */
	if (c.n)
		qsort(c.v, c.n, sizeof(*c.v), cmp_swname);
	for (size_t i = 1; i < c.n; i++)
		if (c.v[i].guid == c.v[i - 1].guid) {
			tii_switch_names_free(c.v, c.n);
			return TII_E_PROTO;
		}
	*out = c.v;
	*n = c.n;
	return 0;
}

const char *tii_switch_name_of(const struct tii_switch_name *v, size_t n, uint64_t guid)
{
	if (!v || !n)
		return NULL;
	struct tii_switch_name key = { guid, NULL };
	const struct tii_switch_name *f = bsearch(&key, v, n, sizeof(*v), cmp_swname);
	return f ? f->name : NULL;
}
