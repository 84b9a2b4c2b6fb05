/*
 * prof_mem.c - topoprof's memory per rank for a job of N ranks (default
 * 4,096), measured on the profiler's own code (profiler/count.c) without
 * running N processes: the few PMPI calls count.c makes are answered here
 * (this program's definitions take precedence over libmpi's), so
 * prof_init() sizes its counters for N peers. The heap is measured with
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

static int N = 4096;
#define NCOMM 64
static struct fake { int used; void *attr; } fakes[NCOMM];

static struct fake *F(MPI_Comm c)
{
	for (int i = 0; i < NCOMM; i++)
		if ((void *)c == (void *)&fakes[i])
			return &fakes[i];
	return NULL;
}

int PMPI_Comm_rank(MPI_Comm c, int *r) { (void)c; *r = 0; return MPI_SUCCESS; }
int PMPI_Comm_size(MPI_Comm c, int *s) { (void)c; *s = N; return MPI_SUCCESS; }
int PMPI_Comm_remote_size(MPI_Comm c, int *s) { (void)c; *s = N; return MPI_SUCCESS; }
int PMPI_Comm_test_inter(MPI_Comm c, int *f) { (void)c; *f = 0; return MPI_SUCCESS; }
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *cp, MPI_Comm_delete_attr_function *del, int *k, void *x)
{
	(void)cp, (void)del, (void)x;
	*k = 77;
	return MPI_SUCCESS;
}
int PMPI_Comm_free_keyval(int *k) { *k = MPI_KEYVAL_INVALID; return MPI_SUCCESS; }
int PMPI_Comm_get_attr(MPI_Comm c, int k, void *v, int *flag)
{
	(void)k;
	struct fake *f = F(c);
	*flag = f && f->attr;
	if (*flag)
		*(void **)v = f->attr;
	return MPI_SUCCESS;
}
int PMPI_Comm_set_attr(MPI_Comm c, int k, void *v)
{
	(void)k;
	F(c)->attr = v;
	return MPI_SUCCESS;
}
int PMPI_Comm_group(MPI_Comm c, MPI_Group *g) { (void)c; *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Comm_remote_group(MPI_Comm c, MPI_Group *g) { (void)c; *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Group_free(MPI_Group *g) { *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Group_translate_ranks(MPI_Group a, int n, const int r[], MPI_Group b, int out[])
{
	(void)a, (void)b;
	for (int i = 0; i < n; i++)   /* reversed, like tests/mpi/prof_stencil.c */
		out[i] = N - 1 - r[i];
	return MPI_SUCCESS;
}

static size_t heap(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;   /* small blocks + mmap()ed large ones */
}

int main(int argc, char **argv)
{
	if (argc > 1)
		N = atoi(argv[1]);
	size_t h0 = heap();
	prof_init();
	size_t h1a = heap();
	if (!prof.active) {
		fprintf(stderr, "prof_mem: prof_init failed\n");
		return 1;
	}
	prof_persist_add((void *)&fakes, 0, 8);
	size_t h1 = heap();
	for (int c = 0; c < NCOMM; c++) {
		MPI_Comm comm = (MPI_Comm)(void *)&fakes[c];
		for (int r = 0; r < N; r++)
			prof_p2p(prof_world_rank(&comm, r), 8);
	}
	size_t h2 = heap();
	printf("prof_mem peers=%d counters=%zu persistent_table=%zu translation_cache=%zu total=%zu (%.1f KiB; "
	       "profiler's own count %zu)\n",
	       N, h1a - h0, h1 - h1a, h2 - h1, h2 - h0, (double)(h2 - h0) / 1024, prof.heap);
	printf("prof_mem check: peer %d got %llu bytes (want %d)\n", N - 1,
	       (unsigned long long)prof.row[(size_t)ROW_P2P_BYTES * N + N - 1], NCOMM * 8);
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
