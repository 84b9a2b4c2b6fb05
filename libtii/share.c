/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * share.c - link sharing inside an allocation (protocol command "shared"):
 * tii_get_num_hosts_sharing_links, tii_get_hosts_sharing_links,
 * tii_get_avg_hosts_per_leaf_switch and tii_get_link_sharing.
 *
 * topod names hosts in "sharing" and "group" lines as they were asked, so
 * they are mapped back to request positions through a sorted index of the
 * request; a name that was not asked for is TII_E_PROTO.
 */
#include "tii_impl.h"

#include <stdlib.h>
#include <string.h>

void tii_sharing_free(tii_sharing_t *sh)
{
	if (!sh)
		return;
	for (size_t i = 0; i < sh->ngroups; i++)
		free(sh->groups[i].hosts);
	free(sh->groups);
	free(sh->sharing);
	free(sh->loads);
	free(sh);
}

struct sh_ctx {
	const char *const *hosts;
	size_t n;
	size_t *order;       /* request positions sorted by name */
	int full;            /* keep groups and loads */
	tii_sharing_t *sh;
	size_t capgroups, caploads;
	uint64_t want_sharing;
};


static int cmp_pos(const void *a, const void *b, void *hosts)
{
	const char *const *h = hosts;
	return strcmp(h[*(const size_t *)a], h[*(const size_t *)b]);
}

/* Request positions sorted by name (qsort_r keeps this free of globals). */
static size_t *name_order(const char *const *hosts, size_t n)
{
	size_t *o = malloc(n * sizeof(*o));
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		o[i] = i;
	qsort_r(o, n, sizeof(*o), cmp_pos, (void *)hosts);
	return o;
}

/* The request position of name, or -1. */
static long position(const struct sh_ctx *c, const char *name)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(name, c->hosts[c->order[mid]]);
		if (!r)
			return (long)c->order[mid];
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static int sh_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct sh_ctx *c = ctx;
	tii_sharing_free(c->sh);
	c->sh = NULL;
	c->capgroups = c->caploads = 0;
	tii_sharing_t *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return TII_E_NOMEM;
	c->sh = sh;
	uint64_t hosts, ns;
	long leaves;
	const char *avg = tii__kv_get(kv, "avg_hosts_per_leaf");
	char *end;
	if (tii__kv_u64(kv, "hosts", &hosts) || hosts != c->n || tii__kv_u64(kv, "sharing", &ns) ||
	    ns > c->n || ns > nlines || tii__kv_int(kv, "leaves", 0, (long)c->n, &leaves) || !avg)
		return TII_E_PROTO;
	sh->avg_hosts_per_leaf = strtod(avg, &end);
	if (*end || end == avg || !(sh->avg_hosts_per_leaf >= 0) || sh->avg_hosts_per_leaf > (double)c->n)
		return TII_E_PROTO;
	if (tii__kv_get(kv, "pairs_ok") && tii__kv_u64(kv, "pairs_ok", &sh->pairs_ok))
		return TII_E_PROTO;
	if (tii__kv_get(kv, "pairs_failed") && tii__kv_u64(kv, "pairs_failed", &sh->pairs_failed))
		return TII_E_PROTO;
	sh->n = c->n;
	sh->leaves = (int)leaves;
	c->want_sharing = ns;
	sh->sharing = calloc(ns ? ns : 1, sizeof(*sh->sharing));
	return sh->sharing ? 0 : TII_E_NOMEM;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* "0xGUID:PORT" */
static int link_name(char *w, uint64_t *guid, int *port)
{
	char *colon = w ? strchr(w, ':') : NULL;
	long p;
	if (!colon)
		return TII_E_PROTO;
	*colon = '\0';
	if (tii__parse_guid(w, guid) || tii__parse_long(colon + 1, 0, 255, &p))
		return TII_E_PROTO;
	*port = (int)p;
	return 0;
}

static int sh_line(void *ctx, size_t i, char *line, size_t len)
{
	struct sh_ctx *c = ctx;
	tii_sharing_t *sh = c->sh;
	char *p = line, *kind = tii__word(&p), *w;
	(void)i;
	(void)len;
	if (!kind)
		return TII_E_PROTO;
	if (!strcmp(kind, "sharing")) {
		long pos = position(c, (w = tii__word(&p)) ? w : "");
		if (pos < 0 || tii__word(&p) || sh->nsharing == c->want_sharing)
			return TII_E_PROTO;
		sh->sharing[sh->nsharing++] = (size_t)pos;
		return 0;
	}
	if (!strcmp(kind, "group")) {
		struct tii_share_group g = { 0 };
		if (link_name(tii__word(&p), &g.guid, &g.port))
			return TII_E_PROTO;
		size_t cap = 0;
		while ((w = tii__word(&p))) {
			long pos = position(c, w);
			if (pos < 0 || g.nhosts == c->n) {
				free(g.hosts);
				return TII_E_PROTO;
			}
			if (!c->full)
				continue;
			if (g.nhosts == cap) {
				cap = cap ? cap * 2 : 8;
				size_t *nh = realloc(g.hosts, cap * sizeof(*nh));
				if (!nh) {
					free(g.hosts);
					return TII_E_NOMEM;
				}
				g.hosts = nh;
			}
			g.hosts[g.nhosts++] = (size_t)pos;
		}
		if (!c->full)
			return 0;
		qsort(g.hosts, g.nhosts, sizeof(*g.hosts), cmp_size);
		if (sh->ngroups == c->capgroups) {
			size_t nc = c->capgroups ? c->capgroups * 2 : 8;
			struct tii_share_group *ng = realloc(sh->groups, nc * sizeof(*ng));
			if (!ng) {
				free(g.hosts);
				return TII_E_NOMEM;
			}
			sh->groups = ng;
			c->capgroups = nc;
		}
		sh->groups[sh->ngroups++] = g;
		return 0;
	}
	if (!strcmp(kind, "load")) {
		struct tii_link_load l;
		if (link_name(tii__word(&p), &l.guid, &l.port) || tii__parse_u64(tii__word(&p), 10, &l.count) ||
		    tii__word(&p))
			return TII_E_PROTO;
		if (!c->full)
			return 0;
		if (sh->nloads == c->caploads) {
			size_t nc = c->caploads ? c->caploads * 2 : 64;
			struct tii_link_load *nl = realloc(sh->loads, nc * sizeof(*nl));
			if (!nl)
				return TII_E_NOMEM;
			sh->loads = nl;
			c->caploads = nc;
		}
		sh->loads[sh->nloads++] = l;
		return 0;
	}
	return TII_E_PROTO;
}

static int shared(tii_t *t, const char *const *hosts, size_t n, int full, tii_sharing_t **out)
{
	if (!t || !hosts || !n)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct sh_ctx c = { hosts, n, NULL, full, NULL, 0, 0, 0 };
	static const struct tii__handler h = { sh_head, sh_line, 0 };
	int rc = tii__req_begin(t, TII__SHARED);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	if (rc)
		return rc;
	c.order = name_order(hosts, n);
	if (!c.order)
		return TII_E_NOMEM;
	rc = tii__request(t, &h, &c);
	free(c.order);
	if (!rc && c.sh->nsharing != c.want_sharing)
		rc = TII_E_PROTO;
	if (rc) {
		tii_sharing_free(c.sh);
		return rc;
	}
	qsort(c.sh->sharing, c.sh->nsharing, sizeof(*c.sh->sharing), cmp_size);
	c.sh->generation = tii_last_generation(t);
	*out = c.sh;
	return 0;
}

int tii_get_link_sharing(tii_t *t, const char *const *hosts, size_t n, tii_sharing_t **out)
{
	if (!out)
		return TII_E_INVAL;
	return shared(t, hosts, n, 1, out);
}

int tii_get_hosts_sharing_links(tii_t *t, const char *const *hosts, size_t n, int *shares, int *count)
{
	tii_sharing_t *sh;
	int rc = shared(t, hosts, n, 0, &sh);
	if (rc)
		return rc;
	if (shares) {
		memset(shares, 0, n * sizeof(*shares));
		for (size_t i = 0; i < sh->nsharing; i++)
			shares[sh->sharing[i]] = 1;
	}
	if (count)
		*count = (int)sh->nsharing;
	tii_sharing_free(sh);
	return 0;
}

int tii_get_num_hosts_sharing_links(tii_t *t, const char *const *hosts, size_t n, int *count)
{
	if (!count)
		return TII_E_INVAL;
	return tii_get_hosts_sharing_links(t, hosts, n, NULL, count);
}

int tii_get_avg_hosts_per_leaf_switch(tii_t *t, const char *const *hosts, size_t n, double *avg)
{
	if (!avg)
		return TII_E_INVAL;
	tii_sharing_t *sh;
	int rc = shared(t, hosts, n, 0, &sh);
	if (!rc) {
		*avg = sh->avg_hosts_per_leaf;
		tii_sharing_free(sh);
	}
	return rc;
}
