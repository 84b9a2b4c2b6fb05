/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.h - topocoll: topology-aware collectives for unmodified MPI
 * programs (docs/collectives.md), shared by its files.
 *
 * A PMPI layer: MPI_Bcast, MPI_Gather, MPI_Scatter and MPI_Allreduce are
 * wrapped (and MPI_Alltoall, MPI_Allgather, MPI_Allgatherv, which may also run topod's
 * schedules); each call either runs a hierarchical algorithm over the job's
 * leaf switches or hands the call, untouched, to the MPI (PMPI_*).
 *
 * Where a rank's leaf comes from: at MPI_Init every rank names its host
 * (common/mpihost.h), rank 0 asks topod once for each host's leaf cluster
 * (libtii), and MPI_COMM_WORLD's ranks learn theirs; a communicator made
 * later needs no question, its ranks exchange the leaf IDs they know. All
 * decisions are made from values every rank of the communicator holds
 * alike (the leaf table, the call's root, count and type signature), so the
 * ranks never disagree about which algorithm runs.
 *
 * Every collective's own traffic goes over a private duplicate of the
 * user's communicator, so it cannot match the user's messages.
 */
#ifndef TOPOCOLL_COLL_H
#define TOPOCOLL_COLL_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "topo_limits.h"

enum tc_op { TC_BCAST, TC_GATHER, TC_SCATTER, TC_ALLREDUCE, TC_ALLTOALL, TC_ALLGATHER, TC_NOPS };

/* Entry points: the MPI names in the PMPI library; under SimGrid's SMPI,
 * where the MPI itself defines them, topocoll_MPI_* called by the benchmark
 * (bench/coll/bench.c) beside the MPI's own; built with the profiler
 * (libtopocollprof.so), topocoll_MPI_* called by its wrappers
 * (behind_prof.h). */
#if defined(TOPOCOLL_SMPI) || defined(TOPOCOLL_BEHIND_PROF)
#define TC_ENTRY(name) topocoll_##name
#else
#define TC_ENTRY(name) name
#endif

/* The model's error each way (docs/performance.md, "The model of the
 * MPIs' own collectives"): topocoll's plan runs only where, its time
 * taken this much slower and the MPI's own this much faster, it still
 * runs at 0.98x of the MPI's own (model.c). */
#define TC_ERR_PLAN 0.04
#define TC_ERR_NATIVE 0.04

/* A host name's room (TII_NAME_MAX + 1; init.c checks). */
#define TC_NAME 161

/* What a call runs (model.c predicts each, wrap.c runs the fastest): a
 * family, whose parameters (a tree's radix, an algorithm, segments) the
 * prediction picks (plan.h's tp_args). */
enum tc_variant {
	TC_V_NATIVE,     /* the MPI's own, untouched */
	TC_V_HIER,       /* Bcast, Gather, Scatter: a tree by levels (leaves' leaders, hosts' leaders, a host's
			  * ranks); Allreduce, Allgather: each host's ranks at its leader, the leaders' exchange */
	TC_V_TREE,       /* Bcast, Gather, Scatter: a k-nomial tree over the fabric's order from the root;
			  * Allreduce, Allgather: recursive doubling, Rabenseifner, Bruck or the ring over it */
	TC_V_RANKORD,    /* Allreduce: the same in rank order (non-commutative operations) */
	TC_V_PIPE,       /* Bcast: one pipelined chain of segments through every rank in the fabric's order */
	TC_V_SCHED,      /* Alltoall: topod's schedule */
	TC_V_RING,       /* Allgather(v): a ring in the fabric's host order (allgather.c) */
	TC_V_HOSTS,      /* Bcast, Gather, Scatter: the hosts' leaders' tree, then each host's ranks; Allgather(v):
			  * each host's ranks gathered at one, a ring of host leaders (allgather.c) */
	TC_V_LEAVES,     /* Allgather(v): each leaf's ranks gathered at its leader, the MPI's among the leaders */
	TC_V_AGSCHED,    /* Allgather(v): topod's allgather schedule (kPrefix, kShift, its ring; sched.c) */
	TC_V_SCAG,       /* Bcast: a binomial scatter of pieces and their ring allgather, in the fabric's order */
	TC_NVARIANTS
};
extern const char *const tc_variant_name[TC_NVARIANTS];
extern const char *const tc_variant_key[TC_NVARIANTS];   /* TOPOCOLL_CHOICE's names */

/* The job's delays (topo.c), the same on every rank: world rank -> host,
 * host -> node (a host, or on big jobs its leaf switch), and per ordered
 * pair of nodes the route's latency and slowest cable rate. A node's
 * diagonal entry is the route between two hosts of it (leaf nodes). */
struct tc_topo {
	int nworld, nhosts, nnodes;
	int *host_of;          /* [nworld] */
	int *node_of_host;     /* [nhosts] */
	uint64_t *leaf_of_host;/* [nhosts] leaf switch GUID or cluster ID (0 unknown) */
	int rates_known;       /* 0: hops from topod and an assumed rate (TOPOCOLL_RATE): no routes */
	int *pos_of_host;      /* [nhosts] the host's index in the platform: the routing's host order */
	char source[96];       /* where it came from, for TOPOCOLL_VERBOSE */
	/* The routes, for the cost model (model.c): route a -> b between nodes
	 * is rlink[roff[a * nnodes + b] .. roff[a * nnodes + b + 1]), directed
	 * cables numbered < ncables at lbps[] bits per second. Where nodes are
	 * leaves (big jobs) each host's own cable is cable ncables + 2h (up)
	 * or + 2h + 1 (down), at hbps[h]. nroutes 0: no routes (hops only). */
	int ncables, nroutes;
	uint32_t *roff, *rlink;
	uint64_t *lbps, *hbps;
	uint64_t *cbps;        /* [ncables + 2 nhosts]: lbps, then each host's up and down (model.c) */
};

/* A choice made once per communicator, collective and size class (rank
 * 0 predicts, every rank gets its answer: model.c). */
#define TC_CLASSES 48
struct tc_choice {
	signed char variant;   /* enum tc_variant run; -1 not yet chosen */
	signed char best;      /* the fastest predicted (may be below the margin) */
	int told;              /* TOPOCOLL_VERBOSE said it */
	double t_native, t_best;
	/* the best's parameters (plan.h's tp_args fields) */
	int alg, shape, k[3], seq, sync, hier, rankorder;
	long long seg;
};

/* What topod predicts for an Alltoall of one size class (tc_size_class):
 * its schedule with `window` steps in flight, the MPI's own Alltoall
 * (native_algo, under TOPOCOLL_MODEL) and whether its rule keeps the
 * schedule (docs/cost-model.md "Every message size"). */
#define TC_WINDOW_MAX TOPO_SCHED_WINDOW_MAX /* steps a rank keeps in flight, at most */
struct tc_a2a_pred {
	signed char state;        /* 0 not asked, 1 known, -1 asked: none */
	unsigned char window;
	unsigned char keep;       /* 1: run the schedule; 0: the MPI's own is predicted no slower */
	double time_s, native_s;  /* -1 unknown */
	unsigned long long bytes; /* the block they were predicted for */
	char native_algo[16];
};

/* An all-to-all schedule as this rank runs it: per step, whom it sends to
 * and receives from (-1 idle); the same steps at every size, topod's
 * predictions per size class. The predictions come first; the steps only
 * where one is run (tc_sched_steps). */
#define TC_SCHED_MULTI 4      /* most sends (and receives) of one rank in one step */
struct tc_whole;
struct tc_sched {
	int nsteps, nflows;
	int held;                 /* the steps below are this rank's (tc_sched_steps) */
	int *soff, *to;           /* step i: send to to[soff[i] .. soff[i+1]) */
	int *roff, *from;         /* and receive from from[roff[i] .. roff[i+1]) */
	char algo[16];
	struct tc_a2a_pred pred[TC_CLASSES];
	struct tc_whole *whole;   /* rank 0: every rank's steps, until shared */
};

/* MPI_Alltoall's schedule of a communicator and of its dups (the same
 * ranks in the same order; tc_comm_copy shares it), asked once for all of
 * them: FFTW's plans dup MPI_COMM_WORLD, and each dup asked again. Every
 * change is made in a collective call on one of them, which every rank of
 * all of them makes, so the ranks keep it alike. */
struct tc_a2a {
	int refs;
	int asked;             /* asked on the first call (of any of them) */
	char why[160];         /* why there is none */
	struct tc_sched *sched;/* NULL: none; else &s */
	struct tc_sched s;
};

struct tp_op;
struct tp_tree;
struct tc_call;

/* What topocoll knows about one communicator (an MPI attribute on it). */
struct tc_comm {
	int usable;            /* the hierarchical algorithms may run */
	char why[160];         /* when not: why (for TOPOCOLL_VERBOSE) */
	int size, rank;
	int nleaves, myleaf;
	int *leaf_of;          /* [size] leaf index of each rank (leaves numbered by their lowest rank) */
	int *leader;           /* [nleaves] the leaf's lowest rank: its leader */
	int *leaf_size;        /* [nleaves] */
	int maxleaf;           /* most ranks on one leaf */
	MPI_Comm ucomm;        /* the user's: the ranks agree on it, inside the user's own collective call */
	MPI_Comm pcomm;        /* private copy, for what the library runs (tc_private_comm) */
	int group_comms;       /* leafcomm .. hleadcomm made (tc_group_comms) */
	MPI_Comm leafcomm;     /* my leaf's ranks, in rank order: the leader is 0 */
	MPI_Comm leadcomm;     /* the leaders, leaf L at rank L; MPI_COMM_NULL elsewhere */
	unsigned long long hier[TC_NOPS], native[TC_NOPS];  /* calls, for TOPOCOLL_STATS */
	int told[TC_NOPS];     /* verbose: said once each way (bit 0 native, bit 1 hierarchical) */
	int *world;            /* [size] world rank of each rank (delays) */
	struct tc_choice choice[TC_NOPS][TC_CLASSES];
	struct tc_choice choice_nc[TC_CLASSES];  /* Allreduce of operations that do not commute */
	struct tc_choice cycled;                 /* TOPOCOLL_TEST_CYCLE's choice of the call */
	unsigned ncycle;
	int *order;            /* [2 * nleaves * nleaves] those orders (leaf indices), -1 = not made */
	int *agcd;             /* [2 * size] MPI_Allgather's counts and displacements: made with the
				* communicator, whose ranks agree it exists (a failed malloc in the
				* call would send one rank to the MPI and the others into the ring) */
	/* Allgather's groups, made with the communicator (comm.c): ranks in the
	 * order their blocks lie in a grouped allgather's buffer, group g's at
	 * [first[g], first[g + 1]). Hosts in the ring's order (nhosts 0: hosts
	 * unknown, or none with two ranks: no host variant), leaves by index. */
	int nhosts, maxhost;
	int *horder, *hfirst;  /* [size], [nhosts + 1] */
	int *lorder, *lfirst;  /* [size], [nleaves + 1] */
	int *gscratch;         /* [2 * size + 2 * max(nhosts, nleaves)] a call's counts and displacements */
	MPI_Comm hostcomm;     /* my host's ranks in rank order (its leader, the lowest, is 0) */
	MPI_Comm hleadcomm;    /* the hosts' leaders, host h at rank h; MPI_COMM_NULL elsewhere */
	struct tc_a2a *a2a;    /* Alltoall: topod's schedule, shared with the dups */
	struct tc_agsched *agsched; /* Allgather: topod's schedule, asked on the first large call (NULL: none) */
	int agsched_asked;
	char agsched_why[160];
	/* The fabric's order (tc_ring_order) and its hosts, for plan.c: fab[i]
	 * the i-th rank, fpos[r] rank r's place; hostof[r] its host, hosts
	 * numbered in that order, host h at places [fhfirst[h], fhfirst[h + 1]),
	 * hlead[h] its first rank; ident[r] = r. */
	int *fab, *fpos, *hostof, *fhfirst, *hlead, *ident;
	int nfh, maxfh;
	int gridm;             /* an Allgather grid's ranks per leaf (plan.c tp_grid), 0: none */
	/* A call's room, made where the ranks agree (plan runs): its ops,
	 * requests and scratch; arena_ok the scratch bytes every rank holds */
	struct tp_op *ops;
	int nops, ops_cap;
	MPI_Request *rq;
	int rq_cap;
	char *arena;
	long long arena_cap, arena_ok;
	struct tp_tree *tree;
	long long *blen;       /* [size] an Allgatherv's blocks' bytes (made with the communicator) */
};

/* An allgather schedule as this rank runs it: per step, which blocks
 * (origin ranks) it sends to whom and receives from whom. */
struct tc_agsched {
	int nsteps;
	int *soff, *to, *sblk;    /* step i: block sblk[j] to to[j], j in [soff[i], soff[i+1]) */
	int *roff, *from, *rblk;  /* and block rblk[j] from from[j] */
	/* topod's predictions for blocks of `bytes` (-1 unknown): this
	 * schedule's, the MPIs' ring in rank order, the ring in the fabric's
	 * order (`agring`, what TC_V_RING runs) */
	double time_s, ring_s, agring_s;
	unsigned long long bytes;
	char algo[16];
};

/* Process-wide state, set at MPI_Init (init.c). */
struct tc_global {
	int enabled[TC_NOPS];  /* TOPOCOLL_DISABLE, TOPOCOLL=off */
	int verbose, stats;
	int float_reduce;      /* TOPOCOLL_ALLREDUCE_FLOAT (default 1): reassociate floating-point reductions */
	size_t min_bytes[TC_NOPS];
	int have_leaf;         /* topod told us our leaf */
	uint64_t leaf_id;      /* this rank's leaf cluster ID (0 = unknown) */
	uint64_t *world_leaf;  /* [MPI_COMM_WORLD's size] every world rank's leaf ID (NULL: not known) */
	char why[160];         /* why there is no leaf */
	int keyval;
	int world_rank;
	int choice_mode;       /* TOPOCOLL_CHOICE: 0 model, 1 topocoll's always, 2 native always */
	int force;             /* with 1: the family forced (enum tc_variant) */
	int min_set;           /* TOPOCOLL_MIN_BYTES given: the old size rule, no prediction */
	double margin;         /* TOPOCOLL_MARGIN: predicted speed-up needed (0: the error rule) */
	long long a2a_min;     /* TOPOCOLL_ALLTOALL_MIN: smallest block topod is asked about (1 KiB) */
	int timeout_ms;        /* TOPOCOLL_TIMEOUT_MS: every question to topod (3000) */
	int nmodel;            /* whose own collectives are modelled: analysis/native.h's enum native_model
				* (TOPOCOLL_MODEL; default the MPI this library is built for) */
	double err_plan, err_native; /* the model's error each way (model.c's rule) */
	int test_alg;          /* TOPOCOLL_TEST_ALG: only plans of this tp_alg (tests), -1 any */
	int test_cycle;        /* TOPOCOLL_TEST_CYCLE=1: each call the next candidate, unpredicted (tests) */
	struct tc_topo topo;   /* nworld 0: no delays known */
	char *hostnames;       /* [nworld * TC_NAME] every rank's host, for topod's schedule */
	char sched_file[256];  /* TOPOCOLL_SCHEDULE: a schedule file instead of asking topod */
	char agsched_file[256];/* TOPOCOLL_ALLGATHER_SCHEDULE: the same for Allgather's */
	long long ag_min;      /* TOPOCOLL_ALLGATHER_MIN: smallest block for which the schedule is asked (64 KiB) */
	int last_variant;      /* the last call's choice, for the SMPI benchmark */
	double last_native, last_best;
	double init_ms[4];     /* MPI_Init's own time: names, leaves, delays, sharing (TOPOCOLL_VERBOSE=2) */
};
extern struct tc_global tc_g;

/* The last call's choice, for the SMPI benchmark's build only: in a
 * library under MPI_THREAD_MULTIPLE, threads calling collectives on
 * different communicators would race on these globals. */
static inline void tc_last(int variant, double t_native, double t_best)
{
#ifdef TOPOCOLL_SMPI
	tc_g.last_variant = variant;
	tc_g.last_native = t_native;
	tc_g.last_best = t_best;
#else
	(void)variant, (void)t_native, (void)t_best;
#endif
}

extern const char *const tc_op_name[TC_NOPS];

/* The communicator's cached state, made on its first collective (every
 * rank of comm calls it there). NULL when the MPI itself fails. */
struct tc_comm *tc_comm_get(MPI_Comm comm);
/* The attribute's copy callback: a dup of a communicator the library
 * knows gets its state without a message (the same ranks, the same leaves,
 * the choices made), completed by tc_comm_get on the dup's first call.
 * Libraries dup MPI_COMM_WORLD for each plan (FFTW) or each module; each
 * dup cost an allreduce and a broadcast per size class before. */
int tc_comm_copy(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag);
void tc_comm_free(struct tc_comm *c);
/* At MPI_Init: options, and the one question to topod. */
void tc_init(void);
void tc_finalize(void);
/* Rank 0's part of MPI_Init: n ranks' host names (TC_NAME apart) -> their
 * leaf IDs in ids[n] and tc_g.topo; ms[1] and ms[2] get the time spent on
 * the leaves and on the delays. 0, or -1 with tc_g.why. */
int tc_learn(const char *names, int n, uint64_t *ids, double *ms);
/* Says what runs and why (TOPOCOLL_VERBOSE), once per communicator, op
 * and way (hier: 0 the MPI's own, 1 topocoll's), or with a choice by
 * prediction once per its size class. */
void tc_tell(struct tc_comm *c, enum tc_op op, int hier, const char *what, const char *why, struct tc_choice *ch);

/* topocoll's algorithms as plans (hier.c runs plan.c's for the choice
 * ch); each returns an MPI error code, or sets *give_up when some rank
 * could not run it (memory: all ranks agreed first) and none did. */
int tc_bcast(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, void *buf, int count,
	     MPI_Datatype dt, int *give_up);
int tc_gather(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, int scount,
	      MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int *give_up);
int tc_scatter(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, int scount,
	       MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int *give_up);
int tc_allreduce(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, void *rbuf,
		 int count, MPI_Datatype dt, MPI_Op op, int *give_up);
int tc_allgather_plan(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf,
		      int scount, MPI_Datatype st, void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rt,
		      int *give_up);
int tc_alltoall(struct tc_comm *c, int window, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
		MPI_Datatype rt);

/* Allgather(v) as a ring in the fabric's order (allgather.c): rcounts and
 * displs per rank (Allgather: all alike); sbuf may be MPI_IN_PLACE.
 * *give_up set: some rank could not run it (memory, a block not of its
 * announced size), none did, and the caller hands the call to the MPI. */
int tc_allgather_ring(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		      const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up);
/* Allgather(v) gathered at group leaders (allgather.c): hosts (TC_V_HOSTS:
 * the host leaders' ring in the fabric's order) or leaves (TC_V_LEAVES: the
 * MPI's Allgatherv among the leaf leaders); then each leader's result to its
 * group. The same arguments and *give_up as tc_allgather_ring; the blocks'
 * bytes together must fit an int (wrap.c). */
int tc_allgather_grouped(struct tc_comm *c, enum tc_variant v, const void *sbuf, int scount, MPI_Datatype st,
			 void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up);
/* Every rank of c in the ring's order: leaves in the routing's host order,
 * hosts in it, a host's ranks together (order[size]). -1 when out of
 * memory: the caller must fail where all ranks agree, never fall back to
 * another order on one rank. */
int tc_ring_order(const struct tc_comm *c, int *order);
/* The grouped Allgather's four communicators (leaf, leaders, host, host
 * leaders), made on its first call rather than with every communicator:
 * they are only for the forced `hosts`/`leaves` variants, and each split
 * costs every communicator an MPI context id (MPICH has about 2,048).
 * Collective over c: call it where every rank has chosen that variant. */
void tc_group_comms(struct tc_comm *c);
/* c->pcomm, made at the first call that runs one of the library's
 * algorithms, not with every communicator: libraries make many whose
 * calls all stay the MPI's (FFTW's plans), and a split cost each of them
 * about 15 us in SMPI. Collective over c->ucomm, where every rank has
 * chosen to run: 1 if every rank has it, else 0 on every rank. */
int tc_private_comm(struct tc_comm *c);

/* Alltoall's schedule for c (and its dups) with topod's predictions for
 * the size class of `bytes` (sched.c): collective; the schedule and its
 * predictions on the first call, a size class's on its first call; the
 * steps only where one runs (tc_sched_steps). */
void tc_sched_get(struct tc_comm *c, long long bytes);
/* Every rank's part of c->a2a->sched's steps, at the first call that runs
 * them (collective): 1 if every rank holds them, else 0 and there is none. */
int tc_sched_steps(struct tc_comm *c);
/* Frees what s holds (s itself lives in its tc_a2a). */
void tc_sched_free(struct tc_sched *s);
/* Allgather's (sched.c): collective, on the first call whose blocks of
 * `bytes` may run it; topod is asked for that block. */
void tc_agsched_get(struct tc_comm *c, long long bytes);
void tc_agsched_free(struct tc_agsched *s);
/* Allgather(v) by c->agsched (allgather.c): the ring's arguments and
 * *give_up, the blocks laid out as the ring's. */
int tc_allgather_sched(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		       const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up);

/* The job's delays (topo.c): from the SimGrid platform XML text (topod's
 * `simgrid` answer, or TOPOCOLL_TOPOLOGY's file). Hosts named in names[n]
 * (TC_NAME apart) must all be in it. 0, or -1 and why. */
struct tc_platform {
	int n;
	char *names;           /* [n * TC_NAME] in the platform's order */
	int *sorted;           /* [n] indices by name, for lookup */
	uint64_t *leaf;        /* [n] GUID of the switch a host hangs off */
	float *lat, *rate;     /* [n * n] */
	float *host_rate;      /* [n] the host's own cable */
	/* every route's cables: pair i x n + j's at links[rstart[..]], rlen[..]
	 * of them, indices into bps[nlinks] (bits per second); NULL: hops only */
	uint32_t *rstart, *rlen, *links, nlinks, nused, ncap;
	uint64_t *bps;
};
int tc_platform_parse(struct tc_platform *p, const char *xml, char *why, size_t whyn);
int tc_platform_find(const struct tc_platform *p, const char *name);  /* index or -1 */
int tc_platform_sort(struct tc_platform *p);  /* for find; -1 if a name repeats */
void tc_platform_free(struct tc_platform *p);
/* Every world rank's host named in names[nworld] (TC_NAME apart): the
 * topology over the distinct hosts, each looked up in p under its own name,
 * or (alias, when not NULL) under the name alias gives it (big jobs: one
 * host per leaf). 0, or -1 and why. */
int tc_topo_build(struct tc_topo *t, const struct tc_platform *p, const char *names, const char *alias,
		  int nworld, char *why, size_t whyn);
void tc_topo_free(struct tc_topo *t);
/* Broadcast rank 0's topology to every rank of w (collective). */
int tc_topo_bcast(struct tc_topo *t, MPI_Comm w);
/* The cables (tc_topo's numbering) of host ha's route to hb, at most
 * COST_ROUTE_MAX (analysis/cost.h, topo_routes keeps within it); 0 for
 * one host or no routes. */
uint32_t tc_route(const struct tc_topo *t, int ha, int hb, uint32_t *out);

/* A call as the prediction sees it (wrap.c fills it alike on every rank). */
struct tc_call {
	enum tc_op op;
	long long bytes;       /* per rank; Allreduce: the vector's; Allgatherv: the mean block */
	long long count;       /* Allreduce: elements; else bytes */
	int tsize;             /* Allreduce: an element's bytes (1 otherwise) */
	long long ext;         /* Allreduce: an element's extent, its room in memory */
	int root;
	int commute;           /* Allreduce: the operation commutes */
	const long long *blen; /* Allgatherv: each rank's bytes (NULL: all `bytes`) */
};

/* The variant to run for call k (its parameters in *chp), chosen on the
 * first call of its size class by prediction (rank 0 predicts, every rank
 * of c gets its answer: collective on c) and kept; force >= 0: that
 * family (TOPOCOLL_CHOICE, TOPOCOLL_MIN_BYTES), its best parameters by
 * prediction, or its defaults. why gets the reason for TOPOCOLL_VERBOSE. */
enum tc_variant tc_choose(struct tc_comm *c, const struct tc_call *k, int force, char *why, size_t whyn,
			  struct tc_choice **chp);
/* The time in seconds of variant v (parameters ch; NULL: the family's
 * defaults) on call k, as the cost model simulates it; -1 unknown. */
double tc_predict(struct tc_comm *c, const struct tc_call *k, enum tc_variant v, const struct tc_choice *ch);
/* The size class of a message: 0 for none, else 1 + floor(log2(bytes)). */
int tc_size_class(long long bytes);
/* Frees the choices model.c keeps across congruent communicators (at MPI_Finalize). */
void tc_kept_free(void);
/* What variant v (parameters ch, or NULL) of op is, for TOPOCOLL_VERBOSE. */
void tc_describe(enum tc_op op, int v, const struct tc_choice *ch, char *out, size_t n);
/* Scratch bytes (the most any rank uses) and ops per rank a plan needs;
 * plan runs agree first (a 4-byte Allreduce) when these exceed what the
 * communicator holds, TC_ARENA_KEEP at most kept (wrap.c, model.c). */
#define TC_ARENA_KEEP (1LL << 20)
struct tp_args;
long long tc_plan_scratch(const struct tc_comm *c, const struct tp_args *a, const struct tc_call *k);
long long tc_plan_ops(const struct tc_comm *c, const struct tp_args *a, int maxkids);
/* The plan's arguments for a choice and a call. */
void tc_plan_args(const struct tc_choice *ch, const struct tc_call *k, struct tp_args *a);
/* A named type, or contiguous/dup of one: its bytes in MPI_Pack's order. */
int tc_type_in_order(MPI_Datatype dt);
/* Whether count elements of dt are one dense run of `bytes` from the buffer,
 * in that order (hier.c): then a block moves as bytes, without packing. */
int tc_type_dense(int count, MPI_Datatype dt, long long bytes);

#endif
