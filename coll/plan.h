/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.h - topocoll's own collectives as plans: for every rank, the sends,
 * receives, waits and local reductions it makes, in order. One generator
 * per algorithm writes them rank by rank; the same ops are run by this rank
 * (tp_run, MPI_Isend/Irecv/Wait and MPI_Reduce_local on the private
 * communicator) and timed for every rank by the cost model (tp_time:
 * analysis/cost.h's simulation of SMPI), so what is predicted is exactly
 * what runs (docs/collectives.md "How it chooses").
 *
 * Units: a plan of bytes (Bcast, Gather, Scatter, Allgather: MPI_BYTE on
 * packed or dense data) or of elements of the call's datatype (Allreduce).
 * Buffers: TP_DATA (the working data), TP_TMP (scratch), TP_SRC (the
 * caller's input, read only).
 */
#ifndef TOPOCOLL_PLAN_H
#define TOPOCOLL_PLAN_H

#include "coll.h"

enum tp_kind { TP_SEND, TP_RECV, TP_WAIT, TP_REDUCE, TP_COPY, TP_SSEND };
enum tp_buf { TP_DATA, TP_TMP, TP_SRC, TP_NBUF };

/* TP_REDUCE: buf[off, off + n) = sbuf[soff, ..) op buf[off, ..) (the source
 * the earlier operand, MPI_Reduce_local's order); TP_COPY: buf = sbuf;
 * TP_SSEND: a synchronous send (MPI_Issend). */
struct tp_op {
	unsigned char kind, buf, sbuf;
	int peer;              /* send, receive: a rank of the communicator; wait: the request (post index) */
	long long off, n, soff;
};

/* The algorithms (each a tc_variant's), and their parameters. */
enum tp_alg {
	TP_A_TREE_BCAST,       /* a tree from the root, segments passed on as they come */
	TP_A_SCAG_BCAST,       /* a binomial scatter of pieces, then a ring allgather of them */
	TP_A_TREE_GATHER,      /* subtrees' blocks up a tree */
	TP_A_TREE_SCATTER,     /* subtrees' blocks down a tree */
	TP_A_RDB_ALLRED,       /* recursive doubling (MPICH's, over an order) */
	TP_A_RAB_ALLRED,       /* recursive halving then doubling (Rabenseifner) */
	TP_A_RING_ALLRED,      /* ring reduce-scatter, then ring allgather */
	TP_A_RDB_ALLGATHER,    /* recursive doubling of blocks (MPICH's, over an order) */
	TP_A_BRUCK_ALLGATHER,  /* Bruck's dissemination */
	TP_A_RING_ALLGATHER,   /* the ring */
	TP_NALGS
};

/* Tree shapes over the ranks in the fabric's order from the root: one
 * k-nomial tree (TP_T_KNOMIAL, radix k[0]; k >= size is flat), a chain,
 * or by levels (TP_T_LEVELS: the leaves' leaders, each leaf's hosts'
 * leaders, each host's ranks, each level k-nomial of radix k[i], 0 flat;
 * TP_T_HOSTS: the hosts' leaders, then each host's ranks; TP_T_RELAY: by
 * levels, the other leaves' leaders dealt round-robin to the root leaf's
 * hosts' leaders, the root first, or with k[0] 1 the other leaves' hosts'
 * leaders so dealt). */
enum tp_shape { TP_T_KNOMIAL, TP_T_CHAIN, TP_T_LEVELS, TP_T_HOSTS, TP_T_RELAY };

struct tp_args {
	enum tp_alg alg;
	enum tp_shape shape;
	int k[3];
	int seq;               /* a node's sends one after the other, not all posted at once */
	int sync;              /* sends synchronous (MPI_Issend): complete once received, so a send
				* below the eager limit paces its sender too */
	int hier;              /* Allreduce, Allgather: each host's ranks at its leader first (1);
				* Allgather: TP_GRID, the leaves' columns, then each leaf */
	int rankorder;         /* Allreduce: ranks in rank order (non-commutative operations) */
	int root;
	long long count;       /* bytes (bcast; gather, scatter: per rank) or elements (allreduce) */
	long long seg;         /* Bcast: segment bytes (0: the whole message) */
	const long long *blen; /* Allgather: each rank's bytes (NULL: count each) */
};

#define TP_GRID 2

/* The ranks per leaf where an Allgather grid applies (at least two leaves
 * of as many ranks each, at least two, each leaf's together in the
 * fabric's order), else 0. */
int tp_grid(const struct tc_comm *c);

/* Where the block of place q of the fabric's order lies once Allgather
 * plan a ran: the buffer (TP_DATA, or the grid's TP_TMP), *off its offset. */
int tp_ag_where(const struct tc_comm *c, const struct tp_args *a, int q, long long *off);

/* A tree over a communicator's ranks (tp_tree_build): parent (-1 the
 * root), children in the order a parent serves them, and each rank's
 * subtree as a range [start, start + size) of the depth-first order. */
struct tp_tree {
	int n, cap;
	int *parent, *koff, *kids, *start, *size, *dfs;
	int *w[5];             /* room for building it */
};
int tp_tree_alloc(struct tp_tree *t, int n);   /* 0, or -1 out of memory */
int tp_tree_build(const struct tc_comm *c, const struct tp_args *a, struct tp_tree *t);
void tp_tree_free(struct tp_tree *t);

/* Rank r's ops of algorithm a; tree as tp_tree_build made it (rooted
 * algorithms). *ops grows (realloc); -1 when memory runs out. */
int tp_gen(const struct tc_comm *c, const struct tp_args *a, const struct tp_tree *tree, int r, struct tp_op **ops,
	   int *n, int *cap);

/* Every rank's ops of algorithm a appended to mp (mprog.h; program rank =
 * communicator rank), elements of esize bytes: for the cost model. 0, or
 * -1 out of memory. */
struct mprog;
int tp_prog(const struct tc_comm *c, const struct tp_args *a, double esize, struct mprog *mp);

/* Runs this rank's ops: rq room for one request per send and receive,
 * buffers base[TP_NBUF], elements of dt (extent ext; MPI_BYTE for byte
 * plans), reductions by op. An MPI error code. */
int tp_run(const struct tc_comm *c, const struct tp_op *ops, int n, MPI_Request *rq, char *const *base,
	   MPI_Datatype dt, MPI_Aint ext, MPI_Op op);

#endif
