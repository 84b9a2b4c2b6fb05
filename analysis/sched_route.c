/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_route.c - the route-aware all-to-all schedule; see sched_route.h.
 * The core (sr_*) sees only the routes it is given; below it, the
 * schedule's row (sched_impl.h): the core on a job's routes, OPT's steps
 * as a candidate beside it, and the order its steps are answered in.
 */
#include "sched_route.h"

#include "cost.h"
#include "sched_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Budgets are sums of a few block times: a relative slack absorbs rounding. */
#define SR_EPS 1e-9
/* Variants are compared at the protocol's default block (docs/protocol.md
 * "schedule", bytes=): the latency's share depends on it. */
#define SR_SCORE_BYTES 1048576.0

struct sr {
	const struct sr_job *j;
	uint32_t P;
	double *w;          /* [nlinks] time of one block on the cable (1 / rate, any unit) */
	double *R;          /* [nlinks] time the cable still has to carry */
	uint32_t *load;     /* [nlinks] blocks on the cable in this step */
	uint32_t *touched;  /* [nlinks] cables loaded in this step */
	uint8_t *listed;    /* [nlinks] 1: in touched (a repair may empty and refill a cable) */
	uint32_t ntouched;
	uint32_t *pend;     /* [P * (P-1)] pending destinations of a: pend[a*(P-1) ..] */
	uint32_t *npend;    /* [P] */
	uint32_t *rpend;    /* [P] blocks a rank has still to receive */
	uint32_t *to;       /* [P] destination of a in this step, or NONE */
	uint32_t *from;     /* [P] source of b in this step, or NONE */
	uint32_t *order;    /* [P] senders of this step, most pending first */
	uint8_t *seen;      /* [P] receivers visited by one augmenting search */
	uint32_t step;
	/* the variant: budget scale, and whether left-out senders augment */
	double slack;
	uint32_t augment;   /* moves of an augmenting path, 0: none */
	double cost;        /* sum over steps of the busiest cable's load x w */
};

/* Links of the route a -> b after a's own cable; 0 and no cable for ranks
 * on one host. */
static uint32_t sr_path(const struct sr *t, uint32_t a, uint32_t b, const uint32_t **l, uint32_t *own)
{
	const struct sr_job *j = t->j;
	uint32_t ha = j->jh[a], hb = j->jh[b];
	if (ha == hb)
		return *own = NONE, 0;
	size_t k = (size_t)j->group[ha] * j->H + hb;
	*l = j->links + j->path_off[k];
	*own = j->cable[ha];
	return j->path_off[k + 1] - j->path_off[k];
}

/* The largest R over a -> b's cables if it fits the budget (every cable at
 * most beta, or empty), else -1. Intra-host blocks fit at 0. */
static double sr_fit(const struct sr *t, uint32_t a, uint32_t b, double beta)
{
	const uint32_t *l = NULL;
	uint32_t own, n = sr_path(t, a, b, &l, &own);
	if (own == NONE)
		return 0;
	double crit = 0;
	for (uint32_t k = 0; k <= n; k++) {
		uint32_t c = k ? l[k - 1] : own;
		if (t->load[c] && (double)(t->load[c] + 1) * t->w[c] > beta * (1 + SR_EPS))
			return -1;
		if (t->R[c] > crit)
			crit = t->R[c];
	}
	return crit;
}

/* Puts (sign 1) or takes back (-1) a -> b's block on its cables. */
static void sr_load(struct sr *t, uint32_t a, uint32_t b, int sign)
{
	const uint32_t *l = NULL;
	uint32_t own, n = sr_path(t, a, b, &l, &own);
	if (own == NONE)
		return;
	for (uint32_t k = 0; k <= n; k++) {
		uint32_t c = k ? l[k - 1] : own;
		if (sign > 0 && !t->listed[c]) {
			t->listed[c] = 1;
			t->touched[t->ntouched++] = c;
		}
		t->load[c] += sign;
		t->R[c] -= sign * t->w[c];
	}
}

/* The index in a's pending list of its best destination this step, or NONE;
 * skip: a receiver not to take. */
static uint32_t sr_choose(const struct sr *t, uint32_t a, double beta, uint32_t skip)
{
	const uint32_t *pa = t->pend + (size_t)a * (t->P - 1);
	uint32_t best = NONE;
	double bc = -1;
	for (uint32_t k = 0; k < t->npend[a]; k++) {
		uint32_t b = pa[k];
		if (t->from[b] != NONE || b == skip)
			continue;
		double c = sr_fit(t, a, b, beta);
		if (c < 0)
			continue;
		/* the most loaded cable first, then the receiver most behind */
		if (c > bc * (1 + SR_EPS) || (c >= bc * (1 - SR_EPS) && t->rpend[b] > t->rpend[pa[best]])) {
			bc = c;
			best = k;
		}
	}
	return best;
}

static void sr_take(struct sr *t, uint32_t a, uint32_t k)
{
	uint32_t *pa = t->pend + (size_t)a * (t->P - 1);
	uint32_t b = pa[k];
	pa[k] = pa[--t->npend[a]];
	t->rpend[b]--;
	t->to[a] = b;
	t->from[b] = a;
	sr_load(t, a, b, 1);
}

static void sr_untake(struct sr *t, uint32_t a)
{
	uint32_t b = t->to[a];
	sr_load(t, a, b, -1);
	t->pend[(size_t)a * (t->P - 1) + t->npend[a]++] = b;
	t->rpend[b]++;
	t->to[a] = NONE;
	t->from[b] = NONE;
}

/* a takes b back after a failed move (b is somewhere in a's list again) */
static void sr_retake(struct sr *t, uint32_t a, uint32_t b)
{
	const uint32_t *pa = t->pend + (size_t)a * (t->P - 1);
	for (uint32_t k = t->npend[a]; k-- > 0;)
		if (pa[k] == b) {
			sr_take(t, a, k);
			return;
		}
}

/* A sender left out: an augmenting path (Kuhn's) through the step's
 * matching, each move checked against the cables: a takes receiver b from
 * a2 if a2 can move on, at most depth moves deep; the last move takes the
 * best free receiver (sr_choose). 1 if a got a partner. *tries (visits of a
 * receiver) bounds the work of the whole step. */
static int sr_augment(struct sr *t, uint32_t a, double beta, uint32_t depth, uint32_t *tries)
{
	if (!depth) {
		uint32_t k = sr_choose(t, a, beta, NONE);
		if (k != NONE)
			sr_take(t, a, k);
		return k != NONE;
	}
	const uint32_t *pa = t->pend + (size_t)a * (t->P - 1);
	for (uint32_t k = 0; k < t->npend[a] && *tries; k++) {
		uint32_t b = pa[k], a2 = t->from[b];
		if (t->seen[b] || a2 == NONE)
			continue;
		t->seen[b] = 1;
		(*tries)--;
		sr_untake(t, a2);
		if (sr_fit(t, a, b, beta) >= 0) {
			sr_take(t, a, k);
			if (sr_augment(t, a2, beta, depth - 1, tries))
				return 1;
			sr_untake(t, a);
		}
		sr_retake(t, a2, b);
	}
	return 0;
}

/* Ends a step: its busiest cable's load x w into t->cost, loads cleared. */
static void sr_close(struct sr *t)
{
	double most = 0;
	for (uint32_t i = 0; i < t->ntouched; i++) {
		uint32_t c = t->touched[i];
		most = (double)t->load[c] * t->w[c] > most ? (double)t->load[c] * t->w[c] : most;
		t->load[c] = t->listed[c] = 0;
	}
	t->ntouched = 0;
	t->cost += most;
	t->step++;
}

/* XOR's steps (schedule.c's build_xor), as the candidate to beat: the model
 * never prefers a variant slower than the libraries' default. */
static void sr_xor(struct sr *t, uint32_t *src, uint32_t *dst, uint32_t *ends, uint32_t *nsteps)
{
	uint32_t P = t->P;
	int pow2 = !(P & (P - 1));
	size_t n = 0;
	for (uint32_t i = 1; i < P; i++) {
		for (uint32_t r = 0; r < P; r++) {
			src[n] = r;
			dst[n] = pow2 ? r ^ i : (r + i) % P;
			sr_load(t, r, dst[n++], 1);
		}
		sr_close(t);
		ends[i - 1] = (uint32_t)n;
	}
	*nsteps = P - 1;
}

/* sort key of the senders: most pending first, ties rotate with the step */
static int sr_cmp(const void *x, const void *y, void *arg)
{
	const struct sr *t = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (t->npend[a] != t->npend[b])
		return t->npend[a] > t->npend[b] ? -1 : 1;
	uint32_t ra = (a + t->P - t->step % t->P) % t->P, rb = (b + t->P - t->step % t->P) % t->P;
	return ra < rb ? -1 : ra > rb;
}

/* One step: its flows appended to src/dst at *n, in source order. */
static void sr_step(struct sr *t, uint32_t *src, uint32_t *dst, size_t *n)
{
	uint32_t P = t->P, ns = 0, left = t->step + 1 < P ? P - 1 - t->step : 1;
	double maxr = 0;
	for (uint32_t c = 0; c < t->j->nlinks; c++)
		maxr = t->R[c] > maxr ? t->R[c] : maxr;
	double beta = maxr / left * t->slack;
	for (uint32_t a = 0; a < P; a++)
		if (t->npend[a])
			t->order[ns++] = a;
	qsort_r(t->order, ns, sizeof(*t->order), sr_cmp, t);
	for (uint32_t i = 0; i < ns; i++) {
		uint32_t k = sr_choose(t, t->order[i], beta, NONE);
		if (k != NONE)
			sr_take(t, t->order[i], k);
	}
	/* a receiver visit costs O(P h) at most: O(P^2 h) per step */
	uint32_t tries = t->augment ? 4 * P : 0;
	for (uint32_t i = 0; i < ns && tries; i++)
		if (t->to[t->order[i]] == NONE) {
			memset(t->seen, 0, P);
			sr_augment(t, t->order[i], beta, t->augment, &tries);
		}
	for (uint32_t a = 0; a < P; a++)
		if (t->to[a] != NONE) {
			src[*n] = a;
			dst[(*n)++] = t->to[a];
			t->from[t->to[a]] = NONE;
			t->to[a] = NONE;
		}
	double most = 0;
	for (uint32_t i = 0; i < t->ntouched; i++) {
		uint32_t c = t->touched[i];
		most = (double)t->load[c] * t->w[c] > most ? (double)t->load[c] * t->w[c] : most;
		t->load[c] = t->listed[c] = 0;
	}
	t->cost += most;
	t->ntouched = 0;
	t->step++;
}

static void sr_free(struct sr *t)
{
	free(t->w);
	free(t->R);
	free(t->load);
	free(t->touched);
	free(t->listed);
	free(t->pend);
	free(t->npend);
	free(t->rpend);
	free(t->to);
	free(t->from);
	free(t->order);
	free(t->seen);
}

/* Rates to block times, every pair pending, and R of every cable. */
static int sr_init(struct sr *t, const struct sr_job *j)
{
	uint32_t P = j->P, L = j->nlinks;
	memset(t, 0, sizeof(*t));
	t->j = j;
	t->P = P;
	t->w = malloc(((size_t)L + 1) * sizeof(*t->w));
	t->R = calloc((size_t)L + 1, sizeof(*t->R));
	t->load = calloc((size_t)L + 1, sizeof(*t->load));
	t->touched = malloc(((size_t)L + 1) * sizeof(*t->touched));
	t->listed = calloc((size_t)L + 1, 1);
	t->pend = malloc(((size_t)P * (P - 1) + 1) * sizeof(*t->pend));
	t->npend = malloc((size_t)P * sizeof(*t->npend));
	t->rpend = malloc((size_t)P * sizeof(*t->rpend));
	t->to = malloc((size_t)P * sizeof(*t->to));
	t->from = malloc((size_t)P * sizeof(*t->from));
	t->order = malloc((size_t)P * sizeof(*t->order));
	t->seen = malloc(P);
	if (!t->w || !t->R || !t->load || !t->touched || !t->listed || !t->pend || !t->npend || !t->rpend || !t->to || !t->from ||
	    !t->order || !t->seen)
		return AN_E_NOMEM;
	uint64_t slow = 0;
	for (uint32_t c = 0; c < L; c++)
		if (j->bps[c] && (!slow || j->bps[c] < slow))
			slow = j->bps[c];
	for (uint32_t c = 0; c < L; c++) {
		uint64_t r = j->bps[c] ? j->bps[c] : slow ? slow : 1;
		t->w[c] = 1e9 / (double)r; /* ns per bit: keeps R near block counts */
	}
	for (uint32_t a = 0; a < P; a++) {
		t->npend[a] = t->rpend[a] = P - 1;
		t->to[a] = t->from[a] = NONE;
		for (uint32_t b = 0, k = 0; b < P; b++) {
			if (b == a)
				continue;
			t->pend[(size_t)a * (P - 1) + k++] = b;
			const uint32_t *l = NULL;
			uint32_t own, n = sr_path(t, a, b, &l, &own);
			for (uint32_t i = 0; own != NONE && i <= n; i++)
				t->R[i ? l[i - 1] : own] += t->w[i ? l[i - 1] : own];
		}
	}
	return AN_OK;
}

/* One variant into src/dst and ends[] (room for P(P-1) steps); its model
 * time in t->cost. */
static int sr_run(struct sr *t, uint32_t *src, uint32_t *dst, uint32_t *ends, uint32_t *nsteps, char err[AN_ERR_LEN])
{
	size_t total = (size_t)t->P * (t->P - 1), n = 0;
	*nsteps = 0;
	while (n < total) {
		size_t before = n;
		/* a step is O(P^2 h): the flag costs nothing beside it */
		if (AN_CANCELLED(t->j->cancel)) {
			snprintf(err, AN_ERR_LEN, "route: cancelled at step %u", t->step);
			return AN_E_CANCEL;
		}
		sr_step(t, src, dst, &n);
		if (n == before) {
			/* cannot happen: a lone block always fits an empty step */
			snprintf(err, AN_ERR_LEN, "route: step %u moved nothing", t->step);
			return AN_E_CHECK;
		}
		ends[(*nsteps)++] = (uint32_t)n;
	}
	return AN_OK;
}

/* cost_sim_time's view of the routes (sr_path with the own cable first). */
static uint32_t sr_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	const uint32_t *l = NULL;
	uint32_t own, n = sr_path(ctx, a, b, &l, &own);
	if (own == NONE)
		return 0;
	if (n > COST_ROUTE_MAX - 1)
		n = COST_ROUTE_MAX - 1;
	out[0] = own;
	memcpy(out + 1, l, (size_t)n * sizeof(*l));
	return n + 1;
}

/* A variant's predicted time for blocks of SR_SCORE_BYTES by the model that
 * sched_time applies to the answer (cost.h): its steps overlapping where
 * cost_sim_time runs, else the sum of the steps' busiest cables; plus each
 * step's longest route's latency (a variant of more steps pays more). off
 * has room for nsteps + 1. */
static double sr_score(const struct sr *t, const uint32_t *src, const uint32_t *dst, const uint32_t *ends,
		       uint32_t nsteps, uint32_t *off)
{
	const struct sr_job *j = t->j;
	double lat = 0, bw = t->cost * 8e-9 * SR_SCORE_BYTES; /* w is ns per bit */
	size_t f = 0;
	int rated = 1;
	off[0] = 0;
	for (uint32_t st = 0; st < nsteps; st++) {
		uint32_t hmax = 0, moves = 0;
		for (; f < ends[st]; f++) {
			const uint32_t *l = NULL;
			uint32_t own, n = sr_path(t, src[f], dst[f], &l, &own);
			if (own != NONE) {
				moves = 1;
				hmax = n > hmax ? n : hmax;
			}
		}
		lat += moves ? cost_route_latency(hmax) : 0;
		off[st + 1] = ends[st];
	}
	for (uint32_t c = 0; c < j->nlinks; c++)
		rated &= j->bps[c] != 0;
	if (rated && (uint64_t)t->P * (t->P - 1) <= COST_SIM_FLOWS_MAX) {
		struct cost_sim in = { .nranks = t->P, .nsteps = nsteps, .ncables = j->nlinks, .step_off = off,
				       .src = src, .dst = dst, .bps = j->bps, .route = sr_route, .ctx = t,
				       .exact = (uint64_t)t->P * (t->P - 1) <= COST_SIM_EXACT_FLOWS_MAX };
		double spb;
		char e[AN_ERR_LEN];
		if (!cost_sim_time(&in, &spb, e))
			bw = spb * SR_SCORE_BYTES;
	}
	return bw + lat;
}

/* Greedy choices can strand ranks (partial steps) or let a cable fall
 * behind (a costly tail); which hurts more depends on the fabric, so a few
 * variants run and the model keeps the fastest. */
static const struct {
	double slack;
	uint32_t augment;
} sr_variants[] = { { 1.0, 1 }, { 1.0, 3 }, { 1.25, 1 }, { 1.25, 3 }, { 0, 0 } /* XOR */ };

int sr_build(const struct sr_job *j, uint32_t *src, uint32_t *dst, size_t cap, uint32_t **step_end,
	     uint32_t *nsteps, char err[AN_ERR_LEN])
{
	*step_end = NULL;
	*nsteps = 0;
	if (j->P > SR_RANKS_MAX) {
		snprintf(err, AN_ERR_LEN, "route: more than %d ranks", SR_RANKS_MAX);
		return AN_E_RANGE;
	}
	size_t total = (size_t)j->P * (j->P - 1);
	if (cap < total) {
		snprintf(err, AN_ERR_LEN, "route: room for %zu flows, %zu needed", cap, total);
		return AN_E_NOMEM;
	}
	uint32_t *sx = malloc((total + 1) * sizeof(*sx)), *dx = malloc((total + 1) * sizeof(*dx));
	uint32_t *ends = malloc((total + 1) * sizeof(*ends)), *ex = malloc((total + 1) * sizeof(*ex)), nx = 0;
	uint32_t *ox = malloc((total + 2) * sizeof(*ox));
	int rc = sx && dx && ends && ex && ox ? AN_OK : AN_E_NOMEM;
	double best = -1;
	for (size_t v = 0; !rc && v < sizeof(sr_variants) / sizeof(*sr_variants); v++) {
		struct sr t;
		rc = sr_init(&t, j);
		t.slack = sr_variants[v].slack;
		t.augment = sr_variants[v].augment;
		if (!rc && !t.slack)
			sr_xor(&t, sx, dx, ex, &nx);
		else if (!rc)
			rc = sr_run(&t, sx, dx, ex, &nx, err);
		double score = rc ? 0 : sr_score(&t, sx, dx, ex, nx, ox);
		if (!rc && (best < 0 || score < best * (1 - 1e-12))) {
			best = score;
			memcpy(src, sx, total * sizeof(*src));
			memcpy(dst, dx, total * sizeof(*dst));
			uint32_t *e = ends;
			ends = ex;
			ex = e;
			*nsteps = nx;
		}
		sr_free(&t);
	}
	free(sx);
	free(dx);
	free(ex);
	free(ox);
	if (rc) {
		free(ends);
		*nsteps = 0;
		if (rc == AN_E_NOMEM)
			snprintf(err, AN_ERR_LEN, "route: no memory for %u ranks", j->P);
		return rc;
	}
	*step_end = ends;
	return AN_OK;
}

/* ---- the schedule (schedule.h SCHED_ROUTE) on a job ----------------------------- */

/* On whole leaves of a 2:1 tree the greedy loses to regular orders
 * (docs/performance.md "The route-aware schedule"): where seed 000's OPT
 * applies and keeps its per-cable bound on these routes, its steps are one
 * more candidate beside route's own, answered if the model predicts them
 * faster for 1 MiB blocks (the block sched_route.c scores at). */
static void route_or_opt(struct sched *s, const struct route_tab *rt, const struct hier *h,
			 const struct sched_req *req, int threads)
{
	char err[AN_ERR_LEN];
	struct sched_req o = *req;
	struct sched *x = NULL;
	o.algo = SCHED_OPT;
	o.compact = 0;
	if (!h || sched_build(rt, h, &o, threads, &x, err))
		return;
	int broken = x->multi || !x->level_max;
	for (uint32_t st = 0; !broken && st < x->nsteps; st++)
		for (uint32_t l = 1; l < x->nlevels; l++)
			broken |= x->level_max[(size_t)st * x->nlevels + l] > x->cable_bound[l];
	double to = sched_time(x, 1 << 20), tr = sched_time(s, 1 << 20);
	if (!broken && to >= 0 && tr >= 0 && to < tr * (1 - 1e-9)) {
		struct sched t = *s;
		s->step_off = x->step_off, x->step_off = t.step_off;
		s->src = x->src, x->src = t.src;
		s->dst = x->dst, x->dst = t.dst;
		s->fig = x->fig, x->fig = t.fig;
		s->nsteps = x->nsteps;
		s->multi = x->multi;
		s->sim_s_per_byte = x->sim_s_per_byte;
	}
	sched_free(x);
}

/* Route's steps in the order of stride k: step i of the answer is step
 * (i x k) mod nsteps of s (k coprime with nsteps). Figures follow. */
static int route_stride(struct sched *s, uint32_t k, struct sched *out)
{
	uint32_t n = s->nsteps, F = s->step_off[n];
	out->step_off = malloc(((size_t)n + 1) * sizeof(uint32_t));
	out->src = malloc(((size_t)F + 1) * sizeof(uint32_t));
	out->dst = malloc(((size_t)F + 1) * sizeof(uint32_t));
	out->fig = malloc(((size_t)n + 1) * sizeof(*out->fig));
	if (!out->step_off || !out->src || !out->dst || !out->fig)
		return AN_E_NOMEM;
	uint32_t f = 0;
	out->step_off[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t st = (uint32_t)(((uint64_t)i * k) % n), a = s->step_off[st], b = s->step_off[st + 1];
		memcpy(out->src + f, s->src + a, (size_t)(b - a) * sizeof(uint32_t));
		memcpy(out->dst + f, s->dst + a, (size_t)(b - a) * sizeof(uint32_t));
		out->fig[i] = s->fig[st];
		f += b - a;
		out->step_off[i + 1] = f;
	}
	out->nsteps = n;
	out->nranks = s->nranks;
	return AN_OK;
}

static uint32_t gcd32(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Steps in flight (advice.h window) fill a step's idle cables with the
 * next steps' flows, but route's greedy puts the blocks of one slow cable
 * into neighbouring steps, where a window cannot spread them (on ft2-mixed,
 * 64 hosts, 1 MiB: 1.11x the bound with 32 steps in flight, 1.000x with
 * the same steps taken seven apart and 8 in flight). The steps' order is
 * chosen once, for any block size: the stride (1, 3, 5, 7, 11, 13) whose
 * steps run fastest for 1 MiB blocks with ROUTE_SPREAD_WINDOW steps in
 * flight, among those no slower than the given order one step at a time
 * (what a client without a window runs); the given order on ties. */
#define ROUTE_SPREAD_WINDOW 8
static int spread_time(const struct sched *y, const struct job *j, uint32_t window, double *t)
{
	char err[AN_ERR_LEN];
	struct cost_sim in = { .nranks = y->nranks, .nsteps = y->nsteps, .ncables = j->nlinks, .step_off = y->step_off,
			       .src = y->src, .dst = y->dst, .bps = j->bps, .route = sched_sim_route, .ctx = j,
			       .exact = (uint64_t)y->step_off[y->nsteps] <= COST_SIM_EXACT_FLOWS_MAX, .block = SCHED_ORDER_BLOCK,
			       .window = window };
	return cost_sim_run(&in, t, err);
}

/* Frees a step order's arrays (route_stride's, or a schedule's own before
 * another order takes their place) and forgets them. */
static void order_free(struct sched *x)
{
	free(x->step_off), free(x->src), free(x->dst), free(x->fig);
	x->step_off = x->src = x->dst = NULL;
	x->fig = NULL;
}

/* The stride order x (route_stride's) as a whole schedule beside s: s's
 * scalars, x's steps, its own overlap time. NULL on ENOMEM. */
static struct sched *route_wide(const struct sched *s, struct sched *x, const struct job *j)
{
	struct sched *w = malloc(sizeof(*w));
	if (!w)
		return NULL;
	*w = (struct sched){ .algo = s->algo, .nranks = s->nranks, .nsteps = x->nsteps, .step_off = x->step_off,
			     .src = x->src, .dst = x->dst, .fig = x->fig, .multi = s->multi,
			     .bound_s_per_byte = s->bound_s_per_byte, .tree_routes = s->tree_routes };
	memcpy(w->note, s->note, sizeof(w->note));
	*x = (struct sched){ 0 };
	sched_overlap(w, j);
	return w;
}

static void route_spread(struct sched *s, const struct job *j)
{
	static const uint32_t stride[] = { 1, 3, 5, 7, 11, 13 };
	uint32_t n = s->nsteps, best = 1, wbest = 1;
	double tbest = -1, one = -1, wtbest = -1;
	if (n < 3 || s->compact || (uint64_t)s->step_off[n] > COST_SIM_FLOWS_MAX || spread_time(s, j, 1, &one))
		return;
	/* t: the fastest in flight among orders no slower one at a time; w: among all */
	struct sched t = { 0 }, w = { 0 };
	for (size_t i = 0; i < sizeof(stride) / sizeof(stride[0]); i++) {
		uint32_t k = stride[i];
		double tk, t1 = one;
		if (k >= n || gcd32(k, n) != 1)
			continue;
		struct sched x = { 0 };
		int rc = k == 1 ? AN_OK : route_stride(s, k, &x);
		const struct sched *y = k == 1 ? s : &x;
		if (!rc)
			rc = spread_time(y, j, ROUTE_SPREAD_WINDOW, &tk);
		if (!rc && k != 1)
			rc = spread_time(y, j, 1, &t1);
		if (rc && k == 1)
			return;
		if (rc) {
			order_free(&x);
			continue;
		}
		int slow1 = t1 > one * (1 + 1e-6);
		if (!slow1 && (tbest < 0 || tk < tbest * (1 - 1e-6))) {
			tbest = tk;
			best = k;
		}
		if (wtbest < 0 || tk < wtbest * (1 - 1e-6)) {
			wtbest = tk;
			wbest = k;
		}
		/* keep x where it is the best of either kind; k = 1 is s itself */
		if (k == best && k != 1) {
			order_free(&t);
			t = x;
			if (k == wbest)
				order_free(&w);
		} else if (k == wbest && k != 1) {
			order_free(&w);
			w = x;
		} else {
			order_free(&x);
		}
	}
	if (wbest != best && wbest != 1)
		s->wide = route_wide(s, &w, j);
	order_free(&w);
	if (best == 1)
		return;
	order_free(s);
	s->step_off = t.step_off, s->src = t.src, s->dst = t.dst, s->fig = t.fig;
	/* the overlap's fluid time of the new order */
	sched_overlap(s, j);
}

/* The route-aware schedule (sched_route.c) on this job's routes; XOR above
 * its rank limit, as TACS falls back on sparse jobs. */
int sched_build_route(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
		      char err[AN_ERR_LEN])
{
	if (j->P > SR_RANKS_MAX) {
		snprintf(b->s->note, sizeof(b->s->note), "fallback=xor ranks=%u route_max=%d", j->P, SR_RANKS_MAX);
		b->s->algo = SCHED_XOR;
		return sched_xor_steps(b, j->P);
	}
	struct sr_job in = { j->P, j->H, j->nlinks, j->jh, j->group, j->cable, j->path_off, j->links, j->bps, req->cancel };
	uint32_t *ends = NULL, n = 0;
	int rc = sr_build(&in, b->s->src, b->s->dst, b->cap, &ends, &n, err);
	for (uint32_t i = 0; !rc && i < n; i++) {
		b->n = ends[i];
		rc = sb_step(b);
	}
	free(ends);
	return rc;
}

/* ROUTE's last choices, once its figures and overlap time are known. */
void sched_finish_route(struct sched *s, const struct job *j, const struct hier *h, const struct sched_req *req,
			int threads)
{
	route_or_opt(s, j->rt, h, req, threads);
	route_spread(s, j);
}
