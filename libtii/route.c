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
 * Two forms of the reply are read. docs/protocol.md gives every pair's
 * switch GUIDs ("i j 0xSW1 0xSW2 ..."); topod may instead send a header
 * with switches=S, then S lines "sw K 0xGUID" (K = 0..S-1), and pair lines
 * naming switches by K, which makes a large matrix several times shorter.
 */
struct pm_ctx {
	size_t n;
	tii_path_matrix_t *pm;
	size_t capguids;
	size_t nsw;          /* switches= of the header, 0 for the GUID form */
	uint64_t *sw;        /* [nsw] */
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

static int pm_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct pm_ctx *c = ctx;
	tii_path_matrix_free(c->pm);
	free(c->sw);
	c->pm = NULL;
	c->sw = NULL;
	c->nsw = 0;
	uint64_t n, nsw = 0;
	if (tii__kv_u64(kv, "n", &n) || n != c->n)
		return TII_E_PROTO;
	if (tii__kv_get(kv, "switches") && (tii__kv_u64(kv, "switches", &nsw) || nsw > nlines))
		return TII_E_PROTO;
	if (nlines - nsw != c->n * (c->n - 1))
		return TII_E_PROTO;
	return pm_alloc(c, (size_t)nsw);
}

static int pm_line(void *ctx, size_t line_no, char *line, size_t len)
{
	struct pm_ctx *c = ctx;
	tii_path_matrix_t *pm = c->pm;
	char *p = line, *w;
	long i, j;
	(void)len;
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
	struct pm_ctx c = { n, NULL, 0, 0, NULL };
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
	}
	free(c.sw);
	if (rc) {
		tii_path_matrix_free(c.pm);
		return rc;
	}
	c.pm->generation = tii_last_generation(t);
	*out = c.pm;
	return 0;
}
