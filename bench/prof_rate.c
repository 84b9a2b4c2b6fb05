/*
 * prof_rate.c - small-message rate (the overhead benchmark of topoprof,
 * docs/performance.md): rank 0 streams WINDOW non-blocking 8-byte sends to
 * rank 1 (which pre-posts WINDOW receives), ITERS windows, then one
 * acknowledgement; prints messages per second. Run it with and without
 * LD_PRELOAD=build/lib/libtopoprof.so (bench/prof_overhead.sh alternates).
 *
 *   mpirun -np 2 build/bench/prof_rate [ITERS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#define WINDOW 64
#define SIZE 8

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int me, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	char buf[WINDOW][SIZE] = { { 0 } }, ack = 0;
	MPI_Request rq[WINDOW];
	if (n != 2) {
		if (me == 0)
			fprintf(stderr, "prof_rate: run with -np 2\n");
		MPI_Finalize();
		return 1;
	}
	for (int pass = 0; pass < 2; pass++) {   /* pass 0 warms up */
		int it_n = pass ? iters : iters / 10;
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int it = 0; it < it_n; it++) {
			for (int k = 0; k < WINDOW; k++) {
				if (me == 0)
					MPI_Isend(buf[k], SIZE, MPI_BYTE, 1, k, MPI_COMM_WORLD, &rq[k]);
				else
					MPI_Irecv(buf[k], SIZE, MPI_BYTE, 0, k, MPI_COMM_WORLD, &rq[k]);
			}
			MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
		}
		if (me == 1)
			MPI_Send(&ack, 1, MPI_BYTE, 0, 999, MPI_COMM_WORLD);
		else
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		double t = MPI_Wtime() - t0;
		if (pass && me == 0)
			printf("prof_rate msgs=%d seconds=%.4f rate=%.0f\n", it_n * WINDOW, t, it_n * WINDOW / t);
	}
	MPI_Finalize();
	return 0;
}
