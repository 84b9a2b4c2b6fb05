/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_route.h - the route-aware all-to-all schedule (SCHED_ROUTE, "route"):
 * steps whose flows keep every cable close to evenly loaded, aiming at the
 * lower bound of any schedule (the all-to-all posted at once, cost.h).
 *
 * Why: under the cost model a step takes its busiest cable's bytes over its
 * rate, so a schedule takes at least the bound, and reaches it only if every
 * step's busiest cable is the job's bottleneck cable carrying its fair share
 * (its total over the steps left). XOR and TACS run steps that are all
 * on-leaf or all off-leaf: the on-leaf steps leave the over-subscribed
 * uplinks idle, the off-leaf ones overload them. This schedule mixes them.
 *
 * How: P-1 target steps, each a partial permutation (a rank sends at most
 * one block and receives at most one: multi=0, one MPI_Sendrecv per rank and
 * step). Before step s, R(c) is the time cable c still has to carry (its
 * pending blocks over its rate) and the step's budget is
 *     beta = max_c R(c) / max(1, P-1-s)
 * (what the bottleneck must move per step to end on time). Senders, those
 * with most blocks pending first (ties rotate with the step), each take the
 * pending destination that is free to receive, keeps every cable of its
 * route within the budget (a cable may always take one block), and crosses
 * the most loaded cable (largest R), ties to the receiver with most blocks
 * pending. A sender left without a partner tries an augmenting path
 * through the step's matching (Kuhn's, each move checked against the
 * cables, 1 or 3 moves deep) so that steps stay full. Steps beyond P-1, if
 * any, are leftovers with the budget of the whole remainder. Intra-host
 * blocks load no cable and fill the gaps. Greedy choices may strand ranks or
 * let a cable fall behind, depending on the fabric, so four variants run
 * (budget x1 or x1.25, paths of 1 or 3 moves) beside XOR's own steps, and
 * the one the model predicts fastest for 1 MiB blocks is the answer, by the
 * model sched_time applies (steps overlapping as MPI runs them, cost.h
 * cost_sim_time, up to COST_SIM_FLOWS_MAX flows; each step's latency
 * included): never predicted slower than XOR (on whole leaves of a 2:1
 * tree the greedy loses to XOR's order, and route is XOR's steps there).
 *
 * Cost: per variant O(P^2 h) per step (every sender scans its pending list,
 * h = cables of the longest route; augmenting paths visit at most 4P
 * receivers per step), O(P^3 h) in all; memory O(P^2) (pending lists and
 * one spare schedule) + O(links). Measured: 256 ranks in 0.3 s
 * (tests/unit/test_sched_route.c, 2 cores). Jobs above SR_RANKS_MAX ranks
 * run XOR (note says so).
 *
 * Pure: no I/O, no globals. Deterministic for the same job.
 */
#ifndef AN_SCHED_ROUTE_H
#define AN_SCHED_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"

/* O(P^3): 1,024 ranks take seconds; beyond, the answer would be late. */
#define SR_RANKS_MAX 1024

/* The job's routes as the schedules hold them (sched_impl.h struct job): the route of
 * rank a to rank b (on different hosts) is host jh[a]'s cable, then
 * links[path_off[group[jh[a]] * H + jh[b]] .. path_off[... + 1]). */
struct sr_job {
	uint32_t P, H, nlinks;
	const uint32_t *jh;       /* [P] job host of each rank */
	const uint32_t *group;    /* [H] leaf group of each host */
	const uint32_t *cable;    /* [H] dense id of the host's own cable */
	const uint32_t *path_off; /* [ngroups * H + 1] */
	const uint32_t *links;
	const uint64_t *bps;      /* [nlinks] cable rates, 0 if unknown (taken as the slowest known) */
	const atomic_int *cancel; /* NULL, or raised by another thread: AN_E_CANCEL between steps */
};

/*
 * Fills src/dst (room for cap >= P(P-1) flows) step by step, each step's
 * flows in source order; *step_end (malloc'ed, [*nsteps]) is the end of each
 * step in src/dst. AN_E_NOMEM, AN_E_RANGE above SR_RANKS_MAX ranks, or
 * AN_E_CANCEL once j->cancel is raised.
 */
int sr_build(const struct sr_job *j, uint32_t *src, uint32_t *dst, size_t cap, uint32_t **step_end,
	     uint32_t *nsteps, char err[AN_ERR_LEN]);

#endif
