/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_coll.c - PMPI wrappers for collectives, recorded as the LOGICAL
 * traffic of the operation: what each rank's data must reach, not what the
 * MPI library's algorithm sends (a tree or ring sends other messages; the
 * profiler cannot see inside Open MPI's coll components). Kept apart from
 * the measured point-to-point traffic everywhere in the report.
 *
 * Per call, on the sending rank, to world ranks (one logical message each):
 *   bcast                root -> each other rank: count x size
 *   scatter(v)           root -> rank i: sendcount(s[i]) x size
 *   gather(v), reduce    each non-root -> root: its sendcount (count) x size
 *   allgather(v)         each -> every other: its sendcount x size
 *   alltoall(v,w)        i -> j: sendcount(s[j]) x size
 *   allreduce            each -> every other: count x size (every result
 *                        depends on every contribution)
 *   reduce_scatter(_block) i -> j: recvcount(s[j]) x size
 *   scan, exscan         i -> every j > i: count x size
 *   neighbor_alltoall(v) the k-th out-neighbour: sendcount(s[k]) x size
 *   neighbor_allgather(v) every out-neighbour: sendcount x size
 *   barrier              calls only
 * A rank never "sends" to itself. MPI_IN_PLACE takes the receive side's
 * count and type, as the standard says. Intercommunicator collectives are
 * counted as calls only. Non-blocking forms (MPI_Ibcast, ...) count as the
 * blocking ones, when issued.
 */
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "prof.h"

static uint64_t tsize(MPI_Datatype t)
{
	int sz = 0;
	if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &sz) != MPI_SUCCESS || sz < 0)
		return 0;
	return (uint64_t)sz;
}

/* Counting applies: profiling on, not paused, an intracommunicator. Counts
 * the call in any case. Sets *me / *p. */
static int go(enum prof_coll op, MPI_Comm comm, int *me, int *p)
{
	if (!prof.active || prof.paused)
		return 0;
	__atomic_fetch_add(&prof.coll_calls[op], 1, __ATOMIC_RELAXED);
	int inter = 0;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		return 0;
	PMPI_Comm_rank(comm, me);
	PMPI_Comm_size(comm, p);
	return 1;
}

static void to(MPI_Comm comm, int j, uint64_t bytes)
{
	prof_coll(prof_world_rank(&comm, j), bytes);
}

/* me -> every other rank of comm: bytes each. */
static void to_all(MPI_Comm comm, int me, int p, uint64_t bytes)
{
	for (int j = 0; j < p; j++)
		if (j != me)
			to(comm, j, bytes);
}

static void rec_bcast(enum prof_coll op, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	int me, p;
	if (go(op, comm, &me, &p) && me == root)
		to_all(comm, me, p, (uint64_t)count * tsize(t));
}

/* gather, reduce: the non-roots send to the root */
static void rec_to_root(enum prof_coll op, uint64_t bytes, int root, MPI_Comm comm)
{
	int me, p;
	if (go(op, comm, &me, &p) && me != root)
		to(comm, root, bytes);
}

static void rec_scatter(enum prof_coll op, const int *counts, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	int me, p;
	if (!go(op, comm, &me, &p) || me != root)
		return;
	for (int j = 0; j < p; j++)
		if (j != me)
			to(comm, j, (uint64_t)(counts ? counts[j] : count) * tsize(t));
}

static void rec_all(enum prof_coll op, uint64_t bytes, MPI_Comm comm)
{
	int me, p;
	if (go(op, comm, &me, &p))
		to_all(comm, me, p, bytes);
}

static void rec_alltoall(enum prof_coll op, const void *sbuf, const int *scounts, int scount, MPI_Datatype st,
			 const int *rcounts, int rcount, MPI_Datatype rt, const MPI_Datatype *sts,
			 const MPI_Datatype *rts, MPI_Comm comm)
{
	int me, p;
	if (!go(op, comm, &me, &p))
		return;
	int inplace = sbuf == MPI_IN_PLACE;
	for (int j = 0; j < p; j++) {
		if (j == me)
			continue;
		uint64_t c, s;
		if (sts) {   /* alltoallw: per-peer types */
			c = (uint64_t)(inplace ? rcounts[j] : scounts[j]);
			s = tsize(inplace ? rts[j] : sts[j]);
		} else if (scounts || rcounts) {
			c = (uint64_t)(inplace ? rcounts[j] : scounts[j]);
			s = tsize(inplace ? rt : st);
		} else {
			c = (uint64_t)(inplace ? rcount : scount);
			s = tsize(inplace ? rt : st);
		}
		to(comm, j, c * s);
	}
}

static void rec_scan(enum prof_coll op, int count, MPI_Datatype t, MPI_Comm comm)
{
	int me, p;
	if (!go(op, comm, &me, &p))
		return;
	for (int j = me + 1; j < p; j++)
		to(comm, j, (uint64_t)count * tsize(t));
}

static void rec_reduce_scatter(enum prof_coll op, const int *rcounts, int rcount, MPI_Datatype t, MPI_Comm comm)
{
	int me, p;
	if (!go(op, comm, &me, &p))
		return;
	for (int j = 0; j < p; j++)
		if (j != me)
			to(comm, j, (uint64_t)(rcounts ? rcounts[j] : rcount) * tsize(t));
}

/* the bytes a rank contributes to an allgather(v) */
static uint64_t ag_bytes(const void *sbuf, int scount, MPI_Datatype st, const int *rcounts, int rcount,
			 MPI_Datatype rt, MPI_Comm comm)
{
	if (sbuf != MPI_IN_PLACE)
		return (uint64_t)scount * tsize(st);
	if (!rcounts)
		return (uint64_t)rcount * tsize(rt);
	int me = 0;
	PMPI_Comm_rank(comm, &me);
	return (uint64_t)rcounts[me] * tsize(rt);
}

/*
 * The out-neighbours of comm's process topology in the order the neighbour
 * collectives use (MPI 4.1, 8.6): per dimension of a Cartesian topology the
 * negative then the positive neighbour (MPI_PROC_NULL at an open edge); a
 * graph's neighbours; a distributed graph's destinations. Returns a new
 * array (free it) and *k, or NULL.
 */
static int *out_nbrs(MPI_Comm comm, int me, int *k)
{
	int status = MPI_UNDEFINED, *nb = NULL;
	*k = 0;
	PMPI_Topo_test(comm, &status);
	if (status == MPI_CART) {
		int nd = 0;
		PMPI_Cartdim_get(comm, &nd);
		if (nd <= 0 || !(nb = malloc(2 * (size_t)nd * sizeof(int))))
			return NULL;
		for (int d = 0; d < nd; d++)
			PMPI_Cart_shift(comm, d, 1, &nb[2 * d], &nb[2 * d + 1]);
		*k = 2 * nd;
	} else if (status == MPI_GRAPH) {
		int cnt = 0;
		PMPI_Graph_neighbors_count(comm, me, &cnt);
		if (cnt <= 0 || !(nb = malloc((size_t)cnt * sizeof(int))))
			return NULL;
		PMPI_Graph_neighbors(comm, me, cnt, nb);
		*k = cnt;
	} else if (status == MPI_DIST_GRAPH) {
		int in = 0, out = 0, weighted = 0;
		PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
		int *src = malloc(((size_t)in + 1) * sizeof(int)), *w = malloc(((size_t)in + (size_t)out + 2) * sizeof(int));
		nb = malloc(((size_t)out + 1) * sizeof(int));
		if (out > 0 && src && w && nb) {
			PMPI_Dist_graph_neighbors(comm, in, src, weighted ? w : MPI_UNWEIGHTED, out, nb,
						  weighted ? w + in + 1 : MPI_UNWEIGHTED);
			*k = out;
		}
		free(src);
		free(w);
		if (!*k) {
			free(nb);
			nb = NULL;
		}
	}
	return nb;
}

static void rec_neighbor(enum prof_coll op, const int *scounts, int scount, MPI_Datatype st, MPI_Comm comm)
{
	int me, p, k;
	if (!go(op, comm, &me, &p))
		return;
	int *nb = out_nbrs(comm, me, &k);
	for (int i = 0; nb && i < k; i++)
		if (nb[i] != MPI_PROC_NULL)
			to(comm, nb[i], (uint64_t)(scounts ? scounts[i] : scount) * tsize(st));
	free(nb);
}

int MPI_Neighbor_alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			  MPI_Comm comm)
{
	rec_neighbor(C_NEIGHBOR_ALLTOALL, NULL, scount, st, comm);
	return PMPI_Neighbor_alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Neighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st, void *rbuf,
			   const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	rec_neighbor(C_NEIGHBOR_ALLTOALLV, scounts, 0, st, comm);
	return PMPI_Neighbor_alltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm);
}

int MPI_Neighbor_allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			   MPI_Comm comm)
{
	rec_neighbor(C_NEIGHBOR_ALLGATHER, NULL, scount, st, comm);
	return PMPI_Neighbor_allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Neighbor_allgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[],
			    const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
	rec_neighbor(C_NEIGHBOR_ALLGATHERV, NULL, scount, st, comm);
	return PMPI_Neighbor_allgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm);
}

int MPI_Barrier(MPI_Comm comm)
{
	int me, p;
	go(C_BARRIER, comm, &me, &p);
	return PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	rec_bcast(C_BCAST, count, t, root, comm);
	return PMPI_Bcast(buf, count, t, root, comm);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
	       MPI_Comm comm)
{
	rec_to_root(C_GATHER, (uint64_t)scount * tsize(st), root, comm);
	return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[], const int displs[],
		MPI_Datatype rt, int root, MPI_Comm comm)
{
	rec_to_root(C_GATHERV, (uint64_t)scount * tsize(st), root, comm);
	return PMPI_Gatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
		MPI_Comm comm)
{
	rec_scatter(C_SCATTER, NULL, scount, st, root, comm);
	return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype st, void *rbuf, int rcount,
		 MPI_Datatype rt, int root, MPI_Comm comm)
{
	rec_scatter(C_SCATTERV, scounts, 0, st, root, comm);
	return PMPI_Scatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		  MPI_Comm comm)
{
	rec_all(C_ALLGATHER, ag_bytes(sbuf, scount, st, NULL, rcount, rt, comm), comm);
	return PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[],
		   const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
	rec_all(C_ALLGATHERV, ag_bytes(sbuf, scount, st, rcounts, 0, rt, comm), comm);
	return PMPI_Allgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		 MPI_Comm comm)
{
	rec_alltoall(C_ALLTOALL, sbuf, NULL, scount, st, NULL, rcount, rt, NULL, NULL, comm);
	return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st, void *rbuf,
		  const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	rec_alltoall(C_ALLTOALLV, sbuf, scounts, 0, st, rcounts, 0, rt, NULL, NULL, comm);
	return PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm);
}

int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[], const MPI_Datatype sts[], void *rbuf,
		  const int rcounts[], const int rdispls[], const MPI_Datatype rts[], MPI_Comm comm)
{
	rec_alltoall(C_ALLTOALLW, sbuf, scounts, 0, MPI_DATATYPE_NULL, rcounts, 0, MPI_DATATYPE_NULL, sts, rts,
		     comm);
	return PMPI_Alltoallw(sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
	rec_to_root(C_REDUCE, (uint64_t)count * tsize(t), root, comm);
	return PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	rec_all(C_ALLREDUCE, (uint64_t)count * tsize(t), comm);
	return PMPI_Allreduce(sbuf, rbuf, count, t, op, comm);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype t, MPI_Op op,
		       MPI_Comm comm)
{
	rec_reduce_scatter(C_REDUCE_SCATTER, rcounts, 0, t, comm);
	return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, t, op, comm);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	rec_reduce_scatter(C_REDUCE_SCATTER_BLOCK, NULL, rcount, t, comm);
	return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, t, op, comm);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	rec_scan(C_SCAN, count, t, comm);
	return PMPI_Scan(sbuf, rbuf, count, t, op, comm);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	rec_scan(C_EXSCAN, count, t, comm);
	return PMPI_Exscan(sbuf, rbuf, count, t, op, comm);
}

/* ---- non-blocking forms: the same logical traffic, counted when issued ---- */

int MPI_Ibcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *req)
{
	rec_bcast(C_BCAST, count, t, root, comm);
	return PMPI_Ibcast(buf, count, t, root, comm, req);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm,
		MPI_Request *req)
{
	rec_to_root(C_REDUCE, (uint64_t)count * tsize(t), root, comm);
	return PMPI_Ireduce(sbuf, rbuf, count, t, op, root, comm, req);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
		   MPI_Request *req)
{
	rec_all(C_ALLREDUCE, (uint64_t)count * tsize(t), comm);
	return PMPI_Iallreduce(sbuf, rbuf, count, t, op, comm, req);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		  MPI_Comm comm, MPI_Request *req)
{
	rec_alltoall(C_ALLTOALL, sbuf, NULL, scount, st, NULL, rcount, rt, NULL, NULL, comm);
	return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		   MPI_Comm comm, MPI_Request *req)
{
	rec_all(C_ALLGATHER, ag_bytes(sbuf, scount, st, NULL, rcount, rt, comm), comm);
	return PMPI_Iallgather(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
		MPI_Comm comm, MPI_Request *req)
{
	rec_to_root(C_GATHER, (uint64_t)scount * tsize(st), root, comm);
	return PMPI_Igather(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
		 MPI_Comm comm, MPI_Request *req)
{
	rec_scatter(C_SCATTER, NULL, scount, st, root, comm);
	return PMPI_Iscatter(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}
