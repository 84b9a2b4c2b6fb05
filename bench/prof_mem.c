/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof_mem.c - topoprof's memory per rank for a job of N ranks (default
 * 4,096), measured on the profiler's own code (profiler/count.c) without
 * running N processes: the few PMPI calls count.c makes are answered by
 * bench/pmpi_stub.c (a fake job of N ranks), so prof_init() sizes its
 * counters for N peers. The heap is measured with
 * glibc's mallinfo2() around each step:
 *   1. prof_init(): the per-peer counters; then one persistent send, which
 *      allocates the persistent-send table;
 *   2. 64 communicators of N ranks used as destinations: the rank
 *      translation cache grows to its budget, then stops;
 *   3. a message to every peer on every communicator (no allocation).
 *
 *   build/bench/prof_mem [N]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "../profiler/prof.h"
#include "pmpi_stub.h"

static int N = 4096;

static size_t heap(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;   /* small blocks + mmap()ed large ones */
}

int main(int argc, char **argv)
{
	if (argc > 1)
		N = atoi(argv[1]);
	if (N < 2 || N > (1 << 20) || (N & (N - 1))) {
		fprintf(stderr, "usage: prof_mem [N]   (N a power of two, 2 to 1048576)\n");
		return 2;
	}
	pmpi_stub_set_size(N);
	size_t h0 = heap();
	prof_init();
	size_t h1a = heap();
	if (!prof.active) {
		fprintf(stderr, "prof_mem: prof_init failed\n");
		return 1;
	}
	prof_persist_add((void *)&N, 0, 8);   /* any address works as a request */
	size_t h1 = heap();
	for (int c = 0; c < PMPI_STUB_NCOMM; c++) {
		MPI_Comm comm = pmpi_stub_comm(c);
		for (int r = 0; r < N; r++)
			prof_p2p(prof_world_rank(&comm, r), 8);
	}
	size_t h2 = heap();
	printf("prof_mem peers=%d counters=%zu persistent_table=%zu translation_cache=%zu total=%zu (%.1f KiB; "
	       "profiler's own count %zu)\n",
	       N, h1a - h0, h1 - h1a, h2 - h1, h2 - h0, (double)(h2 - h0) / 1024, prof.heap);
	printf("prof_mem check: peer %d got %llu bytes (want %d)\n", N - 1,
	       (unsigned long long)prof.row[(size_t)ROW_P2P_BYTES * N + N - 1], PMPI_STUB_NCOMM * 8);
	/* the counting path of one send on MPI_COMM_WORLD (translation and two
	 * relaxed atomic adds), without the MPI_Type_size lookup */
	MPI_Comm world = MPI_COMM_WORLD;
	struct timespec a, b;
	const int calls = 20 * 1000 * 1000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < calls; i++)
		prof_p2p(prof_world_rank(&world, i & (N - 1)), 8);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("prof_mem counting cost: %.1f ns per send\n",
	       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / calls);
	return 0;
}
