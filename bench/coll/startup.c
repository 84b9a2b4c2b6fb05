/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * startup.c - what MPI_Init costs with topocoll preloaded (docs/performance.md
 * "What topocoll adds to MPI_Init", beside Subramoni 2013's Table 4.2):
 * nothing but MPI_Init and MPI_Finalize,
 * timed around MPI_Init by the slowest rank; topocoll's own phases come
 * from TOPOCOLL_VERBOSE=2 (bench/coll/startup.sh).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double t0 = now();
	MPI_Init(&argc, &argv);
	double t = now() - t0, worst = 0;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	/* the first collective on a new communicator: its setup */
	MPI_Comm c;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
	int x = rank, y;
	MPI_Barrier(MPI_COMM_WORLD);
	double t1 = MPI_Wtime();
	MPI_Bcast(&x, 1, MPI_INT, 0, c);
	double f = MPI_Wtime() - t1, fworst = 0;
	MPI_Reduce(&f, &fworst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	y = x;
	(void)y;
	if (!rank)
		printf("startup ranks=%d init_ms=%.2f first_coll_ms=%.2f\n", size, worst * 1e3, fworst * 1e3);
	MPI_Comm_free(&c);
	MPI_Finalize();
	return 0;
}
