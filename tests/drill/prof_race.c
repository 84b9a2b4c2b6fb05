/*
 * prof_race.c - issue 21, item 11 (t_drill_profrace.sh): under
 * MPI_THREAD_MULTIPLE, in each of 20 rounds a fresh communicator (a dup of
 * MPI_COMM_WORLD, so the profiler translates its ranks) gets its first
 * messages from 4 threads released together by a barrier: they miss the
 * profiler's translation cache at once. One rank, each thread to itself.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#define ROUNDS 20
#define THREADS 4
static MPI_Comm comm;
static pthread_barrier_t bar;
static void *sender(void *p)
{
	int t = (int)(long)p;
	char s[8] = { 0 }, r[8];
	MPI_Request rq[2];
	pthread_barrier_wait(&bar);
	MPI_Irecv(r, 8, MPI_BYTE, 0, t, comm, &rq[0]);
	MPI_Isend(s, 8, MPI_BYTE, 0, t, comm, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	return NULL;
}
int main(int argc, char **argv)
{
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		printf("skip - MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
		MPI_Finalize();
		return 0;
	}
	pthread_barrier_init(&bar, NULL, THREADS);
	for (int round = 0; round < ROUNDS; round++) {
		MPI_Comm_dup(MPI_COMM_WORLD, &comm);
		pthread_t th[THREADS];
		for (long t = 0; t < THREADS; t++)
			pthread_create(&th[t], NULL, sender, (void *)t);
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		MPI_Comm_free(&comm);
	}
	printf("rounds %d threads %d\n", ROUNDS, THREADS);
	MPI_Finalize();
	return 0;
}
