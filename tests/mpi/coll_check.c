/*
 * coll_check.c - topocoll's collectives give exactly the MPI's own results:
 * every case runs twice, through MPI_X (which a preloaded libtopocoll.so
 * takes) and through PMPI_X (the MPI itself, never interposed), and the
 * results are compared byte for byte.
 *
 * Communicators: MPI_COMM_WORLD, a dup, even/odd ranks, ranks mod 3, ranks
 * in reverse order, and singletons; counts 0, 1, 7, 1000 and 20,003 ints;
 * roots first, last and middle; MPI_IN_PLACE; a strided (vector) datatype
 * on one side of Gather and Scatter; Allreduce with int SUM, long MAX,
 * unsigned BXOR, in place, and double SUM (compared byte for byte where
 * TOPOCOLL_ALLREDUCE_FLOAT=0 leaves it to the MPI; reduce_check.c checks
 * every operation and type); Alltoall with every count and a strided
 * receive type (topod's schedule where the library runs it).
 *
 * Output: one "ok - " or "not ok - " line per communicator and collective,
 * from rank 0 (tests/integration/t_coll.sh runs it under Open MPI and
 * MPICH, with and without the library).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int counts[] = { 0, 1, 7, 1000, 20003 };
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))

static int fill(int seed, int i)
{
	return (int)((uint32_t)seed * 2654435761u ^ (uint32_t)i * 40503u);
}

/* bad += any difference, across the communicator */
static int agree(int bad, MPI_Comm comm)
{
	int all = 0;
	PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, comm);
	return all;
}

static int check_bcast(MPI_Comm comm)
{
	int size, rank, bad = 0;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	/* derived types (n = 1000 only): every other int; an int resized to
	 * two ints' extent (dense elements lying apart: not one contiguous
	 * run); at the root n ints, elsewhere one contiguous type of n ints
	 * (the same signature, different types on different ranks); at the
	 * root n/2 pairs of ints stored swapped (no holes, extent = size, not
	 * in memory order), elsewhere n ints */
	MPI_Datatype strided, spaced, spaced1, block, swp;
	int one[2] = { 1, 1 }, at[2] = { 1, 0 };
	MPI_Type_indexed(2, one, at, MPI_INT, &swp);
	MPI_Type_commit(&swp);
	MPI_Type_vector(1000, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced1);
	MPI_Type_contiguous(1, spaced1, &spaced);
	MPI_Type_commit(&spaced);
	MPI_Type_contiguous(1000, MPI_INT, &block);
	MPI_Type_commit(&block);
	int *a = malloc(2 * 20003 * sizeof(int)), *b = malloc(2 * 20003 * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int root = 0; root < size; root += size > 2 ? size / 2 : 1)
			for (int mode = 0; mode < 5; mode++) {
				int n = counts[k];
				if (mode > 0 && n != 1000)
					continue;
				for (int i = 0; i < 2 * n; i++)
					a[i] = b[i] = rank == root ? fill(root + n, i) : -1;
				if (mode == 1) {
					MPI_Bcast(a, 1, strided, root, comm);
					PMPI_Bcast(b, 1, strided, root, comm);
				} else if (mode == 2) {
					MPI_Bcast(a, n, spaced, root, comm);
					PMPI_Bcast(b, n, spaced, root, comm);
				} else if (mode == 3) {
					MPI_Bcast(a, rank == root ? n : 1, rank == root ? MPI_INT : block, root, comm);
					PMPI_Bcast(b, rank == root ? n : 1, rank == root ? MPI_INT : block, root, comm);
				} else if (mode == 4) {
					MPI_Bcast(a, rank == root ? n / 2 : n, rank == root ? swp : MPI_INT, root, comm);
					PMPI_Bcast(b, rank == root ? n / 2 : n, rank == root ? swp : MPI_INT, root, comm);
				} else {
					MPI_Bcast(a, n, MPI_INT, root, comm);
					PMPI_Bcast(b, n, MPI_INT, root, comm);
				}
				bad += memcmp(a, b, (size_t)n * (mode == 1 || mode == 2 ? 2 : 1) * sizeof(int)) != 0;
			}
	MPI_Type_free(&strided);
	MPI_Type_free(&spaced);
	MPI_Type_free(&spaced1);
	MPI_Type_free(&block);
	MPI_Type_free(&swp);
	free(a);
	free(b);
	return agree(bad, comm);
}

/* Gather with a strided send type (every other int) and, in place, at the root. */
static int check_gather(MPI_Comm comm)
{
	int size, rank, bad = 0;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	MPI_Datatype strided;
	MPI_Type_vector(1000, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	int *s = malloc(2 * 20003 * sizeof(int));
	int *ra = malloc((size_t)size * 2 * 20003 * sizeof(int)), *rb = malloc((size_t)size * 2 * 20003 * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int root = 0; root < size; root += size > 2 ? size / 2 : 1)
			for (int mode = 0; mode < 4; mode++) {
				int n = counts[k];
				if (mode >= 2 && n != 1000)
					continue;
				for (int i = 0; i < 2 * n; i++)
					s[i] = fill(rank * 7 + n, i);
				size_t tot = (size_t)size * n;
				for (size_t i = 0; i < tot; i++)
					ra[i] = rb[i] = (rank == root && mode == 1) ? fill((int)(i / (n ? n : 1)) * 7 + n, (int)(i % (n ? n : 1))) : -1;
				const void *sa = mode == 1 && rank == root ? MPI_IN_PLACE : s;
				if (mode == 2) {   /* strided on the send side, contiguous on the receive side */
					MPI_Gather(s, 1, strided, ra, n, MPI_INT, root, comm);
					PMPI_Gather(s, 1, strided, rb, n, MPI_INT, root, comm);
				} else if (mode == 3) {   /* strided at the root: each rank's slot an extent apart */
					for (size_t i = 0; i < tot * 2; i++)
						ra[i] = rb[i] = -1;
					MPI_Gather(s, n, MPI_INT, ra, 1, strided, root, comm);
					PMPI_Gather(s, n, MPI_INT, rb, 1, strided, root, comm);
				} else {
					MPI_Gather(sa, n, MPI_INT, ra, n, MPI_INT, root, comm);
					PMPI_Gather(sa, n, MPI_INT, rb, n, MPI_INT, root, comm);
				}
				if (rank == root)
					bad += memcmp(ra, rb, tot * (mode == 3 ? 2 : 1) * sizeof(int)) != 0;
			}
	MPI_Type_free(&strided);
	free(s);
	free(ra);
	free(rb);
	return agree(bad, comm);
}

/* Scatter, with a strided receive type and in place at the root. */
static int check_scatter(MPI_Comm comm)
{
	int size, rank, bad = 0;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	MPI_Datatype strided;
	MPI_Type_vector(1000, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	int *s = malloc((size_t)size * 2 * 20003 * sizeof(int));
	int *ra = malloc(2 * 20003 * sizeof(int)), *rb = malloc(2 * 20003 * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int root = 0; root < size; root += size > 2 ? size / 2 : 1)
			for (int mode = 0; mode < 4; mode++) {
				int n = counts[k];
				if (mode >= 2 && n != 1000)
					continue;
				for (size_t i = 0; i < (size_t)size * n * (mode == 3 ? 2 : 1); i++)
					s[i] = rank == root ? fill(n, (int)i) : -1;
				for (int i = 0; i < 2 * n; i++)
					ra[i] = rb[i] = -2;
				void *rbuf_a = mode == 1 && rank == root ? MPI_IN_PLACE : ra;
				void *rbuf_b = mode == 1 && rank == root ? MPI_IN_PLACE : rb;
				if (mode == 2) {
					MPI_Scatter(s, n, MPI_INT, ra, 1, strided, root, comm);
					PMPI_Scatter(s, n, MPI_INT, rb, 1, strided, root, comm);
				} else if (mode == 3) {   /* strided at the root */
					MPI_Scatter(s, 1, strided, ra, n, MPI_INT, root, comm);
					PMPI_Scatter(s, 1, strided, rb, n, MPI_INT, root, comm);
				} else {
					MPI_Scatter(s, n, MPI_INT, rbuf_a, n, MPI_INT, root, comm);
					PMPI_Scatter(s, n, MPI_INT, rbuf_b, n, MPI_INT, root, comm);
				}
				bad += memcmp(ra, rb, 2 * (size_t)n * sizeof(int)) != 0;
			}
	MPI_Type_free(&strided);
	free(s);
	free(ra);
	free(rb);
	return agree(bad, comm);
}

static int check_allreduce(MPI_Comm comm)
{
	int size, rank, bad = 0;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	int n = 20003;
	long *la = malloc((size_t)n * sizeof(long)), *lb = malloc((size_t)n * sizeof(long)), *ls = malloc((size_t)n * sizeof(long));
	double *da = malloc((size_t)n * sizeof(double)), *db = malloc((size_t)n * sizeof(double)), *ds = malloc((size_t)n * sizeof(double));
	for (int k = 0; k < NCOUNTS; k++) {
		int c = counts[k];
		for (int i = 0; i < c; i++) {
			ls[i] = fill(rank + c, i);
			ds[i] = 1.0 / (1 + (fill(rank, i) & 0xffff));
		}
		MPI_Allreduce(ls, la, c, MPI_INT, MPI_SUM, comm);  /* ints in the first half of the longs */
		PMPI_Allreduce(ls, lb, c, MPI_INT, MPI_SUM, comm);
		bad += memcmp(la, lb, (size_t)c * sizeof(int)) != 0;
		MPI_Allreduce(ls, la, c, MPI_LONG, MPI_MAX, comm);
		PMPI_Allreduce(ls, lb, c, MPI_LONG, MPI_MAX, comm);
		bad += memcmp(la, lb, (size_t)c * sizeof(long)) != 0;
		MPI_Allreduce(ls, la, c, MPI_UNSIGNED, MPI_BXOR, comm);
		PMPI_Allreduce(ls, lb, c, MPI_UNSIGNED, MPI_BXOR, comm);
		bad += memcmp(la, lb, (size_t)c * sizeof(unsigned)) != 0;
		memcpy(la, ls, (size_t)c * sizeof(long));
		memcpy(lb, ls, (size_t)c * sizeof(long));
		MPI_Allreduce(MPI_IN_PLACE, la, c, MPI_LONG, MPI_SUM, comm);
		PMPI_Allreduce(MPI_IN_PLACE, lb, c, MPI_LONG, MPI_SUM, comm);
		bad += memcmp(la, lb, (size_t)c * sizeof(long)) != 0;
		MPI_Allreduce(ds, da, c, MPI_DOUBLE, MPI_SUM, comm);
		PMPI_Allreduce(ds, db, c, MPI_DOUBLE, MPI_SUM, comm);
		/* reassociated unless TOPOCOLL_ALLREDUCE_FLOAT=0: last bits may
		 * differ (reduce_check.c checks them within rounding) */
		const char *fl = getenv("TOPOCOLL_ALLREDUCE_FLOAT");
		if (fl && !strcmp(fl, "0"))
			bad += memcmp(da, db, (size_t)c * sizeof(double)) != 0;
	}
	free(la);
	free(lb);
	free(ls);
	free(da);
	free(db);
	free(ds);
	return agree(bad, comm);
}

/* Alltoall: contiguous on both sides, and a strided (vector) receive type. */
static int check_alltoall(MPI_Comm comm)
{
	int size, rank, bad = 0;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	MPI_Datatype strided;
	MPI_Type_vector(1000, 1, 2, MPI_INT, &strided);
	MPI_Type_create_resized(strided, 0, 2000 * sizeof(int), &strided);
	MPI_Type_commit(&strided);
	size_t cap = (size_t)size * 20003;
	int *s = malloc(cap * sizeof(int)), *ra = malloc(2 * cap * sizeof(int)), *rb = malloc(2 * cap * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int mode = 0; mode < 2; mode++) {
			int n = counts[k];
			if (mode == 1 && n != 1000)
				continue;
			for (size_t i = 0; i < (size_t)size * n; i++)
				s[i] = fill(rank * 31 + n, (int)i);
			for (size_t i = 0; i < 2 * (size_t)size * n; i++)
				ra[i] = rb[i] = -3;
			if (mode == 1) {
				MPI_Alltoall(s, n, MPI_INT, ra, 1, strided, comm);
				PMPI_Alltoall(s, n, MPI_INT, rb, 1, strided, comm);
			} else {
				MPI_Alltoall(s, n, MPI_INT, ra, n, MPI_INT, comm);
				PMPI_Alltoall(s, n, MPI_INT, rb, n, MPI_INT, comm);
			}
			bad += memcmp(ra, rb, 2 * (size_t)size * n * sizeof(int)) != 0;
		}
	MPI_Type_free(&strided);
	free(s);
	free(ra);
	free(rb);
	return agree(bad, comm);
}

static void check_all(MPI_Comm comm, const char *what, int world_rank)
{
	int size, rank;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	int b = check_bcast(comm), g = check_gather(comm), s = check_scatter(comm), a = check_allreduce(comm);
	int x = check_alltoall(comm);
	/* one line per communicator, from its lowest world rank; singletons
	 * all alike: world rank 0 speaks for them */
	int first = world_rank, min;
	PMPI_Allreduce(&first, &min, 1, MPI_INT, MPI_MIN, comm);
	if (min != world_rank || (size == 1 && world_rank != 0))
		return;
	printf("%s - %s (%d ranks): bcast equal to the MPI's\n", b ? "not ok" : "ok", what, size);
	printf("%s - %s (%d ranks): gather equal to the MPI's\n", g ? "not ok" : "ok", what, size);
	printf("%s - %s (%d ranks): scatter equal to the MPI's\n", s ? "not ok" : "ok", what, size);
	printf("%s - %s (%d ranks): allreduce equal to the MPI's\n", a ? "not ok" : "ok", what, size);
	printf("%s - %s (%d ranks): alltoall equal to the MPI's\n", x ? "not ok" : "ok", what, size);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	check_all(MPI_COMM_WORLD, "world", rank);
	MPI_Comm c;
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	check_all(c, "dup", rank);
	MPI_Comm_free(&c);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
	check_all(c, rank % 2 ? "odd ranks" : "even ranks", rank);
	MPI_Comm_free(&c);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 3, rank, &c);
	check_all(c, "ranks mod 3", rank);
	MPI_Comm_free(&c);
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c);
	check_all(c, "reversed", rank);
	MPI_Comm_free(&c);
	MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &c);
	check_all(c, "singleton", rank);
	MPI_Comm_free(&c);
	MPI_Finalize();
	return 0;
}
