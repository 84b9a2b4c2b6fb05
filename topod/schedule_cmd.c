/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule_cmd.c - the `schedule` command (docs/protocol.md): parses the
 * request, runs sched_build() on the request's generation, writes the reply.
 *
 *   schedule ALGO [conflicts=N] [sparsity=X] [k=N] [flows=0|1] [bytes=B] [fallback=0|1] [form=ranks|hosts] RANK ...
 *
 * ALGO: the all-to-all schedules (xor tacs1 tacs2 opt route) or the
 * allgathers (allgather = kPrefix, kshift, agring, ring, agbest).
 *
 * RANK is HOST (one rank) or HOST*N (N consecutive ranks on HOST); ranks are
 * numbered in list order. At most SCHED_RANKS_MAX ranks (the schedule holds
 * all P(P-1) flows in memory, 128 MiB at 4,096); flows=0 leaves them out of
 * the reply.
 *
 * form=hosts: the schedule is built compact (schedule.h: no rank flows,
 * figures per host pair) and sent as host steps that the client expands by
 * the rule in docs/protocol.md, so memory and reply grow with hosts^2, not
 * ranks^2 (TOPO_SCHED_HOSTS_MAX for TACS). form=ranks lists rank flows, at
 * most TOPO_SCHED_RANK_FLOWS_MAX of them (ERR TOOBIG above).
 *
 * Advice (docs/cost-model.md): the reply carries the schedule's predicted
 * time for blocks of B bytes, XOR's and the all-at-once bound's. With
 * fallback=1 (the default) topod never answers an algorithm its model
 * predicts slower than XOR (it answers XOR, reason=slower), nor OPT whose
 * steps break their per-cable bound on the real routes (NOTAPPLICABLE);
 * fallback=0 answers what was asked, for inspection. The allgathers are
 * judged against RING, the MPIs' own ring in rank order (ring_time_us,
 * fallback=ring), and list the variants considered (variants=).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "cmd.h"
#include "query.h"
#include "schedule.h"
#include "topo_limits.h"
#include "util.h"

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	uint64_t x;
	if (util_parse_u64(s, NULL, max, &x))
		return -1;
	*v = (unsigned long)x;
	return 0;
}

/* OPTION=V with V a whole number lo..hi: 0, or -1 with ERR USAGE naming
 * the option and its range (never a value wrapped or clamped into it). */
static int option_uint(struct qctx *c, const char *a, const char *v, unsigned long lo, unsigned long hi,
		       unsigned long *out)
{
	if (parse_uint(v, hi, out) || *out < lo) {
		/* the byte limit by its name, as load, pick and map give it */
		query_error(c->out, "USAGE", "%.60s: %.*s must be a whole number %lu..%lu%s", a, (int)(v - 1 - a), a,
			    lo, hi, hi == TOPO_MSG_BYTES_MAX ? " (2^53)" : "");
		return -1;
	}
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

/* A parsed request: ALGO and options, then ranks from argv[first] on. */
struct sched_args {
	struct sched_req req;
	unsigned long flows;
	unsigned long bytes;     /* per block, for the predictions */
	unsigned long fallback;  /* 1: advice (never slower than XOR), 0: as asked */
	unsigned long window;    /* steps in flight the client keeps (0: auto, the fastest predicted) */
	int native;              /* native=MODEL: the MPI's own Alltoall is the baseline (-1: XOR) */
	int hosts;               /* form=hosts */
	size_t first;
	size_t P;
};

/* Blocks of 1 MiB unless asked: the size at which MPI libraries run their
 * pairwise (XOR) all-to-all, the baseline. */
#define SCHED_BYTES_DEFAULT (1ul << 20)

/* ALGO and the OPTION=V arguments that follow it. 0, or -1 with the error
 * written. */
static int parse_options(struct qctx *c, struct sched_args *sa)
{
	const struct proto_req *r = c->req;
	unsigned long v;
	size_t i = 1;
	if (sched_algo_parse(r->argv[0], &sa->req.algo)) {
		query_error(c->out, "USAGE", "unknown algorithm '%.40s' (xor, tacs1, tacs2, opt, allgather, route, kshift, agring, ring, agbest)",
			    r->argv[0]);
		return -1;
	}
	for (; i < r->argc && strchr(r->argv[i], '='); i++) {
		const char *a = r->argv[i], *eq = strchr(a, '=');
		size_t kl = (size_t)(eq - a);
		const char *val = eq + 1;
		if (kl == 9 && !strncmp(a, "conflicts", 9)) {
			if (option_uint(c, a, val, 0, SCHED_CONFLICTS_MAX, &v))
				return -1;
			sa->req.conflicts = (unsigned)v;
		} else if (kl == 1 && a[0] == 'k') {
			if (option_uint(c, a, val, 0, TOPO_SCHED_K_MAX, &v))
				return -1;
			sa->req.k = (unsigned)v;
		} else if (kl == 5 && !strncmp(a, "flows", 5)) {
			if (option_uint(c, a, val, 0, 1, &sa->flows))
				return -1;
		} else if (kl == 5 && !strncmp(a, "bytes", 5)) {
			if (option_uint(c, a, val, 1, TOPO_MSG_BYTES_MAX, &sa->bytes))
				return -1;
		} else if (kl == 8 && !strncmp(a, "fallback", 8)) {
			if (option_uint(c, a, val, 0, 1, &sa->fallback))
				return -1;
		} else if (kl == 6 && !strncmp(a, "window", 6)) {
			if (!strcmp(val, "auto"))
				v = 0;
			else if (option_uint(c, a, val, 1, ADVICE_WINDOW_MAX, &v))
				return -1;
			sa->window = v;
		} else if (kl == 6 && !strncmp(a, "native", 6)) {
			enum native_model m;
			if (native_model_parse(eq + 1, &m)) {
				query_error(c->out, "USAGE", "native=%.40s: smpi-ompi, smpi-mpich, ompi or mpich", eq + 1);
				return -1;
			}
			sa->native = (int)m;
		} else if (kl == 4 && !strncmp(a, "form", 4) && (!strcmp(eq + 1, "hosts") || !strcmp(eq + 1, "ranks"))) {
			sa->hosts = !strcmp(eq + 1, "hosts");
		} else if (kl == 8 && !strncmp(a, "sparsity", 8)) {
			char *end;
			double d = strtod(eq + 1, &end);
			if (*end || !(d >= 0 && d <= 1e6)) {
				query_error(c->out, "USAGE", "%.60s: sparsity must be a number 0..1e6", a);
				return -1;
			}
			sa->req.sparsity = d;
		} else {
			query_error(c->out, "USAGE",
				    "bad option '%.60s' (conflicts=0..%d, sparsity=X, k=N, flows=0|1, bytes=1..2^53, fallback=0|1, "
				    "window=1..%d|auto, native=MODEL, form=ranks|hosts)",
				    a, SCHED_CONFLICTS_MAX, ADVICE_WINDOW_MAX);
			return -1;
		}
	}
	sa->first = i;
	return 0;
}

/* The number of ranks, bounded before any host is looked up. 0, or -1
 * with the error written. */
static int count_ranks(struct qctx *c, struct sched_args *sa)
{
	const struct proto_req *r = c->req;
	if (sa->first == r->argc) {
		query_error(c->out, "USAGE", "no ranks: schedule ALGO [OPTION=V ...] HOST[*N] ...");
		return -1;
	}
	size_t P = 0;
	for (size_t a = sa->first; a < r->argc; a++) {
		const char *star = strchr(r->argv[a], '*');
		unsigned long n = 1;
		if (star && (parse_uint(star + 1, TOPO_RANKS_MAX, &n) || !n)) {
			query_error(c->out, "USAGE", "bad rank count in '%.60s' (HOST*N, N = 1..%d)", r->argv[a],
				    TOPO_RANKS_MAX);
			return -1;
		}
		P += n;
		if (P > TOPO_RANKS_MAX) {
			query_error(c->out, "TOOMANY", "more than %d ranks", TOPO_RANKS_MAX);
			return -1;
		}
	}
	if (P < 2) {
		query_error(c->out, "USAGE", "a schedule needs at least 2 ranks");
		return -1;
	}
	if (P > SCHED_RANKS_MAX) {
		query_error(c->out, "TOOMANY", "a schedule holds every ordered pair: at most %d ranks", SCHED_RANKS_MAX);
		return -1;
	}
	/* A block may be up to 2^53 bytes, but the exchange's total (what the
	 * bound's load adds up) must not wrap: topo_limits.h. */
	uint64_t total;
	if (__builtin_mul_overflow((uint64_t)P * (P - 1), (uint64_t)sa->bytes, &total) || total > TOPO_BYTES_TOTAL_MAX) {
		query_error(c->out, "RANGE", "%zu ranks x %zu others x bytes=%lu total more than 2^62 bytes: fewer bytes or ranks",
			    P, P - 1, sa->bytes);
		return -1;
	}
	sa->P = P;
	return 0;
}

/* The host of every rank, each argument resolved once; NULL with the error
 * written. */
static uint32_t *resolve_ranks(struct qctx *c, const struct sched_args *sa)
{
	const struct proto_req *r = c->req;
	uint32_t *rh = malloc(sa->P * sizeof(*rh));
	if (!rh) {
		query_error(c->out, "NOMEM", "no memory for %zu ranks", sa->P);
		return NULL;
	}
	size_t p = 0;
	for (size_t a = sa->first; a < r->argc; a++) {
		char name[TOPO_QUERY_NAME_MAX + 1];
		const char *arg = r->argv[a], *star = strchr(arg, '*');
		size_t len = star ? (size_t)(star - arg) : strlen(arg);
		unsigned long n = 1;
		if (star)
			parse_uint(star + 1, TOPO_RANKS_MAX, &n);
		if (!len || len > TOPO_QUERY_NAME_MAX) {
			query_error(c->out, "USAGE", "bad host name in '%.60s'", arg);
			free(rh);
			return NULL;
		}
		memcpy(name, arg, len);
		name[len] = 0;
		int64_t h = qctx_host_of(c, name);
		if (h < 0) {
			free(rh);
			return NULL;
		}
		for (unsigned long x = 0; x < n; x++)
			rh[p++] = (uint32_t)h;
	}
	return rh;
}

/* The bounds on one request's memory (topo_limits.h), now that its hosts
 * are known; sets the compact build where no rank flows are listed. 0, or
 * -1 with the error written. */
static int check_size(struct qctx *c, struct sched_args *sa, const uint32_t *rh)
{
	enum sched_algo al = sa->req.algo;
	sa->req.compact = sa->hosts || !sa->flows;
	uint64_t flows = (uint64_t)sa->P * (sa->P - 1);
	/* OPT and route choose rank by rank: they have no host-level form */
	int ranks_only = al == SCHED_OPT || al == SCHED_ROUTE;
	if ((!sa->req.compact || ranks_only) && flows > TOPO_SCHED_RANK_FLOWS_MAX) {
		query_error(c->out, "TOOBIG", "a rank-level schedule of %zu ranks holds %" PRIu64 " flows (at most %u): ask form=hosts%s",
			    sa->P, flows, TOPO_SCHED_RANK_FLOWS_MAX,
			    ranks_only ? (al == SCHED_OPT ? " (opt has no host-level form)" : " (route has no host-level form)") : "");
		return -1;
	}
	if (al != SCHED_TACS1 && al != SCHED_TACS2)
		return 0;
	uint8_t *seen = calloc(c->rt->nhosts + 1, 1);
	size_t H = 0;
	if (!seen) {
		query_error(c->out, "NOMEM", "no memory");
		return -1;
	}
	for (size_t r = 0; r < sa->P; r++)
		H += !seen[rh[r]]++;
	free(seen);
	if (H > TOPO_SCHED_HOSTS_MAX) {
		query_error(c->out, "TOOBIG", "%s on %zu hosts (at most %d): it holds and sends every host pair",
			    sched_algo_name(al), H, TOPO_SCHED_HOSTS_MAX);
		return -1;
	}
	return 0;
}

/* The schedule and its advice on the request's generation (advice.h); NULL
 * with the error written. */
static struct sched *compute(struct qctx *c, const struct sched_args *sa, struct advice *v)
{
	struct sched *s = NULL;
	char err[AN_ERR_LEN];
	struct advice_opts o = { .bytes = sa->bytes, .fallback = (int)sa->fallback, .threads = c->threads,
				 .window = (uint32_t)sa->window, .native = sa->native };
	int rc = advice_schedule_opts(c->rt, c->h, &sa->req, &o, &s, v, err);
	if (rc) {
		query_error(c->out,
			    rc == AN_E_NOTAPPLIC ? "NOTAPPLICABLE"
			    : rc == AN_E_ROUTE   ? "NOROUTE"
			    : rc == AN_E_NOMEM   ? "NOMEM"
			    : rc == AN_E_INVAL   ? "USAGE"
			    : rc == AN_E_CANCEL  ? "TIMEOUT"
						    : "INTERNAL",
			    "%s", err);
		return NULL;
	}
	return s;
}

static void put_us(struct evbuffer *out, const char *key, double t)
{
	if (t < 0)
		evbuffer_add_printf(out, " %s=-", key);
	else
		evbuffer_add_printf(out, " %s=%.3f", key, t * 1e6);
}

/* KSHIFT and AGRING: the job hosts in ring order (their ranks follow each
 * other in it, in rank order), for the client's expansion. */
static void put_order(struct evbuffer *out, const struct sched *s)
{
	/* on the stack: the OK line counted this line, it cannot fail now */
	uint8_t seen[SCHED_RANKS_MAX + 1] = { 0 };
	char buf[8192];
	size_t o = (size_t)snprintf(buf, sizeof(buf), "ORDER");
	for (uint32_t p = 0; p < s->nranks && s->nhosts <= SCHED_RANKS_MAX; p++) {
		uint32_t a = s->rank_jhost[s->ord[p]];
		if (seen[a]++)
			continue;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %u", a);
		if (o > sizeof(buf) - 16) {
			evbuffer_add(out, buf, o);
			o = 0;
		}
	}
	evbuffer_add(out, buf, o);
	evbuffer_add(out, "\n", 1);
}

static int has_order(const struct sched *s)
{
	return s->algo == SCHED_KSHIFT || s->algo == SCHED_AGRING;
}

/* form=hosts (docs/protocol.md): the job host of each RANK argument, the
 * ring order (KSHIFT, AGRING), the rank steps' figures, TACS's host steps. */
static void reply_hosts(struct qctx *c, const struct sched *s, const struct sched_args *sa)
{
	const struct proto_req *r = c->req;
	char buf[8192];
	size_t o = 0, rank = 0;
	evbuffer_add(c->out, "JOB", 3);
	for (size_t a = sa->first; a < r->argc; a++) {
		const char *star = strchr(r->argv[a], '*');
		unsigned long n = 1;
		if (star)
			parse_uint(star + 1, TOPO_RANKS_MAX, &n);
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %u", s->rank_jhost[rank]);
		rank += n;
		if (o > sizeof(buf) - 16) {
			evbuffer_add(c->out, buf, o);
			o = 0;
		}
	}
	evbuffer_add(c->out, buf, o);
	evbuffer_add(c->out, "\n", 1);
	if (has_order(s))
		put_order(c->out, s);
	for (uint32_t st = 0; st < s->nsteps; st++) {
		const struct sched_fig *fg = &s->fig[st];
		evbuffer_add_printf(c->out, "STEP %u %u %u %u %u\n", st, fg->flows, fg->maxload, fg->conflicts,
				    fg->fabric_conflicts);
	}
	for (uint32_t h = 0; h < s->nhsteps; h++) {
		o = (size_t)snprintf(buf, sizeof(buf), "HSTEP %u", h);
		for (uint32_t f = s->hstep_off[h]; f < s->hstep_off[h + 1]; f++) {
			if (o > sizeof(buf) - 32) {
				evbuffer_add(c->out, buf, o);
				o = 0;
			}
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %u:%u", s->hsrc[f], s->hdst[f]);
		}
		evbuffer_add(c->out, buf, o);
		evbuffer_add(c->out, "\n", 1);
	}
}

/* variants=NAME:STATE:TIME_US,... (the allgathers considered), or none. */
static void put_variants(struct evbuffer *out, const struct advice *v)
{
	static const char *const state[] = { "offered", "slower", "notapplicable" };
	evbuffer_add_printf(out, " variants=%s", v->nvar ? "" : "none");
	for (uint32_t i = 0; i < v->nvar; i++) {
		const struct advice_variant *x = &v->var[i];
		evbuffer_add_printf(out, "%s%s:%s:", i ? "," : "", sched_algo_name(x->algo), state[x->state]);
		if (x->time < 0)
			evbuffer_add(out, "-", 1);
		else
			evbuffer_add_printf(out, "%.3f", x->time * 1e6);
	}
}

/* The OK line, the tree (OPT), one STEP line per step. */
static void reply(struct qctx *c, const struct sched *s, const struct sched_args *sa, const struct advice *v)
{
	uint32_t levels = s->nlevels ? s->nlevels - 1 : 0;
	int ag = sched_is_allgather(sa->req.algo);
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " algo=%s requested=%s ranks=%u steps=%u multi=%d host_steps=%u "
			    "extra_steps=%u tiers=%u flows=%lu fallback=%s reason=%s bytes=%lu",
			    c->gen, sched_algo_name(s->algo), sched_algo_name(sa->req.algo), s->nranks, s->nsteps,
			    s->multi, s->host_steps, s->extra_steps, levels, sa->flows,
			    v->native_faster ? "native" : s->note[0] || v->slower ? (ag ? "ring" : "xor") : "none",
			    v->slower || v->native_faster ? "slower" : s->note[0] ? "sparse" : "none", sa->bytes);
	put_us(c->out, "time_us", v->time);
	put_us(c->out, "xor_time_us", v->xor_time);
	if (ag)
		put_us(c->out, "ring_time_us", v->ring_time);
	put_us(c->out, "bound_us", v->bound);
	if (ag)
		put_variants(c->out, v);
	else
		evbuffer_add_printf(c->out, " window=%u", v->window);
	if (v->native >= 0) {
		evbuffer_add_printf(c->out, " native=%s native_algo=%s", native_model_name((enum native_model)v->native),
				    native_algo_name(v->nat.algo));
		if (v->nat.algo == NATIVE_SCATTER)
			evbuffer_add_printf(c->out, ":%u", v->nat.throttle);
		put_us(c->out, "native_time_us", v->native_time);
	}
	if (sa->hosts && s->compact) {
		evbuffer_add_printf(c->out, " form=hosts hosts=%u hsteps=%u k=%u lines=%u\n", s->nhosts, s->nhsteps, s->k,
				    1 + has_order(s) + s->nsteps + s->nhsteps);
		reply_hosts(c, s, sa);
		return;
	}
	if (sa->hosts)
		evbuffer_add(c->out, " form=ranks", 11);
	evbuffer_add_printf(c->out, " lines=%u\n", s->nsteps + levels + (s->nlevels ? 1 : 0));
	if (s->nlevels) {
		evbuffer_add_printf(c->out, "TREE routes=%s M=", s->tree_routes ? "tree" : "other");
		for (uint32_t l = 0; l < s->nlevels; l++)
			evbuffer_add_printf(c->out, "%s%u", l ? "," : "", s->M[l]);
		evbuffer_add(c->out, "\n", 1);
		for (uint32_t l = 1; l < s->nlevels; l++)
			evbuffer_add_printf(c->out, "TIER %u bmin=%u cables=%u bound=%u\n", l, s->bmin[l], s->cables[l],
					    s->cable_bound[l]);
	}
	for (uint32_t st = 0; st < s->nsteps; st++) {
		const struct sched_fig *fg = &s->fig[st];
		evbuffer_add_printf(c->out, "STEP %u %u %u %u %u", st, fg->flows, fg->maxload, fg->conflicts,
				    fg->fabric_conflicts);
		if (s->nlevels) {
			evbuffer_add(c->out, " T", 2);
			for (uint32_t l = 1; l < s->nlevels; l++)
				evbuffer_add_printf(c->out, "%s%u", l > 1 ? "," : "", s->level_max[(size_t)st * s->nlevels + l]);
		}
		if (sa->flows && s->src)
			put_flows(c->out, s, st);
		evbuffer_add(c->out, "\n", 1);
	}
}

void answer_schedule(struct qctx *c)
{
	struct sched_args sa = { .req = { .conflicts = 1 }, .flows = 1, .bytes = SCHED_BYTES_DEFAULT, .fallback = 1,
				 .window = 1, .native = -1 };
	if (parse_options(c, &sa) || count_ranks(c, &sa))
		return;
	uint32_t *rh = resolve_ranks(c, &sa);
	if (!rh)
		return;
	if (check_size(c, &sa, rh)) {
		free(rh);
		return;
	}
	sa.req.nranks = (uint32_t)sa.P;
	sa.req.rank_host = rh;
	sa.req.cancel = c->cancel;
	struct advice v;
	struct sched *s = compute(c, &sa, &v);
	if (s)
		reply(c, s, &sa, &v);
	sched_free(s);
	free(rh);
}
