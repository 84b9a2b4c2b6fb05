/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof_rate.c - small-message rate (the overhead benchmark of topoprof,
 * docs/performance.md): rank 0 streams WINDOW non-blocking 8-byte sends to
 * rank 1 (which pre-posts WINDOW receives), ITERS windows, then one
 * acknowledgement; prints messages per second. Run it with and without
 * LD_PRELOAD=build/lib/libtopoprof.so (bench/prof_overhead.sh alternates).
 *
 * With -np 1 the rank streams to itself (Open MPI's self path): one process,
 * nothing to wait for, so the CPU time per message (also printed, immune to
 * being descheduled on a shared machine) shows the profiler's per-send cost
 * against the cheapest send there is.
 *
 * "ab" as the second argument measures in one process instead, finely
 * interleaved so that machine noise hits both sides alike: 400 rounds of
 * 20 windows counted (MPI_Pcontrol(1)) and 20 windows not counted
 * (MPI_Pcontrol(0)), the least time per message of each side printed. Their
 * difference is the profiler's counting cost per send; without the profiler
 * MPI_Pcontrol does nothing and the two sides must agree (the control).
 *
 *   mpirun -np 2 build/bench/prof_rate [ITERS]
 *   mpirun -np 1 -x LD_PRELOAD=build/lib/libtopoprof.so build/bench/prof_rate 0 ab
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
	char buf[WINDOW][SIZE] = { { 0 } }, rbuf[WINDOW][SIZE], ack = 0;
	MPI_Request rq[2 * WINDOW];
	if (n > 2) {
		if (me == 0)
			fprintf(stderr, "prof_rate: run with -np 1 or 2\n");
		MPI_Finalize();
		return 1;
	}
	if (argc > 2 && argv[2][0] == 'a') {
		double best[2] = { 1e9, 1e9 };
		for (int round = 0; round < 400; round++)
			for (int side = 0; side < 2; side++) {
				MPI_Pcontrol(side);   /* 0: paused, 1: counting */
				MPI_Barrier(MPI_COMM_WORLD);
				double t0 = MPI_Wtime();
				for (int it = 0; it < 20; it++) {
					int nr = 0;
					for (int k = 0; k < WINDOW; k++) {
						if (n == 1)
							MPI_Irecv(rbuf[k], SIZE, MPI_BYTE, 0, k, MPI_COMM_WORLD, &rq[nr++]);
						if (me == 0)
							MPI_Isend(buf[k], SIZE, MPI_BYTE, n - 1, k, MPI_COMM_WORLD, &rq[nr++]);
						else
							MPI_Irecv(buf[k], SIZE, MPI_BYTE, 0, k, MPI_COMM_WORLD, &rq[nr++]);
					}
					MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
				}
				double ns = (MPI_Wtime() - t0) * 1e9 / (20 * WINDOW);
				if (ns < best[side])
					best[side] = ns;
			}
		MPI_Pcontrol(1);
		if (me == 0)
			printf("prof_rate ab paused_ns_per_msg=%.1f counting_ns_per_msg=%.1f difference_ns=%.1f (%.1f %%)\n",
			       best[0], best[1], best[1] - best[0], 100.0 * (best[1] - best[0]) / best[0]);
		MPI_Finalize();
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {   /* pass 0 warms up */
		int it_n = pass ? iters : iters / 10;
		MPI_Barrier(MPI_COMM_WORLD);
		struct timespec c0, c1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		double t0 = MPI_Wtime();
		for (int it = 0; it < it_n; it++) {
			int nr = 0;
			for (int k = 0; k < WINDOW; k++) {
				if (n == 1)
					MPI_Irecv(rbuf[k], SIZE, MPI_BYTE, 0, k, MPI_COMM_WORLD, &rq[nr++]);
				if (me == 0)
					MPI_Isend(buf[k], SIZE, MPI_BYTE, n - 1, k, MPI_COMM_WORLD, &rq[nr++]);
				else
					MPI_Irecv(buf[k], SIZE, MPI_BYTE, 0, k, MPI_COMM_WORLD, &rq[nr++]);
			}
			MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
		}
		if (n == 2 && me == 1)
			MPI_Send(&ack, 1, MPI_BYTE, 0, 999, MPI_COMM_WORLD);
		else if (n == 2)
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		double t = MPI_Wtime() - t0;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
		if (pass && me == 0)
			printf("prof_rate msgs=%d seconds=%.4f rate=%.0f cpu_ns_per_msg=%.1f\n", it_n * WINDOW, t,
			       it_n * WINDOW / t, cpu * 1e9 / (it_n * WINDOW));
	}
	MPI_Finalize();
	return 0;
}
