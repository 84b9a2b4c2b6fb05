/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place.h - placing a job on the fabric (seed chapters 5 and 8): host order,
 * node selection and rank mapping, for schedulers and MPI libraries.
 *
 *   order  hosts in hierarchy order: hosts of one leaf cluster together,
 *          leaf clusters of one pod together, pods together (seed 8.2.2:
 *          what TopologyParam=SwitchAsNodeRank and Open MPI issue #1293 ask for).
 *   pick   N hosts out of a free list, compact first: one leaf switch if
 *          one has N free (the fewest free that suffices), else the fewest
 *          leaf switches, then among those the fewest pods; among the sets
 *          on that many leaves and pods, the fewest hosts sharing a link
 *          above the leaf (share.h's "sharing", the seed's relaxed
 *          constraint 8.2.2.1), then the most free hosts on the leaves:
 *          exact on free lists up to 40 hosts (place_search.c; always ends
 *          up to 20), beyond on the leaves with the most free hosts.
 *          Compactness wins over sharing-freedom, which is what keeps the
 *          promises on every routing engine; the answer says when a
 *          sharing-free set on other leaves existed. place_pick_advise
 *          then balances the hosts within those leaves over the cables
 *          above them (place_pick_balance) and judges the pick against
 *          first-fit by the cost model (cost.h).
 *   map    ranks of a weighted communication graph onto hosts with slots
 *          (seed 5.2.2-5.2.4, 8.2.3): Scotch's SCOTCH_graphMap onto a
 *          target built from the hierarchy (hop-bytes), refined by swaps
 *          against the busiest cable, then judged against block and
 *          round-robin by the predicted time of one phase (cost.h).
 *
 * Hosts are route_tab host indices (default rail). Lists must hold distinct
 * hosts: place_find_dup() finds the first repeat for the caller's message.
 *
 * Errors: AN_OK or a negative AN_E_* (route.h); AN_E_RANGE where a
 * request cannot be met (too few hosts or slots), with a reason in why.
 * Nothing here prints, exits or keeps global state: what outlives a call
 * is in a caller's struct place_ctx (see place_ctx_new).
 *
 * Sources: place.c (order, figures, advice), place_pick.c (pick),
 * place_balance.c (the hosts within the leaves), place_entry.c
 * (pick's entry-link table and the context), place_graph.c (graphs, cost),
 * place_map.c (map); place_impl.h is what they share.
 */
#ifndef AN_PLACE_H
#define AN_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "hier.h"
#include "native.h"
#include "route.h"
#include "topo_limits.h"

/*
 * A placement context, owned by the caller and shared by its threads:
 *   - pick's entry table of the last fabric seen (a few MiB, rebuilt when
 *     the fabric changes), so picks on one fabric build it once;
 *   - the lock around Scotch, whose random generator is process-wide:
 *     holding it makes mapping deterministic and Scotch reentrant for our
 *     use. Every thread of a process that maps concurrently must therefore
 *     use the same context.
 * NULL when out of memory. place_ctx_free when no call uses it any more.
 */
struct place_ctx;
struct place_ctx *place_ctx_new(void);
void place_ctx_free(struct place_ctx *ctx);

/* Index of the first host listed a second time, or -1. O(n log n). */
long place_find_dup(const uint32_t *hosts, size_t n);

/* Sorts hosts[] in place into hierarchy order: by ancestor cluster from the
 * root down (siblings by cluster key, the smallest member GUID), then by
 * host name. Deterministic; O(n log n * depth). */
int place_order(const struct route_tab *rt, const struct hier *h, uint32_t *hosts, size_t n);

/* Leaf cluster and pod (its parent; the leaf itself for a root) of a host. */
uint32_t place_leaf_cluster(const struct hier *h, uint32_t host);
uint32_t place_pod(const struct hier *h, uint32_t host);

/* Figures of a host set: sharing, leaves, max hops and the all-to-all
 * maximum link load (every ordered pair one unit, share.h's loads). */
struct place_figs {
	uint32_t sharing;     /* hosts sharing a link above their leaf (share.h) */
	uint32_t leaves;      /* distinct leaf switches */
	uint32_t pods;        /* distinct pods (place_pod) */
	uint32_t max_hops;    /* longest route between two of them */
	uint32_t max_load;    /* all-to-all: most ordered pairs on one directed link */
	uint64_t pairs_failed;
};
int place_figures(const struct route_tab *rt, const struct hier *h, const uint32_t *hosts, size_t n,
		  struct place_figs *out);

struct place_pick {
	size_t n;
	uint32_t *hosts;          /* chosen, in hierarchy order (free with place_pick_free) */
	struct place_figs figs;
	int sharing_free;         /* 1 if the choice shares no link above the leaf */
	int exhaustive;           /* the leaves, pods, sharing and free hosts are proven optimal (the
				   * exact search ended, or step 2's leaves were sharing-free) */
	uint32_t min_leaves;      /* the fewest leaf switches that hold want free hosts */
	uint32_t min_pods;        /* the fewest pods among sets on min_leaves leaves */
	int sharing_free_wider;   /* shares, though a sharing-free set on more leaves exists:
				   * fewest leaves won (known by the capacity argument) */
	/* place_pick_advise only (place_pick leaves them -1 / 0): */
	double time;              /* the answer's predicted all-to-all, seconds; -1 unknown */
	double pick_time;         /* the compact pick's, before the judgment */
	double ff_time;           /* first-fit's (place_first_fit) */
	int first_fit;            /* the answer is first-fit's: the pick was predicted slower */
	/* appended, place_pick_advise only: the bandwidth terms of
	 * the predictions (cost.h's bw_seconds) and why the answer's busiest
	 * cable sits above the injection limit */
	uint32_t swaps;           /* hosts traded within their leaves by place_pick_balance */
	int balanced;             /* 1: the balanced hosts were taken (predicted faster) */
	double bw_time;           /* the answer's busiest cable: its bytes over its rate; -1 unknown */
	double ff_bw_time;        /* first-fit's */
	double limit_time;        /* the injection limit: (n - 1) blocks over the slowest chosen
				   * host's own cable, the floor of bw_time; -1 unknown */
	uint32_t bott_node;       /* the answer's busiest cable leaves bott_node by bott_port; */
	uint8_t bott_port;        /* ROUTE_NONE / 0 if none */
	enum place_limit_why {
		PLACE_AT_LIMIT = 0,   /* bw_time within PLACE_LIMIT_SLACK of the limit */
		PLACE_UPLINKS = 1,    /* a leaf's uplinks cannot carry its hosts' share at the limit */
		PLACE_ROUTES = 2,     /* the free hosts' routes share cables (no choice of them avoids it) */
		PLACE_NOLIMIT = 3,    /* no rates, or a single leaf: no figure */
	} limit_why;
	/* appended (place_pick_leaves; docs/protocol.md, `pick`, `leaves=`): a
	 * pick on more leaves than the answer's, predicted faster; with
	 * any_leaves it is the answer */
	int widened;              /* 1: the answer is that wider pick */
	uint32_t wider_leaves;    /* its leaves; 0 if none was tried or none is predicted faster */
	double wider_time;        /* its predicted time, seconds; -1 likewise */
	/* appended: the mean predicted time of random picks from
	 * the free list (what a scheduler blind to the fabric may take),
	 * predicted under leaves AUTO and ANY when the answer is above the
	 * injection limit; -1 else */
	double random_time;
	/* appended: a sharing-free set of n hosts exists in the
	 * free list on any leaves (the answer, or found; see protocol.md) */
	int sf_exists;
	/* appended (docs/protocol.md, `pick`, `run=`): what the times above
	 * are of (enum place_run; place_pick_run), and how many schedules were
	 * simulated to judge the candidates */
	int run;
	uint32_t sims;
};

/* What a pick is judged by (protocol `pick run=`): every candidate's,
 * first-fit's and the random picks' times are of it. */
enum place_run {
	PLACE_RUN_BOUND = 0,   /* the pattern posted at once: its busiest cable's bytes over its rate */
	PLACE_RUN_ROUTE = 1,   /* topod's route all-to-all as `schedule route window=auto` answers it, its
				* fallback to XOR included, simulated step by step (advice.h) */
	PLACE_RUN_XOR = 2,     /* XOR's steps, one after the other (the MPIs' pairwise) */
	PLACE_RUN_NATIVE = 3,  /* + an enum native_model: that MPI's own Alltoall at the block size */
	PLACE_NRUNS = PLACE_RUN_NATIVE + NATIVE_NMODELS
};
/* "bound", "route", "xor" or the model's name (native.h); "?" if none. */
const char *place_run_name(int run);
int place_run_parse(const char *s, int *run);   /* AN_OK or AN_E_INVAL */

/* The rule on leaves (protocol `pick leaves=`). */
enum place_leaves {
	PLACE_LEAVES_FEWEST = 0,  /* the promise of fewest leaves, pods and sharing hosts, whatever it
				   * costs (stated): no alternative or first-fit that breaks it */
	PLACE_LEAVES_ANY = 1,     /* more leaves whenever predicted faster */
	PLACE_LEAVES_AUTO = 2,    /* fewest, unless predicted slower than random picks: then as ANY */
};
#define PLACE_LIMIT_SLACK 1.1

/* Chooses want hosts out of free[0..nfree) (distinct). AN_E_RANGE if
 * want > nfree or want == 0. Deterministic: the same free set in any order
 * gives the same answer, with or without a context. ctx NULL: no cache,
 * the entry table of the free hosts is built per call. */
int place_pick(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
	       const uint32_t *free_hosts, size_t nfree, size_t want, struct place_pick *out,
	       char why[AN_ERR_LEN]);
void place_pick_free(struct place_pick *p);

/* First-fit, the baseline of a scheduler without topod: the want free
 * hosts first by name (route_tab order), as Slurm's linear allocation
 * takes the lowest-numbered nodes: into out[want]. AN_E_NOMEM. */
int place_first_fit(const uint32_t *free_hosts, size_t nfree, size_t want, uint32_t *out);

/* The predicted time (cost.h) of an all-to-all of `bytes` per ordered pair
 * among hosts[0..n), posted at once, on the real routes and rates: *t
 * seconds, or -1 when a loaded cable has no known rate. */
int place_alltoall_time(const struct route_tab *rt, const uint32_t *hosts, size_t n, uint64_t bytes,
			int threads, double *t);

/* place_pick, then judged (advice.h's rule) under PLACE_LEAVES_FEWEST:
 * the pick's and first-fit's predicted all-to-all for `bytes` per pair;
 * when the pick is predicted slower than first-fit (by more than a
 * millionth) and first-fit's hosts keep the promise as well (no more
 * leaves, pods or sharing hosts; on one leaf, no more free hosts on it),
 * they are the answer (first_fit = 1), with their figures; else the pick,
 * whose time is then above ff_time. */
int place_pick_advise(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, uint64_t bytes, int threads,
		      struct place_pick *out, char why[AN_ERR_LEN]);

/* place_pick_advise for the pattern `spec` (pattern.h: alltoall,
 * allgather, shift:K, xor:K, bitrev, random:S, ring, stencil2d:X,Y,
 * stencil3d:X,Y,Z, `bytes` per flow; rank i on the i-th answered host, in
 * hierarchy order): the balancing still spreads the hosts' all-to-all
 * routes, but every judgment (packed or not, balanced or not, first-fit)
 * and every figure is the pattern's predicted time; the injection limit is
 * stated for alltoall only (limit_time -1, PLACE_NOLIMIT otherwise).
 * AN_E_INVAL with a reason for a spec that is not a pattern of want ranks. */
int place_pick_pattern(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		       const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		       int threads, struct place_pick *out, char why[AN_ERR_LEN]);

/* place_pick_pattern with the rule on leaves (protocol `pick leaves=`),
 * leaves an enum place_leaves. Under AUTO and ANY, when the answer is
 * above the injection limit, random_time is the mean predicted time of 3
 * random picks from the free list (seeded by the list's size and want: the
 * answer still depends on the free set alone); -1 otherwise.
 * PLACE_LEAVES_FEWEST: the promises of fewest leaves, pods and sharing
 * hosts hold (the packed and balanced alternatives and first-fit's hosts
 * only where they keep them: place_pick_advise); when
 * the all-to-all answer's leaves cannot carry it at the injection limit
 * (PLACE_UPLINKS), the fastest pick on more leaves that is predicted
 * faster is stated in wider_time and wider_leaves, not answered.
 * PLACE_LEAVES_ANY: unless the answer is at the injection limit, picks on
 * growing numbers of leaves (from the fewest whose even counts pass
 * pick_limit's uplink test; those with the most uplink capacity first,
 * hosts as even over them as the free hosts allow, balanced within them)
 * are predicted, at most 8 of them, and the fastest is the answer
 * (widened = 1, wider_* its figures) when predicted faster than the
 * fewest-leaves answer by more than a millionth; if the answer is still
 * predicted slower than random_time, the fastest random pick is (widened
 * when on more leaves than min_leaves). pick_time stays the fewest-leaves
 * answer's; first-fit's judgment stands (never predicted slower).
 * PLACE_LEAVES_AUTO: as FEWEST, unless the answer is predicted slower than
 * random_time by more than a millionth: then as ANY. */
int place_pick_leaves(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		      int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN]);
/* place_pick_leaves for a parsed pattern (pattern.h), a traffic matrix
 * (pattern_set_matrix for want ranks; its flows carry their own bytes, and
 * `bytes` is ignored) included: rank i on the i-th answered host. */
struct pattern;
int place_pick_pat(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		   const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
		   int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN]);

/* place_pick_pat judged by run (enum place_run): with PLACE_RUN_BOUND
 * exactly place_pick_pat. Otherwise the pattern must be the all-to-all and
 * want at most TOPO_PICK_RUN_HOSTS_MAX (AN_E_INVAL, AN_E_RANGE with a
 * reason), and every judgment and time of the answer (pick_time, time,
 * ff_time, wider_time, random_time) is the run's predicted time for blocks
 * of `bytes` on those hosts; bw_time, limit_time and the busiest cable stay
 * the bound's. The bound's injection limit then ends no search (a stepped
 * schedule may still gain where the bound cannot): the balanced hosts are
 * tried, random picks are drawn and stated under every rule, and wider
 * picks (PLACE_LEAVES_ANY, AUTO when slower than the random picks, FEWEST
 * when the uplinks limit) get at most 4 tries. Each judgment simulates
 * one schedule (route: its windows and XOR's), at most about 16 a pick,
 * none for a candidate whose bound's bandwidth term already reaches the
 * time it must beat (no schedule runs below it) or whose host sequence
 * was simulated before: out->sims says how many. cancel (NULL: none) is
 * checked before each simulation and inside the route schedule's build:
 * AN_E_CANCEL once raised. */
int place_pick_run(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		   const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
		   int threads, int leaves, int run, const atomic_int *cancel, struct place_pick *out,
		   char why[AN_ERR_LEN]);

/* Within the leaves of hosts[0..n) (on leaf switches, distinct) and with
 * as many hosts on each as now, the free hosts (free_hosts[0..nfree), a
 * superset of hosts) whose all-to-all routes spread most evenly over the
 * cables above the leaves, judged by the busiest cable's load over its rate
 * (place_balance.c): a greedy fill, then swaps against the busiest cable.
 * hosts[] is overwritten (by host index); *swaps gets the swaps made after
 * the fill. AN_E_RANGE if a host is on no leaf switch or the candidates
 * (free hosts on those leaves) times the leaves exceed
 * PLACE_BALANCE_CELLS_MAX (hosts[] untouched: the caller keeps its pick),
 * AN_E_NOMEM. */
/* A profile per (candidate, leaf): a walk of at most 5 cables, 8 bytes
 * each, so at most about 40 MB. */
#define PLACE_BALANCE_CELLS_MAX (1u << 20)
int place_pick_balance(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, uint32_t *hosts,
		       size_t n, uint32_t *swaps);

/* For an allocation that exists (docs/protocol.md, `pick trade`):
 * alloc[0..n) and the free hosts free_hosts[0..nfree) (disjoint from it).
 * The hosts of alloc's leaves, on those leaves only (leaves and pods stay),
 * balanced as place_pick_balance does, from alloc's counts per leaf and
 * from even counts; the trade is proposed only when predicted faster by
 * more than a millionth. out->hosts: the allocation after the trade (alloc's hosts
 * when none is proposed), in hierarchy order; out->ff_time and
 * out->ff_bw_time are alloc's own figures (the baseline), out->time,
 * out->bw_time, out->limit_time, out->limit_why, out->bott_* the answer's;
 * out->balanced 1 if hosts are traded; *trades how many. */
int place_pick_trade(const struct route_tab *rt, const struct hier *h, const uint32_t *alloc, size_t n,
		     const uint32_t *free_hosts, size_t nfree, uint64_t bytes, int threads, struct place_pick *out,
		     size_t *trades, char why[AN_ERR_LEN]);

/* A communication graph: n vertices (ranks), symmetric CSR, no self loops;
 * the weight of entry (v, u), equal to that of (u, v), is the traffic of
 * both directions together (bytes or messages: any unit, hop-bytes are in
 * it), >= 1. */
struct place_graph {
	uint32_t n;
	uint32_t *xadj;   /* [n + 1] */
	uint32_t *adj;    /* [xadj[n]] */
	uint32_t *w;      /* [xadj[n]] */
};
#define PLACE_GRAPH_EDGES_MAX (1u << 24)
void place_graph_free(struct place_graph *g);
/* 7-point stencil on a dx x dy x dz grid (dy, dz may be 1), rank
 * x + dx*(y + dy*z); periodic wraps each dimension of size > 2. Each
 * neighbour sends 1 to each neighbour: pair weight 2. */
int place_graph_stencil(struct place_graph *g, uint32_t dx, uint32_t dy, uint32_t dz, int periodic);
/* From directed edges (MPI_Dist_graph_create's form flattened: src[i] ->
 * dst[i] with weight w[i], w may be NULL for 1): symmetrised by summing both
 * directions, self loops dropped. AN_E_INVAL for a vertex >= n. */
int place_graph_from_edges(struct place_graph *g, uint32_t n, const uint32_t *src, const uint32_t *dst,
			   const uint32_t *w, size_t m);

/* Cost of rank -> host (fabric host indices): hop-bytes = sum over directed
 * traffic of amount x switches traversed (0 on the same host); loads: the
 * traffic on each directed link of its route. A pair's weight W is split
 * evenly between its two directions. */
struct place_cost {
	uint64_t hop_bytes;
	uint64_t max_load;
	uint64_t pairs_failed;   /* host pairs without a route (left out of both) */
};
int place_cost(const struct route_tab *rt, const struct place_graph *g, const uint32_t *rank_host,
	       struct place_cost *out);

enum place_method { PLACE_SCOTCH = 0, PLACE_BLOCK = 1, PLACE_RR = 2 };

/*
 * The predicted time of one communication phase of a mapping: every edge's
 * traffic posted at once, the pair (v, u) of weight W sending W x bytes / 2
 * each way (a stencil's neighbours send `bytes` to each other), on the real
 * routes and cable rates: cost.h's model over a load.h load of the host
 * pairs' flows; ranks on one host cost nothing. seconds -1 if unknown (a
 * loaded cable without a known rate, or more host pairs than a load takes).
 */
#define PLACE_BYTES_DEFAULT (1u << 20)
#define PLACE_BYTES_MAX TOPO_MSG_BYTES_MAX   /* 2^53; the totals are checked (place_graph_bytes) */
struct place_time {
	double seconds;       /* -1 unknown */
	uint32_t node;        /* the busiest cable leaves node by port; ROUTE_NONE if no cable is loaded */
	uint8_t port;
	uint64_t bps;         /* its data rate */
	uint64_t fail_bytes;  /* bytes of flows whose route fails (they load nothing) */
};
/* AN_E_NOMEM, or AN_OK with out->seconds -1 and err saying why when the
 * time is unknown. bytes 1..PLACE_BYTES_MAX, and the graph's traffic at
 * that size within TOPO_BYTES_TOTAL_MAX (place_graph_bytes). */
int place_time(const struct route_tab *rt, const struct place_graph *g, const uint32_t *rank_host, uint64_t bytes,
	       struct place_time *out, char err[AN_ERR_LEN]);

/* The bytes of one phase of g at `bytes` per unit of weight: every edge's
 * W x bytes / 2 each way, summed. AN_E_RANGE, err saying so, beyond
 * TOPO_BYTES_TOTAL_MAX: every load of a mapping (a cable's, the swap
 * pass's) is then exact in 64 bits, whatever the weights. */
int place_graph_bytes(const struct place_graph *g, uint64_t bytes, uint64_t *total, char err[AN_ERR_LEN]);

/* Why the answer is the one it is. */
enum place_reason {
	PLACE_FASTER = 0,   /* predicted faster than block (and than the other candidate) */
	PLACE_SLOWER = 1,   /* block: Scotch's mapping was predicted slower */
	PLACE_EQUAL = 2,    /* block: nothing predicted faster (ties go to block) */
	PLACE_UNKNOWN = 3,  /* no time (no cable rates): Scotch vs block by hop-bytes */
};

struct place_map {
	uint32_t *rank_host;        /* [g->n] fabric host index per rank */
	enum place_method method;   /* the mapping answered (PLACE_BLOCK: the alternatives were not faster) */
	struct place_cost cost, block, rr;
	uint32_t moved;             /* ranks moved off hosts Scotch filled beyond their slots */
	/* appended with the predicted times (place_time) */
	uint64_t bytes;             /* per unit of edge weight */
	struct place_time time;     /* of the answer */
	struct place_time block_time, rr_time;
	struct place_time scotch_time;  /* of Scotch's mapping after the swaps; -1 if Scotch did not run */
	uint32_t swaps;             /* moves and swaps of ranks that cut Scotch's predicted time */
	enum place_reason reason;
};
/* Maps g onto hosts[0..nh) with slots[i] ranks at most each. AN_E_RANGE
 * if the slots do not add up to g->n. block: ranks in order fill hosts in
 * the order given; round-robin: rank r on the (r mod nh)-th host with room.
 * Candidates: Scotch's mapping (repaired into the slots, then improved by
 * swaps that lower the predicted time's busiest cable, bounded work),
 * block and round-robin; the answer is the one predicted fastest for
 * `bytes` per unit of weight, block unless another is faster by more than a
 * millionth: never one predicted slower than block. Without times (no
 * rates), Scotch's mapping unless it has more hop-bytes than block.
 * Scotch runs under ctx's lock. ctx NULL: no lock, the caller promises that
 * no other thread of the process uses Scotch meanwhile (a single-threaded
 * tool); concurrent calls must share one context. place_map is
 * place_map_bytes with PLACE_BYTES_DEFAULT. */
int place_map_bytes(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		    const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh, uint64_t bytes,
		    struct place_map *out, char why[AN_ERR_LEN]);
int place_map(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
	      const struct place_graph *g, const uint32_t *hosts, const uint32_t *slots, size_t nh,
	      struct place_map *out, char why[AN_ERR_LEN]);
void place_map_free(struct place_map *m);

/* The block reference mapping (also used by place_map and the tests). */
void place_block(const uint32_t *hosts, const uint32_t *slots, size_t nh, uint32_t n, uint32_t *rank_host);

#endif
