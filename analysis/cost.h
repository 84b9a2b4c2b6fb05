/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost.h - the one cost model of the analyses: how long a set of flows takes
 * on the job's real routes and the cables' real rates (docs/cost-model.md).
 *
 * A phase is a set of flows posted at once (a pattern in `load`, one step of
 * a schedule). Its predicted time is
 *     T = max over directed cables c of bytes(c) / rate(c)  +  latency(h)
 * where bytes(c) is what the phase's routes put on c (load.h), rate(c) the
 * cable's data rate in bytes per second (rate.h: width x speed after the
 * line code, the lesser of both ends), and latency(h) that of the longest
 * route of the phase, h switches: (h + 1) cables and h switches, each
 * COST_CABLE_LAT_NS and COST_SWITCH_LAT_NS. A schedule's steps overlap as
 * MPI runs them (cost_sim_time below); where that is not simulated, its
 * time is the sum of its steps' times.
 *
 * This is the fluid model SimGrid's SMPI computes with the settings of
 * tests/lib/smpi.sh (equal shares of a cable per flow): the busiest cable
 * cannot finish sooner than its bytes over its rate, so T is a lower bound of
 * the fluid time, reached when no flow on the busiest cable is held back by
 * another cable. It is optimistic where a flow is slowed elsewhere and then
 * leaves the busiest cable idle, and, against real InfiniBand, it has no
 * head-of-line blocking, no credit stalls, no packet headers (a few percent
 * at MTU 4096) and no per-message software overhead.
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_COST_H
#define AN_COST_H

#include <stdint.h>

#include "an_err.h"
#include "load.h"
#include "route.h"

/* Propagation through one cable: ~20 m of fibre or copper at 5 ns/m. */
#define COST_CABLE_LAT_NS 100
/* Port-to-port cut-through latency of one switch (EDR/HDR ASICs state
 * 90-130 ns). */
#define COST_SWITCH_LAT_NS 100

/* Latency of a route through hops switches, in seconds. */
double cost_route_latency(uint32_t hops);

struct cost_time {
	double seconds;        /* bw_seconds + lat_seconds; 0 for a phase that loads no cable */
	double bw_seconds;     /* the busiest cable's bytes over its rate */
	double lat_seconds;    /* the longest route's latency */
	uint32_t link;         /* index into load->links of that cable, UINT32_MAX if none */
	uint64_t link_bps;     /* its data rate, bits per second */
};

/* The predicted time of the flows of l posted at once. AN_E_RANGE if a
 * loaded cable has no known rate (a snapshot without PortInfo rates; err
 * names the cable). */
int cost_load_time(const struct route_tab *rt, const struct load *l, struct cost_time *out,
		   char err[AN_ERR_LEN]);

/*
 * Steps that overlap (docs/cost-model.md "Steps that overlap"). An MPI rank
 * runs a schedule step after step with no barrier: it posts step s+1 as soon
 * as its own step-s sends and receives are done, and a transfer moves once
 * both its sender and its receiver have posted it. This is a fluid
 * simulation of exactly that: flows that move share each cable max-min
 * fairly (each flow gets an equal share of its bottleneck cable, what
 * cables it cannot use go to the others: what SMPI computes with the
 * settings of tests/lib/smpi.sh), every flow carries one byte, and latency
 * is left out, so the result is seconds per byte of one block (time scales
 * with the block size in a fluid model without latency).
 *
 * It is bounded by work, not by size: each flow's start and end re-solves
 * the shares (O(moving x route) each; in the cheaper mode only those on the
 * cables that changed), and above COST_SIM_WORK_MAX cable visits it stops
 * with AN_E_RANGE so the caller keeps the sum of step maxima
 * (cost_load_time per step). Measured in CPU time (XOR, TACS1, TACS2 on
 * three shapes of a 2:1 tree of 256 hosts): 128 ranks exact 1.5-45 ms;
 * 256 ranks exact 6-550 ms, cheaper 7-140 ms. route simulates each of its
 * candidates.
 */
#define COST_SIM_WORK_MAX 400000000ull
#define COST_SIM_FULL_EVERY 16
#define COST_ROUTE_MAX 64 /* cables of one route the simulation holds */
/* Schedules of more flows than this are not simulated (a 4,096-rank
 * compact reply has 40 ms in all); up to COST_SIM_EXACT_FLOWS_MAX every
 * event re-solves every share (128 ranks: 20-45 ms of CPU), above it only
 * the changed cables' flows, with a full solve every COST_SIM_FULL_EVERY
 * events: 256 ranks 30-140 ms instead of 180-550, within 2 % of the exact
 * simulation (docs/cost-model.md). */
#define COST_SIM_FLOWS_MAX (256u * 255u)
#define COST_SIM_EXACT_FLOWS_MAX (128u * 127u)

struct cost_sim {
	uint32_t nranks, nsteps, ncables;
	const uint32_t *step_off;   /* [nsteps + 1] flows of step s: [step_off[s], step_off[s+1]) */
	const uint32_t *src, *dst;  /* ranks, < nranks */
	const uint64_t *bps;        /* [ncables] data rate of each directed cable, bits per second */
	/* The directed cables of src's route to dst, at most COST_ROUTE_MAX ids
	 * (< ncables) into out; 0 for ranks on one host (a local copy, no time). */
	uint32_t (*route)(const void *ctx, uint32_t src, uint32_t dst, uint32_t *out);
	const void *ctx;
	/* 1: every flow's start and end re-solves every moving flow's share;
	 * 0: only those on the cables that changed, with a full solve every
	 * COST_SIM_FULL_EVERY events */
	int exact;
	/* Messages of a real size (cost_sim_run; cost_sim_time ignores these):
	 * a flow carries block x mult[f] bytes (mult NULL: one block) and
	 * msg's envelope; how it is sent and completed is msg's (NULL: SMPI's,
	 * cost_msg_smpi). window: the steps a rank has posted at once (0 or 1:
	 * one step after the other; W: step s+W is posted once every step up
	 * to s is done, as a sliding window of Isend/Irecv keeps them). */
	double block;
	const uint32_t *mult;
	const struct cost_msg *msg;
	uint32_t window;
	/* Programs (cost_sim_run only; cost_prog.h builds them): each rank
	 * runs its own list of operations in order instead of steps, as an
	 * MPI collective's code does: prog[prog_off[r] .. prog_off[r + 1]) are
	 * rank r's, each flow x 4 + COST_OP_*: posting a flow's send (at its
	 * source) or receive (at its destination) costs nothing and goes on;
	 * waiting for one stops the rank until it is complete (a receive when
	 * its message is in, a send when posted below the eager limit, else
	 * when its message is in). bytes[f] is flow f's size (block and mult
	 * are not used); the steps (nsteps 1) only list the flows. NULL prog:
	 * the steps above. */
	const uint32_t *prog_off, *prog;
	const double *bytes;
	/* [flows] 1: a synchronous send (MPI_Issend), complete when its
	 * message is in whatever its size; NULL: none */
	const uint8_t *sync;
};

enum { COST_OP_SEND, COST_OP_RECV, COST_OP_WAIT_SEND, COST_OP_WAIT_RECV };

/*
 * How an MPI sends one message, as SimGrid's SMPI 3.32 times it with the
 * settings of tests/lib/smpi.sh (docs/cost-model.md "Every message size"):
 * the message waits until both ranks have posted it (SMPI matches a send
 * with its receive before any byte moves, smpi/async-small-thresh 0), then
 * its route's latency (cost_route_latency: the platform's links carry it),
 * then its bytes plus the envelope move at the flow's max-min share. A
 * message below the eager limit completes at its sender when posted
 * (SMPI's detached send, smpi/send-is-detached-thresh 65536): the sender
 * runs ahead while it is still in flight; a larger one completes at both
 * ends when it arrives. Between two ranks of one host (a route of no
 * cable) it takes bytes over the host's loopback rate, shared with nothing.
 */
struct cost_msg {
	double envelope;        /* bytes every message adds (SMPI: 16) */
	double eager_below;     /* a message of fewer bytes completes at its sender when posted */
	double local_Bps;       /* one host's loopback, bytes per second (SMPI: 1e10); 0: free */
};

/* The time in seconds of the schedule's messages of block x mult bytes,
 * with steps in flight as in->window says, latencies and the eager limit
 * counted (cost_msg): what SMPI measures for the same steps. The same
 * simulation as cost_sim_time otherwise (shares, bounds, errors). */
int cost_sim_run(const struct cost_sim *in, double *seconds, char err[AN_ERR_LEN]);

/* The time the schedule takes per byte of a block when steps overlap. AN_OK,
 * AN_E_RANGE past the work bound or for a cable without a rate (err says
 * which), AN_E_INVAL for a rank or cable out of range, AN_E_NOMEM. */
int cost_sim_time(const struct cost_sim *in, double *s_per_byte, char err[AN_ERR_LEN]);

#endif
