/*
 * coll.h - topocoll: topology-aware collectives for unmodified MPI
 * programs (docs/collectives.md), shared by its files.
 *
 * A PMPI layer: MPI_Bcast, MPI_Gather, MPI_Scatter and MPI_Allreduce are
 * wrapped; each call either runs a hierarchical algorithm over the job's
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

enum tc_op { TC_BCAST, TC_GATHER, TC_SCATTER, TC_ALLREDUCE, TC_NOPS };

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
};
extern struct tc_global tc_g;

extern const char *const tc_op_name[TC_NOPS];

/* The communicator's cached state, made on its first collective (every
 * rank of comm calls it there). NULL when the MPI itself fails. */
struct tc_comm *tc_comm_get(MPI_Comm comm);
/* At MPI_Init: options, and the one question to topod. */
void tc_init(void);
void tc_finalize(void);
/* Says once per communicator and op what runs (TOPOCOLL_VERBOSE). */
void tc_tell(struct tc_comm *c, enum tc_op op, int hier, const char *why);

/* The hierarchical algorithms (hier.c); each returns an MPI error code. */
int tc_bcast(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root);
int tc_gather(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	      MPI_Datatype rt, int root);
int tc_scatter(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	       MPI_Datatype rt, int root);
int tc_allreduce(struct tc_comm *c, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op);

#endif
