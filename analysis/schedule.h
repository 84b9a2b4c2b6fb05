/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule.h - all-to-all (and allgather) communication schedules for a job,
 * and what each step of them does to the fabric's links.
 *
 * A job is a rank -> host list (route_tab host indices; several ranks may
 * share a host, hosts may carry different rank counts). A schedule is a
 * list of steps; each step is a list of flows (src rank -> dst rank), sorted
 * by src. An MPI library runs step after step, one MPI_Sendrecv per rank
 * per step (or Isend/Irecv when a rank has several flows in a step, which
 * only TACS2 produces; sched->multi says so). Self blocks (r -> r) are never
 * listed: they are a local copy.
 *
 * Algorithms (docs/protocol.md "schedule" has the reference text):
 *   SCHED_XOR     what MPICH and Open MPI run by default for large blocks:
 *                 p a power of two: step i (1..p-1) exchanges r <-> r XOR i;
 *                 otherwise pairwise: r sends to (r+i) mod p and receives
 *                 from (r-i) mod p.
 *   SCHED_TACS1   seed 004, section 6.2.3, Algorithm 2, at host level: for
 *   SCHED_TACS2   each distance d from the largest host-to-host hop count
 *                 down to 1, for each of the H-1 normal steps, every free
 *                 host pairs (a symmetric exchange) with its farthest pending
 *                 partner at distance d whose route adds no shared link to the
 *                 step, then with one that keeps every link at <= 1 +
 *                 conflicts flows; then TACS1 adds extra steps (same bounded
 *                 rule, any distance) until every pair is done, while TACS2
 *                 lets each host left idle in a normal step take its first
 *                 pending partner regardless of conflicts, so it ends after
 *                 H-1 host steps and hosts may exchange with several partners
 *                 in one step (multi=1). "More than i hops" of the printed
 *                 algorithm is read as ">= i": with ">" pairs on one leaf
 *                 (1 hop) would only ever go into extra steps.
 *                 Sparsity rule (the printed guard): if no two job hosts share
 *                 a leaf switch, or job hosts per used leaf < sparsity, the
 *                 default (XOR) is used and sched->note says so.
 *                 The host schedule is expanded to ranks: first the
 *                 intra-host exchange (y = 1..R-1: rank x -> (x+y) mod r on
 *                 every host with r > y ranks), then each host step a -> b
 *                 (ra, rb ranks) becomes max(ra, rb) rank steps: step y,
 *                 ra <= rb: a[x] -> b[(x+y) mod rb]; ra > rb: a[(z+y) mod ra]
 *                 -> b[z]. A host step's rank steps are max over its flows.
 *   SCHED_OPT     seed 000's bandwidth-optimal exchange (equation 4 with
 *                 sigma = (L..1)) on the job's tree FT(L; M1..ML): M1 =
 *                 ranks per host, M2 = job hosts per leaf cluster, M3 = leaf
 *                 clusters per pod ... from the hierarchy (hier.h). Applies
 *                 only when that tree is homogeneous (every host the same
 *                 rank count, every cluster the same number of children);
 *                 otherwise AN_E_NOTAPPLIC with the reason.
 *   SCHED_ALLGATHER seed 002's kPrefix all-to-all multicast: P ranks in
 *                 partitions of k (a power of two dividing P); iteration t
 *                 (0..P/k-1) has k-1 steps r -> r XOR i (i = 1..k-1) carrying
 *                 block (r - t*k) mod P, then (except the last) a ring step
 *                 r -> (r+k) mod P carrying the same block. P-1 steps. The
 *                 flows carry the block (origin rank) they forward.
 *   SCHED_RING    the MPIs' own large-message allgather, the baseline of the
 *                 allgather schedules: a ring in rank order; step s (0..P-2):
 *                 r -> r+1 carrying block r-s (mod P). P-1 steps.
 *   SCHED_AGRING  the same ring in the fabric's order (coll/allgather.c's):
 *                 the job's leaves by their first job host (route_tab order,
 *                 i.e. by name), a leaf's hosts by name, a host's ranks
 *                 together in rank order. A shift by one in that order sends
 *                 one flow out of and into each host and each leaf per step:
 *                 contention-free on any up*-down* route set of a tree.
 *   SCHED_KSHIFT  Kumar and Kalé 2004's kShift, in the fabric's order
 *                 (positions 0..P-1 as for AGRING): with a = ceil((k-1)/2),
 *                 b = k-1-a, iteration t has the steps p -> p+j for j = -a..-1,
 *                 1..b, then p -> p+k, each forwarding the block p got in the
 *                 previous iteration's last step. P not a multiple of k (the
 *                 paper leaves it open): after q = P div k iterations the last
 *                 ring step shifts by b+1+a' (a' = ceil((rem-1)/2), rem = P
 *                 mod k) and a last window of rem positions (-a'..rem-1-a')
 *                 ends the exchange, so always P-1 steps. k = 1 is AGRING.
 *                 The paper's contention-free k (1, 2, 3, 4, 8: Lemma 6,
 *                 shifts by a*4^j) hold on QsNet's quaternary trees; under
 *                 destination routing a job's shift by s sends min(s, its
 *                 hosts on the leaf) flows up a leaf, so only the model
 *                 says where kShift pays (docs/performance.md).
 *   SCHED_AGBEST  not a schedule: advice.h answers the fastest predicted of
 *                 ALLGATHER, KSHIFT and AGRING, never one predicted slower
 *                 than RING; sched_build() refuses it.
 *   SCHED_ROUTE   route-aware, aiming at the bound: P-1 steps (a few more at
 *                 most) whose flows keep every cable near its fair share of
 *                 what it carries in all, mixing on-leaf and off-leaf pairs;
 *                 one block per rank each way per step. sched_route.h; above
 *                 SR_RANKS_MAX ranks it is XOR and note says so. Where OPT
 *                 applies (h given) and keeps its per-cable bound on the
 *                 routes, OPT's steps are a candidate too (two whole leaves
 *                 of a 2:1 tree, where they beat the greedy): the answer is
 *                 the candidate sched_time predicts fastest for 1 MiB.
 *
 * Figures per step, from the LFT routes of the generation: a flow between
 * ranks on different hosts loads the source host's cable and every (switch,
 * out port) of route_walk from its default port to the destination's LID
 * (the last one is the destination's cable); intra-host flows load nothing.
 * maxload = the most rank flows on one directed link; conflicts = directed
 * links shared by flows of two or more different (source host, destination
 * host) pairs: seed 004's "a link is over-subscribed if two nodes share it
 * in that step" (Figure 6.5), so the ranks of one host sending to one other
 * host, which share every link by construction, are not a conflict;
 * fabric_conflicts = those links between two switches (host cables left out).
 *
 * Error convention: int functions return AN_OK (0) or a negative
 * AN_E_*, with err[AN_ERR_LEN] saying why. Nothing prints or exits.
 * Lifetime: a sched is independent of the route_tab once built.
 */
#ifndef AN_SCHEDULE_H
#define AN_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"
#include "hier.h"
#include "topo_limits.h"

#define SCHED_LEVELS_MAX 8     /* levels of seed 000's tree (ranks .. root) */
#define SCHED_CONFLICTS_MAX TOPO_SCHED_CONFLICTS_MAX /* allowed conflicts per link: beyond that TACS is XOR */
#define SCHED_RANKS_MAX 4096   /* P(P-1) flows are held: 128 MiB at 4,096 ranks */

enum sched_algo {
	SCHED_XOR, SCHED_TACS1, SCHED_TACS2, SCHED_OPT, SCHED_ALLGATHER, SCHED_ROUTE,
	SCHED_KSHIFT, SCHED_AGRING, SCHED_RING, SCHED_AGBEST
};

/* 1 for the allgather schedules (flows carry blocks): ALLGATHER, KSHIFT,
 * AGRING, RING and AGBEST. */
int sched_is_allgather(enum sched_algo a);

struct sched_req {
	enum sched_algo algo;
	uint32_t nranks;
	const uint32_t *rank_host;  /* [nranks] route_tab host index of each rank */
	unsigned conflicts;         /* TACS: allowed conflicts per link (seed: 1) */
	double sparsity;            /* TACS: sparsity threshold, hosts per leaf (0: never) */
	unsigned k;                 /* ALLGATHER: partition size (0: largest power of two <= 8 dividing P);
	                             * KSHIFT: 1..P (0: 8; above P: P) */
	/* 1: build the host-level (compact) form, below; OPT ignores it. */
	int compact;
	/* NULL, or a flag another thread may raise: TACS and route then stop
	 * between steps with AN_E_CANCEL (an_err.h). */
	const atomic_int *cancel;
};

struct sched_fig {
	uint32_t flows;             /* flows in the step */
	uint32_t maxload;
	uint32_t conflicts;         /* directed links shared by >= 2 host pairs */
	uint32_t fabric_conflicts;  /* of those, links between two switches */
	/* The cost model (cost.h): the step's busiest cable by load over rate,
	 * in seconds per byte of one block, and its longest route. */
	double s_per_byte;
	uint32_t max_hops;
	int unrated;                /* a loaded cable has no known rate */
};

struct sched {
	enum sched_algo algo;       /* the one run (TACS may have fallen back to XOR) */
	uint32_t nranks, nsteps;
	uint32_t *step_off;         /* [nsteps + 1] flows of step i: [step_off[i], step_off[i+1]) */
	uint32_t *src, *dst;        /* [step_off[nsteps]] */
	uint32_t *blk;              /* allgathers: origin rank of the block forwarded; else NULL */
	/* RING, AGRING, KSHIFT: ord[p] = the rank at ring position p (RING:
	 * p itself); else NULL. Compact schedules keep it too. */
	uint32_t *ord;
	/* allgathers: the host-cable bound's seconds per byte of a block, the
	 * busiest host cable's (P - ranks on it) blocks over its rate: no
	 * allgather delivers a host fewer blocks; -1 if a cable has no rate. */
	double bound_s_per_byte;
	int multi;                  /* some rank sends or receives more than once in a step */
	uint32_t host_steps;        /* TACS: host-level steps (normal H-1 + extra) */
	uint32_t extra_steps;       /* TACS1: host steps beyond H-1 */
	struct sched_fig *fig;      /* [nsteps], after sched_figures() */
	/* OPT only: the tree and its per-level bound (seed 000 eq. 1), per step
	 * the busiest directed link at each level (up or down) and the per-cable
	 * bound ceil(Bmin(l) / cables(l)), cables(l) = links at that level used
	 * by the whole exchange / subtrees at level l. */
	uint32_t nlevels;           /* L: M[0..L-1] = M1..ML */
	uint32_t M[SCHED_LEVELS_MAX];
	uint32_t bmin[SCHED_LEVELS_MAX];
	uint32_t cables[SCHED_LEVELS_MAX];
	uint32_t cable_bound[SCHED_LEVELS_MAX];
	uint32_t *level_max;        /* [nsteps * nlevels] or NULL */
	int tree_routes;            /* 1 if every route climbed and descended the tree evenly */
	char note[160];             /* "fallback=xor (...)" or "" */
	/* The bandwidth part of the schedule's time when steps overlap as MPI
	 * runs them (cost_sim_time, seconds per byte of a block); 0 where not
	 * simulated (above COST_SIM_FLOWS_MAX flows, unrated cables), and
	 * sched_time then sums the steps' maxima. */
	double sim_s_per_byte;
	/* The compact form (req->compact, any algorithm but OPT): no rank flows
	 * (step_off, src, dst, blk are NULL), the same nsteps, fig[] and multi
	 * as the rank-level schedule, and what sched_expand() needs to list its
	 * flows: XOR from nranks alone, ALLGATHER from nranks and k, RING, AGRING and
	 * KSHIFT from nranks, k and ord, TACS from
	 * the job's hosts and the host steps. Memory O(P + H^2), not O(P^2). */
	int compact;
	uint32_t k;                 /* ALLGATHER, KSHIFT: the partition size used; RING, AGRING: 1 */
	uint32_t nhosts;            /* job hosts, numbered by first appearance among the ranks */
	uint32_t *rank_jhost;       /* [nranks] job host of each rank */
	uint32_t nhsteps;           /* TACS: host steps that move something */
	uint32_t *hstep_off;        /* [nhsteps + 1] host flows of host step i */
	uint32_t *hsrc, *hdst;      /* [hstep_off[nhsteps]] job hosts, a -> b */
	/* ROUTE: the same steps in the order that runs fastest with steps in
	 * flight where that order is slower one step at a time than the
	 * answer's (NULL otherwise; sched_free frees it). The answer's order
	 * serves a client that runs one step after the other; advice answers
	 * this one to a client that keeps steps in flight, if predicted faster
	 * at its window for SCHED_ORDER_BLOCK blocks. */
	struct sched *wide;
};

/* The block size route's step orders are chosen for: one order for every
 * size, so that a client asking again for another size (libtopocoll's
 * size classes) is answered the same steps. */
#define SCHED_ORDER_BLOCK (1u << 20)

const char *sched_algo_name(enum sched_algo a);
int sched_algo_parse(const char *s, enum sched_algo *a);  /* 0 or AN_E_INVAL */

/* What a client's algorithm name stands for before anything is built,
 * read from the one table of algorithms, so that those who judge a
 * request first (topod's estimator) read properties, not names. */
struct sched_algo_props {
	enum sched_algo algo;
	int allgather;        /* flows carry blocks (sched_is_allgather) */
	int tacs;             /* TACS1, TACS2: host-pair states and candidates, O(H^2) */
	int search;           /* ROUTE: a greedy search with scratch copies, O(P^3) */
	int ranks_only;       /* no compact form: form=hosts still holds every rank flow */
	uint32_t pair_bytes;  /* rank form: bytes per ordered rank pair of the schedules held at once */
};
/* 0, or AN_E_INVAL for a name that is no algorithm (*out untouched). Pure. */
int sched_algo_props(const char *name, struct sched_algo_props *out);

/* Builds the schedule and its per-step figures. h is needed for OPT only
 * (may be NULL otherwise). threads: OpenMP team size for the figures. */
int sched_build(const struct route_tab *rt, const struct hier *h, const struct sched_req *req,
		int threads, struct sched **out, char err[AN_ERR_LEN]);
void sched_free(struct sched *s);  /* NULL is a no-op */

/* The schedule's predicted time for blocks of `bytes` (docs/cost-model.md):
 * sim_s_per_byte x bytes where steps were simulated overlapping, else the
 * sum over steps of the busiest cable's bytes over its rate; plus, per step,
 * its longest route's latency. -1 if a loaded cable has no known rate. */
double sched_time(const struct sched *s, uint64_t bytes);

/* Independent check: every ordered pair of distinct ranks exactly once
 * (allgather: every rank receives every other rank's block exactly once, from
 * a rank that held it before that step); per step each rank sends and
 * receives at most once unless s->multi, and s->multi is set only if needed.
 * O(flows + nranks^2 / 8) memory. */
int sched_check(const struct sched *s, char err[AN_ERR_LEN]);

/*
 * The rank-level schedule of a compact one (docs/protocol.md "schedule",
 * form=hosts, states the same rule for clients): flows, steps, figures and
 * multi equal to what sched_build() without compact gives for the same
 * request. TACS: job host a's ranks are its ranks in rank order, ra of
 * them; first the intra-host steps y = 1..R-1 (R the most ranks on a host):
 * on every host with ra > y, a[x] -> a[(x+y) mod ra]; then each host step,
 * in order, becomes max over its flows of max(ra, rb) rank steps y = 0..:
 * each host flow a -> b, in order, adds ra <= rb: a[x] -> b[(x+y) mod rb]
 * for x < ra if y < rb; ra > rb: a[(z+y) mod ra] -> b[z] for z < rb if
 * y < ra. *out is new (sched_free).
 */
int sched_expand(const struct sched *c, struct sched **out, char err[AN_ERR_LEN]);

/*
 * Predictions at a block size (docs/cost-model.md "Every message size"):
 * steps of flows timed as SMPI sends them (cost.h cost_sim_run: SMPI's
 * messages, each route's latency, the eager limit, `window` steps in
 * flight) on one job's routes, held once for several predictions.
 */
struct sched_job;

/* The job of nranks ranks on route_tab hosts rank_host[]. */
int sched_job_new(const struct route_tab *rt, uint32_t nranks, const uint32_t *rank_host, struct sched_job **out,
		  char err[AN_ERR_LEN]);
void sched_job_free(struct sched_job *j);  /* NULL is a no-op */

/* Steps of flows src -> dst (the job's ranks) carrying mult blocks each
 * (NULL: one) of `block` bytes, `window` steps in flight. AN_E_RANGE above
 * COST_SIM_FLOWS_MAX flows (plus one per rank), past the simulation's work
 * bound or across a cable without a rate (err says which). */
int sched_job_time(const struct sched_job *j, uint32_t nsteps, const uint32_t *step_off, const uint32_t *src,
		   const uint32_t *dst, const uint32_t *mult, double block, uint32_t window, double *seconds,
		   char err[AN_ERR_LEN]);

/* A built schedule's (a compact one is expanded first). */
int sched_job_sched_time(const struct sched_job *j, const struct sched *s, double block, uint32_t window,
			 double *seconds, char err[AN_ERR_LEN]);


#endif
