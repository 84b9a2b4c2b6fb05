/*
 * prof_interpose.c - preloaded before libtopoprof by t_drill_profrace.sh:
 * widens the window in which threads miss the profiler's world-rank
 * translation cache together (each PMPI_Comm_size the profiler makes to
 * build a table takes 2 ms more), and counts PMPI_Comm_set_attr calls that
 * replace a value a communicator already holds. The profiler's delete
 * callback frees a replaced table, so a replacement is a table freed while
 * the thread that built or read it may still use it (issue 21, item 11).
 * Prints "interpose: set_attr N, replaced R" at exit.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static int replaced, sets;

int PMPI_Comm_size(MPI_Comm c, int *n)
{
	static int (*real)(MPI_Comm, int *);
	if (!real)
		real = (int (*)(MPI_Comm, int *))dlsym(RTLD_NEXT, "PMPI_Comm_size");
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
	return real(c, n);
}
int PMPI_Comm_set_attr(MPI_Comm c, int key, void *v)
{
	static int (*real)(MPI_Comm, int, void *);
	static int (*get)(MPI_Comm, int, void *, int *);
	if (!real) {
		real = (int (*)(MPI_Comm, int, void *))dlsym(RTLD_NEXT, "PMPI_Comm_set_attr");
		get = (int (*)(MPI_Comm, int, void *, int *))dlsym(RTLD_NEXT, "PMPI_Comm_get_attr");
	}
	void *old;
	int flag = 0;
	get(c, key, &old, &flag);
	__atomic_add_fetch(&sets, 1, __ATOMIC_RELAXED);
	if (flag)
		__atomic_add_fetch(&replaced, 1, __ATOMIC_RELAXED);
	return real(c, key, v);
}
__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "interpose: set_attr %d, replaced %d\n", sets, replaced);
}
