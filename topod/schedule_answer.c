/*
 * schedule_answer.c - the `schedule` command (docs/protocol.md): parses the
 * request, runs sched_build() on the request's generation, writes the reply.
 *
 *   schedule ALGO [conflicts=N] [sparsity=X] [k=N] [flows=0|1] RANK [RANK ...]
 *
 * RANK is HOST (one rank) or HOST*N (N consecutive ranks on HOST); ranks are
 * numbered in list order. At most SCHED_RANKS_MAX ranks (the schedule holds
 * all P(P-1) flows in memory, 128 MiB at 4,096); flows=0 leaves them out of
 * the reply.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "query.h"
#include "schedule.h"
#include "topo_limits.h"

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	unsigned long x = strtoul(s, &end, 10);
	if (*end || x > max)
		return -1;
	*v = x;
	return 0;
}

/* Appends " a:b[:blk]" for every flow of step st, in chunks. */
static void put_flows(struct evbuffer *out, const struct sched *s, uint32_t st)
{
	char buf[8192];
	size_t o = 0;
	for (uint32_t f = s->step_off[st]; f < s->step_off[st + 1]; f++) {
		if (o > sizeof(buf) - 40) {
			evbuffer_add(out, buf, o);
			o = 0;
		}
		if (s->blk)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %u:%u:%u", s->src[f], s->dst[f], s->blk[f]);
		else
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %u:%u", s->src[f], s->dst[f]);
	}
	evbuffer_add(out, buf, o);
}

void answer_schedule(struct qctx *c)
{
	const struct proto_req *r = c->req;
	struct sched_req req = { .conflicts = 1 };
	unsigned long flows = 1, v;
	size_t i = 1;
	uint32_t *rh = NULL;
	struct sched *s = NULL;
	char err[AN_ERR_LEN];
	if (sched_algo_parse(r->argv[0], &req.algo)) {
		query_error(c->out, "USAGE", "unknown algorithm '%.40s' (xor, tacs1, tacs2, opt, allgather)", r->argv[0]);
		return;
	}
	for (; i < r->argc && strchr(r->argv[i], '='); i++) {
		const char *a = r->argv[i], *eq = strchr(a, '=');
		size_t kl = (size_t)(eq - a);
		if (kl == 9 && !strncmp(a, "conflicts", 9) && !parse_uint(eq + 1, SCHED_CONFLICTS_MAX, &v)) {
			req.conflicts = (unsigned)v;
		} else if (kl == 1 && a[0] == 'k' && !parse_uint(eq + 1, 1u << 14, &v)) {
			req.k = (unsigned)v;
		} else if (kl == 5 && !strncmp(a, "flows", 5) && !parse_uint(eq + 1, 1, &v)) {
			flows = v;
		} else if (kl == 8 && !strncmp(a, "sparsity", 8)) {
			char *end;
			double d = strtod(eq + 1, &end);
			if (*end || !(d >= 0 && d <= 1e6)) {
				query_error(c->out, "USAGE", "sparsity must be a number 0..1e6");
				return;
			}
			req.sparsity = d;
		} else {
			query_error(c->out, "USAGE", "bad option '%.60s' (conflicts=0..%d, sparsity=X, k=N, flows=0|1)", a,
				    SCHED_CONFLICTS_MAX);
			return;
		}
	}
	if (i == r->argc) {
		query_error(c->out, "USAGE", "no ranks: schedule ALGO [OPTION=V ...] HOST[*N] ...");
		return;
	}
	/* Count first (bounded), then resolve each distinct argument once. */
	size_t P = 0;
	for (size_t a = i; a < r->argc; a++) {
		const char *star = strchr(r->argv[a], '*');
		unsigned long n = 1;
		if (star && (parse_uint(star + 1, TOPO_RANKS_MAX, &n) || !n)) {
			query_error(c->out, "USAGE", "bad rank count in '%.60s' (HOST*N, N = 1..%d)", r->argv[a],
				    TOPO_RANKS_MAX);
			return;
		}
		P += n;
		if (P > TOPO_RANKS_MAX) {
			query_error(c->out, "TOOMANY", "more than %d ranks", TOPO_RANKS_MAX);
			return;
		}
	}
	if (P < 2) {
		query_error(c->out, "USAGE", "a schedule needs at least 2 ranks");
		return;
	}
	if (P > SCHED_RANKS_MAX) {
		query_error(c->out, "TOOMANY", "a schedule holds every ordered pair: at most %d ranks", SCHED_RANKS_MAX);
		return;
	}
	rh = malloc(P * sizeof(*rh));
	if (!rh) {
		query_error(c->out, "NOMEM", "no memory for %zu ranks", P);
		return;
	}
	size_t p = 0;
	for (size_t a = i; a < r->argc; a++) {
		char name[TOPO_QUERY_NAME_MAX + 1];
		const char *arg = r->argv[a], *star = strchr(arg, '*');
		size_t len = star ? (size_t)(star - arg) : strlen(arg);
		unsigned long n = 1;
		if (star)
			parse_uint(star + 1, TOPO_RANKS_MAX, &n);
		if (!len || len > TOPO_QUERY_NAME_MAX) {
			query_error(c->out, "USAGE", "bad host name in '%.60s'", arg);
			goto out;
		}
		memcpy(name, arg, len);
		name[len] = 0;
		int64_t h = qctx_host_of(c, name);
		if (h < 0)
			goto out;
		for (unsigned long x = 0; x < n; x++)
			rh[p++] = (uint32_t)h;
	}
	req.nranks = (uint32_t)P;
	req.rank_host = rh;
	int rc = sched_build(c->rt, c->h, &req, c->threads, &s, err);
	if (rc) {
		query_error(c->out,
			    rc == AN_E_NOTAPPLIC ? "NOTAPPLICABLE"
			    : rc == AN_E_ROUTE   ? "NOROUTE"
			    : rc == AN_E_NOMEM   ? "NOMEM"
			    : rc == AN_E_INVAL   ? "USAGE"
						    : "INTERNAL",
			    "%s", err);
		goto out;
	}
	uint32_t levels = s->nlevels ? s->nlevels - 1 : 0;
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " algo=%s requested=%s ranks=%u steps=%u multi=%d host_steps=%u "
			    "extra_steps=%u levels=%u flows=%lu fallback=%s lines=%u\n",
			    c->gen, sched_algo_name(s->algo), sched_algo_name(req.algo), s->nranks, s->nsteps, s->multi,
			    s->host_steps, s->extra_steps, levels, flows, s->note[0] ? "xor" : "none",
			    s->nsteps + levels + (s->nlevels ? 1 : 0));
	if (s->nlevels) {
		evbuffer_add_printf(c->out, "TREE routes=%s M=", s->tree_routes ? "tree" : "other");
		for (uint32_t l = 0; l < s->nlevels; l++)
			evbuffer_add_printf(c->out, "%s%u", l ? "," : "", s->M[l]);
		evbuffer_add(c->out, "\n", 1);
		for (uint32_t l = 1; l < s->nlevels; l++)
			evbuffer_add_printf(c->out, "LEVEL %u bmin=%u cables=%u bound=%u\n", l, s->bmin[l], s->cables[l],
					    s->cable_bound[l]);
	}
	for (uint32_t st = 0; st < s->nsteps; st++) {
		const struct sched_fig *fg = &s->fig[st];
		evbuffer_add_printf(c->out, "STEP %u %u %u %u %u", st, fg->flows, fg->maxload, fg->conflicts,
				    fg->fabric_conflicts);
		if (s->nlevels) {
			evbuffer_add(c->out, " L", 2);
			for (uint32_t l = 1; l < s->nlevels; l++)
				evbuffer_add_printf(c->out, "%s%u", l > 1 ? "," : "", s->level_max[(size_t)st * s->nlevels + l]);
		}
		if (flows)
			put_flows(c->out, s, st);
		evbuffer_add(c->out, "\n", 1);
	}
out:
	sched_free(s);
	free(rh);
}
