/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_cmd.c - the protocol commands order, pick and map (docs/protocol.md):
 * argument parsing and replies around place.h. All three are heavy (worker
 * pool): pick walks every free host from every free leaf (the entry table,
 * kept per fabric in the process's placement context), map runs Scotch.
 */
#include "place_cmd.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "place.h"
#include "topo_limits.h"

/* One placement context for the process: picks on one fabric share its
 * entry table, and every map runs Scotch under its one lock. NULL if it
 * could not be made: picks then build their table per request, maps are
 * refused (Scotch needs the lock). */
static pthread_once_t place_once = PTHREAD_ONCE_INIT;
static struct place_ctx *place_ctx_proc;

static void proc_ctx_make(void)
{
	place_ctx_proc = place_ctx_new();
}

static struct place_ctx *proc_place_ctx(void)
{
	pthread_once(&place_once, proc_ctx_make);
	return place_ctx_proc;
}

/* Resolves names to distinct host indices; ERR written on failure. */
static uint32_t *hosts_of(struct qctx *c, const char *const *names, size_t n)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v) {
		query_error(c->out, "NOMEM", "no memory for %zu hosts", n);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t h = qctx_host_of(c, names[i]);
		if (h < 0) {
			free(v);
			return NULL;
		}
		v[i] = (uint32_t)h;
	}
	long d = place_find_dup(v, n);
	if (d != -1) {
		if (d >= 0)
			query_error(c->out, "DUPLICATE", "host %s is listed twice", c->rt->hosts[v[d]].name);
		else
			query_error(c->out, "NOMEM", "no memory");
		free(v);
		return NULL;
	}
	return v;
}

static void put_figs(struct qctx *c, const struct place_figs *f)
{
	evbuffer_add_printf(c->out, " sharing=%u leaves=%u pods=%u max_hops=%u max_load=%u pairs_failed=%" PRIu64,
			    f->sharing, f->leaves, f->pods, f->max_hops, f->max_load, f->pairs_failed);
}

void answer_order(struct qctx *c)
{
	const struct proto_req *r = c->req;
	size_t n = r->argc ? r->argc : c->rt->nhosts;
	if (r->argc && qctx_check_hosts(c, n, 1))
		return;
	uint32_t *v;
	if (r->argc) {
		if (!(v = hosts_of(c, r->argv, n)))
			return;
	} else {
		if (!(v = malloc((n ? n : 1) * sizeof(*v)))) {
			query_error(c->out, "NOMEM", "no memory");
			return;
		}
		for (size_t i = 0; i < n; i++)
			v[i] = (uint32_t)i;
	}
	place_order(c->rt, c->h, v, n);
	uint32_t leaves = 0, pods = 0;
	for (size_t i = 0; i < n; i++) {
		/* clusters are contiguous runs in this order */
		leaves += !i || place_leaf_cluster(c->h, v[i]) != place_leaf_cluster(c->h, v[i - 1]);
		pods += !i || place_pod(c->h, v[i]) != place_pod(c->h, v[i - 1]);
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " hosts=%zu leaves=%u pods=%u lines=%zu\n", c->gen, n, leaves,
			    pods, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t lc = place_leaf_cluster(c->h, v[i]), pc = place_pod(c->h, v[i]);
		evbuffer_add_printf(c->out, "%s 0x%016" PRIx64 " 0x%016" PRIx64 "\n", c->rt->hosts[v[i]].name,
				    lc == HIER_NONE ? 0 : c->h->clusters[lc].id, pc == HIER_NONE ? 0 : c->h->clusters[pc].id);
	}
	free(v);
}

static int parse_count(const char *s, unsigned long max, unsigned long *v)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	*v = strtoul(s, &end, 10);
	return *end || *v > max ? -1 : 0;
}

/* Blocks of 1 MiB per pair unless asked, as `schedule` predicts. */
#define PICK_BYTES_DEFAULT (1ul << 20)

static void put_pick_us(struct evbuffer *out, const char *key, double t)
{
	if (t < 0)
		evbuffer_add_printf(out, " %s=-", key);
	else
		evbuffer_add_printf(out, " %s=%.3f", key, t * 1e6);
}

/* pick's balance fields (docs/protocol.md, `pick`): the hosts balanced
 * within their leaves, the answer's busiest cable against the injection
 * limit, and why it sits above. */
static void put_pick_balance(struct qctx *c, const struct place_pick *p)
{
	static const char *const why[] = { "at", "uplinks", "routes", "-" };   /* enum place_limit_why */
	evbuffer_add_printf(c->out, " balanced=%d swaps=%u", p->balanced, p->swaps);
	put_pick_us(c->out, "bottleneck_us", p->bw_time);
	put_pick_us(c->out, "limit_us", p->limit_time);
	put_pick_us(c->out, "first_fit_bottleneck_us", p->ff_bw_time);
	evbuffer_add_printf(c->out, " limit=%s", why[p->limit_why]);
	if (p->bw_time < 0 || p->bott_node == ROUTE_NONE)
		evbuffer_add_printf(c->out, " bottleneck=-");
	else
		evbuffer_add_printf(c->out, " bottleneck=0x%016" PRIx64 ":%u", c->rt->snap->nodes[p->bott_node].guid,
				    p->bott_port);
}

/* pick [bytes=B] trade N ALLOC1..ALLOCN FREE...: the allocation's hosts
 * traded within its leaves for free ones when predicted faster
 * (docs/protocol.md, `pick trade`). v holds the allocation then the free
 * hosts, distinct. */
static void answer_trade(struct qctx *c, uint32_t *v, size_t want, size_t n, unsigned long bytes)
{
	struct place_pick p;
	char why[AN_ERR_LEN];
	size_t trades;
	int rc = place_pick_trade(c->rt, c->h, v, want, v + want, n - want, bytes, c->threads, &p, &trades, why);
	free(v);
	if (rc) {
		query_error(c->out, rc == AN_E_NOMEM ? "NOMEM" : qctx_route_code(rc), "%s", why);
		return;
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " alloc=%zu free=%zu trades=%zu", c->gen, want, n - want, trades);
	put_figs(c, &p.figs);
	evbuffer_add_printf(c->out, " bytes=%lu", bytes);
	put_pick_us(c->out, "time_us", p.time);
	put_pick_us(c->out, "alloc_time_us", p.ff_time);
	put_pick_us(c->out, "alloc_bottleneck_us", p.ff_bw_time);
	put_pick_balance(c, &p);
	evbuffer_add_printf(c->out, " lines=%zu\n", p.n);
	for (size_t i = 0; i < p.n; i++)
		evbuffer_add_printf(c->out, "%s\n", c->rt->hosts[p.hosts[i]].name);
	place_pick_free(&p);
}

/* The pattern a pick is judged by: a spec `load` takes, or "matrix" with
 * the nt triples in words (S:D:BYTES over want ranks). -1 once the error
 * is written. */
static int pick_pattern(struct qctx *c, const char *spec, unsigned long want, const char *const *words, size_t nt,
			struct pattern *pp)
{
	char why[AN_ERR_LEN];
	memset(pp, 0, sizeof(*pp));
	if (!strcmp(spec, "matrix")) {
		if (!nt) {
			query_error(c->out, "USAGE", "pick pattern=matrix needs '--' and S:D:BYTES triples after the hosts");
			return -1;
		}
		return qctx_matrix(c, words, nt, (uint32_t)want, pp);
	}
	if (pattern_parse(spec, pp, why) || pattern_check(pp, (uint32_t)want, why)) {
		pattern_clear(pp);
		query_error(c->out, "USAGE", "pick pattern=%.40s for %lu hosts: %s", spec, want, why);
		return -1;
	}
	return 0;
}

/* The pattern a pick is judged by (NULL: the all-to-all), on want hosts,
 * must total at most 2^62 bytes, as `load` says: a message may carry up to
 * 2^53 bytes, but no total may wrap. -1 once the error is written. */
static int pick_total(struct qctx *c, const struct pattern *pp, unsigned long want, unsigned long bytes)
{
	struct pattern t = pp ? *pp : (struct pattern){ .kind = PAT_ALLTOALL, .dim = { 1, 1, 1 } };
	char why[AN_ERR_LEN];
	uint64_t total;
	if (t.kind != PAT_MATRIX)
		t.msg_bytes = bytes;
	if (!pattern_total_bytes(&t, (uint32_t)want, &total, why))
		return 0;
	query_error(c->out, "RANGE", "pick bytes=%lu for %lu hosts: %s", bytes, want, why);
	return -1;
}

/* pick's OK line and its hosts. */
static void put_pick(struct qctx *c, const struct place_pick *p, size_t nfree, unsigned long bytes, const char *pat)
{
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " picked=%zu free=%zu sharing_free=%d", c->gen, p->n, nfree,
			    p->sharing_free);
	put_figs(c, &p->figs);
	evbuffer_add_printf(c->out, " min_leaves=%u min_pods=%u sharing_free_wider=%d method=%s reason=%s bytes=%lu",
			    p->min_leaves, p->min_pods, p->sharing_free_wider, p->first_fit ? "first_fit" : "pick",
			    p->first_fit ? "slower" : "none", bytes);
	put_pick_us(c->out, "time_us", p->time);
	put_pick_us(c->out, "pick_time_us", p->pick_time);
	put_pick_us(c->out, "first_fit_time_us", p->ff_time);
	put_pick_balance(c, p);
	evbuffer_add_printf(c->out, " widened=%d wider_leaves=%u", p->widened, p->wider_leaves);
	put_pick_us(c->out, "wider_time_us", p->wider_time);
	put_pick_us(c->out, "random_time_us", p->random_time);
	evbuffer_add_printf(c->out, " judged=%s pattern=%s lines=%zu\n", place_run_name(p->run), pat, p->n);
	for (size_t i = 0; i < p->n; i++)
		evbuffer_add_printf(c->out, "%s\n", c->rt->hosts[p->hosts[i]].name);
}

/* pick [bytes=B] [pattern=P] [leaves=any|fewest|auto] [run=bound|route|xor|MODEL] [trade] N HOST... [-- S:D:B ...]:
 * the compact pick (or one on more leaves when predicted faster, as the
 * rule on leaves allows), judged against first-fit and random picks; with trade, the first N hosts are an
 * allocation to improve. */
void answer_pick(struct qctx *c)
{
	const struct proto_req *r = c->req;
	unsigned long want, bytes = PICK_BYTES_DEFAULT;
	size_t a = 0;
	int trade = 0;
	if (r->argc && !strncmp(r->argv[0], "bytes=", 6)) {
		if (parse_count(r->argv[0] + 6, TOPO_MSG_BYTES_MAX, &bytes) || !bytes) {
			query_error(c->out, "USAGE", "pick [bytes=B] N HOST...: B must be 1..2^53, got '%.40s'", r->argv[0]);
			return;
		}
		a = 1;
	}
	const char *pat = "alltoall";
	if (r->argc > a && !strncmp(r->argv[a], "pattern=", 8))
		pat = r->argv[a++] + 8;
	/* the default: more leaves than the fewest whenever predicted faster,
	 * the job's speed before the promise of compactness (docs/protocol.md,
	 * `pick`, `leaves=`) */
	int leaves = PLACE_LEAVES_ANY;
	if (r->argc > a && !strncmp(r->argv[a], "leaves=", 7)) {
		static const char *const rule[] = { "fewest", "any", "auto" };   /* enum place_leaves */
		const char *v = r->argv[a] + 7;
		for (leaves = 2; leaves >= 0 && strcmp(v, rule[leaves]); leaves--)
			;
		if (leaves < 0) {
			query_error(c->out, "USAGE", "pick leaves=any|fewest|auto, got '%.40s'", r->argv[a]);
			return;
		}
		if (r->argc > ++a && !strcmp(r->argv[a], "trade")) {
			query_error(c->out, "USAGE", "pick trade keeps the allocation's leaves; leaves= is for pick");
			return;
		}
	}
	/* what every candidate is judged by (docs/protocol.md, `pick`, `run=`):
	 * the bound, as before, unless the caller names the all-to-all the job
	 * runs */
	int run = PLACE_RUN_BOUND;
	if (r->argc > a && !strncmp(r->argv[a], "run=", 4)) {
		if (place_run_parse(r->argv[a] + 4, &run)) {
			query_error(c->out, "USAGE", "pick run=bound|route|xor|smpi-ompi|smpi-mpich|ompi|mpich, got '%.40s'",
				    r->argv[a]);
			return;
		}
		if (run != PLACE_RUN_BOUND && strcmp(pat, "alltoall")) {
			query_error(c->out, "USAGE", "pick run=%s times the job's all-to-all; pattern=%.40s is judged by run=bound",
				    place_run_name(run), pat);
			return;
		}
		if (r->argc > ++a && !strcmp(r->argv[a], "trade")) {
			query_error(c->out, "USAGE", "pick trade is judged by the bound; run= is for pick");
			return;
		}
	}
	if (r->argc > a && !strcmp(r->argv[a], "trade"))
		trade = 1, a++;
	if (trade && strcmp(pat, "alltoall")) {
		query_error(c->out, "USAGE", "pick trade judges an all-to-all; pattern=%.40s is for pick", pat);
		return;
	}
	if (r->argc < a + 2 || parse_count(r->argv[a], TOPO_MATRIX_MAX, &want) || !want) {
		query_error(c->out, "USAGE", "pick [bytes=B] N HOST...: N must be 1..%d, got '%.40s'", TOPO_MATRIX_MAX,
			    r->argc > a ? r->argv[a] : "");
		return;
	}
	/* the free hosts, then, for pattern=matrix, "--" and its triples */
	size_t n = 0;
	while (a + 1 + n < r->argc && strcmp(r->argv[a + 1 + n], "--"))
		n++;
	size_t nt = a + 1 + n < r->argc ? r->argc - (a + 2 + n) : 0;
	if (a + 1 + n < r->argc && strcmp(pat, "matrix")) {
		query_error(c->out, "USAGE", "'--' and triples go with pick pattern=matrix only");
		return;
	}
	if (qctx_check_hosts(c, n, 1))
		return;
	uint32_t *v = hosts_of(c, r->argv + a + 1, n);
	if (!v)
		return;
	if (want > n) {
		query_error(c->out, "TOOFEW", "asked for %lu hosts, %zu are free", want, n);
		free(v);
		return;
	}
	if (run != PLACE_RUN_BOUND && want > TOPO_PICK_RUN_HOSTS_MAX) {
		query_error(c->out, "TOOBIG", "pick run=%s simulates the all-to-all on at most %d hosts, asked for %lu",
			    place_run_name(run), TOPO_PICK_RUN_HOSTS_MAX, want);
		free(v);
		return;
	}
	if (trade) {
		if (pick_total(c, NULL, want, bytes))
			free(v);
		else
			answer_trade(c, v, want, n, bytes);
		return;
	}
	struct pattern pp;
	if (pick_pattern(c, pat, want, r->argv + a + 2 + n, nt, &pp)) {
		free(v);
		return;
	}
	if (pick_total(c, &pp, want, bytes)) {
		pattern_clear(&pp);
		free(v);
		return;
	}
	struct place_pick p;
	char why[AN_ERR_LEN];
	int rc = place_pick_run(proc_place_ctx(), c->rt, c->h, v, n, want, &pp, bytes, c->threads, leaves, run, c->cancel,
				&p, why);
	pattern_clear(&pp);
	free(v);
	if (rc) {
		query_error(c->out, rc == AN_E_NOMEM ? "NOMEM" : rc == AN_E_CANCEL ? "TIMEOUT" : qctx_route_code(rc), "%s",
			    why);
		return;
	}
	put_pick(c, &p, n, bytes, pat);
	place_pick_free(&p);
}

/* "stencil:XxYxZ[:periodic]" or "csr:N" (its adjacency after "--"). */
static int parse_graph(struct qctx *c, const char *spec, const char *const *adj, size_t nadj, int have_adj,
		       struct place_graph *g)
{
	if (!strncmp(spec, "stencil:", 8)) {
		unsigned long d[3] = { 1, 1, 1 };
		const char *p = spec + 8;
		int k = 0, periodic = 0;
		while (k < 3) {
			char *end;
			if (*p < '0' || *p > '9')
				break;
			d[k++] = strtoul(p, &end, 10);
			p = end;
			if (*p != 'x')
				break;
			p++;
		}
		if (!strcmp(p, ":periodic"))
			periodic = 1, p += 9;
		/* each side bounded first: their product never wraps past 2^64 */
		int big = d[0] > TOPO_RANKS_MAX || d[1] > TOPO_RANKS_MAX || d[2] > TOPO_RANKS_MAX;
		uint64_t n = big ? UINT64_MAX : (uint64_t)d[0] * d[1] * d[2];
		if (!k || *p || !d[0] || !d[1] || !d[2] || n > TOPO_RANKS_MAX || have_adj) {
			query_error(c->out, "USAGE", "bad stencil '%.60s': stencil:X[xY[xZ]][:periodic], 1..%d ranks",
				    spec, TOPO_RANKS_MAX);
			return -1;
		}
		if (place_graph_stencil(g, (uint32_t)d[0], (uint32_t)d[1], (uint32_t)d[2], periodic)) {
			query_error(c->out, "NOMEM", "no memory for the stencil");
			return -1;
		}
		return 0;
	}
	unsigned long n;
	if (strncmp(spec, "csr:", 4) || parse_count(spec + 4, TOPO_RANKS_MAX, &n) || !n || !have_adj || nadj != n) {
		query_error(c->out, "USAGE",
			    "graph '%.60s': stencil:X[xY[xZ]][:periodic], or csr:N with N adjacency words after '--' (got %zu)",
			    spec, nadj);
		return -1;
	}
	/* each word: "-" or comma-separated "v" / "v:w" */
	size_t cap = 0, m = 0;
	uint32_t *src = NULL, *dst = NULL, *wt = NULL;
	for (size_t v = 0; v < n; v++) {
		const char *p = adj[v];
		if (!strcmp(p, "-"))
			continue;
		for (;;) {
			unsigned long u, w = 1;
			char *end;
			if (*p < '0' || *p > '9')
				goto bad;
			u = strtoul(p, &end, 10);
			p = end;
			if (*p == ':') {
				p++;
				if (*p < '0' || *p > '9')
					goto bad;
				w = strtoul(p, &end, 10);
				p = end;
				if (!w || w > UINT32_MAX)
					goto bad;
			}
			if (u >= n)
				goto bad;
			if (m == cap) {
				cap = cap ? 2 * cap : 1024;
				uint32_t *a = realloc(src, cap * sizeof(*a)), *b = a ? realloc(dst, cap * sizeof(*b)) : NULL;
				if (a)
					src = a;
				if (b)
					dst = b;
				uint32_t *x = b ? realloc(wt, cap * sizeof(*x)) : NULL;
				if (!x) {
					free(src), free(dst), free(wt);
					query_error(c->out, "NOMEM", "no memory for the graph");
					return -1;
				}
				wt = x;
			}
			src[m] = (uint32_t)v, dst[m] = (uint32_t)u, wt[m++] = (uint32_t)w;
			if (!*p)
				break;
			if (*p++ != ',')
				goto bad;
		}
		continue;
bad:
		free(src), free(dst), free(wt);
		query_error(c->out, "USAGE", "adjacency of vertex %zu: '%.60s' (want '-' or v[:w],v[:w]... with v < %lu)", v,
			    adj[v], n);
		return -1;
	}
	/* an MPI graph lists each edge from its source; both directions are
	 * traffic, so from_edges sums them */
	int rc = place_graph_from_edges(g, (uint32_t)n, src, dst, wt, m);
	free(src), free(dst), free(wt);
	if (rc) {
		query_error(c->out, rc == AN_E_NOMEM ? "NOMEM" : "USAGE", "graph: %s", an_strerror(rc));
		return -1;
	}
	return 0;
}

/* map's bytes= option ahead of GRAPH; *i is GRAPH's word. -1 with ERR written. */
static int map_opts(struct qctx *c, size_t *i, uint64_t *bytes)
{
	const struct proto_req *r = c->req;
	*bytes = PLACE_BYTES_DEFAULT;
	*i = 0;
	for (; *i < r->argc && !strncmp(r->argv[*i], "bytes=", 6); (*i)++) {
		unsigned long v;
		if (parse_count(r->argv[*i] + 6, PLACE_BYTES_MAX, &v) || !v) {
			query_error(c->out, "USAGE", "map: bytes=B per unit of edge weight, 1..2^53 (%llu), got '%.40s'",
				    (unsigned long long)PLACE_BYTES_MAX, r->argv[*i]);
			return -1;
		}
		*bytes = v;
	}
	if (r->argc < *i + 2) {
		query_error(c->out, "USAGE", "map [bytes=B] GRAPH HOST[*SLOTS] ... [-- ADJ ...]");
		return -1;
	}
	return 0;
}

/* A predicted time as a reply word: microseconds, "-" if unknown. */
static void put_time_us(struct qctx *c, const char *key, const struct place_time *t)
{
	if (t->seconds < 0)
		evbuffer_add_printf(c->out, " %s=-", key);
	else
		evbuffer_add_printf(c->out, " %s=%.3f", key, t->seconds * 1e6);
}

static void map_reply(struct qctx *c, const struct place_graph *g, size_t nh, const struct place_map *m)
{
	static const char *const method[] = { "scotch", "block", "rr" };
	static const char *const reason[] = { "faster", "slower", "equal", "unknown" };
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " ranks=%u hosts=%zu method=%s hop_bytes=%" PRIu64 " max_load=%" PRIu64
			    " block_hop_bytes=%" PRIu64 " block_max_load=%" PRIu64 " rr_hop_bytes=%" PRIu64
			    " rr_max_load=%" PRIu64 " moved=%u pairs_failed=%" PRIu64 " bytes=%" PRIu64,
			    c->gen, g->n, nh, method[m->method], m->cost.hop_bytes, m->cost.max_load, m->block.hop_bytes,
			    m->block.max_load, m->rr.hop_bytes, m->rr.max_load, m->moved, m->cost.pairs_failed, m->bytes);
	put_time_us(c, "time_us", &m->time);
	put_time_us(c, "block_time_us", &m->block_time);
	put_time_us(c, "rr_time_us", &m->rr_time);
	put_time_us(c, "scotch_time_us", &m->scotch_time);
	evbuffer_add_printf(c->out, " swaps=%u reason=%s", m->swaps, reason[m->reason]);
	if (m->time.seconds < 0 || m->time.node == ROUTE_NONE)
		evbuffer_add_printf(c->out, " bottleneck=- bottleneck_bps=%s", m->time.seconds < 0 ? "-" : "0");
	else
		evbuffer_add_printf(c->out, " bottleneck=0x%016" PRIx64 ":%u bottleneck_bps=%" PRIu64,
				    c->rt->snap->nodes[m->time.node].guid, m->time.port, m->time.bps);
	evbuffer_add_printf(c->out, " lines=%u\n", g->n);
	for (uint32_t k = 0; k < g->n; k++)
		evbuffer_add_printf(c->out, "%u %s\n", k, c->rt->hosts[m->rank_host[k]].name);
}

void answer_map(struct qctx *c)
{
	const struct proto_req *r = c->req;
	size_t g0;
	uint64_t bytes;
	if (map_opts(c, &g0, &bytes))
		return;
	size_t sep = r->argc;
	for (size_t i = g0 + 1; i < r->argc; i++)
		if (!strcmp(r->argv[i], "--")) {
			sep = i;
			break;
		}
	size_t nh = sep - g0 - 1;
	if (qctx_check_hosts(c, nh, 1))
		return;
	/* HOST[*SLOTS]: split the counts off before resolving */
	char(*names)[TOPO_QUERY_NAME_MAX + 1] = malloc(nh * sizeof(*names));
	const char **np = malloc(nh * sizeof(*np));
	uint32_t *slots = malloc(nh * sizeof(*slots)), *hosts = NULL;
	struct place_graph g = { 0 };
	if (!names || !np || !slots) {
		query_error(c->out, "NOMEM", "no memory");
		goto out;
	}
	for (size_t i = 0; i < nh; i++) {
		const char *a = r->argv[g0 + 1 + i], *star = strchr(a, '*');
		size_t len = star ? (size_t)(star - a) : strlen(a);
		unsigned long s = 1;
		if (len > TOPO_QUERY_NAME_MAX || (star && (parse_count(star + 1, TOPO_RANKS_MAX, &s) || !s))) {
			query_error(c->out, "USAGE", "'%.100s': want HOST or HOST*SLOTS with 1..%d slots", a, TOPO_RANKS_MAX);
			goto out;
		}
		memcpy(names[i], a, len);
		names[i][len] = '\0';
		np[i] = names[i];
		slots[i] = (uint32_t)s;
	}
	if (!(hosts = hosts_of(c, np, nh)))
		goto out;
	if (parse_graph(c, r->argv[g0], r->argv + sep + 1, sep < r->argc ? r->argc - sep - 1 : 0, sep < r->argc, &g))
		goto out;
	struct place_ctx *pc = proc_place_ctx();
	if (!pc) {
		query_error(c->out, "NOMEM", "no memory for the placement context");
		goto out;
	}
	struct place_map m;
	char why[AN_ERR_LEN];
	uint64_t phase;
	if (place_graph_bytes(&g, bytes, &phase, why)) {
		query_error(c->out, "RANGE", "map bytes=%" PRIu64 ": %s", bytes, why);
		goto out;
	}
	int rc = place_map_bytes(pc, c->rt, c->h, &g, hosts, slots, nh, bytes, &m, why);
	if (rc) {
		query_error(c->out, rc == AN_E_RANGE ? "SLOTS" : rc == AN_E_NOMEM ? "NOMEM" : qctx_route_code(rc), "%s",
			    why);
		goto out;
	}
	map_reply(c, &g, nh, &m);
	place_map_free(&m);
out:
	place_graph_free(&g);
	free(names);
	free(np);
	free(slots);
	free(hosts);
}
