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

/* A host name's room (TII_NAME_MAX + 1; init.c checks). */
#define TC_NAME 161

/* What a call runs (model.c predicts each, wrap.c runs the fastest). */
enum tc_variant {
	TC_V_NATIVE,     /* the MPI's own, untouched */
	TC_V_HIER,       /* leaders in leaf order */
	TC_V_DFS,        /* Bcast: leaders ordered depth-first from the root's leader (Subramoni 2013, ch. 4) */
	TC_V_BFS,        /* Bcast: breadth-first */
	TC_V_PIPE,       /* Bcast: one pipelined chain of segments through every rank, leaf by leaf in DFS order */
	TC_V_SCHED,      /* Alltoall: topod's schedule */
	TC_V_RING,       /* Allgather(v): a ring in the fabric's host order (allgather.c) */
	TC_V_HOSTS,      /* Allgather(v): each host's ranks gathered at one, a ring of host leaders in that order */
	TC_V_LEAVES,     /* Allgather(v): each leaf's ranks gathered at its leader, the MPI's among the leaders */
	TC_V_AGSCHED,    /* Allgather(v): topod's allgather schedule (kPrefix, kShift, its ring; sched.c) */
	TC_NVARIANTS
};
extern const char *const tc_variant_name[TC_NVARIANTS];

/* The job's delays (topo.c), the same on every rank: world rank -> host,
 * host -> node (a host, or on big jobs its leaf switch), and per ordered
 * pair of nodes the route's latency and slowest cable rate. A node's
 * diagonal entry is the route between two hosts of it (leaf nodes). */
struct tc_topo {
	int nworld, nhosts, nnodes;
	int *host_of;          /* [nworld] */
	int *node_of_host;     /* [nhosts] */
	uint64_t *leaf_of_host;/* [nhosts] leaf switch GUID or cluster ID (0 unknown) */
	float *lat, *rate;     /* [nnodes * nnodes] seconds, bytes per second */
	int rates_known;       /* 0: hops from topod and an assumed rate (TOPOCOLL_RATE) */
	int *pos_of_host;      /* [nhosts] the host's index in the platform: the routing's host order */
	float *up_bw, *down_bw;/* [nhosts] its leaf's uplinks (downlinks) the job's routes use, bytes/s (0 none) */
	char source[96];       /* where it came from, for TOPOCOLL_VERBOSE */
};

/* A choice made once per communicator, collective and size class. */
#define TC_CLASSES 48
struct tc_choice {
	signed char variant;   /* enum tc_variant run; -1 not yet chosen */
	signed char best;      /* the fastest predicted (may be below the margin) */
	long long seg;         /* TC_V_PIPE's segment */
	int told;              /* TOPOCOLL_VERBOSE said it */
	double t_native, t_best;
};

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
	MPI_Comm pcomm;        /* private duplicate of the user's communicator */
	MPI_Comm leafcomm;     /* my leaf's ranks, in rank order: the leader is 0 */
	MPI_Comm leadcomm;     /* the leaders, leaf L at rank L; MPI_COMM_NULL elsewhere */
	unsigned long long hier[TC_NOPS], native[TC_NOPS];  /* calls, for TOPOCOLL_STATS */
	int told[TC_NOPS];     /* verbose: said once each way (bit 0 native, bit 1 hierarchical) */
	int *world;            /* [size] world rank of each rank (delays) */
	struct tc_choice choice[TC_NOPS][TC_CLASSES];
	MPI_Comm *ordered;     /* [2 * nleaves] Bcast leaders ordered DFS / BFS from leaf L's leader, on demand */
	char *ordered_made;    /* [2 * nleaves] that slot split (a non-leader's stays MPI_COMM_NULL) */
	int *order;            /* [2 * nleaves * nleaves] those orders (leaf indices), -1 = not made */
	int *lscratch;         /* [nleaves] a leader order being made (ordered_comm), made with the
				* communicator like agcd */
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
	struct tc_sched *sched;/* Alltoall: topod's schedule, asked on the first call (NULL: none) */
	int sched_asked;
	char sched_why[160];   /* why there is none */
	struct tc_agsched *agsched; /* Allgather: topod's schedule, asked on the first large call (NULL: none) */
	int agsched_asked;
	char agsched_why[160];
};

/* An all-to-all schedule as this rank runs it: per step, whom it sends to
 * and receives from (-1 idle). */
#define TC_SCHED_MULTI 4      /* most sends (and receives) of one rank in one step */
struct tc_sched {
	int nsteps;
	int *soff, *to;           /* step i: send to to[soff[i] .. soff[i+1]) */
	int *roff, *from;         /* and receive from from[roff[i] .. roff[i+1]) */
	double time_s, native_s;  /* topod's prediction for blocks of `bytes`, and XOR's (the MPI's pairwise) */
	unsigned long long bytes;
	char algo[16];
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
	int float_reduce;      /* TOPOCOLL_ALLREDUCE_FLOAT=1: reassociate float sums */
	size_t min_bytes[TC_NOPS];
	int have_leaf;         /* topod told us our leaf */
	uint64_t leaf_id;      /* this rank's leaf cluster ID (0 = unknown) */
	char why[160];         /* why there is no leaf */
	int keyval;
	int world_rank;
	int choice_mode;       /* TOPOCOLL_CHOICE: 0 model, 1 topocoll's always, 2 native always */
	int force;             /* with 1: the Bcast variant (hier, dfs, bfs, pipe) or the Allgather one
				* (ring, hosts, leaves); TC_V_HIER forces the others' one way */
	int min_set;           /* TOPOCOLL_MIN_BYTES given: the old size rule, no prediction */
	double margin;         /* TOPOCOLL_MARGIN: predicted speed-up needed (1.10) */
	long long a2a_min;     /* TOPOCOLL_ALLTOALL_MIN: smallest block for a schedule (256 KiB) */
	int timeout_ms;        /* TOPOCOLL_TIMEOUT_MS: every question to topod (3000) */
	int model_mpich;       /* 0 Open MPI's algorithms, 2 MPICH's, 1 SMPI's MPICH selector (TOPOCOLL_MODEL) */
	int model_smpi;        /* 1: SMPI's selectors (smpi-mpich, smpi-ompi): their ring is SMPI's */
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

/* The hierarchical algorithms (hier.c); each returns an MPI error code. */
int tc_bcast(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root);
int tc_gather(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	      MPI_Datatype rt, int root);
int tc_scatter(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	       MPI_Datatype rt, int root);
int tc_allreduce(struct tc_comm *c, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op);
int tc_bcast_ordered(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root, int bfs);
int tc_bcast_pipe(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root, long long seg);
int tc_alltoall(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
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
 * hosts in it, a host's ranks together (order[size]). */
void tc_ring_order(const struct tc_comm *c, int *order);

/* Alltoall's schedule for c (sched.c): collective, on the first call. */
void tc_sched_get(struct tc_comm *c);
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
	float *up_bw, *down_bw;/* [n] distinct leaf uplinks the host's routes leave by (arrive by) x their rate */
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
/* The delay of a message between ranks a and b of c. */
void tc_delay(const struct tc_comm *c, int a, int b, double *lat, double *rate);

/* Predictions (model.c), seconds; all ranks compute the same. */
double tc_predict(struct tc_comm *c, enum tc_op op, enum tc_variant v, long long bytes, int root, long long seg);
/* The variant to run for op with `bytes` per rank at root, cached per size
 * class; why gets the reason for TOPOCOLL_VERBOSE. */
enum tc_variant tc_choose(struct tc_comm *c, enum tc_op op, long long bytes, int root, char *why, size_t whyn,
			  struct tc_choice **chp);
/* The size class of a message: 0 for none, else 1 + floor(log2(bytes)). */
int tc_size_class(long long bytes);
/* Bcast leaders' order from leaf `from`'s leader (0 DFS, 1 BFS): n leaf indices. */
void tc_leader_order(struct tc_comm *c, int from, int bfs, int *order);
/* The pipelined Bcast's segment for a message of `bytes`. */
long long tc_pipe_segment(long long bytes, int ranks);
/* Every rank of c in the pipelined Bcast's chain from root (order: [nleaves] scratch). */
void tc_chain_order(struct tc_comm *c, int root, int *order, int *chain);
/* A named type, or contiguous/dup of one: its bytes in MPI_Pack's order. */
int tc_type_in_order(MPI_Datatype dt);

#endif
