/*
 * prof_threads.c - the profiler under MPI_THREAD_MULTIPLE: in each of 40
 * rounds the ranks make a new communicator (a split of MPI_COMM_WORLD in
 * reversed order, so its ranks need translating), and then 4 threads per
 * rank send on it at once, each its first message there: the profiler's
 * world-rank translation cache of that communicator is missed by all of
 * them together. Every message must be counted, to the right peer.
 *
 * Prints the "truth" line of prof_truth.h (point-to-point only), like the
 * other profiler test programs; tests/integration/t_profiler.sh compares it
 * with the report.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "prof_truth.h"

#define ROUNDS 40
#define THREADS 4

struct arg {
	MPI_Comm comm;
	int me, n, t;
	int bytes;
};

static void *sender(void *p)
{
	struct arg *a = p;
	int to = (a->me + 1) % a->n, from = (a->me - 1 + a->n) % a->n;
	char sbuf[256] = { 0 }, rbuf[256];
	MPI_Request rq[2];
	MPI_Irecv(rbuf, a->bytes, MPI_BYTE, from, a->t, a->comm, &rq[0]);
	MPI_Isend(sbuf, a->bytes, MPI_BYTE, to, a->t, a->comm, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	int me, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (provided < MPI_THREAD_MULTIPLE) {
		if (!me)
			printf("skip - MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
		MPI_Finalize();
		return 0;
	}
	struct truth T;
	truth_init(&T);
	for (int round = 0; round < ROUNDS; round++) {
		MPI_Comm c;
		MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &c);   /* rank in c: n-1-me */
		int cme;
		MPI_Comm_rank(c, &cme);
		pthread_t th[THREADS];
		struct arg a[THREADS];
		for (int t = 0; t < THREADS; t++) {
			a[t] = (struct arg){ c, cme, n, t, 8 + t * 8 + round };
			pthread_create(&th[t], NULL, sender, &a[t]);
		}
		for (int t = 0; t < THREADS; t++) {
			pthread_join(th[t], NULL);
			/* c's rank cme+1 is world rank n-1-(cme+1) */
			truth_p2p(&T, n - 1 - (cme + 1) % n, (uint64_t)a[t].bytes);
		}
		MPI_Comm_free(&c);
	}
	truth_print(&T);
	MPI_Finalize();
	return 0;
}
