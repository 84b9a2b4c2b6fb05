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

static int get_u32(const struct tii__kv *kv, const char *key, uint32_t *v, int optional)
{
	if (!tii__kv_get(kv, key) && optional) {
		*v = 0;
		return 0;
	}
	long x;
	if (tii__kv_int(kv, key, 0, 0xFFFFFFFFL, &x))
		return TII_E_PROTO;
	*v = (uint32_t)x;
	return 0;
}

static int get_u64(const struct tii__kv *kv, const char *key, uint64_t *v, int optional)
{
	if (!tii__kv_get(kv, key) && optional) {
		*v = 0;
		return 0;
	}
	return tii__kv_u64(kv, key, v);
}

static int info_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct tii_info *in = ctx;
	memset(in, 0, sizeof(*in));
	if (nlines)
		return TII_E_PROTO;
	const char *g = tii__kv_get(kv, "generation") ? "generation" : "gen";
	int rc = get_u64(kv, g, &in->generation, 0);
	rc = rc ? rc : get_u32(kv, "nodes", &in->nodes, 0);
	rc = rc ? rc : get_u32(kv, "switches", &in->switches, 0);
	rc = rc ? rc : get_u32(kv, "cas", &in->cas, 0);
	rc = rc ? rc : get_u32(kv, "links", &in->links, 0);
	rc = rc ? rc : get_u32(kv, "max_lid", &in->max_lid, 0);
	/* Optional: older servers do not report these. */
	rc = rc ? rc : get_u32(kv, "hosts", &in->hosts, 1);
	rc = rc ? rc : get_u64(kv, "sm_guid", &in->sm_guid, 1);
	rc = rc ? rc : get_u64(kv, "sweep", &in->sweep, 1);
	rc = rc ? rc : get_u64(kv, "snapshot_us", &in->snapshot_us, 1);
	rc = rc ? rc : get_u64(kv, "received_us", &in->received_us, 1);
	if (rc)
		return rc;
	in->depth = -1;
	if (tii__kv_get(kv, "depth")) {
		long d;
		if (tii__kv_int(kv, "depth", 0, 65535, &d))
			return TII_E_PROTO;
		in->depth = (int)d;
	}
	copy_str(in->engine, sizeof(in->engine), tii__kv_get(kv, "engine") ? tii__kv_get(kv, "engine") : "-");
	copy_str(in->source, sizeof(in->source), tii__kv_get(kv, "source"));
	return 0;
}

int tii_get_info(tii_t *t, struct tii_info *info)
{
	if (!t || !info)
		return TII_E_INVAL;
	struct tii_info tmp;
	int rc = tii__req_begin(t, "info");
	static const struct tii__handler h = { info_head, NULL };
	rc = rc ? rc : tii__request(t, &h, &tmp);
	if (!rc)
		*info = tmp;
	return rc;
}

int tii_get_generation(tii_t *t, uint64_t *gen)
{
	if (!gen)
		return TII_E_INVAL;
	struct tii_info in;
	int rc = tii_get_info(t, &in);
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

static const struct tii__handler one_int_h = { one_int_head, NULL };

int tii_get_network_depth(tii_t *t, int *depth)
{
	if (!t || !depth)
		return TII_E_INVAL;
	struct one_int o = { "depth", 0, 65535, 0 };
	int rc = tii__req_begin(t, "depth");
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
	int rc = tii__req_begin(t, "hops");
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
};

static int path_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct path_ctx *pc = ctx;
	tii_path_free(pc->p);
	pc->p = NULL;
	long hops;
	const char *src = tii__kv_get(kv, "src"), *dst = tii__kv_get(kv, "dst");
	if (!src || !dst || tii__kv_int(kv, "hops", 0, 65535, &hops) || (size_t)hops != nlines)
		return TII_E_PROTO;
	tii_path_t *p = calloc(1, sizeof(*p));
	if (!p)
		return TII_E_NOMEM;
	pc->p = p;
	p->src = strdup(src);
	p->dst = strdup(dst);
	p->switches = calloc(nlines ? nlines : 1, sizeof(*p->switches));
	if (!p->src || !p->dst || !p->switches)
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
	struct tii_path_switch *sw = &pc->p->switches[i];
	char *p = line, *name;
	(void)len;
	if (tii__parse_guid(tii__word(&p), &sw->guid) || port_field(tii__word(&p), "in", &sw->in_port) ||
	    port_field(tii__word(&p), "out", &sw->out_port) || quoted_rest(p, &name))
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
	struct path_ctx pc = { NULL };
	static const struct tii__handler h = { path_head, path_line };
	int rc = tii__req_begin(t, "path");
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
	static const struct tii__handler h = { hm_head, hm_line };
	int rc = tii__req_begin(t, "hopsmatrix");
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
	*guids = pm->guids + pm->first[k];
	*len = pm->len[k];
	return pm->status[k];
}

/*
 * Three forms of the reply are read:
 *  - every pair's switch GUIDs, "i j 0xSW1 0xSW2 ...";
 *  - switches=S: S lines "sw K 0xGUID", then pair lines naming switches by K;
 *  - groups=G (what topod sends, docs/protocol.md): G lines "grp g i ...",
 *    the S "sw" lines, then one line "g j K ..." per (source group,
 *    destination): the route every member of g other than j takes to j.
 *    Members share one copy of the route in guids[].
 */
struct pm_ctx {
	size_t n;
	tii_path_matrix_t *pm;
	size_t capguids;
	size_t nsw;          /* switches= of the header, 0 for the GUID form */
	uint64_t *sw;        /* [nsw] */
	size_t ngroups;      /* groups= of the header, 0 for the per-pair forms */
	size_t *gfirst;      /* [ngroups + 1] group g's members are gmem[gfirst[g] .. gfirst[g + 1]) */
	size_t *gmem;        /* [n] */
	size_t ngmem;
	size_t assigned;     /* ordered pairs given a route or an error */
	size_t route_lines;  /* expected route lines (groups form) */
};

/* An empty n x n matrix in c->pm, and room for nsw dictionary entries. */
static int pm_alloc(struct pm_ctx *c, size_t nsw)
{
	tii_path_matrix_t *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return TII_E_NOMEM;
	c->pm = pm;
	c->nsw = nsw;
	c->sw = malloc((nsw ? nsw : 1) * sizeof(*c->sw));
	pm->n = c->n;
	size_t nn = c->n * c->n;
	pm->status = calloc(nn, sizeof(*pm->status));
	pm->first = calloc(nn, sizeof(*pm->first));
	pm->len = calloc(nn, sizeof(*pm->len));
	/* A typical route crosses a handful of switches; grow from there. */
	c->capguids = nn * 4 + 1;
	pm->guids = malloc(c->capguids * sizeof(*pm->guids));
	if (!c->sw || !pm->status || !pm->first || !pm->len || !pm->guids)
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
	c->nsw = c->ngroups = c->ngmem = c->assigned = c->route_lines = 0;
}

static int pm_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct pm_ctx *c = ctx;
	pm_ctx_reset(c);
	uint64_t n, nsw = 0, ng = 0;
	if (tii__kv_u64(kv, "n", &n) || n != c->n)
		return TII_E_PROTO;
	if (tii__kv_get(kv, "switches") && (tii__kv_u64(kv, "switches", &nsw) || nsw > nlines))
		return TII_E_PROTO;
	if (tii__kv_get(kv, "groups")) {
		/* Every host is in exactly one group, so there are 1..n. */
		if (tii__kv_u64(kv, "groups", &ng) || ng < 1 || ng > c->n || ng + nsw > nlines ||
		    nlines - ng - nsw > ng * c->n)
			return TII_E_PROTO;
		c->ngroups = (size_t)ng;
		c->route_lines = nlines - (size_t)ng - (size_t)nsw;
		c->gfirst = calloc(c->ngroups + 1, sizeof(*c->gfirst));
		c->gmem = malloc(c->n * sizeof(*c->gmem));
		if (!c->gfirst || !c->gmem)
			return TII_E_NOMEM;
	} else if (nlines - nsw != c->n * (c->n - 1)) {
		return TII_E_PROTO;
	}
	return pm_alloc(c, (size_t)nsw);
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

static int pm_push_guid(struct pm_ctx *c, uint64_t g)
{
	tii_path_matrix_t *pm = c->pm;
	if (pm->nguids == c->capguids) {
		uint64_t *ng = realloc(pm->guids, 2 * c->capguids * sizeof(*ng));
		if (!ng)
			return TII_E_NOMEM;
		pm->guids = ng;
		c->capguids *= 2;
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
			if (len || !tii__word(&p))
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
		/* A pair named twice is a protocol error, not a second answer. */
		if (pm->len[cell] || pm->status[cell])
			return TII_E_PROTO;
		if (status) {
			pm->status[cell] = status;
		} else {
			pm->first[cell] = first;
			pm->len[cell] = (uint32_t)len;
			if (!len)
				return TII_E_PROTO; /* a route crosses at least one switch */
		}
		c->assigned++;
	}
	return 0;
}

static int pm_line(void *ctx, size_t line_no, char *line, size_t len)
{
	struct pm_ctx *c = ctx;
	tii_path_matrix_t *pm = c->pm;
	char *p = line, *w;
	long i, j;
	(void)len;
	if (c->ngroups) {
		if (line_no < c->ngroups)
			return pm_group_line(c, line_no, p);
		line_no -= c->ngroups;
		if (line_no >= c->nsw)
			return pm_group_route(c, p);
	}
	if (line_no < c->nsw) {
		long k;
		if (!(w = tii__word(&p)) || strcmp(w, "sw") || tii__parse_long(tii__word(&p), 0, LONG_MAX, &k) ||
		    (size_t)k != line_no || tii__parse_guid(tii__word(&p), &c->sw[k]) || tii__word(&p))
			return TII_E_PROTO;
		return 0;
	}
	/* The k-th pair line is the k-th ordered pair i != j in row order. */
	size_t k = line_no - c->nsw, n = c->n, ei = k / (n - 1), ej = k % (n - 1);
	if (ej >= ei)
		ej++;
	if (tii__parse_long(tii__word(&p), 0, (long)n - 1, &i) ||
	    tii__parse_long(tii__word(&p), 0, (long)n - 1, &j) || (size_t)i != ei || (size_t)j != ej)
		return TII_E_PROTO;
	size_t cell = ei * n + ej;
	pm->first[cell] = pm->nguids;
	while ((w = tii__word(&p))) {
		if (!strcmp(w, "ERR")) {
			if (pm->len[cell] || !tii__word(&p))
				return TII_E_PROTO;
			pm->status[cell] = TII_E_NOROUTE;
			pm->first[cell] = 0;
			return 0;
		}
		uint64_t g;
		if (c->nsw) {
			long x;
			if (tii__parse_long(w, 0, (long)c->nsw - 1, &x))
				return TII_E_PROTO;
			g = c->sw[x];
		} else if (tii__parse_guid(w, &g)) {
			return TII_E_PROTO;
		}
		if (pm->len[cell] == UINT32_MAX)
			return TII_E_PROTO;
		if (pm->nguids == c->capguids) {
			uint64_t *ng = realloc(pm->guids, 2 * c->capguids * sizeof(*ng));
			if (!ng)
				return TII_E_NOMEM;
			pm->guids = ng;
			c->capguids *= 2;
		}
		pm->guids[pm->nguids++] = g;
		pm->len[cell]++;
	}
	return 0;
}

int tii_get_network_path_matrix(tii_t *t, const char *const *hosts, size_t n, tii_path_matrix_t **out)
{
	if (!t || !hosts || !n || !out)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct pm_ctx c = { .n = n };
	static const struct tii__handler h = { pm_head, pm_line };
	int rc;
	if (n == 1) {
		/* One host has no pairs, and topod refuses a one-host
		 * pathmatrix; a 1x1 hopsmatrix still checks the name and
		 * names the generation. */
		uint16_t one;
		rc = tii_get_hop_matrix(t, hosts, 1, &one);
		rc = rc ? rc : pm_alloc(&c, 0);
	} else {
		rc = tii__req_begin(t, "pathmatrix");
		rc = rc ? rc : tii__req_hosts(t, hosts, n);
		rc = rc ? rc : tii__request(t, &h, &c);
		/* The groups form must still cover every ordered pair once. */
		if (!rc && c.ngroups && c.assigned != n * (n - 1))
			rc = TII_E_PROTO;
	}
	free(c.sw);
	free(c.gfirst);
	free(c.gmem);
	c.sw = NULL;
	c.gfirst = NULL;
	c.gmem = NULL;
	if (rc) {
		tii_path_matrix_free(c.pm);
		return rc;
	}
	c.pm->generation = tii_last_generation(t);
	*out = c.pm;
	return 0;
}
