/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_impl.h - what the schedule files share and nobody else sees: the
 * job's routes, the flow store every algorithm writes into, the compact
 * form's plan, and the table of algorithms (schedule.c) whose rows name
 * each algorithm once with the function that builds it.
 *
 * Why a table: each algorithm is a file of its own behind one function
 * type (sched_build_fn), so a new schedule is a new file and a row, and
 * the names clients send (docs/protocol.md "schedule") are read from the
 * rows, not from a list beside them.
 *
 *   schedule.c        the job, the flow store, figures, sched_build, the
 *                     checker, predictions, the table
 *   sched_compact.c   the host-level form: its figures and sched_expand
 *   sched_xor.c       XOR / pairwise
 *   sched_kprefix.c   the kPrefix allgather (seed 002)
 *   sched_shift.c     RING, AGRING and KSHIFT (one plan of shifts)
 *   sched_tacs.c      TACS1 and TACS2 (seed 004, Algorithm 2)
 *   sched_opt.c       OPT (seed 000)
 *   sched_route.c     ROUTE: its greedy core and its candidates and orders
 */
#ifndef AN_SCHED_IMPL_H
#define AN_SCHED_IMPL_H

#include "schedule.h"

#define NONE UINT32_MAX

/* Fills err and returns code. */
int sched_fail(char err[AN_ERR_LEN], int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- the job: hosts, their ranks, and the directed links of every host pair -- */

struct job {
	const struct route_tab *rt;
	uint32_t P, H;
	uint32_t *jh;        /* [P] job host of each rank */
	uint32_t *hrank_off; /* [H + 1] ranks of job host a: hrank[hrank_off[a] ..] */
	uint32_t *hrank;
	uint32_t *host;      /* [H] route_tab host index */
	uint32_t *group;     /* [H] leaf group of the host (hosts behind one leaf share routes) */
	uint32_t ngroups;
	uint32_t *rep;       /* [ngroups] a host of the group */
	uint32_t *cable;     /* [H] dense link id of the host's own cable */
	/* route from group g to host b: links[path_off[g*H+b] .. path_off[g*H+b+1]) */
	uint32_t *path_off;
	uint32_t *links;
	uint32_t nlinks;     /* dense ids */
	uint8_t *fabric;     /* [nlinks] 1: between two switches */
	uint64_t *bps;       /* [nlinks] the cable's data rate (rate.h), 0 if unknown */
};

/* Links of a -> b, excluding a's cable: count and pointer. */
static inline const uint32_t *job_route(const struct job *j, uint32_t a, uint32_t b, uint32_t *n)
{
	size_t k = (size_t)j->group[a] * j->H + b;
	*n = j->path_off[k + 1] - j->path_off[k];
	return j->links + j->path_off[k];
}

/* Ranks on job host a. */
static inline uint32_t c_nr(const struct job *j, uint32_t a)
{
	return j->hrank_off[a + 1] - j->hrank_off[a];
}

/* cost_sim_time's view of the job's routes (ctx: the job). */
uint32_t sched_sim_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out);

/* The schedule's time with steps overlapping (cost.h): s->sim_s_per_byte. */
void sched_overlap(struct sched *s, const struct job *j);

/* ---- schedule storage ------------------------------------------------------- */

/* Where a compact rank step comes from: TACS host step h (NONE: the
 * intra-host step y) and its substep y; XOR and ALLGATHER need neither. */
struct cplan {
	uint32_t *hstep, *y;
	uint32_t *shift;  /* RING, AGRING, KSHIFT: each step's shift of positions (shift_plan's d) */
	uint8_t *same;  /* figures equal the previous step's (expand_hosts' rule) */
};

struct sbuild {
	struct sched *s;
	size_t cap, n;       /* flows */
	uint32_t scap;       /* steps */
	/* same[i] = 1: step i moves the same host pairs with the same weights as
	 * step i-1 and every rank of those hosts takes part in both, so its
	 * figures and multi-ness are step i-1's (expand_hosts sets it). */
	uint8_t *same;
	uint32_t samecap;
	/* The compact form (schedule.h): set, an algorithm lists no flows but
	 * fills s->nsteps and the plan its figures are computed from. */
	struct cplan *pl;
};

/* Room for n flows (a complete exchange has exactly P(P-1)). */
int sb_alloc(struct sbuild *b, size_t n);

/* Flows are preallocated, so adding one is a store, not a call that may grow. */
static inline int sb_flow(struct sbuild *b, uint32_t src, uint32_t dst, uint32_t blk)
{
	if (__builtin_expect(b->n == b->cap, 0))
		return AN_E_NOMEM; /* more than a complete exchange: a bug, refused */
	b->s->src[b->n] = src;
	b->s->dst[b->n] = dst;
	if (b->s->blk)
		b->s->blk[b->n] = blk;
	b->n++;
	return AN_OK;
}

/* Closes the current step (drops it if empty). */
int sb_step(struct sbuild *b);

/* ---- the algorithms ---------------------------------------------------------- */

/*
 * Builds the schedule req->algo into b: its flows step by step, or with
 * b->pl (the compact form) s->nsteps and the plan. b->s->algo may change
 * to the one actually run (a fallback, with s->note saying why). h is the
 * fabric's hierarchy or NULL. 0 or AN_E_*, err saying why.
 */
typedef int sched_build_fn(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
			   char err[AN_ERR_LEN]);
/* After the figures and the overlap time: a last choice among candidates. */
typedef void sched_finish_fn(struct sched *s, const struct job *j, const struct hier *h, const struct sched_req *req,
			     int threads);
/* The rank flows of compact schedule c into b (sched_expand). */
typedef int sched_expand_fn(struct sbuild *b, const struct sched *c);

#define SCHED_F_ALLGATHER 1u  /* flows carry blocks (sched_is_allgather) */
#define SCHED_F_TACS 2u       /* TACS1, TACS2: host-pair states and candidates, O(H^2) */
#define SCHED_F_SEARCH 4u     /* ROUTE: a greedy search with scratch copies, O(P^3) */

/* One algorithm. build NULL: a name clients may send that is no schedule
 * (agbest, a choice made in advice.h). expand NULL: no compact form.
 * held: the rank-form schedules a request holds at once, the answer and
 * what advice.h builds beside it: the baseline (none for XOR and the
 * ring, which are the baselines), agbest its best so far and the one it
 * builds (schedule.h sched_algo_props pair_bytes). */
struct sched_algo_row {
	const char *name;
	enum sched_algo algo;
	unsigned flags;
	unsigned held;
	sched_build_fn *build;
	sched_finish_fn *finish;
	sched_expand_fn *expand;
};

/* The row of a, or NULL. */
const struct sched_algo_row *sched_algo_row(enum sched_algo a);

sched_build_fn sched_build_xor, sched_build_kprefix, sched_build_shift, sched_build_tacs, sched_build_opt,
	sched_build_route;
sched_finish_fn sched_finish_route;
sched_expand_fn sched_expand_xor, sched_expand_kprefix, sched_expand_shift, sched_expand_tacs;

/* XOR's steps on P ranks (also ROUTE's and TACS's fallback). */
int sched_xor_steps(struct sbuild *b, uint32_t P);

/* OPT's level of every link the job uses and cables per level (figures). */
int sched_opt_levels(struct sched *s, const struct job *j, int8_t *lvl);

/* ---- figures ------------------------------------------------------------------ */

/* One run of a step: w flows from ranks of job host a to ranks of b. */
struct crun {
	uint32_t a, b, w;
};

/* A thread's scratch for sched_step_fig, per link (nlinks + 1 each):
 * its load, the last host pair on it (a * H + b + 1), whether a second,
 * different pair came ("two nodes share the link"), and the links
 * touched. load, lastp and shared are zero between steps. */
struct fig_work {
	uint32_t *load, *touched;
	uint64_t *lastp;
	uint8_t *shared;
};

/* Adds the figures of one step's n runs to fg (schedule.h struct
 * sched_fig; fg starts zero). lvl: NULL, or OPT's level of each link, and
 * lmax its L per-level maxima of this step. */
void sched_step_fig(const struct job *j, const struct crun *run, uint32_t n, struct fig_work *w,
		    struct sched_fig *fg, const int8_t *lvl, uint32_t L, uint32_t *lmax);

/* sched_build's compact branch (sched_compact.c): s->algo is the one to run. */
int sched_build_compact(struct sched *s, const struct job *j, const struct hier *h, const struct sched_req *req,
			int threads, char err[AN_ERR_LEN]);

#endif
