/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * query.c - see query.h. The replies are specified in docs/protocol.md.
 */
#include "query.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cmd.h"
#include "fabric.h"
#include "gone.h"
#include "hier.h"
#include "log.h"
#include "matrix.h"
#include "route.h"
#include "share.h"
#include "store.h"
#include "topo_limits.h"
#include "util.h"

/* Longest route we print; a longer one is reported as a loop anyway. */
#define QUERY_PATH_MAX 4096

void query_error(struct evbuffer *out, const char *code, const char *fmt, ...)
{
	char msg[512], clean[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	evbuffer_add_printf(out, "ERR %s %s\n", code, log_clean(msg, strlen(msg), clean, sizeof(clean)));
}

const char *qctx_route_code(int err)
{
	switch (err) {
	case AN_E_NOLID: return "NOLID";
	case AN_E_SRC_NOLINK: return "SRC_NOLINK";
	case AN_E_NOENTRY: return "NOENTRY";
	case AN_E_NOLINK: return "NOLINK";
	case AN_E_DOWN: return "DOWN";
	case AN_E_WRONGDST: return "WRONGDST";
	case AN_E_LOOP: return "LOOP";
	case AN_E_NOTFOUND: return "NOTFOUND";
	case AN_E_NOMEM: return "NOMEM";
	case AN_E_INVAL: return "USAGE";
	case AN_E_RANGE: return "RANGE";
	case AN_E_NOTAPPLIC: return "NOTAPPLICABLE";
	case AN_E_ROUTE: return "NOROUTE";
	case AN_E_CANCEL: return "TIMEOUT";
	/* AN_E_CHECK, and a code this table does not know yet: a defect */
	default: return "INTERNAL";
	}
}

/* The switch whose NodeDescription, or its first word, is name ignoring
 * case (exact: case too), or ROUTE_NONE. The switches only. */
static uint32_t switch_like(const struct qctx *c, const char *name, int exact)
{
	size_t len = strlen(name);
	for (uint32_t k = 0; k < c->rt->nsw; k++) {
		const char *d = c->s->nodes[c->rt->sw_node[k]].desc;
		int same = exact ? !strncmp(d, name, len) : !strncasecmp(d, name, len);
		if (same && (d[len] == '\0' || d[len] == ' ' || d[len] == '\t'))
			return c->rt->sw_node[k];
	}
	return ROUTE_NONE;
}

/* The host name most likely meant by h (no such host): the same ignoring
 * case, or with a domain suffix cut from either side ("c401-101.example.com"
 * for "c401-101", and back). NULL if none. */
static const char *host_like(const struct qctx *c, const char *h)
{
	const struct route_tab *rt = c->rt;
	size_t hl = strcspn(h, ".");
	for (uint32_t i = 0; i < rt->nhosts; i++)
		if (!strcasecmp(rt->hosts[i].name, h))
			return rt->hosts[i].name;
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		const char *n = rt->hosts[i].name;
		size_t nl = strcspn(n, ".");
		if (nl == hl && !strncasecmp(n, h, hl) && (n[nl] == '.' || h[hl] == '.'))
			return n;
	}
	return NULL;
}

/*
 * Why name, which names nothing in this generation, names nothing, in one
 * ERR line: a host earlier generations had is ERR GONE with since when (as
 * `tree gone` and `slurm` know it); else ERR NOTFOUND "WHAT 'name'" and the
 * name probably meant: another case, a domain suffix more or less, a switch
 * (takes_switch: by its description; else that it is a switch, which this
 * command does not take by that name). A scan of the hosts and switches, on
 * this error path only: a lookup's cost for the fabrics topod serves.
 */
void qctx_notfound(struct qctx *c, const char *name, const char *what, int takes_switch)
{
	char h[ROUTE_NAME_MAX + 1];
	const char *slash = strchr(name, '/');
	size_t hl = slash ? (size_t)(slash - name) : strlen(name);
	snprintf(h, sizeof(h), "%.*s", hl > ROUTE_NAME_MAX ? 0 : (int)hl, name);
	const struct gone_host *g = h[0] ? gone_find(c->f->gone, h) : NULL;
	if (g) {
		char when[64] = "";
		time_t t = (time_t)(g->since_us / 1000000u);
		struct tm tm;
		if (g->since_us && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), " (%Y-%m-%d %H:%M:%S UTC)", &tm);
		query_error(c->out, "GONE",
			    "host '%s' is known but down: not in the fabric since generation %" PRIu64 "%s, last seen "
			    "in generation %" PRIu64,
			    g->name, g->since_gen, when, g->last_gen);
		return;
	}
	const char *like = h[0] ? host_like(c, h) : NULL;
	if (like) {
		query_error(c->out, "NOTFOUND", "%s '%.100s'; did you mean '%s%.80s'?", what, name, like,
			    slash ? slash : "");
		return;
	}
	uint32_t sw = switch_like(c, name, !takes_switch);
	if (sw == ROUTE_NONE && !takes_switch)
		sw = switch_like(c, name, 0);
	if (sw != ROUTE_NONE) {
		const char *d = c->s->nodes[sw].desc;
		int wl = (int)strcspn(d, " \t");
		if (takes_switch)
			query_error(c->out, "NOTFOUND", "%s '%.100s'; did you mean the switch '%.*s'?", what, name,
				    wl > 100 ? 100 : wl, d);
		else
			query_error(c->out, "NOTFOUND",
				    "%s '%.100s'; '%.*s' is a switch (0x%016" PRIx64 "), not a host: name a host, or "
				    "the switch by its GUID",
				    what, name, wl > 100 ? 100 : wl, d, c->s->nodes[sw].guid);
		return;
	}
	query_error(c->out, "NOTFOUND", "%s '%.100s'", what, name);
}

/* Resolves a host argument; on failure writes the ERR reply, returns -1. */
static int qctx_resolve(struct qctx *c, const char *name, uint32_t *ep, uint16_t *dlid)
{
	int rc = route_resolve(c->rt, name, ep, dlid);
	if (rc == AN_OK)
		return 0;
	if (rc == AN_E_NOTFOUND)
		qctx_notfound(c, name, "no host, HCA, GUID or LID", 0);
	else
		query_error(c->out, "PROTO", "bad name '%.100s': %s", name, an_strerror(rc));
	return -1;
}

int qctx_resolve_list(struct qctx *c, const char *const *names, size_t n, uint32_t **eps, uint16_t **dlids)
{
	*eps = malloc((n ? n : 1) * sizeof(**eps));
	*dlids = malloc((n ? n : 1) * sizeof(**dlids));
	if (!*eps || !*dlids) {
		free(*eps);
		free(*dlids);
		query_error(c->out, "NOMEM", "cannot resolve %zu hosts", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (qctx_resolve(c, names[i], &(*eps)[i], &(*dlids)[i])) {
			free(*eps);
			free(*dlids);
			return -1;
		}
	return 0;
}

static uint64_t node_guid(const struct qctx *c, uint32_t node)
{
	return c->s->nodes[node].guid;
}

/* ERR NOROUTE with the node and port where the walk failed. */
static void qctx_route_fail(struct qctx *c, int rc, const struct route_res *res)
{
	if (res && res->fail_node != ROUTE_NONE)
		query_error(c->out, "NOROUTE", "%s at 0x%016" PRIx64 " port %u: %s", qctx_route_code(rc),
			    node_guid(c, res->fail_node), res->fail_port, an_strerror(rc));
	else
		query_error(c->out, "NOROUTE", "%s: %s", qctx_route_code(rc), an_strerror(rc));
}

void qctx_ep_name(const struct qctx *c, uint32_t ep, char *buf, size_t n)
{
	const struct route_ep *e = &c->rt->eps[ep];
	if (e->host != ROUTE_NONE)
		snprintf(buf, n, "%s/%s", c->rt->hosts[e->host].name, e->hca);
	else
		snprintf(buf, n, "0x%016" PRIx64, e->guid);
}

void answer_info(struct qctx *c)
{
	const struct fabric *f = c->f;
	const struct snap *s = f->snap;
	const struct fabric_index *x = f->index;
	char src[sizeof(f->source) * 4];
	snap_escape(f->source, src, sizeof(src));
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " generation=%" PRIu64 " nodes=%u switches=%u cas=%u links=%u hosts=%u "
			    "max_lid=%u engine=%s sm_guid=0x%016" PRIx64 " sweep=%" PRIu64 " snapshot_us=%" PRIu64
			    " received_us=%" PRIu64 " decode_ms=%.1f build_ms=%.1f depth=%u held=%" PRIu64 " source=\"%s\"\n",
			    s->generation, s->generation, s->nnodes, x ? x->switches : 0, x ? x->cas : 0,
			    x ? x->links : 0, x ? x->rt->nhosts : 0, s->max_lid, s->engine[0] ? s->engine : "-",
			    s->sm_guid, s->sweep, s->timestamp, f->received_us, f->decode_ms, f->build_ms,
			    x ? hier_depth(x->hier) : 0, f->held ? atomic_load(f->held) : 0, src);
}

void answer_hops(struct qctx *c)
{
	const char *a = c->req->argv[0], *b = c->req->argv[1];
	uint32_t sa, sb;
	uint16_t da, db;
	if (qctx_resolve(c, a, &sa, &da) || qctx_resolve(c, b, &sb, &db))
		return;
	struct route_res res;
	int rc = route_walk(c->rt, sa, db, NULL, 0, &res);
	if (rc)
		qctx_route_fail(c, rc, &res);
	else
		evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " hops=%u\n", c->gen, res.hops);
}

/* Walks a -> b into a malloc'd hop array; writes the ERR reply on failure. */
static struct route_hop *walk(struct qctx *c, const char *a, const char *b, uint32_t *sa, uint32_t *sb,
			      uint32_t *nhops)
{
	uint16_t da, db;
	if (qctx_resolve(c, a, sa, &da) || qctx_resolve(c, b, sb, &db))
		return NULL;
	size_t cap = c->rt->nsw + 1 < QUERY_PATH_MAX ? c->rt->nsw + 1 : QUERY_PATH_MAX;
	struct route_hop *hops = malloc(cap * sizeof(*hops));
	if (!hops) {
		query_error(c->out, "NOMEM", "no memory for a path");
		return NULL;
	}
	struct route_res res;
	int rc = route_walk(c->rt, *sa, db, hops, cap, &res);
	if (rc) {
		qctx_route_fail(c, rc, &res);
		free(hops);
		return NULL;
	}
	*nhops = res.hops < cap ? res.hops : (uint32_t)cap;
	return hops;
}

void answer_path(struct qctx *c)
{
	const char *a = c->req->argv[0], *b = c->req->argv[1];
	uint32_t sa, sb, n;
	struct route_hop *hops = walk(c, a, b, &sa, &sb, &n);
	if (!hops)
		return;
	char na[ROUTE_NAME_MAX * 2 + 4], nb[ROUTE_NAME_MAX * 2 + 4];
	qctx_ep_name(c, sa, na, sizeof(na));
	qctx_ep_name(c, sb, nb, sizeof(nb));
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " src=%s dst=%s hops=%u lines=%u\n", c->gen, na, nb, n, n);
	for (uint32_t i = 0; i < n; i++) {
		char desc[SNAP_DESC_LEN * 4 + 1];
		snap_escape(c->s->nodes[hops[i].node].desc, desc, sizeof(desc));
		evbuffer_add_printf(c->out, "0x%016" PRIx64 " in=%u out=%u \"%s\"\n", node_guid(c, hops[i].node),
				    hops[i].in, hops[i].out, desc);
	}
	free(hops);
}

/* Splits "A:B" into a (copied, NUL-terminated) and b. Host names cannot
 * contain ':', so the separator is the first colon after an optional
 * "lid:" prefix of A; B may be "lid:N" itself. */
static int split_pair(const char *arg, char a[ROUTE_QUERY_MAX + 1], const char **b)
{
	const char *p = !strncmp(arg, "lid:", 4) ? arg + 4 : arg;
	const char *colon = strchr(p, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) > ROUTE_QUERY_MAX || !colon[1])
		return -1;
	memcpy(a, arg, (size_t)(colon - arg));
	a[colon - arg] = '\0';
	*b = colon + 1;
	return 0;
}

/* The seed's form: "query a:b" -> "a 0xSW ... b". */
void answer_seed_query(struct qctx *c)
{
	const char *arg = c->req->argv[0];
	char a[ROUTE_QUERY_MAX + 1];
	const char *b;
	if (split_pair(arg, a, &b)) {
		query_error(c->out, "USAGE", "query HOSTA:HOSTB");
		return;
	}
	uint32_t sa, sb, n;
	struct route_hop *hops = walk(c, a, b, &sa, &sb, &n);
	if (!hops)
		return;
	evbuffer_add_printf(c->out, "%s", a);
	for (uint32_t i = 0; i < n; i++)
		evbuffer_add_printf(c->out, " 0x%016" PRIx64, node_guid(c, hops[i].node));
	evbuffer_add_printf(c->out, " %s\n", b);
	free(hops);
}

void answer_hopsbatch(struct qctx *c)
{
	const struct proto_req *r = c->req;
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		query_error(c->out, "NOMEM", "no memory");
		return;
	}
	for (size_t i = 0; i < r->argc; i++) {
		char a[ROUTE_QUERY_MAX + 1];
		const char *b;
		if (split_pair(r->argv[i], a, &b)) {
			evbuffer_free(body);
			query_error(c->out, "USAGE", "hopsbatch A:B [A:B ...]; argument %zu is not a pair", i + 1);
			return;
		}
		uint32_t sa, sb;
		uint16_t da, db;
		int rc = route_resolve(c->rt, a, &sa, &da);
		if (!rc)
			rc = route_resolve(c->rt, b, &sb, &db);
		if (!rc)
			rc = route_hops(c->rt, sa, db);
		if (rc >= 0)
			evbuffer_add_printf(body, "%s %s %d\n", a, b, rc);
		else
			evbuffer_add_printf(body, "%s %s ERR %s\n", a, b, qctx_route_code(rc));
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " lines=%zu\n", c->gen, r->argc);
	evbuffer_add_buffer(c->out, body);
	evbuffer_free(body);
}

int qctx_check_hosts(struct qctx *c, size_t n, size_t min)
{
	const char *cmd = c->req->cmd;
	if (n < min) {
		query_error(c->out, "USAGE", "%s needs at least %zu hosts", cmd, min);
		return -1;
	}
	if (n > TOPO_MATRIX_MAX) {
		query_error(c->out, "TOOMANY", "%s takes at most %d hosts, got %zu", cmd, TOPO_MATRIX_MAX, n);
		return -1;
	}
	return 0;
}

/* (key, position) pairs sorted by key, then position: a repeat sits next
 * to its first occurrence, which keeps the error naming the first two. */
struct dupkey {
	uint64_t key;
	size_t pos;
};

static int cmp_dupkey(const void *a, const void *b)
{
	const struct dupkey *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The first repeated key of k[0..n) as its two positions; 0 if none. */
static int find_dup(struct dupkey *k, size_t n, size_t *first, size_t *second)
{
	qsort(k, n, sizeof(*k), cmp_dupkey);
	size_t best = SIZE_MAX;
	for (size_t i = 1; i < n; i++)
		if (k[i].key == k[i - 1].key && k[i].pos < best) {
			best = k[i].pos;
			*first = k[i - 1].pos;
		}
	*second = best;
	return best != SIZE_MAX;
}

/* cmd.h qctx_dup_names' rule by end port: two names of one port repeat it. */
static int qctx_dup_eps(struct qctx *c, const char *const *names, const uint32_t *eps, size_t n)
{
	struct dupkey *k = malloc((n ? n : 1) * sizeof(*k));
	size_t a, b;
	if (!k) {
		query_error(c->out, "NOMEM", "no memory for %zu hosts", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct dupkey){ eps[i], i };
	int dup = find_dup(k, n, &a, &b);
	free(k);
	if (!dup)
		return 0;
	char nm[ROUTE_NAME_MAX * 2 + 4];
	qctx_ep_name(c, eps[a], nm, sizeof(nm));
	if (!strcmp(names[a], names[b]))
		query_error(c->out, "DUPLICATE", "host %.100s is listed twice (hosts %zu and %zu of the list); %s answers per host",
			    names[a], a + 1, b + 1, c->req->cmd);
	else
		query_error(c->out, "DUPLICATE", "%.100s and %.100s (hosts %zu and %zu of the list) are both %s; %s answers per host",
			    names[a], names[b], a + 1, b + 1, nm, c->req->cmd);
	return -1;
}

struct dupname {
	const char *s;
	size_t pos;
};

static int cmp_dupname(const void *a, const void *b)
{
	const struct dupname *x = a, *y = b;
	int d = strcmp(x->s, y->s);
	return d ? d : x->pos < y->pos ? -1 : x->pos > y->pos;
}

int qctx_dup_names(struct qctx *c, const char *const *names, size_t n)
{
	struct dupname *k = malloc((n ? n : 1) * sizeof(*k));
	if (!k) {
		query_error(c->out, "NOMEM", "no memory for %zu hosts", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct dupname){ names[i], i };
	qsort(k, n, sizeof(*k), cmp_dupname);
	size_t a = 0, b = SIZE_MAX;
	for (size_t i = 1; i < n; i++)
		if (!strcmp(k[i].s, k[i - 1].s) && k[i].pos < b) {
			b = k[i].pos;
			a = k[i - 1].pos;
		}
	free(k);
	if (b == SIZE_MAX)
		return 0;
	query_error(c->out, "DUPLICATE", "host %.100s is listed twice (hosts %zu and %zu of the list); %s answers per host",
		    names[a], a + 1, b + 1, c->req->cmd);
	return -1;
}

/* Decimal digits of v at p (no NUL); returns their count. */
static size_t put_uint(char *p, size_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* One row of a hop matrix: "-1" for no route. */
static size_t hops_row(char *line, const int16_t *row, size_t n)
{
	size_t o = 0;
	for (size_t j = 0; j < n; j++) {
		if (j)
			line[o++] = ' ';
		if (row[j] < 0) {
			line[o++] = '-';
			line[o++] = '1';
		} else {
			o += put_uint(line + o, (size_t)row[j]);
		}
	}
	line[o++] = '\n';
	return o;
}

void answer_hopsmatrix(struct qctx *c)
{
	const struct proto_req *r = c->req;
	size_t n = r->argc;
	uint32_t *eps;
	uint16_t *dl;
	if (qctx_check_hosts(c, n, 1) || qctx_resolve_list(c, r->argv, n, &eps, &dl))
		return;
	int16_t *hops = malloc(n * n * sizeof(*hops));
	char *line = malloc(n * 7 + 2);
	if (!hops || !line || matrix_hops(c->rt, eps, dl, n, hops)) {
		query_error(c->out, "NOMEM", "no memory for a %zu-host matrix", n);
		goto out;
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " n=%zu lines=%zu\n", c->gen, n, n);
	for (size_t i = 0; i < n; i++)
		evbuffer_add(c->out, line, hops_row(line, hops + i * n, n));
out:
	free(hops);
	free(line);
	free(eps);
	free(dl);
}

static void free_ref(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/* A path matrix being worded: switches get dense numbers in the order the
 * routes first name them, and the reply lists them once. */
struct pmat {
	struct qctx *c;
	const struct share *sh;
	struct matrix_groups mg;
	uint32_t *idx;      /* [nnodes] dense number of a switch node, or UINT32_MAX */
	uint32_t *order;    /* [nsw] switch node of each dense number */
	uint32_t nsw_used;
	uint32_t *sw;       /* [QUERY_PATH_MAX] one route */
	size_t lines;       /* route lines */
	struct tbuf head, body;
};

/* "G J SW ..." or "G J ERR CODE": the route from group g to host j. */
static int pmat_route(struct pmat *m, uint32_t g, size_t j)
{
	uint32_t rep;
	if (!matrix_group_rep(&m->mg, g, j, &rep))
		return 0; /* j alone in its group: no pair */
	size_t k;
	int rc = share_path(m->sh, rep, j, m->sw, QUERY_PATH_MAX, &k);
	if (tbuf_grow(&m->body, 48 + (rc ? 0 : (k < QUERY_PATH_MAX ? k : QUERY_PATH_MAX) * 11)))
		return -1;
	char *o = m->body.buf + m->body.len;
	o += put_uint(o, g);
	*o++ = ' ';
	o += put_uint(o, j);
	if (rc) {
		o += sprintf(o, " ERR %s", qctx_route_code(rc));
	} else {
		for (size_t h = 0; h < k && h < QUERY_PATH_MAX; h++) {
			uint32_t node = m->sw[h];
			if (m->idx[node] == UINT32_MAX) {
				m->idx[node] = m->nsw_used;
				m->order[m->nsw_used++] = node;
			}
			*o++ = ' ';
			o += put_uint(o, m->idx[node]);
		}
	}
	*o++ = '\n';
	m->body.len = (size_t)(o - m->body.buf);
	m->lines++;
	return 0;
}

/* "grp G M ...": each group's members. */
static int pmat_groups(struct pmat *m)
{
	const struct matrix_groups *mg = &m->mg;
	for (uint32_t g = 0; g < mg->G; g++) {
		if (tbuf_grow(&m->head, 24 + (size_t)(mg->start[g + 1] - mg->start[g]) * 11))
			return -1;
		char *o = m->head.buf + m->head.len;
		o += sprintf(o, "grp %u", g);
		for (uint32_t k = mg->start[g]; k < mg->start[g + 1]; k++) {
			*o++ = ' ';
			o += put_uint(o, mg->members[k]);
		}
		*o++ = '\n';
		m->head.len = (size_t)(o - m->head.buf);
	}
	return 0;
}

/* The lines, then the reply: groups, switches, routes. 0, or -1 (ENOMEM). */
static int pmat_reply(struct pmat *m, size_t n)
{
	struct qctx *c = m->c;
	uint32_t G = m->mg.G;
	for (uint32_t g = 0; g < G; g++)
		for (size_t j = 0; j < n; j++)
			if (pmat_route(m, g, j))
				return -1;
	if (pmat_groups(m))
		return -1;
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " n=%zu groups=%u switches=%u lines=%zu\n", c->gen, n, G,
			    m->nsw_used, G + m->nsw_used + m->lines);
	evbuffer_add_reference(c->out, m->head.buf, m->head.len, free_ref, NULL);
	m->head.buf = NULL;
	for (uint32_t k = 0; k < m->nsw_used; k++)
		evbuffer_add_printf(c->out, "sw %u 0x%016" PRIx64 "\n", k, node_guid(c, m->order[k]));
	evbuffer_add_reference(c->out, m->body.buf, m->body.len, free_ref, NULL);
	m->body.buf = NULL;
	return 0;
}

/*
 * Hosts cabled to the same leaf switch take the same route to any
 * destination after their first cable (LFT routing is by destination), so
 * the reply sends each route once per (source leaf group, destination): a
 * 1,024-host job spread over 288 leaves is 295k route lines, not a million.
 * See docs/protocol.md, "pathmatrix".
 */
void answer_pathmatrix(struct qctx *c)
{
	const struct proto_req *r = c->req;
	size_t n = r->argc;
	uint32_t *eps;
	uint16_t *dl;
	if (qctx_check_hosts(c, n, 1) || qctx_resolve_list(c, r->argv, n, &eps, &dl))
		return;
	if (qctx_dup_eps(c, r->argv, eps, n)) {
		free(eps);
		free(dl);
		return;
	}
	struct share *sh;
	int rc = share_build(c->rt, eps, n, SHARE_KEEP_PATHS, &sh);
	free(eps);
	free(dl);
	if (rc) {
		query_error(c->out, rc == AN_E_INVAL ? "DUPLICATE" : qctx_route_code(rc), "%s",
			    rc == AN_E_INVAL ? "a host is listed twice" : an_strerror(rc));
		return;
	}
	struct pmat m = { .c = c, .sh = sh, .head = TBUF_INIT(0), .body = TBUF_INIT(0) };
	rc = matrix_groups_build(sh, &m.mg);
	m.idx = malloc((size_t)c->s->nnodes * sizeof(*m.idx));
	m.order = malloc((size_t)(c->rt->nsw ? c->rt->nsw : 1) * sizeof(*m.order));
	m.sw = malloc(QUERY_PATH_MAX * sizeof(*m.sw));
	if (m.idx)
		memset(m.idx, 0xff, (size_t)c->s->nnodes * sizeof(*m.idx));
	if (rc || !m.idx || !m.order || !m.sw || pmat_reply(&m, n))
		query_error(c->out, "NOMEM", "no memory for a %zu-host path matrix", n);
	free(m.head.buf);
	free(m.body.buf);
	matrix_groups_free(&m.mg);
	free(m.idx);
	free(m.order);
	free(m.sw);
	share_free(sh);
}

void answer_depth(struct qctx *c)
{
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " depth=%u\n", c->gen, hier_depth(c->h));
}

int64_t qctx_host_of(struct qctx *c, const char *name)
{
	uint32_t ep;
	uint16_t dl;
	if (qctx_resolve(c, name, &ep, &dl))
		return -1;
	uint32_t host = c->rt->eps[ep].host;
	if (host == ROUTE_NONE) {
		query_error(c->out, "NOTFOUND", "'%.100s' is not a host port", name);
		return -1;
	}
	/* The hierarchy places a host by its default rail; answering for
	 * another rail with the default rail's cluster would contradict hops. */
	if (route_host_ep(c->rt, host) != ep) {
		query_error(c->out, "RAIL", "'%.100s' is not the default rail of host %s; the hierarchy places hosts "
					  "by their default rail: name the host", name, c->rt->hosts[host].name);
		return -1;
	}
	return host;
}

void answer_clusters(struct qctx *c)
{
	const struct proto_req *r = c->req;
	char *end;
	if (r->argc < 2) {
		query_error(c->out, "USAGE", "clusters LEVEL HOST [HOST ...]");
		return;
	}
	/* One vocabulary (docs/protocol.md, "Levels"): 0 is the top, depth-1
	 * the leaf switches; "top" and "leaf" name them, -k counts from the
	 * leaves (-1 = leaf). */
	long depth = (long)hier_depth(c->h), level;
	const char *w = r->argv[0];
	if (!strcmp(w, "top"))
		level = 0;
	else if (!strcmp(w, "leaf"))
		level = depth - 1;
	else {
		level = strtol(w, &end, 10);
		if (*end || end == w || level < -depth || level >= depth)
			level = -1;   /* refused below */
		else if (level < 0)
			level += depth;
	}
	if (level < 0 || level >= depth) {
		query_error(c->out, "RANGE", "LEVEL '%.20s' is not a level: 0..%ld, top, leaf, or -1..-%ld from the leaves",
			    w, depth - 1, depth);
		return;
	}
	size_t n = r->argc - 1;
	if (n > PROTO_ARGS_MAX) {
		query_error(c->out, "TOOMANY", "too many hosts");
		return;
	}
	uint32_t *hosts = malloc(n * sizeof(*hosts));
	if (!hosts) {
		query_error(c->out, "NOMEM", "no memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t h = qctx_host_of(c, r->argv[i + 1]);
		if (h < 0) {
			free(hosts);
			return;
		}
		hosts[i] = (uint32_t)h;
	}
	size_t count;
	hier_count_at(c->h, hosts, n, (uint32_t)level, &count);
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " level=%ld count=%zu lines=%zu\n", c->gen, level, count, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t id;
		hier_cluster_at(c->h, hosts[i], (uint32_t)level, &id);
		evbuffer_add_printf(c->out, "%s 0x%016" PRIx64 "\n", r->argv[i + 1], id);
	}
	free(hosts);
}

static int cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;   /* {leaf GUID, host}: the smallest host first */
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* {leaf switch GUID, host} of every present host, sorted: where a
 * remembered host's leaf hangs now. NULL when out of memory. */
static uint64_t (*leaf_table(const struct qctx *c))[2]
{
	const struct route_tab *rt = c->rt;
	uint64_t (*t)[2] = malloc(((size_t)rt->nhosts + 1) * sizeof(*t));
	if (!t)
		return NULL;
	for (uint32_t x = 0; x < rt->nhosts; x++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, x)];
		t[x][0] = e->leaf == ROUTE_NONE ? 0 : node_guid(c, e->leaf);
		t[x][1] = x;
	}
	qsort(t, rt->nhosts, sizeof(*t), cmp_u64pair);
	return t;
}

/* The cluster a present host on that leaf hangs off (the smallest host
 * index: deterministic), else HIER_NONE. */
static uint32_t gone_parent(const struct qctx *c, uint64_t (*t)[2], uint64_t leaf)
{
	size_t lo = 0, hi = c->rt->nhosts;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid][0] < leaf)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!leaf || lo == c->rt->nhosts || t[lo][0] != leaf)
		return HIER_NONE;
	return c->h->host_parent[t[lo][1]];
}

void answer_tree(struct qctx *c)
{
	const struct hier *h = c->h;
	const struct gone *g = c->f->gone;
	int with_gone = c->req->argc == 1;
	if (with_gone && strcmp(c->req->argv[0], "gone")) {
		query_error(c->out, "USAGE", "tree [gone]");
		return;
	}
	uint32_t ngone = with_gone && g ? (uint32_t)g->n : 0;
	uint64_t (*lt)[2] = ngone ? leaf_table(c) : NULL;
	if (ngone && !lt) {
		query_error(c->out, "NOMEM", "no memory");
		return;
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " depth=%u clusters=%u hosts=%u", c->gen, h->depth,
			    h->nclusters, h->nhosts);
	if (with_gone)
		evbuffer_add_printf(c->out, " gone=%u", ngone);
	evbuffer_add_printf(c->out, " lines=%u\n", h->nclusters + h->nhosts + ngone);
	for (uint32_t i = 0; i < h->nclusters; i++) {
		const struct hier_cluster *cl = &h->clusters[i];
		char parent[24] = "-";
		if (cl->parent != HIER_NONE)
			snprintf(parent, sizeof(parent), "0x%016" PRIx64, h->clusters[cl->parent].id);
		char dist[12] = "inf";   /* never joined at a finite distance, or a lone host */
		if (cl->dist != HIER_INF)
			snprintf(dist, sizeof(dist), "%u", (unsigned)cl->dist);
		/* names are [A-Za-z0-9._-] (hier.h): safe unquoted */
		evbuffer_add_printf(c->out, "cluster 0x%016" PRIx64 " parent=%s level=%u dist=%s hosts=%u name=%s\n",
				    cl->id, parent, cl->level, dist, cl->nhosts, h->names[i]);
	}
	for (uint32_t i = 0; i < h->nhosts; i++)
		evbuffer_add_printf(c->out, "host %s parent=0x%016" PRIx64 "\n", c->rt->hosts[i].name,
				    h->clusters[h->host_parent[i]].id);
	for (uint32_t i = 0; i < ngone; i++) {
		uint32_t p = gone_parent(c, lt, g->v[i].leaf);
		char parent[24] = "-";
		if (p != HIER_NONE)
			snprintf(parent, sizeof(parent), "0x%016" PRIx64, h->clusters[p].id);
		evbuffer_add_printf(c->out, "gone %s parent=%s leaf=0x%016" PRIx64 " last=%" PRIu64 "\n",
				    g->v[i].name, parent, g->v[i].leaf, g->v[i].last_gen);
	}
	free(lt);
}

void answer_shared(struct qctx *c)
{
	const struct proto_req *r = c->req;
	size_t n = r->argc;
	uint32_t *eps;
	uint16_t *dl;
	if (qctx_check_hosts(c, n, 1) || qctx_resolve_list(c, r->argv, n, &eps, &dl))
		return;
	if (qctx_dup_eps(c, r->argv, eps, n)) {
		free(eps);
		free(dl);
		return;
	}
	struct share *sh;
	int rc = share_build(c->rt, eps, n, 0, &sh);
	free(eps);
	free(dl);
	if (rc) {
		query_error(c->out, rc == AN_E_INVAL ? "DUPLICATE" : qctx_route_code(rc), "%s",
			    rc == AN_E_INVAL ? "a host is listed twice" : an_strerror(rc));
		return;
	}
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " hosts=%u sharing=%u avg_hosts_per_leaf=%.17g leaves=%u pairs_ok=%" PRIu64
			    " pairs_failed=%" PRIu64 " lines=%u\n",
			    c->gen, sh->n, sh->nsharing, sh->avg_hosts_per_leaf, sh->nleaves, sh->npairs_ok,
			    sh->npairs_failed, sh->nsharing + sh->ngroups + sh->nlinks);
	for (uint32_t i = 0; i < sh->nsharing; i++)
		evbuffer_add_printf(c->out, "sharing %s\n", r->argv[sh->sharing[i]]);
	for (uint32_t g = 0; g < sh->ngroups; g++) {
		const struct share_group *gr = &sh->groups[g];
		evbuffer_add_printf(c->out, "group 0x%016" PRIx64 ":%u", node_guid(c, gr->node), gr->port);
		for (uint32_t k = 0; k < gr->n; k++)
			evbuffer_add_printf(c->out, " %s", r->argv[sh->members[gr->first + k]]);
		evbuffer_add_printf(c->out, "\n");
	}
	for (uint32_t l = 0; l < sh->nlinks; l++)
		evbuffer_add_printf(c->out, "load 0x%016" PRIx64 ":%u %u\n", node_guid(c, sh->links[l].node),
				    sh->links[l].port, sh->links[l].count);
	share_free(sh);
}

void answer_resolve(struct qctx *c)
{
	const char *name = c->req->argv[0];
	uint32_t ep;
	uint16_t dl;
	if (qctx_resolve(c, name, &ep, &dl))
		return;
	const struct route_ep *e = &c->rt->eps[ep];
	char nm[ROUTE_NAME_MAX * 2 + 4], leaf[24] = "-";
	qctx_ep_name(c, ep, nm, sizeof(nm));
	if (e->leaf != ROUTE_NONE)
		snprintf(leaf, sizeof(leaf), "0x%016" PRIx64, node_guid(c, e->leaf));
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " name=%s host=%s hca=%s guid=0x%016" PRIx64 " node=0x%016" PRIx64
			    " port=%u lid=%u dlid=%u lmc=%u leaf=%s\n",
			    c->gen, nm, e->host != ROUTE_NONE ? c->rt->hosts[e->host].name : "-",
			    e->hca[0] ? e->hca : "-", e->guid, node_guid(c, e->node), e->port, e->lid, dl, e->lmc, leaf);
}

void answer_hosts(struct qctx *c)
{
	const struct route_tab *rt = c->rt;
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " lines=%u\n", c->gen, rt->nhosts);
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		const struct route_host *h = &rt->hosts[i];
		evbuffer_add_printf(c->out, "%s rails=%u", h->name, h->nrails);
		for (uint32_t k = 0; k < h->nrails; k++) {
			const struct route_ep *e = &rt->eps[rt->rails[h->rail0 + k]];
			evbuffer_add_printf(c->out, " %s:0x%016" PRIx64 ":lid=%u", e->hca, e->guid, e->lid);
		}
		evbuffer_add_printf(c->out, "\n");
	}
}

void answer_ping(struct qctx *c)
{
	evbuffer_add_printf(c->out, "OK pong\n");
}

void answer_quit(struct qctx *c)
{
	evbuffer_add_printf(c->out, "OK bye\n");
	c->close = 1;
}

void answer_help(struct qctx *c)
{
	evbuffer_add_printf(c->out, "OK commands:");
	for (size_t i = 0; i < cmd_count; i++)
		if (!(cmd_table[i].flags & CMD_ADMIN)) /* the admin socket's: docs/protocol.md */
			evbuffer_add_printf(c->out, " %s", cmd_table[i].name);
	evbuffer_add_printf(c->out, " (see docs/protocol.md)\n");
}

int query_prepare(struct qctx *c, const struct cmd *k, const struct fabric *f, const struct proto_req *req,
		  struct evbuffer *out)
{
	memset(c, 0, sizeof(*c));
	c->f = f;
	c->s = f->snap;
	c->gen = f->snap->generation;
	c->req = req;
	c->out = out;
	c->threads = 1;
	size_t max = k->max_args < 0 ? PROTO_ARGS_MAX : (size_t)k->max_args;
	if (req->argc < (size_t)k->min_args || req->argc > max) {
		query_error(out, "USAGE", "%s", k->usage);
		return -1;
	}
	if (k->flags & CMD_FABRIC) {
		if (!f->index) {
			query_error(out, "NOFABRIC", "no fabric received yet");
			return -1;
		}
		c->rt = f->index->rt;
		c->h = f->index->hier;
	}
	return 0;
}

enum query_result query_run(const struct cmd *k, const struct fabric *f, const struct proto_req *req,
			    struct evbuffer *out, const struct qplanes *planes)
{
	struct qctx c;
	if (query_prepare(&c, k, f, req, out))
		return QUERY_OK;
	c.planes = planes;
	k->answer(&c);
	return c.close ? QUERY_CLOSE : QUERY_OK;
}

enum query_result query_answer(const struct fabric *f, const struct proto_req *req, struct evbuffer *out)
{
	const struct cmd *k = cmd_find(req->cmd);
	return k && k->answer ? query_run(k, f, req, out, NULL) : QUERY_UNKNOWN;
}
