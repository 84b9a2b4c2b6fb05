/*
 * prof_alltoall.c - all-to-all traffic known exactly, for
 * tests/integration/t_profiler.sh (run with libtopoprof.so in LD_PRELOAD).
 *
 *   1. a point-to-point all-to-all: rank i sends (i + j + 1) x 16 bytes to
 *      every j != i with MPI_Isend (distinct sizes per pair, so a
 *      transposed matrix shows), and 1 byte to itself (intra-host);
 *   2. MPI_Alltoall of COUNT ints, REPS times (logical: every ordered pair
 *      COUNT x 4 bytes per call), on a duplicate of MPI_COMM_WORLD;
 *   3. MPI_Alltoallv where rank i sends j+1 ints to j;
 *   4. MPI_Pcontrol(0) ... MPI_Pcontrol(1) around traffic that must NOT be
 *      counted (an MPI_Sendrecv_replace ring of 1 MiB).
 * Between 1 and 2, MPI_Pcontrol(2) asks for a report (PREFIX.1.*): it must
 * hold all of the point-to-point traffic and no collective traffic.
 * Every rank tallies what it sent (prof_truth.h).
 */
#include "prof_truth.h"

#define COUNT 1000
#define REPS 3

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int me, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	struct truth T;
	truth_init(&T);
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);

	size_t maxb = (size_t)(2 * n + 1) * 16;
	char *sb = calloc((size_t)n, maxb), *rb = calloc((size_t)n, maxb);
	MPI_Request *rq = malloc(2 * (size_t)n * sizeof(*rq));
	for (int j = 0; j < n; j++) {
		int sbytes = j == me ? 1 : (me + j + 1) * 16, rbytes = j == me ? 1 : (j + me + 1) * 16;
		MPI_Irecv(rb + (size_t)j * maxb, rbytes, MPI_BYTE, j, 7, MPI_COMM_WORLD, &rq[j]);
		MPI_Isend(sb + (size_t)j * maxb, sbytes, MPI_BYTE, j, 7, MPI_COMM_WORLD, &rq[n + j]);
		truth_p2p(&T, j, (uint64_t)sbytes);
	}
	MPI_Waitall(2 * n, rq, MPI_STATUSES_IGNORE);
	MPI_Pcontrol(2);

	int *a = calloc((size_t)n * COUNT, sizeof(int)), *b = calloc((size_t)n * COUNT, sizeof(int));
	for (int r = 0; r < REPS; r++) {
		MPI_Alltoall(a, COUNT, MPI_INT, b, COUNT, MPI_INT, dup);
		for (int j = 0; j < n; j++)
			if (j != me)
				truth_coll(&T, j, COUNT * sizeof(int));
	}
	int *sc = malloc((size_t)n * sizeof(int)), *sd = malloc((size_t)n * sizeof(int));
	int *rc = malloc((size_t)n * sizeof(int)), *rd = malloc((size_t)n * sizeof(int));
	for (int j = 0, so = 0, ro = 0; j < n; j++) {
		sc[j] = j + 1;
		rc[j] = me + 1;
		sd[j] = so;
		rd[j] = ro;
		so += sc[j];
		ro += rc[j];
		if (j != me)
			truth_coll(&T, j, (uint64_t)(j + 1) * sizeof(int));
	}
	MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, dup);

	/* not counted */
	MPI_Pcontrol(0);
	char *big = calloc(1, 1 << 20);
	MPI_Sendrecv_replace(big, 1 << 20, MPI_BYTE, (me + 1) % n, 9, (me + n - 1) % n, 9, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
	MPI_Pcontrol(1);

	truth_print(&T);
	free(big);
	free(sc), free(sd), free(rc), free(rd), free(a), free(b), free(sb), free(rb), free(rq);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return 0;
}
