/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * advice.c - see advice.h.
 */
#include "advice.h"

#include <stdio.h>

#include "cost.h"
#include "load.h"
#include "pattern.h"

int advice_opt_broken(const struct sched *s, uint32_t *step, uint32_t *level)
{
	if (s->algo != SCHED_OPT || !s->level_max)
		return 0;
	for (uint32_t st = 0; st < s->nsteps; st++)
		for (uint32_t l = 1; l < s->nlevels; l++)
			if (s->level_max[(size_t)st * s->nlevels + l] > s->cable_bound[l]) {
				*step = st;
				*level = l;
				return 1;
			}
	return 0;
}

/* The worst SMPI time over predicted time measured for algorithm a (1 for
 * XOR's own steps, judged by ADVICE_XOR_FAST). */
static double advice_slow_factor(enum sched_algo a)
{
	/* bench/jobspeed, 49 jobs on 7 lab fabrics (docs/performance.md) */
	switch (a) {
	case SCHED_TACS1:
		return 1.23; /* extra steps on the random regular graph */
	case SCHED_TACS2:
		return 1.04;
	case SCHED_OPT:
		return 1.06;
	case SCHED_ROUTE:
		return 1.10; /* measured 0.95-1.09 */
	default:
		return 1;
	}
}

int advice_keeps(enum sched_algo a, double time, double xor_time, double bound)
{
	if (a == SCHED_XOR || time < 0 || xor_time < 0)
		return 1;
	double fast = xor_time * ADVICE_XOR_FAST;
	if (bound > fast)
		fast = bound;
	/* a millionth for the rounding of sums over steps */
	return time * advice_slow_factor(a) <= fast / ADVICE_MIN_SPEED * (1 + 1e-6);
}

static double advice_slow_factor_sim(enum sched_algo a)
{
	/* bench/jobspeed, 49 jobs on 7 lab fabrics (docs/cost-model.md), + 0.01 */
	switch (a) {
	case SCHED_TACS1:
	case SCHED_TACS2:
		return 1.03; /* measured up to 1.02 */
	case SCHED_OPT:
	case SCHED_ROUTE:
		return 1.01; /* measured 1.00 */
	default:
		return 1;
	}
}

/* advice_keeps_sim with extra points of margin each way. */
static int keeps_sim(enum sched_algo a, double time, double xor_time, double bound, double extra)
{
	if (a == SCHED_XOR || time < 0 || xor_time < 0)
		return 1;
	/* never what the model predicts slower, whatever the margins allow
	 * near the bound */
	if (time > xor_time * (1 + 1e-9))
		return 0;
	double fast = xor_time * (ADVICE_SIM_XOR_FAST - extra);
	if (bound > fast)
		fast = bound;
	return time * (advice_slow_factor_sim(a) + extra) <= fast / ADVICE_MIN_SPEED * (1 + 1e-6);
}

int advice_keeps_sim(enum sched_algo a, double time, double xor_time, double bound)
{
	return keeps_sim(a, time, xor_time, bound, 0);
}

int advice_keeps_sim_cheap(enum sched_algo a, double time, double xor_time, double bound)
{
	return keeps_sim(a, time, xor_time, bound, ADVICE_SIM_CHEAP_EXTRA);
}

/* The all-to-all of the same ranks posted at once: the lower bound of any
 * schedule on these routes and rates. */
static double bound_time(const struct route_tab *rt, const struct sched_req *req, uint64_t bytes, int threads)
{
	struct pattern p;
	char err[AN_ERR_LEN];
	struct load *L = NULL;
	struct cost_time ct;
	double t = -1;
	if (pattern_parse("alltoall", &p, err))
		return -1;
	p.msg_bytes = bytes;
	struct pat_job job = { req->nranks, (uint32_t *)req->rank_host };
	if (!load_build(rt, &job, &p, threads, &L) && !cost_load_time(rt, L, &ct, err))
		t = ct.seconds;
	load_free(L);
	pattern_clear(&p);
	return t;
}

/* s's time at the block size with `window` steps in flight (0: the
 * fastest of 1, 2, 4, ... ADVICE_WINDOW_MAX, *w says which), simulated as SMPI sends its
 * messages; else (no job: too many flows) the overlap's fluid time. */
static double sized(const struct sched_job *j, const struct sched *s, uint64_t bytes, uint32_t window, uint32_t *w)
{
	char err[AN_ERR_LEN];
	double best = -1, t;
	*w = 1;
	if (!j)
		return sched_time(s, bytes);
	for (uint32_t k = window ? window : 1; k <= (window ? window : ADVICE_WINDOW_MAX); k *= 2) {
		if (sched_job_sched_time(j, s, (double)bytes, k, &t, err))
			return best >= 0 ? best : sched_time(s, bytes);
		/* a wider window only for a gain beyond the simulation's rounding */
		if (best < 0 || t < best * (1 - 1e-6)) {
			best = t;
			*w = k;
		}
		if (window)
			break;
	}
	return best;
}

/* Route's order for steps in flight (schedule.h sched.wide) in place of
 * *s where the client keeps steps in flight and it is predicted faster at
 * the client's window for SCHED_ORDER_BLOCK blocks, whatever the size
 * asked: the steps then do not depend on it. The answer keeps one order. */
static void take_wide(const struct sched_job *j, const struct advice_opts *o, struct sched **s, struct advice *a)
{
	uint32_t w, ws;
	struct sched *x = (*s)->wide;
	(*s)->wide = NULL;
	int ref = o->bytes == SCHED_ORDER_BLOCK;
	double t = x && j && o->window != 1 ? sized(j, x, SCHED_ORDER_BLOCK, o->window, &w) : -1;
	double ts = t < 0 ? -1 : ref ? a->time : sized(j, *s, SCHED_ORDER_BLOCK, o->window, &ws);
	if (t < 0 || ts < 0 || t >= ts * (1 - 1e-6)) {
		sched_free(x);
		return;
	}
	if (!ref)
		t = sized(j, x, o->bytes, o->window, &w);
	sched_free(*s);
	*s = x;
	a->time = t;
	a->window = w;
}

/* XOR's time, and XOR itself in place of *s when s is predicted slower. */
static int against_xor(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
		       const struct advice_opts *o, const struct sched_job *j, struct sched **s, struct advice *a,
		       char err[AN_ERR_LEN])
{
	struct sched_req xr = *req;
	xr.algo = SCHED_XOR;
	struct sched *x = NULL;
	uint32_t w;
	int rc = sched_build(rt, h, &xr, o->threads, &x, err);
	if (rc)
		return rc;
	/* the MPIs' pairwise runs one step after the other */
	a->xor_time = sized(j, x, o->bytes, 1, &w);
	/* the tighter margins only where both times are simulated, the
	 * tightest where exactly */
	int sim = j || ((*s)->sim_s_per_byte > 0 && x->sim_s_per_byte > 0);
	int exact = (uint64_t)req->nranks * (req->nranks - 1) <= COST_SIM_EXACT_FLOWS_MAX;
	int keep = !sim ? advice_keeps((*s)->algo, a->time, a->xor_time, a->bound)
		   : exact ? advice_keeps_sim((*s)->algo, a->time, a->xor_time, a->bound)
			   : advice_keeps_sim_cheap((*s)->algo, a->time, a->xor_time, a->bound);
	if (o->fallback && o->native < 0 && !keep) {
		sched_free(*s);
		*s = x;
		a->time = sized(j, x, o->bytes, o->window, &a->window);
		a->slower = 1;
		return AN_OK;
	}
	sched_free(x);
	return AN_OK;
}

static int advice_keeps_native(double time, double native_time)
{
	if (time < 0 || native_time < 0)
		return 0;
	return time <= native_time && time * (1 + ADVICE_NATIVE_ERR) <=
					      native_time * (1 - ADVICE_NATIVE_ERR) / ADVICE_MIN_SPEED * (1 + 1e-9);
}

/* The MPI's own Alltoall under model o->native at the block size. */
static void against_native(const struct sched_job *j, uint32_t P, const struct advice_opts *o, struct advice *a)
{
	struct native_sched *n = NULL;
	char err[AN_ERR_LEN];
	a->native = o->native;
	native_alltoall((enum native_model)o->native, P, o->bytes, &a->nat);
	if (j && !native_build(&a->nat, P, &n, err) &&
	    sched_job_time(j, n->nsteps, n->step_off, n->src, n->dst, n->mult, (double)o->bytes, 1, &a->native_time,
			   err))
		a->native_time = -1;
	native_free(n);
	a->native_faster = o->fallback && !advice_keeps_native(a->time, a->native_time);
}

static int advice_keeps_ring(double time, double ring_time)
{
	return time < 0 || ring_time < 0 || time <= ring_time * (1 + 1e-9);
}

/* One variant built and timed; *s stays NULL where it does not apply. */
static int ag_variant(const struct route_tab *rt, const struct hier *h, const struct sched_req *req, enum sched_algo al,
		      uint64_t bytes, int threads, struct sched **s, struct advice *a, char err[AN_ERR_LEN])
{
	struct sched_req r = *req;
	struct advice_variant *v = &a->var[a->nvar++];
	r.algo = al;
	*v = (struct advice_variant){ al, ADVICE_NOTAPPLIC, -1 };
	int rc = sched_build(rt, h, &r, threads, s, err);
	if (rc)
		return rc;
	v->time = sched_time(*s, bytes);
	v->state = advice_keeps_ring(v->time, a->ring_time) ? ADVICE_OFFERED : ADVICE_SLOWER;
	return AN_OK;
}

/* The allgathers against RING (advice.h). */
static int advice_allgather(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
			    uint64_t bytes, int fallback, int threads, struct sched **out, struct advice *a,
			    char err[AN_ERR_LEN])
{
	static const enum sched_algo best[] = { SCHED_AGRING, SCHED_KSHIFT, SCHED_ALLGATHER };
	struct sched_req r = *req;
	struct sched *base = NULL, *ans = NULL;
	r.algo = SCHED_RING;
	int rc = sched_build(rt, h, &r, threads, &base, err);
	if (rc)
		return rc;
	a->ring_time = sched_time(base, bytes);
	a->bound = base->bound_s_per_byte < 0 ? -1 : base->bound_s_per_byte * (double)bytes;
	if (req->algo == SCHED_RING) {
		a->time = a->ring_time;
		*out = base;
		return AN_OK;
	}
	int many = req->algo == SCHED_AGBEST;
	uint32_t n = many ? 3 : 1, pick = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct sched *s = NULL;
		char e2[AN_ERR_LEN];
		rc = ag_variant(rt, h, req, many ? best[i] : req->algo, bytes, threads, &s, a, e2);
		if (rc && (!many || rc != AN_E_NOTAPPLIC)) {
			snprintf(err, AN_ERR_LEN, "%s", e2);
			sched_free(base);
			sched_free(ans);
			return rc;
		}
		const struct advice_variant *v = &a->var[i];
		int usable = s && (v->state == ADVICE_OFFERED || !fallback);
		/* strictly faster replaces, a known time an unknown one: ties
		 * keep the earlier in best[] */
		const struct advice_variant *w = &a->var[pick];
		if (usable && (!ans || (v->time >= 0 && (w->time < 0 || v->time < w->time)))) {
			sched_free(ans);
			ans = s;
			pick = i;
		} else {
			sched_free(s);
		}
	}
	if (!ans) {
		/* Everything predicted slower: the MPI's own ring. Asked for
		 * kPrefix, the ring is answered as kPrefix with k = 1 (the same
		 * steps and flows), so that a client of libtii 1.4, which knows
		 * no algorithm named ring, still reads the fallback. */
		a->time = a->ring_time;
		a->slower = 1;
		if (req->algo == SCHED_ALLGATHER) {
			r.algo = SCHED_ALLGATHER;
			r.k = 1;
			sched_free(base);
			base = NULL;
			if ((rc = sched_build(rt, h, &r, threads, &base, err)))
				return rc;
		}
		*out = base;
		return AN_OK;
	}
	a->time = a->var[pick].time;
	sched_free(base);
	*out = ans;
	return AN_OK;
}

int advice_schedule_opts(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
			 const struct advice_opts *o, struct sched **out, struct advice *a, char err[AN_ERR_LEN])
{
	struct sched *s = NULL;
	struct sched_job *j = NULL;
	uint32_t st, l;
	*out = NULL;
	*a = (struct advice){ .time = -1, .xor_time = -1, .bound = -1, .ring_time = -1, .window = 1, .native = -1,
			      .native_time = -1 };
	if (o->window > ADVICE_WINDOW_MAX || (o->native >= NATIVE_NMODELS)) {
		snprintf(err, AN_ERR_LEN, "window 0..%d, a known MPI model", ADVICE_WINDOW_MAX);
		return AN_E_INVAL;
	}
	if (sched_is_allgather(req->algo))
		return advice_allgather(rt, h, req, o->bytes, o->fallback, o->threads, out, a, err);
	int rc = sched_build(rt, h, req, o->threads, &s, err);
	if (rc)
		return rc;
	if (o->fallback && advice_opt_broken(s, &st, &l)) {
		snprintf(err, AN_ERR_LEN,
			 "OPT breaks its bound on these routes: step %u puts %u blocks on one tier-%u cable, bound %u",
			 st, s->level_max[(size_t)st * s->nlevels + l], l, s->cable_bound[l]);
		sched_free(s);
		return AN_E_NOTAPPLIC;
	}
	/* every message size where the flows can be simulated; the job's
	 * routes held once for the answer, XOR and the MPI's own */
	char e2[AN_ERR_LEN];
	if ((uint64_t)req->nranks * (req->nranks - 1) <= COST_SIM_FLOWS_MAX &&
	    sched_job_new(rt, req->nranks, req->rank_host, &j, e2))
		j = NULL;
	a->sized = j != NULL;
	a->time = sized(j, s, o->bytes, o->window, &a->window);
	take_wide(j, o, &s, a);
	a->bound = bound_time(rt, req, o->bytes, o->threads);
	if (s->algo == SCHED_XOR)
		a->xor_time = a->window == 1 ? a->time : sized(j, s, o->bytes, 1, &st);
	else if (req->nranks <= ADVICE_BASELINE_MAX)
		rc = against_xor(rt, h, req, o, j, &s, a, err);
	if (!rc && o->native >= 0)
		against_native(j, req->nranks, o, a);
	sched_job_free(j);
	if (rc) {
		sched_free(s);
		return rc;
	}
	*out = s;
	return AN_OK;
}

int advice_schedule(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
		    uint64_t bytes, int fallback, int threads, struct sched **out, struct advice *a,
		    char err[AN_ERR_LEN])
{
	struct advice_opts o = { .bytes = bytes, .fallback = fallback, .threads = threads, .window = 1, .native = -1 };
	return advice_schedule_opts(rt, h, req, &o, out, a, err);
}
