/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * advice.h - answers that never make a job slower (docs/cost-model.md).
 *
 * An all-to-all schedule is advice to a job. It is judged against what the
 * job would run without topod, the MPI libraries' pairwise/XOR exchange, by
 * the one cost model (cost.h) on the job's real routes and cable rates:
 *   - its predicted time, XOR's on the same ranks, and the lower bound of
 *     any schedule (the all-to-all posted at once);
 *   - with fallback set, a schedule is kept only if it is surely no slower
 *     than 0.98x XOR despite the model's measured error (advice_keeps_sim
 *     where both times were simulated with steps overlapping, else
 *     advice_keeps, the wider margins of the steps' sums);
 *     otherwise it is replaced by XOR. OPT whose steps put
 *     more blocks on a cable than its per-cable bound (Prisacari et al.
 *     assume their own routing, not the LFTs') is refused (AN_E_NOTAPPLIC,
 *     err names the step and level). Without fallback the schedule is
 *     returned as built, with the same figures, for inspection.
 * Predicting for the same rank list and block size is deterministic.
 *
 * Pure: no I/O, no globals; OpenMP inside sched_build and load_build.
 */
#ifndef AN_ADVICE_H
#define AN_ADVICE_H

#include <stdint.h>

#include "an_err.h"
#include "hier.h"
#include "native.h"
#include "route.h"
#include "schedule.h"
#include "topo_limits.h"

/* The XOR baseline is a second schedule of P(P-1) flows: judged up to this
 * many ranks (8 MiB of flows), "unknown" above. */
#define ADVICE_BASELINE_MAX 1024

/* The model's measured error on the job-speed benchmark (bench/jobspeed,
 * docs/performance.md "topod's predictions beside SMPI"): SMPI's time over
 * the predicted one. XOR ran down to 0.81 of its prediction (its steps
 * overlap where ranks run ahead); each schedule up to its factor below. */
#define ADVICE_XOR_FAST 0.81
/* What a recommended schedule must keep: at least this fraction of XOR's
 * speed: never slower, with 2 % for rounding (docs/cost-model.md, "the rule
 * that recommends a schedule"). */
#define ADVICE_MIN_SPEED 0.98

/*
 * The rule: keep a schedule of algorithm a predicted at time seconds
 * (XOR's xor_time, the bound bound) only if even at its slowest measured
 * error it runs at ADVICE_MIN_SPEED of XOR at XOR's fastest:
 *     time * slow(a) <= max(bound, xor_time * ADVICE_XOR_FAST) / 0.98
 * (no schedule runs below the bound, XOR included). Unknown times (< 0)
 * keep the schedule: no fallback on a guess. 1: keep, 0: answer XOR.
 */
int advice_keeps(enum sched_algo a, double time, double xor_time, double bound);

/*
 * The same rule where both the answer's and XOR's times come from steps
 * simulated overlapping, exactly (cost.h cost_sim_time: up to
 * COST_SIM_EXACT_FLOWS_MAX flows), whose measured error is small:
 * SMPI/predicted 0.97-1.02 over 215 schedules of bench/jobspeed (XOR 1.00, TACS1 0.97-1.02, TACS2 0.99-1.02,
 * OPT and route 1.00). With a point of margin each way:
 *     time * slow_sim(a) <= max(bound, xor_time * ADVICE_SIM_XOR_FAST) / 0.98
 * slow_sim: TACS1 and TACS2 1.03, OPT and route 1.01; and never a time
 * above XOR's (near the bound the margins alone would allow it). Route is
 * then kept where it is predicted at least 3 % faster than XOR.
 */
#define ADVICE_SIM_XOR_FAST 0.96
int advice_keeps_sim(enum sched_algo a, double time, double xor_time, double bound);

/*
 * Above COST_SIM_EXACT_FLOWS_MAX the simulation re-solves only the flows
 * on the cables that changed (within 2 % of the exact one, cost.h);
 * measured SMPI/predicted 1.00-1.04 over the 18 schedules of bench/jobspeed's
 * 256-host jobs. The same rule with ADVICE_SIM_CHEAP_EXTRA more each way:
 * slow_sim(a) + 0.04, XOR's 0.96 - 0.04. Route is then kept where it is
 * predicted at least 11 % faster than XOR.
 */
#define ADVICE_SIM_CHEAP_EXTRA 0.04
int advice_keeps_sim_cheap(enum sched_algo a, double time, double xor_time, double bound);

/* What became of an allgather schedule considered (struct advice var[]). */
enum advice_state { ADVICE_OFFERED, ADVICE_SLOWER, ADVICE_NOTAPPLIC };

struct advice_variant {
	enum sched_algo algo;
	enum advice_state state;
	double time;      /* predicted seconds, -1 if unknown or not applicable */
};

struct advice {
	double time;      /* the answer's predicted seconds, -1 if unknown (a cable without a rate) */
	/* Every message size (advice_opts): the answer's steps in flight that
	 * time is predicted for; 1 where the times are the overlap's fluid
	 * model (above COST_SIM_FLOWS_MAX flows, allgathers: sized 0). */
	uint32_t window;
	int sized;
	/* The MPI's own Alltoall under the model asked (-1 none): what it runs
	 * at the block size, its predicted seconds (-1 unknown: not simulated,
	 * or not applicable), and whether it is predicted no slower than the
	 * answer by the rule (advice_keeps_native): the job then runs it. */
	int native;
	struct native_choice nat;
	double native_time;
	int native_faster;
	double xor_time;  /* XOR's, -1 if unknown or above ADVICE_BASELINE_MAX ranks */
	double bound;     /* the all-to-all posted at once (allgathers: the host-cable bound), -1 if unknown */
	int slower;       /* the requested schedule was replaced by the baseline (XOR; allgathers: RING) */
	/* allgathers: the baseline RING's time (-1 if unknown), and the
	 * variants considered (AGBEST: ALLGATHER, KSHIFT, AGRING; else the one
	 * asked for) */
	double ring_time;
	uint32_t nvar;
	struct advice_variant var[3];
};

/* The first step and level (>= 1) where OPT's busiest cable exceeds its
 * per-cable bound; 0 if it keeps it everywhere (or s is not OPT). */
int advice_opt_broken(const struct sched *s, uint32_t *step, uint32_t *level);

/* Steps a client may be asked to keep in flight: window=auto tries 1, 2,
 * 4, ... up to it (docs/cost-model.md "Steps in flight"). */
#define ADVICE_WINDOW_MAX TOPO_SCHED_WINDOW_MAX

/*
 * Against the MPI's own Alltoall (native.h), timed by the same simulation
 * at the same block size: keep a schedule only if even with both
 * predictions' measured error against it (docs/cost-model.md "Every
 * message size": SMPI over predicted within ADVICE_NATIVE_ERR either way)
 * it is at least ADVICE_MIN_SPEED as fast:
 *     time * (1 + err) <= native_time * (1 - err) / ADVICE_MIN_SPEED
 * and never one the model predicts slower. Unknown times: not kept (the
 * baseline is what the job gets without us).
 */
#define ADVICE_NATIVE_ERR 0.04

/* How a schedule is asked for (advice_schedule_opts). */
struct advice_opts {
	uint64_t bytes;     /* the block size the times are predicted for */
	int fallback;       /* 1: never answer what is predicted slower (above) */
	int threads;
	/* 1..ADVICE_WINDOW_MAX: the client keeps that many steps in flight
	 * (a sliding window of Isend/Irecv); 0: the fastest predicted of 1,
	 * 2, 4, ... ADVICE_WINDOW_MAX, answered in advice.window */
	uint32_t window;
	/* -1: the baseline is XOR; else an enum native_model, whose Alltoall
	 * is timed beside the answer and judges it (advice_keeps_native) */
	int native;
};

/*
 * The allgathers (sched_is_allgather) are judged against RING, the MPIs'
 * own large-message allgather (a ring in rank order), by predicted time
 * alone: no SMPI measurement of their error exists yet, so a variant is
 * offered iff it is predicted no slower than RING (or a time is unknown).
 * With fallback, one predicted slower is answered by RING (slower = 1);
 * AGBEST answers the fastest offered variant (ties: AGRING, KSHIFT,
 * ALLGATHER in that order), RING if none is offered; without fallback the
 * fastest applicable one. KSHIFT's k and ALLGATHER's k are req->k; a single
 * variant that does not apply is AN_E_NOTAPPLIC as before, under AGBEST it
 * is listed ADVICE_NOTAPPLIC.
 */

/*
 * Builds the schedule req asks for and judges it for blocks of o->bytes.
 * Times at every message size (cost.h cost_sim_run) where the schedule is
 * simulated; with o->native the MPI's own Alltoall is the baseline and
 * with o->fallback the answer is kept only where advice_keeps_native
 * holds (else native_faster: the job runs the MPI's own; the schedule is
 * still answered, for inspection); otherwise XOR is, as advice_schedule.
 */
int advice_schedule_opts(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
			 const struct advice_opts *o, struct sched **out, struct advice *a, char err[AN_ERR_LEN]);

/*
 * Builds the schedule req asks for and judges it for blocks of `bytes`. On
 * AN_OK *out is the answer (the one built, or XOR) and *a its figures; on
 * error *out is NULL and err says why (sched_build's codes, AN_E_NOTAPPLIC
 * for a broken OPT under fallback).
 */
int advice_schedule(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
		    uint64_t bytes, int fallback, int threads, struct sched **out, struct advice *a,
		    char err[AN_ERR_LEN]);

#endif
