/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule.c - all-to-all schedules and their per-step link figures; see
 * schedule.h. What every algorithm shares: the job's routes, the flow
 * store, the figures, the overlap time, the checker and the predictions,
 * and the table of algorithms through which sched_build runs each one (its
 * own file: sched_impl.h lists them).
 */
#include "sched_impl.h"

#include "cost.h"
#include "rate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include <sys/mman.h>

int sched_fail(char err[AN_ERR_LEN], int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, AN_ERR_LEN, fmt, ap);
	va_end(ap);
	return code;
}

/* ---- the algorithms: one row each, the only place their names are written -- */

static const struct sched_algo_row algos[] = {
	/* name        algo             flags              held build                finish              expand */
	{ "xor",       SCHED_XOR,       0,                 1,   sched_build_xor,     NULL,               sched_expand_xor },
	{ "tacs1",     SCHED_TACS1,     SCHED_F_TACS,      2,   sched_build_tacs,    NULL,               sched_expand_tacs },
	{ "tacs2",     SCHED_TACS2,     SCHED_F_TACS,      2,   sched_build_tacs,    NULL,               sched_expand_tacs },
	{ "opt",       SCHED_OPT,       0,                 2,   sched_build_opt,     NULL,               NULL },
	{ "allgather", SCHED_ALLGATHER, SCHED_F_ALLGATHER, 2,   sched_build_kprefix, NULL,               sched_expand_kprefix },
	{ "route",     SCHED_ROUTE,     SCHED_F_SEARCH,    2,   sched_build_route,   sched_finish_route, NULL },
	{ "kshift",    SCHED_KSHIFT,    SCHED_F_ALLGATHER, 2,   sched_build_shift,   NULL,               sched_expand_shift },
	{ "agring",    SCHED_AGRING,    SCHED_F_ALLGATHER, 2,   sched_build_shift,   NULL,               sched_expand_shift },
	{ "ring",      SCHED_RING,      SCHED_F_ALLGATHER, 1,   sched_build_shift,   NULL,               sched_expand_shift },
	{ "agbest",    SCHED_AGBEST,    SCHED_F_ALLGATHER, 3,   NULL,                NULL,               NULL },
};
#define NALGOS (sizeof(algos) / sizeof(*algos))

const struct sched_algo_row *sched_algo_row(enum sched_algo a)
{
	for (size_t i = 0; i < NALGOS; i++)
		if (algos[i].algo == a)
			return &algos[i];
	return NULL;
}

int sched_is_allgather(enum sched_algo a)
{
	const struct sched_algo_row *w = sched_algo_row(a);
	return w && (w->flags & SCHED_F_ALLGATHER);
}

const char *sched_algo_name(enum sched_algo a)
{
	const struct sched_algo_row *w = sched_algo_row(a);
	return w ? w->name : "?";
}

int sched_algo_props(const char *name, struct sched_algo_props *out)
{
	enum sched_algo a;
	if (sched_algo_parse(name, &a))
		return AN_E_INVAL;
	const struct sched_algo_row *w = sched_algo_row(a);
	/* a rank-form flow is its src and dst, and an allgather's block */
	uint32_t flow = w->flags & SCHED_F_ALLGATHER ? 3 * sizeof(uint32_t) : 2 * sizeof(uint32_t);
	*out = (struct sched_algo_props){
		.algo = a,
		.allgather = !!(w->flags & SCHED_F_ALLGATHER),
		.tacs = !!(w->flags & SCHED_F_TACS),
		.search = !!(w->flags & SCHED_F_SEARCH),
		/* sched_build: a row that builds but cannot expand has no compact form */
		.ranks_only = w->build && !w->expand,
		.pair_bytes = w->held * flow,
	};
	return AN_OK;
}

int sched_algo_parse(const char *s, enum sched_algo *a)
{
	for (size_t i = 0; i < NALGOS; i++)
		if (!strcmp(s, algos[i].name)) {
			*a = algos[i].algo;
			return AN_OK;
		}
	return AN_E_INVAL;
}

/* ---- the job: hosts, their ranks, and the directed links of every host pair -- */

static void job_free(struct job *j)
{
	free(j->jh);
	free(j->hrank_off);
	free(j->hrank);
	free(j->host);
	free(j->group);
	free(j->rep);
	free(j->cable);
	free(j->path_off);
	free(j->links);
	free(j->fabric);
	free(j->bps);
}

/* Scratch of job_build, indexed by the fabric, not the job. */
struct jscratch {
	uint32_t *hmap;  /* [rt->nhosts] job host of a route_tab host, or NONE */
	uint32_t *slot;  /* [s->nports] dense link id of a (node, port) slot, or NONE */
	uint32_t *leafg; /* [s->nnodes] leaf group of a leaf switch, or NONE */
	size_t lcap;     /* capacity of j->fabric */
};

/* Job hosts in order of first appearance among the ranks. */
static int job_hosts(struct job *j, const struct sched_req *req, uint32_t *hmap, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	for (uint32_t r = 0; r < j->P; r++) {
		uint32_t h = req->rank_host[r];
		if (h >= rt->nhosts)
			return sched_fail(err, AN_E_INVAL, "rank %u: host index %u out of range", r, h);
		if (hmap[h] == NONE) {
			hmap[h] = j->H;
			j->host[j->H++] = h;
		}
		j->jh[r] = hmap[h];
	}
	return AN_OK;
}

/* The ranks of each job host, in rank order (a counting sort). */
static int job_ranks(struct job *j)
{
	uint32_t H = j->H;
	j->hrank_off = calloc((size_t)H + 1, sizeof(*j->hrank_off));
	j->hrank = malloc((size_t)j->P * sizeof(*j->hrank));
	uint32_t *fill = calloc(H, sizeof(*fill));
	if (!j->hrank_off || !j->hrank || !fill) {
		free(fill);
		return AN_E_NOMEM;
	}
	for (uint32_t r = 0; r < j->P; r++)
		j->hrank_off[j->jh[r] + 1]++;
	for (uint32_t a = 0; a < H; a++)
		j->hrank_off[a + 1] += j->hrank_off[a];
	for (uint32_t r = 0; r < j->P; r++)
		j->hrank[j->hrank_off[j->jh[r]] + fill[j->jh[r]]++] = r;
	free(fill);
	return AN_OK;
}

/* Dense link id of slot sl, numbered in order of first use. */
static int job_dense(struct job *j, struct jscratch *sc, uint32_t node, unsigned port, uint8_t isfab, uint32_t *id)
{
	const struct snap *s = j->rt->snap;
	uint32_t sl = s->nodes[node].port0 + port;
	if (sc->slot[sl] == NONE) {
		if (j->nlinks == sc->lcap) {
			uint8_t *nf = realloc(j->fabric, sc->lcap * 2);
			if (!nf)
				return AN_E_NOMEM;
			j->fabric = nf;
			uint64_t *nb = realloc(j->bps, sc->lcap * 2 * sizeof(*nb));
			if (!nb)
				return AN_E_NOMEM;
			j->bps = nb;
			sc->lcap *= 2;
		}
		j->fabric[j->nlinks] = isfab;
		j->bps[j->nlinks] = rate_cable_bps(s, node, port);
		sc->slot[sl] = j->nlinks++;
	}
	*id = sc->slot[sl];
	return AN_OK;
}

/* Each host's own cable and leaf group; a host whose default port is down
 * or has no LID cannot take part. */
static int job_cables(struct job *j, struct jscratch *sc, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	uint32_t H = j->H;
	j->group = malloc((size_t)H * sizeof(*j->group));
	j->rep = malloc((size_t)H * sizeof(*j->rep));
	j->cable = malloc((size_t)H * sizeof(*j->cable));
	sc->lcap = 1024;
	j->fabric = malloc(sc->lcap);
	j->bps = malloc(sc->lcap * sizeof(*j->bps));
	if (!j->group || !j->rep || !j->cable || !j->fabric || !j->bps)
		return AN_E_NOMEM;
	for (uint32_t a = 0; a < H; a++) {
		uint32_t ep = route_host_ep(rt, j->host[a]);
		const struct route_ep *e = &rt->eps[ep];
		if (e->up != AN_OK || e->lid == 0)
			return sched_fail(err, AN_E_ROUTE, "host %s: default port %s", rt->hosts[j->host[a]].name,
				    e->lid ? an_strerror(e->up) : "has no LID");
		if (job_dense(j, sc, e->node, e->port, 0, &j->cable[a]))
			return AN_E_NOMEM;
		if (sc->leafg[e->leaf] == NONE) {
			sc->leafg[e->leaf] = j->ngroups;
			j->rep[j->ngroups++] = a;
		}
		j->group[a] = sc->leafg[e->leaf];
	}
	return AN_OK;
}

/* Appends the links of the route from end port ep (group g's) to host b at
 * j->links[*n ..]. */
static int job_path(struct job *j, struct jscratch *sc, uint32_t g, uint32_t ep, uint32_t b, size_t *n,
		    size_t *cap, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	struct route_hop hops[64];
	uint16_t dl = rt->eps[route_host_ep(rt, j->host[b])].lid;
	struct route_res res;
	int w = route_walk(rt, ep, dl, hops, 64, &res);
	if (w == AN_OK && res.hops > 64)
		w = AN_E_RANGE;
	if (w != AN_OK)
		return sched_fail(err, AN_E_ROUTE, "route %s -> %s: %s", rt->hosts[j->host[j->rep[g]]].name,
			    rt->hosts[j->host[b]].name, an_strerror(w));
	if (*n + res.hops > *cap) {
		*cap = *cap * 2 + res.hops;
		uint32_t *nl = realloc(j->links, *cap * sizeof(*nl));
		if (!nl)
			return AN_E_NOMEM;
		j->links = nl;
	}
	for (uint32_t k = 0; k < res.hops; k++) {
		uint32_t sw = rt->sw_of_node[hops[k].node];
		int isfab = sw != ROUTE_NONE && rt->pt[rt->pt_off[sw] + hops[k].out] < ROUTE_PT_EP;
		if (job_dense(j, sc, hops[k].node, hops[k].out, (uint8_t)isfab, &j->links[*n]))
			return AN_E_NOMEM;
		(*n)++;
	}
	return AN_OK;
}

/* The route from every leaf group to every job host. */
static int job_paths(struct job *j, struct jscratch *sc, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	uint32_t H = j->H;
	size_t npairs = (size_t)j->ngroups * H;
	j->path_off = malloc((npairs + 1) * sizeof(*j->path_off));
	size_t cap = npairs * 4 + 16, n = 0;
	j->links = malloc(cap * sizeof(*j->links));
	if (!j->path_off || !j->links)
		return AN_E_NOMEM;
	for (uint32_t g = 0; g < j->ngroups; g++) {
		/* Walk from the leaf switch itself (its port 0), so that the route
		 * to every host of the group, the first one included, is known. */
		uint32_t rep_ep = route_host_ep(rt, j->host[j->rep[g]]), ep = rep_ep;
		uint32_t lsw = rt->sw_of_node[rt->eps[rep_ep].leaf];
		if (lsw != ROUTE_NONE && rt->pt[rt->pt_off[lsw]] >= ROUTE_PT_EP && rt->pt[rt->pt_off[lsw]] < ROUTE_PT_DOWN)
			ep = rt->pt[rt->pt_off[lsw]] - ROUTE_PT_EP;
		for (uint32_t b = 0; b < H; b++) {
			j->path_off[(size_t)g * H + b] = (uint32_t)n;
			if (ep == rep_ep && b == j->rep[g])
				continue;
			int rc = job_path(j, sc, g, ep, b, &n, &cap, err);
			if (rc)
				return rc;
		}
	}
	j->path_off[npairs] = (uint32_t)n;
	return AN_OK;
}

static int job_build(struct job *j, const struct route_tab *rt, const struct sched_req *req,
		     char err[AN_ERR_LEN])
{
	memset(j, 0, sizeof(*j));
	j->rt = rt;
	j->P = req->nranks;
	const struct snap *s = rt->snap;
	struct jscratch sc = {
		.hmap = malloc((size_t)rt->nhosts * sizeof(*sc.hmap)),
		.slot = malloc((size_t)s->nports * sizeof(*sc.slot)),
		.leafg = malloc((size_t)s->nnodes * sizeof(*sc.leafg)),
	};
	j->jh = malloc((size_t)j->P * sizeof(*j->jh));
	j->host = malloc((size_t)j->P * sizeof(*j->host));
	int rc = AN_E_NOMEM;
	if (sc.hmap && sc.slot && sc.leafg && j->jh && j->host) {
		memset(sc.hmap, 0xff, (size_t)rt->nhosts * sizeof(*sc.hmap));
		memset(sc.slot, 0xff, (size_t)s->nports * sizeof(*sc.slot));
		memset(sc.leafg, 0xff, (size_t)s->nnodes * sizeof(*sc.leafg));
		rc = job_hosts(j, req, sc.hmap, err);
		if (!rc)
			rc = job_ranks(j);
		if (!rc)
			rc = job_cables(j, &sc, err);
		if (!rc)
			rc = job_paths(j, &sc, err);
	}
	if (rc == AN_E_NOMEM)
		sched_fail(err, rc, "no memory for a %u-rank job", j->P);
	free(sc.hmap);
	free(sc.slot);
	free(sc.leafg);
	return rc;
}

/* ---- schedule storage ------------------------------------------------------- */

/* Big flow arrays (a 4,096-rank exchange is 16.7M flows, 64 MiB per array)
 * ask for transparent huge pages: first-touch faults dominate otherwise. */
static uint32_t *big_alloc(size_t n)
{
	size_t bytes = (n + 1) * sizeof(uint32_t), huge = 2u << 20;
	if (bytes < 4 * huge)
		return malloc(bytes);
	void *p = NULL;
	if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge))
		return NULL;
	madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
	return p;
}

int sb_alloc(struct sbuild *b, size_t n)
{
	b->s->src = big_alloc(n);
	b->s->dst = big_alloc(n);
	int ag = sched_is_allgather(b->s->algo);
	if (ag)
		b->s->blk = big_alloc(n);
	if (!b->s->src || !b->s->dst || (ag && !b->s->blk))
		return AN_E_NOMEM;
	b->cap = n;
	return AN_OK;
}

int sb_step(struct sbuild *b)
{
	struct sched *s = b->s;
	if (b->n == s->step_off[s->nsteps])
		return AN_OK;
	if (s->nsteps + 1 >= b->scap) {
		uint32_t nc = b->scap * 2 + 64;
		uint32_t *no = realloc(s->step_off, (size_t)(nc + 1) * sizeof(*no));
		if (!no)
			return AN_E_NOMEM;
		s->step_off = no;
		b->scap = nc;
	}
	s->step_off[++s->nsteps] = (uint32_t)b->n;
	return AN_OK;
}

/* The host-cable bound of an allgather (schedule.h bound_s_per_byte). */
static double job_ag_bound(const struct job *j)
{
	double w = 0;
	for (uint32_t a = 0; a < j->H; a++) {
		uint64_t bps = j->bps[j->cable[a]];
		uint32_t blocks = j->P - (j->hrank_off[a + 1] - j->hrank_off[a]);
		if (!bps)
			return -1;
		if ((double)blocks * 8.0 / (double)bps > w)
			w = (double)blocks * 8.0 / (double)bps;
	}
	return w;
}

/* ---- figures --------------------------------------------------------------------------- */

/* The rank form and the compact form (sched_compact.c) both reduce a
 * step to runs of flows between two hosts, so one function gives both
 * their figures: the same step has the same figures in either form. */
void sched_step_fig(const struct job *j, const struct crun *run, uint32_t n, struct fig_work *w,
		    struct sched_fig *fg, const int8_t *lvl, uint32_t L, uint32_t *lmax)
{
	uint32_t nt = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = run[i].a, b = run[i].b;
		fg->flows += run[i].w;
		if (a == b)
			continue;
		uint32_t nl;
		const uint32_t *l = job_route(j, a, b, &nl);
		if (nl > fg->max_hops)
			fg->max_hops = nl;
		uint64_t pid = (uint64_t)a * j->H + b + 1;
		for (uint32_t k = 0; k <= nl; k++) {
			uint32_t id = k ? l[k - 1] : j->cable[a];
			if (!w->load[id])
				w->touched[nt++] = id;
			else if (w->lastp[id] != pid)
				w->shared[id] = 1;
			w->lastp[id] = pid;
			w->load[id] += run[i].w;
		}
	}
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t id = w->touched[i], v = w->load[id];
		if (v > fg->maxload)
			fg->maxload = v;
		/* the cost model (cost.h): the busiest cable by bytes over rate */
		if (!j->bps[id])
			fg->unrated = 1;
		else if ((double)v * 8.0 / (double)j->bps[id] > fg->s_per_byte)
			fg->s_per_byte = (double)v * 8.0 / (double)j->bps[id];
		if (w->shared[id]) {
			fg->conflicts++;
			fg->fabric_conflicts += j->fabric[id];
		}
		if (lvl) {
			int lv = lvl[id] < 0 ? -lvl[id] : lvl[id];
			if (lv > 0 && (uint32_t)lv < L && v > lmax[lv])
				lmax[lv] = v;
		}
		w->load[id] = 0;
		w->lastp[id] = 0;
		w->shared[id] = 0;
	}
}

/* Rank step st's runs of flows between the same two hosts (each run added
 * at once); *multi |= a rank sends or receives twice in the step (ss, rs:
 * step + 1 of each rank's last send and receive). Returns the runs. */
static uint32_t step_runs(const struct sched *s, const struct job *j, uint32_t st, struct crun *run, uint32_t *ss,
			  uint32_t *rs, int *multi)
{
	uint32_t n = 0, hi = s->step_off[st + 1];
	for (uint32_t f = s->step_off[st]; f < hi;) {
		uint32_t a = j->jh[s->src[f]], b = j->jh[s->dst[f]], w = 0;
		/* one pass: the run, and the exact multi flag */
		while (f < hi) {
			uint32_t x = s->src[f], y = s->dst[f];
			if (j->jh[x] != a || j->jh[y] != b)
				break;
			*multi |= ss[x] == st + 1 || rs[y] == st + 1;
			ss[x] = rs[y] = st + 1;
			w++;
			f++;
		}
		run[n++] = (struct crun){ a, b, w };
	}
	return n;
}

static int figures(struct sched *s, const struct job *j, const uint8_t *same, uint32_t samecap, int threads)
{
	int8_t *lvl = NULL;
	uint32_t L = s->nlevels;
	s->fig = calloc((size_t)s->nsteps + 1, sizeof(*s->fig));
	if (!s->fig)
		return AN_E_NOMEM;
	if (L) {
		lvl = calloc((size_t)j->nlinks + 1, 1);
		s->level_max = calloc((size_t)s->nsteps * L + 1, sizeof(*s->level_max));
		if (!lvl || !s->level_max || sched_opt_levels(s, j, lvl)) {
			free(lvl);
			return AN_E_NOMEM;
		}
	}
	int nt = threads > 0 ? threads : 1;
	int rc = AN_OK, multi = 0;
	uint32_t nlinks = j->nlinks, P = s->nranks, nrun = 0;
	for (uint32_t st = 0; st < s->nsteps; st++) /* a run holds at least one flow */
		if (s->step_off[st + 1] - s->step_off[st] > nrun)
			nrun = s->step_off[st + 1] - s->step_off[st];
#pragma omp parallel num_threads(nt) reduction(| : multi)
	{
		/* per link: the last host pair seen (a * H + b + 1) and whether a
		 * second, different pair came: "two nodes share the link" */
		struct fig_work w = {
			.load = calloc((size_t)nlinks + 1, sizeof(uint32_t)),
			.touched = malloc(((size_t)nlinks + 1) * sizeof(uint32_t)),
			.lastp = calloc((size_t)nlinks + 1, sizeof(uint64_t)),
			.shared = calloc((size_t)nlinks + 1, 1),
		};
		/* step + 1 of a rank's last send / receive: the exact multi flag */
		uint32_t *ss = calloc((size_t)P + 1, sizeof(*ss)), *rs = calloc((size_t)P + 1, sizeof(*rs));
		struct crun *run = malloc(((size_t)nrun + 1) * sizeof(*run));
		int ok = w.load && w.touched && w.lastp && w.shared && ss && rs && run;
		if (!ok) {
#pragma omp atomic write
			rc = AN_E_NOMEM;
		}
#pragma omp for schedule(dynamic, 8)
		for (uint32_t st = 0; st < s->nsteps; st++) {
			if (!ok || (same && st < samecap && same[st]))
				continue; /* same: copied below */
			uint32_t n = step_runs(s, j, st, run, ss, rs, &multi);
			sched_step_fig(j, run, n, &w, &s->fig[st], lvl, L, lvl ? s->level_max + (size_t)st * L : NULL);
		}
		free(w.load);
		free(w.touched);
		free(w.lastp);
		free(w.shared);
		free(ss);
		free(rs);
		free(run);
	}
	free(lvl);
	for (uint32_t st = 1; same && st < s->nsteps && st < samecap; st++)
		if (same[st])
			s->fig[st] = s->fig[st - 1];
	s->multi = multi;
	return rc;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	free(s->step_off);
	free(s->src);
	free(s->dst);
	free(s->blk);
	free(s->ord);
	free(s->fig);
	free(s->level_max);
	free(s->rank_jhost);
	free(s->hstep_off);
	free(s->hsrc);
	free(s->hdst);
	sched_free(s->wide);
	free(s);
}

/* cost_sim_time's view of the job's routes: a's cable, then the links of
 * route_walk to b (job_route). */
uint32_t sched_sim_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	const struct job *j = ctx;
	uint32_t ja = j->jh[a], jb = j->jh[b], n;
	if (ja == jb)
		return 0;
	const uint32_t *l = job_route(j, ja, jb, &n);
	if (n > COST_ROUTE_MAX - 1)
		n = COST_ROUTE_MAX - 1; /* never on a real fabric: routes have < 64 hops */
	out[0] = j->cable[ja];
	memcpy(out + 1, l, (size_t)n * sizeof(*l));
	return n + 1;
}

/* The schedule's time with steps overlapping (cost.h), where it is cheap
 * enough: a compact schedule is listed rank by rank for it. */
void sched_overlap(struct sched *s, const struct job *j)
{
	char err[AN_ERR_LEN];
	struct sched *e = NULL;
	const struct sched *x = s;
	s->sim_s_per_byte = 0;
	if ((uint64_t)s->nranks * (s->nranks - 1) > COST_SIM_FLOWS_MAX)
		return;
	for (uint32_t st = 0; st < s->nsteps; st++)
		if (s->fig[st].unrated)
			return;
	if (s->compact) {
		if (sched_expand(s, &e, err))
			return;
		x = e;
	}
	struct cost_sim in = { .nranks = x->nranks, .nsteps = x->nsteps, .ncables = j->nlinks, .step_off = x->step_off,
			       .src = x->src, .dst = x->dst, .bps = j->bps, .route = sched_sim_route, .ctx = j,
			       .exact = (uint64_t)x->nranks * (x->nranks - 1) <= COST_SIM_EXACT_FLOWS_MAX };
	double t;
	if (!cost_sim_time(&in, &t, err))
		s->sim_s_per_byte = t;
	sched_free(e);
}
int sched_build(const struct route_tab *rt, const struct hier *h, const struct sched_req *req, int threads,
		struct sched **out, char err[AN_ERR_LEN])
{
	if (!rt || !req || !out || !req->rank_host || req->nranks < 1)
		return sched_fail(err, AN_E_INVAL, "empty rank list");
	if (req->nranks > SCHED_RANKS_MAX)
		return sched_fail(err, AN_E_INVAL, "more than %d ranks", SCHED_RANKS_MAX);
	const struct sched_algo_row *w = sched_algo_row(req->algo);
	if (!w)
		return sched_fail(err, AN_E_INVAL, "unknown algorithm");
	if (!w->build)
		return sched_fail(err, AN_E_INVAL, "%s is a choice among schedules (advice.h)", w->name);
	if (req->conflicts > SCHED_CONFLICTS_MAX)
		return sched_fail(err, AN_E_INVAL, "conflicts must be 0..%d", SCHED_CONFLICTS_MAX);
	if (!(req->sparsity >= 0 && req->sparsity <= 1e6))
		return sched_fail(err, AN_E_INVAL, "bad sparsity threshold");
	struct job j;
	int rc = job_build(&j, rt, req, err);
	struct sched *s = calloc(1, sizeof(*s));
	struct sbuild b = { .s = s };
	if (rc)
		goto out;
	rc = AN_E_NOMEM;
	if (!s)
		goto out;
	s->algo = req->algo;
	s->nranks = j.P;
	s->step_off = calloc(65, sizeof(*s->step_off));
	b.scap = 64;
	/* compact: no rank flows held (OPT and route have no compact form:
	 * their steps are chosen rank by rank) */
	int compact = req->compact && w->expand;
	if (!s->step_off || (!compact && sb_alloc(&b, (size_t)j.P * (j.P - 1))))
		goto out;
	if (compact) {
		free(s->step_off);
		s->step_off = NULL;
		rc = sched_build_compact(s, &j, h, req, threads, err);
	} else {
		rc = w->build(&b, &j, h, req, err);
		if (!rc)
			rc = figures(s, &j, b.same, b.samecap, threads);
	}
	if (rc)
		goto out;
	if (sched_is_allgather(s->algo))
		s->bound_s_per_byte = job_ag_bound(&j);
	sched_overlap(s, &j);
	/* the one run: TACS and route may have fallen back to XOR */
	w = sched_algo_row(s->algo);
	if (w->finish)
		w->finish(s, &j, h, req, threads);
	*out = s;
	s = NULL;
out:
	if (rc == AN_E_NOMEM)
		sched_fail(err, rc, "no memory for a %u-rank schedule", req->nranks);
	sched_free(s);
	free(b.same);
	job_free(&j);
	return rc;
}

/* ---- the checker --------------------------------------------------------------- */

int sched_check(const struct sched *s, char err[AN_ERR_LEN])
{
	uint32_t P = s->nranks;
	size_t bits = (size_t)P * P;
	uint8_t *seen = calloc(bits / 8 + 1, 1);
	uint32_t *ss = malloc(((size_t)P + 1) * sizeof(*ss));
	uint32_t *rs = malloc(((size_t)P + 1) * sizeof(*rs));
	int rc = AN_E_NOMEM, needmulti = 0;
	size_t count = 0;
	if (!seen || !ss || !rs) {
		sched_fail(err, rc, "no memory");
		goto out;
	}
	memset(ss, 0xff, (size_t)P * sizeof(*ss));
	memset(rs, 0xff, (size_t)P * sizeof(*rs));
	/* allgather: seen[r][o] = rank r holds block o (own block from the start) */
	if (s->blk)
		for (uint32_t r = 0; r < P; r++)
			seen[((size_t)r * P + r) / 8] |= (uint8_t)(1u << (((size_t)r * P + r) % 8));
	rc = AN_E_CHECK;
	if (s->step_off[0] != 0) {
		sched_fail(err, rc, "step 0 does not start at flow 0");
		goto out;
	}
	for (uint32_t st = 0; st < s->nsteps; st++) {
		uint32_t lo = s->step_off[st], hi = s->step_off[st + 1];
		if (hi < lo) {
			sched_fail(err, rc, "step %u: bad offsets", st);
			goto out;
		}
		for (uint32_t f = lo; f < hi; f++) {
			uint32_t a = s->src[f], b = s->dst[f];
			if (a >= P || b >= P || a == b) {
				sched_fail(err, rc, "step %u: flow %u -> %u out of range or to itself", st, a, b);
				goto out;
			}
			if (ss[a] == st || rs[b] == st)
				needmulti = 1;
			ss[a] = st;
			rs[b] = st;
			size_t k;
			if (s->blk) {
				uint32_t o = s->blk[f];
				if (o >= P) {
					sched_fail(err, rc, "step %u: block %u out of range", st, o);
					goto out;
				}
				/* the sender must hold it before this step: blocks received
				 * in this step are marked after the step (bit 2 pass below). */
				size_t ka = (size_t)a * P + o;
				if (!(seen[ka / 8] & (1u << (ka % 8)))) {
					sched_fail(err, rc, "step %u: rank %u forwards block %u it does not hold", st, a, o);
					goto out;
				}
				k = (size_t)b * P + o;
			} else {
				k = (size_t)a * P + b;
			}
			if (seen[k / 8] & (1u << (k % 8))) {
				sched_fail(err, rc, "step %u: %s %u -> %u twice", st, s->blk ? "block to rank" : "pair",
				     s->blk ? s->blk[f] : a, b);
				goto out;
			}
			count++;
		}
		/* mark after the step, so that a block cannot be forwarded in the step it arrives */
		for (uint32_t f = lo; f < hi; f++) {
			size_t k = s->blk ? (size_t)s->dst[f] * P + s->blk[f] : (size_t)s->src[f] * P + s->dst[f];
			if (seen[k / 8] & (1u << (k % 8))) {
				sched_fail(err, rc, "step %u: %u -> %u twice in one step", st, s->src[f], s->dst[f]);
				goto out;
			}
			seen[k / 8] |= (uint8_t)(1u << (k % 8));
		}
	}
	if (count != (size_t)P * (P - 1)) {
		sched_fail(err, rc, "%zu transfers, a complete exchange of %u ranks has %zu", count, P, (size_t)P * (P - 1));
		goto out;
	}
	if (needmulti && !s->multi) {
		sched_fail(err, rc, "a rank sends or receives twice in one step but multi=0");
		goto out;
	}
	if (!needmulti && s->multi) {
		sched_fail(err, rc, "multi=1 but no rank sends or receives twice in a step");
		goto out;
	}
	rc = AN_OK;
out:
	free(seen);
	free(ss);
	free(rs);
	return rc;
}

double sched_time(const struct sched *s, uint64_t bytes)
{
	double t = 0, bw = 0;
	for (uint32_t st = 0; st < s->nsteps; st++) {
		const struct sched_fig *fg = &s->fig[st];
		if (fg->unrated)
			return -1;
		if (fg->flows) {
			bw += fg->s_per_byte * (double)bytes;
			t += fg->s_per_byte > 0 ? cost_route_latency(fg->max_hops) : 0;
		}
	}
	if (s->sim_s_per_byte > 0)
		bw = s->sim_s_per_byte * (double)bytes;
	return t + bw;
}

/* ---- predictions at a block size (sched_job) ------------------------------------- */

struct sched_job {
	struct job j;
};

int sched_job_new(const struct route_tab *rt, uint32_t nranks, const uint32_t *rank_host, struct sched_job **out,
		  char err[AN_ERR_LEN])
{
	*out = NULL;
	if (!rt || !rank_host || nranks < 1 || nranks > SCHED_RANKS_MAX)
		return sched_fail(err, AN_E_INVAL, "a job of 1 to %d ranks", SCHED_RANKS_MAX);
	struct sched_job *sj = calloc(1, sizeof(*sj));
	if (!sj)
		return sched_fail(err, AN_E_NOMEM, "no memory for a %u-rank job", nranks);
	struct sched_req req = { .nranks = nranks, .rank_host = rank_host };
	int rc = job_build(&sj->j, rt, &req, err);
	if (rc) {
		job_free(&sj->j);
		free(sj);
		return rc;
	}
	*out = sj;
	return AN_OK;
}

void sched_job_free(struct sched_job *j)
{
	if (!j)
		return;
	job_free(&j->j);
	free(j);
}

int sched_job_time(const struct sched_job *sj, uint32_t nsteps, const uint32_t *step_off, const uint32_t *src,
		   const uint32_t *dst, const uint32_t *mult, double block, uint32_t window, double *seconds,
		   char err[AN_ERR_LEN])
{
	const struct job *j = &sj->j;
	uint64_t F = step_off[nsteps];
	*seconds = -1;
	if (F > COST_SIM_FLOWS_MAX + (uint64_t)j->P)
		return sched_fail(err, AN_E_RANGE, "%llu flows: more than the simulation takes (%u)", (unsigned long long)F,
			    COST_SIM_FLOWS_MAX + j->P);
	struct cost_sim in = { .nranks = j->P, .nsteps = nsteps, .ncables = j->nlinks, .step_off = step_off,
			       .src = src, .dst = dst, .bps = j->bps, .route = sched_sim_route, .ctx = j,
			       .exact = F <= COST_SIM_EXACT_FLOWS_MAX, .block = block, .mult = mult,
			       .window = window };
	return cost_sim_run(&in, seconds, err);
}

int sched_job_sched_time(const struct sched_job *sj, const struct sched *s, double block, uint32_t window,
			 double *seconds, char err[AN_ERR_LEN])
{
	struct sched *e = NULL;
	const struct sched *x = s;
	*seconds = -1;
	if (s->nranks != sj->j.P)
		return sched_fail(err, AN_E_INVAL, "a schedule of %u ranks on a job of %u", s->nranks, sj->j.P);
	if ((uint64_t)s->nranks * (s->nranks - 1) > COST_SIM_FLOWS_MAX)
		return sched_fail(err, AN_E_RANGE, "%u ranks: more than the simulation takes", s->nranks);
	if (s->compact) {
		int rc = sched_expand(s, &e, err);
		if (rc)
			return rc;
		x = e;
	}
	int rc = sched_job_time(sj, x->nsteps, x->step_off, x->src, x->dst, NULL, block, window, seconds, err);
	sched_free(e);
	return rc;
}
