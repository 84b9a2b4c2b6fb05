/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.c - topocoll against the MPI's own collectives, in SimGrid's SMPI
 * (bench/coll/run.py runs it on topod's platforms; docs/performance.md).
 * Built with smpicc together with the coll/ sources (-DTOPOCOLL_SMPI), whose entry
 * points are then topocoll_MPI_*, beside SMPI's own MPI_*.
 *
 *   bench OPS SIZES [REPS]
 *     OPS    comma list of bcast, gather, scatter, allreduce, alltoall, allgather
 *     SIZES  comma list of bytes (per rank; Alltoall: per block)
 *
 * Each case runs the MPI's own call, then topocoll's, REPS times (default
 * 2, after one of each to warm up: topocoll's first call on a communicator
 * sets it up, its first of a size class chooses), every rank starting at
 * one simulated instant, and takes the last repetition's time from that
 * instant to the last rank's end (SMPI's times are deterministic). Rank 0
 * prints
 *   coll OP BYTES native=S topo=S variant=V pred_native=S pred=S
 * with V what topocoll ran (0 the MPI's own, see coll.h's tc_variant).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int topocoll_MPI_Init(int *argc, char ***argv);
int topocoll_MPI_Finalize(void);
int topocoll_MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int topocoll_MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			int root, MPI_Comm comm);
int topocoll_MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			 int root, MPI_Comm comm);
int topocoll_MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int topocoll_MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			  MPI_Comm comm);
int topocoll_MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			   MPI_Comm comm);
int topocoll_last(double *t_native, double *t_best);

static char *sbuf, *rbuf;

static void run(const char *op, int count, int topo, int size)
{
	if (!strcmp(op, "bcast"))
		(topo ? topocoll_MPI_Bcast : MPI_Bcast)(sbuf, count, MPI_BYTE, 0, MPI_COMM_WORLD);
	else if (!strcmp(op, "gather"))
		(topo ? topocoll_MPI_Gather : MPI_Gather)(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE, 0, MPI_COMM_WORLD);
	else if (!strcmp(op, "scatter"))
		(topo ? topocoll_MPI_Scatter : MPI_Scatter)(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE, 0, MPI_COMM_WORLD);
	else if (!strcmp(op, "allreduce"))
		/* ints: an exact reduction, which topocoll may reorder */
		(topo ? topocoll_MPI_Allreduce : MPI_Allreduce)(sbuf, rbuf, count / 4, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
	else if (!strcmp(op, "alltoall"))
		(topo ? topocoll_MPI_Alltoall : MPI_Alltoall)(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE, MPI_COMM_WORLD);
	else if (!strcmp(op, "allgather"))
		(topo ? topocoll_MPI_Allgather : MPI_Allgather)(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE, MPI_COMM_WORLD);
	(void)size;
}

/* Every rank starts at one simulated instant (as bench/jobspeed/a2a.c
 * does): a barrier leaves ranks up to ~2 us apart (its last messages take
 * routes of other lengths), a tenth of a small collective. Each rank
 * computes (simulated, no network) until 100 us after the latest rank
 * left the barrier, in flops on the platform's 1 Gf hosts. The time is
 * the latest end less the earliest start. */
static double timed(const char *op, int count, int topo, int size)
{
	MPI_Barrier(MPI_COMM_WORLD);
	double left = MPI_Wtime(), latest;
	MPI_Allreduce(&left, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	for (int i = 0; i < 4 && latest + 100e-6 > MPI_Wtime(); i++)
		smpi_execute_flops((latest + 100e-6 - MPI_Wtime()) * 1e9);
	double t0 = MPI_Wtime();
	run(op, count, topo, size);
	double t1 = MPI_Wtime(), start, end;
	MPI_Reduce(&t0, &start, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t1, &end, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	return end - start;
}

int main(int argc, char **argv)
{
	topocoll_MPI_Init(&argc, &argv);
	int rank, size, reps = argc > 3 ? atoi(argv[3]) : 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 3 || reps < 1) {
		if (!rank)
			fprintf(stderr, "usage: bench OPS SIZES [REPS]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long long maxb = 0;
	for (char *p = argv[2]; *p;) {
		long long b = strtoll(p, &p, 10);
		maxb = b > maxb ? b : maxb;
		p += *p == ',';
	}
	/* Gather, Scatter, Alltoall, Allgather ("gather"): size blocks; the contents do not matter
	 * for time, so SMPI may fold them onto one backing block. */
	int blocks = strstr(argv[1], "gather") || strstr(argv[1], "scatter") || strstr(argv[1], "alltoall");
	size_t cap = (size_t)maxb * (size_t)(blocks ? size : 1) + 64;
	sbuf = SMPI_SHARED_MALLOC(cap);
	rbuf = SMPI_SHARED_MALLOC(cap);
	char ops[256], *save = NULL;
	snprintf(ops, sizeof(ops), "%s", argv[1]);
	/* strtok_r: SMPI's ranks share the C library's state */
	for (char *op = strtok_r(ops, ",", &save); op; op = strtok_r(NULL, ",", &save)) {
		for (char *p = argv[2]; *p;) {
			int b = (int)strtoll(p, &p, 10);
			p += *p == ',';
			double tn = 0, tt = 0, pn, pb;
			timed(op, b, 0, size);
			timed(op, b, 1, size);
			for (int r = 0; r < reps; r++) {
				tn = timed(op, b, 0, size);
				tt = timed(op, b, 1, size);
			}
			int v = topocoll_last(&pn, &pb);
			if (!rank)
				printf("coll %s %d native=%.9f topo=%.9f variant=%d pred_native=%.9f pred=%.9f\n", op, b, tn,
				       tt, v, pn, pb);
			fflush(stdout);
		}
	}
	SMPI_SHARED_FREE(sbuf);
	SMPI_SHARED_FREE(rbuf);
	topocoll_MPI_Finalize();
	return 0;
}
