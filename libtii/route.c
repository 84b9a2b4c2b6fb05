/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * route.c - fabric-wide answers and routes: tii_get_info, tii_get_generation,
 * tii_get_network_depth, tii_get_hops, tii_get_path, tii_get_hop_matrix,
 * tii_get_network_path_matrix.
 *
 * Each call builds one request and hands tii__request() a head/line parser.
 * Parsers check every count against what was asked (n hosts -> n rows, n(n-1)
 * pairs in row order), so a reply for another request or a truncated table
 * is TII_E_PROTO, never a half-filled result reported as success.
 */
#include "tii_impl.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- info ------------------------------------------------------------------ */

static void copy_str(char *dst, size_t cap, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
}

static int get_u32(const struct tii__kv *kv, const char *key, uint32_t *v)
{
	long x;
	if (tii__kv_int(kv, key, 0, 0xFFFFFFFFL, &x))
		return TII_E_PROTO;
	*v = (uint32_t)x;
	return 0;
}

static int info_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct tii_info *in = ctx;
	memset(in, 0, sizeof(*in));
	if (nlines)
		return TII_E_PROTO;
	int rc = tii__kv_u64(kv, "generation", &in->generation);
	rc = rc ? rc : get_u32(kv, "nodes", &in->nodes);
	rc = rc ? rc : get_u32(kv, "switches", &in->switches);
	rc = rc ? rc : get_u32(kv, "cas", &in->cas);
	rc = rc ? rc : get_u32(kv, "links", &in->links);
	rc = rc ? rc : get_u32(kv, "max_lid", &in->max_lid);
	rc = rc ? rc : get_u32(kv, "hosts", &in->hosts);
	rc = rc ? rc : tii__kv_u64(kv, "sm_guid", &in->sm_guid);
	rc = rc ? rc : tii__kv_u64(kv, "sweep", &in->sweep);
	rc = rc ? rc : tii__kv_u64(kv, "snapshot_us", &in->snapshot_us);
	rc = rc ? rc : tii__kv_u64(kv, "received_us", &in->received_us);
	long d;
	rc = rc ? rc : tii__kv_int(kv, "depth", 0, 65535, &d);
	/* topod since 1.7 says held=; an older one does not (then 0) */
	rc = rc ? rc : tii__kv_get(kv, "held") ? tii__kv_u64(kv, "held", &in->held) : 0;
	const char *engine = tii__kv_get(kv, "engine"), *source = tii__kv_get(kv, "source");
	if (rc || !engine || !source)
		return TII_E_PROTO;
	in->depth = (int)d;
	copy_str(in->engine, sizeof(in->engine), engine);
	copy_str(in->source, sizeof(in->source), source);
	return 0;
}

static int get_info(tii_t *t, struct tii_info *info, size_t size)
{
	if (!t || !info)
		return TII_E_INVAL;
	struct tii_info tmp;
	int rc = tii__req_begin(t, TII__INFO);
	static const struct tii__handler h = { info_head, NULL, 0 };
	rc = rc ? rc : tii__request(t, &h, &tmp);
	if (!rc)
		memcpy(info, &tmp, size);
	return rc;
}

#undef tii_get_info
/* Programs built against 1.6: the struct ends before held. */
int tii_get_info(tii_t *t, struct tii_info *info)
{
	return get_info(t, info, offsetof(struct tii_info, held));
}

int tii_get_info_17(tii_t *t, struct tii_info *info)
{
	return get_info(t, info, sizeof(*info));
}

int tii_get_generation(tii_t *t, uint64_t *gen)
{
	if (!gen)
		return TII_E_INVAL;
	struct tii_info in;
	int rc = tii_get_info_17(t, &in);
	if (!rc)
		*gen = in.generation;
	return rc;
}

/* ---- single values ----------------------------------------------------------- */

struct one_int {
	const char *key;
	long min, max, v;
};

static int one_int_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct one_int *o = ctx;
	if (nlines)
		return TII_E_PROTO;
	return tii__kv_int(kv, o->key, o->min, o->max, &o->v);
}

static const struct tii__handler one_int_h = { one_int_head, NULL, 0 };

int tii_get_network_depth(tii_t *t, int *depth)
{
	if (!t || !depth)
		return TII_E_INVAL;
	struct one_int o = { "depth", 0, 65535, 0 };
	int rc = tii__req_begin(t, TII__DEPTH);
	rc = rc ? rc : tii__request(t, &one_int_h, &o);
	if (!rc)
		*depth = (int)o.v;
	return rc;
}

int tii_get_hops(tii_t *t, const char *a, const char *b, int *hops)
{
	if (!t || !hops)
		return TII_E_INVAL;
	struct one_int o = { "hops", 0, 65535, 0 };
	int rc = tii__req_begin(t, TII__HOPS);
	rc = rc ? rc : tii__req_host(t, a);
	rc = rc ? rc : tii__req_host(t, b);
	rc = rc ? rc : tii__request(t, &one_int_h, &o);
	if (!rc)
		*hops = (int)o.v;
	return rc;
}

/* ---- path ---------------------------------------------------------------- */

void tii_path_free(tii_path_t *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nswitches; i++)
		free(p->switches[i].name);
	free(p->switches);
	free(p->src);
	free(p->dst);
	free(p);
}

struct path_ctx {
	tii_path_t *p;
	size_t want, cap;   /* hops= of the header; room in p->switches */
};

static int path_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct path_ctx *pc = ctx;
	tii_path_free(pc->p);
	pc->p = NULL;
	long hops;
	const char *src = tii__kv_get(kv, "src"), *dst = tii__kv_get(kv, "dst");
	if (!src || !dst || strlen(src) > TII_NAME_MAX || strlen(dst) > TII_NAME_MAX ||
	    tii__kv_int(kv, "hops", 0, 65535, &hops) || (size_t)hops != nlines)
		return TII_E_PROTO;
	tii_path_t *p = calloc(1, sizeof(*p));
	if (!p)
		return TII_E_NOMEM;
	pc->p = p;
	pc->want = nlines;
	pc->cap = 0;
	p->src = strdup(src);
	p->dst = strdup(dst);
	if (!p->src || !p->dst)
		return TII_E_NOMEM;
	return 0;
}

/* "in=N" or "out=N": a port number 0..255. */
static int port_field(char *w, const char *key, int *port)
{
	size_t k = strlen(key);
	long v;
	if (!w || strncmp(w, key, k) || w[k] != '=' || tii__parse_long(w + k + 1, 0, 255, &v))
		return TII_E_PROTO;
	*port = (int)v;
	return 0;
}

/* The rest of a line holding one "quoted" \xHH-escaped string. */
static int quoted_rest(char *p, char **out)
{
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strlen(p);
	if (n < 2 || p[0] != '"' || p[n - 1] != '"')
		return TII_E_PROTO;
	p[n - 1] = '\0';
	p++;
	if (strchr(p, '"') || tii__unescape(p))
		return TII_E_PROTO;
	*out = p;
	return 0;
}

static int path_line(void *ctx, size_t i, char *line, size_t len)
{
	struct path_ctx *pc = ctx;
	tii_path_t *path = pc->p;
	char *p = line, *name;
	(void)len;
	/* grown as lines arrive, not from hops= */
	if (i == pc->cap) {
		size_t cap = pc->cap ? pc->cap * 2 : 8;
		struct tii_path_switch *ns = realloc(path->switches, cap * sizeof(*ns));
		if (!ns)
			return TII_E_NOMEM;
		path->switches = ns;
		pc->cap = cap;
	}
	struct tii_path_switch *sw = &path->switches[i];
	sw->name = NULL;
	if (tii__parse_guid(tii__word(&p), &sw->guid) || port_field(tii__word(&p), "in", &sw->in_port) ||
	    port_field(tii__word(&p), "out", &sw->out_port) || quoted_rest(p, &name) ||
	    strlen(name) > TII_HOSTNAME_MAX)
		return TII_E_PROTO;
	sw->name = strdup(name);
	if (!sw->name)
		return TII_E_NOMEM;
	pc->p->nswitches = i + 1;
	return 0;
}

int tii_get_path(tii_t *t, const char *a, const char *b, tii_path_t **out)
{
	if (!t || !out)
		return TII_E_INVAL;
	struct path_ctx pc = { NULL, 0, 0 };
	static const struct tii__handler h = { path_head, path_line, 0 };
	int rc = tii__req_begin(t, TII__PATH);
	rc = rc ? rc : tii__req_host(t, a);
	rc = rc ? rc : tii__req_host(t, b);
	rc = rc ? rc : tii__request(t, &h, &pc);
	if (rc) {
		tii_path_free(pc.p);
		return rc;
	}
	pc.p->generation = tii_last_generation(t);
	*out = pc.p;
	return 0;
}

/* ---- hop matrix -------------------------------------------------------------- */

struct hm_ctx {
	size_t n;
	uint16_t *m;
};

static int hm_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct hm_ctx *hm = ctx;
	uint64_t n;
	if (tii__kv_u64(kv, "n", &n) || n != hm->n || nlines != hm->n)
		return TII_E_PROTO;
	return 0;
}

static int hm_line(void *ctx, size_t i, char *line, size_t len)
{
	struct hm_ctx *hm = ctx;
	char *p = line, *w;
	size_t j = 0;
	(void)len;
	while ((w = tii__word(&p))) {
		long v;
		if (j == hm->n || tii__parse_long(w, -1, UINT16_MAX - 1, &v))
			return TII_E_PROTO;
		hm->m[i * hm->n + j++] = v < 0 ? UINT16_MAX : (uint16_t)v;
	}
	return j == hm->n ? 0 : TII_E_PROTO;
}

int tii_get_hop_matrix(tii_t *t, const char *const *hosts, size_t n, uint16_t *matrix)
{
	if (!t || !hosts || !n || !matrix)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct hm_ctx hm = { n, matrix };
	static const struct tii__handler h = { hm_head, hm_line, 0 };
	int rc = tii__req_begin(t, TII__HOPSMATRIX);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	return rc ? rc : tii__request(t, &h, &hm);
}

/* ---- path matrix ------------------------------------------------------------- */

void tii_path_matrix_free(tii_path_matrix_t *pm)
{
	if (!pm)
		return;
	free(pm->status);
	free(pm->first);
	free(pm->len);
	free(pm->guids);
	free(pm);
}

int tii_path_matrix_route(const tii_path_matrix_t *pm, size_t i, size_t j, const uint64_t **guids,
			  size_t *len)
{
	if (!pm || i >= pm->n || j >= pm->n || !guids || !len)
		return TII_E_INVAL;
	size_t k = i * pm->n + j;
	*guids = pm->guids ? pm->guids + pm->first[k] : NULL;   /* NULL only with *len 0 */
	*len = pm->len[k];
	return pm->status[k];
}

/*
 * The reply (docs/protocol.md, "pathmatrix"): G lines "grp g i ...", S
 * lines "sw K 0xGUID", then one line "g j K ..." (or "g j ERR CODE") per
 * (source group, destination): the route every member of g other than j
 * takes to j. Members share one copy of the route in guids[]. The n x n
 * arrays are sized by the request; the switch dictionary and guids[] grow
 * as lines arrive, never from the header's counts.
 */
struct pm_ctx {
	size_t n;
	tii_path_matrix_t *pm;
	size_t capguids;
	size_t wantsw, nsw;  /* switches= of the header, "sw" lines read */
	uint64_t *sw;
	size_t capsw;
	size_t ngroups;      /* groups= of the header */
	size_t *gfirst;      /* [ngroups + 1] group g's members are gmem[gfirst[g] .. gfirst[g + 1]) */
	size_t *gmem;        /* [n] */
	size_t ngmem;
	size_t assigned;     /* ordered pairs given a route or an error */
};

/* An empty n x n matrix in c->pm. */
static int pm_alloc(struct pm_ctx *c)
{
	tii_path_matrix_t *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return TII_E_NOMEM;
	c->pm = pm;
	pm->n = c->n;
	size_t nn = c->n * c->n;
	pm->status = calloc(nn, sizeof(*pm->status));
	pm->first = calloc(nn, sizeof(*pm->first));
	pm->len = calloc(nn, sizeof(*pm->len));
	if (!pm->status || !pm->first || !pm->len)
		return TII_E_NOMEM;
	return 0;
}

static void pm_ctx_reset(struct pm_ctx *c)
{
	tii_path_matrix_free(c->pm);
	free(c->sw);
	free(c->gfirst);
	free(c->gmem);
	c->pm = NULL;
	c->sw = NULL;
	c->gfirst = NULL;
	c->gmem = NULL;
	c->capguids = c->capsw = 0;
	c->wantsw = c->nsw = c->ngroups = c->ngmem = c->assigned = 0;
}

static int pm_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct pm_ctx *c = ctx;
	pm_ctx_reset(c);
	uint64_t n, nsw, ng;
	/* Every host is in exactly one group, so there are 1..n; a group
	 * has at most one route line per destination. */
	if (tii__kv_u64(kv, "n", &n) || n != c->n || tii__kv_u64(kv, "switches", &nsw) ||
	    tii__kv_u64(kv, "groups", &ng) || ng < 1 || ng > c->n || ng > nlines || nsw > nlines - ng ||
	    nlines - ng - nsw > ng * c->n)
		return TII_E_PROTO;
	c->ngroups = (size_t)ng;
	c->wantsw = (size_t)nsw;
	c->gfirst = calloc(c->ngroups + 1, sizeof(*c->gfirst));
	c->gmem = malloc(c->n * sizeof(*c->gmem));
	if (!c->gfirst || !c->gmem)
		return TII_E_NOMEM;
	return pm_alloc(c);
}

/* "grp g i i ...": the g-th group's members, each host exactly once. */
static int pm_group_line(struct pm_ctx *c, size_t g, char *p)
{
	char *w;
	long x;
	if (!(w = tii__word(&p)) || strcmp(w, "grp") || tii__parse_long(tii__word(&p), 0, LONG_MAX, &x) ||
	    (size_t)x != g)
		return TII_E_PROTO;
	c->gfirst[g] = c->ngmem;
	while ((w = tii__word(&p))) {
		if (tii__parse_long(w, 0, (long)c->n - 1, &x) || c->ngmem == c->n)
			return TII_E_PROTO;
		/* status[] doubles as a seen-mark until routes arrive. */
		if (c->pm->status[(size_t)x * c->n + (size_t)x])
			return TII_E_PROTO;
		c->pm->status[(size_t)x * c->n + (size_t)x] = 1;
		c->gmem[c->ngmem++] = (size_t)x;
	}
	if (c->ngmem == c->gfirst[g])
		return TII_E_PROTO;
	c->gfirst[g + 1] = c->ngmem;
	if (g + 1 == c->ngroups) {
		if (c->ngmem != c->n)
			return TII_E_PROTO;
		for (size_t i = 0; i < c->n; i++)
			c->pm->status[i * c->n + i] = 0;
	}
	return 0;
}

/* "sw K 0xGUID", K counting from 0. */
static int pm_switch_line(struct pm_ctx *c, size_t k, char *p)
{
	char *w;
	long x;
	uint64_t g;
	if (!(w = tii__word(&p)) || strcmp(w, "sw") || tii__parse_long(tii__word(&p), 0, LONG_MAX, &x) ||
	    (size_t)x != k || tii__parse_guid(tii__word(&p), &g) || tii__word(&p))
		return TII_E_PROTO;
	if (c->nsw == c->capsw) {
		size_t cap = c->capsw ? c->capsw * 2 : 256;
		uint64_t *ns = realloc(c->sw, cap * sizeof(*ns));
		if (!ns)
			return TII_E_NOMEM;
		c->sw = ns;
		c->capsw = cap;
	}
	c->sw[c->nsw++] = g;
	return 0;
}

static int pm_push_guid(struct pm_ctx *c, uint64_t g)
{
	tii_path_matrix_t *pm = c->pm;
	if (pm->nguids == c->capguids) {
		size_t cap = c->capguids ? c->capguids * 2 : 1024;
		uint64_t *ng = realloc(pm->guids, cap * sizeof(*ng));
		if (!ng)
			return TII_E_NOMEM;
		pm->guids = ng;
		c->capguids = cap;
	}
	pm->guids[pm->nguids++] = g;
	return 0;
}

/* "g j K ..." or "g j ERR CODE": the route of every member of g (but j). */
static int pm_group_route(struct pm_ctx *c, char *p)
{
	tii_path_matrix_t *pm = c->pm;
	long g, j;
	char *w;
	if (tii__parse_long(tii__word(&p), 0, (long)c->ngroups - 1, &g) ||
	    tii__parse_long(tii__word(&p), 0, (long)c->n - 1, &j))
		return TII_E_PROTO;
	size_t first = pm->nguids, len = 0;
	int status = 0;
	while ((w = tii__word(&p))) {
		if (!strcmp(w, "ERR")) {
			if (len || !tii__word(&p) || tii__word(&p))
				return TII_E_PROTO;
			status = TII_E_NOROUTE;
			break;
		}
		long x;
		if (tii__parse_long(w, 0, (long)c->nsw - 1, &x) || len == UINT32_MAX)
			return TII_E_PROTO;
		int rc = pm_push_guid(c, c->sw[x]);
		if (rc)
			return rc;
		len++;
	}
	for (size_t m = c->gfirst[g]; m < c->gfirst[g + 1]; m++) {
		size_t i = c->gmem[m];
		if (i == (size_t)j)
			continue;
		size_t cell = i * c->n + (size_t)j;
		/* A pair named twice is a protocol error, not a second answer;
		 * first[] is 1 + the offset while reading, so 0 means unset. */
		if (pm->first[cell] || pm->status[cell])
			return TII_E_PROTO;
		if (status) {
			pm->status[cell] = status;
		} else {
			pm->first[cell] = first + 1;
			pm->len[cell] = (uint32_t)len;
		}
		c->assigned++;
	}
	return 0;
}

static int pm_line(void *ctx, size_t line_no, char *line, size_t len)
{
	struct pm_ctx *c = ctx;
	(void)len;
	if (line_no < c->ngroups)
		return pm_group_line(c, line_no, line);
	line_no -= c->ngroups;
	if (line_no < c->wantsw)
		return pm_switch_line(c, line_no, line);
	return pm_group_route(c, line);
}

int tii_get_network_path_matrix(tii_t *t, const char *const *hosts, size_t n, tii_path_matrix_t **out)
{
	if (!t || !hosts || !n || !out)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct pm_ctx c = { .n = n };
	static const struct tii__handler h = { pm_head, pm_line, 0 };
	int rc = tii__req_begin(t, TII__PATHMATRIX);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	rc = rc ? rc : tii__request(t, &h, &c);
	/* The route lines must cover every ordered pair once. */
	if (!rc && c.assigned != n * (n - 1))
		rc = TII_E_PROTO;
	if (!rc) {
		tii_path_matrix_t *pm = c.pm;
		for (size_t k = 0; k < n * n; k++)
			if (pm->first[k])
				pm->first[k]--;
		pm->generation = tii_last_generation(t);
		*out = pm;
		c.pm = NULL;
	}
	pm_ctx_reset(&c);
	return rc;
}
