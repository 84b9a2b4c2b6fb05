/*
 * allgather_check.c - topocoll's MPI_Allgather and MPI_Allgatherv give
 * exactly the MPI's own results: every case runs through MPI_X (which a
 * preloaded libtopocoll.so takes) and through PMPI_X (the MPI itself) on
 * buffers filled alike, holes included, and the whole receive buffers are
 * compared byte for byte.
 *
 * Communicators: MPI_COMM_WORLD, a dup, even/odd ranks, ranks mod 3, ranks
 * in reverse order, singletons. Allgather: counts 0, 1, 7, 1000 and 20,003
 * ints; MPI_IN_PLACE; a strided send type against dense ints; a strided
 * receive type (blocks with holes); a resized type. Allgatherv: uneven
 * counts (zeros among them), displacements out of rank order with gaps,
 * in place, a strided receive type.
 *
 * Output: one "ok - " or "not ok - " line per communicator and case, from
 * rank 0 of MPI_COMM_WORLD (tests/integration/t_allgather.sh).
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

static int agree(int bad, MPI_Comm comm)
{
	int all = 0;
	PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, comm);
	return all;
}

/* Both receive buffers alike before the call: holes must stay as they were. */
static void prefill(int *a, int *b, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] = fill(-rank - 1, (int)i);
}

/* mode 0 ints, 1 in place, 2 strided send type, 3 strided receive type,
 * 4 resized type (an int every 3 ints' extent) on both sides, 5 n/2 pairs
 * of ints stored swapped (no holes, extent = size, yet not in memory
 * order) on both sides. */
static int allgather_case(MPI_Comm comm, int n, int mode, int *s, int *ra, int *rb, size_t room)
{
	int size, rank;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	MPI_Datatype vec, res, swp;
	int one[2] = { 1, 1 }, at[2] = { 1, 0 };
	MPI_Type_indexed(2, one, at, MPI_INT, &swp);
	MPI_Type_commit(&swp);
	MPI_Type_vector(n > 0 ? n : 1, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &res);
	MPI_Type_commit(&res);
	for (int i = 0; i < 3 * (n + 1); i++)
		s[i] = fill(rank * 11 + n, i);
	prefill(ra, rb, room, rank);
	int bad = 0;
	switch (mode) {
	case 0:
		MPI_Allgather(s, n, MPI_INT, ra, n, MPI_INT, comm);
		PMPI_Allgather(s, n, MPI_INT, rb, n, MPI_INT, comm);
		break;
	case 1:
		for (int i = 0; i < n; i++)
			ra[(size_t)rank * n + i] = rb[(size_t)rank * n + i] = s[i];
		MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ra, n, MPI_INT, comm);
		PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, n, MPI_INT, comm);
		break;
	case 2:
		MPI_Allgather(s, n ? 1 : 0, vec, ra, n, MPI_INT, comm);
		PMPI_Allgather(s, n ? 1 : 0, vec, rb, n, MPI_INT, comm);
		break;
	case 3:
		MPI_Allgather(s, n, MPI_INT, ra, n ? 1 : 0, vec, comm);
		PMPI_Allgather(s, n, MPI_INT, rb, n ? 1 : 0, vec, comm);
		break;
	case 4:
		MPI_Allgather(s, n, res, ra, n, res, comm);
		PMPI_Allgather(s, n, res, rb, n, res, comm);
		break;
	default:
		MPI_Allgather(s, n / 2, swp, ra, n / 2, swp, comm);
		PMPI_Allgather(s, n / 2, swp, rb, n / 2, swp, comm);
		break;
	}
	bad = memcmp(ra, rb, room * sizeof(int)) != 0;
	MPI_Type_free(&vec);
	MPI_Type_free(&res);
	MPI_Type_free(&swp);
	return bad;
}

static int check_allgather(MPI_Comm comm)
{
	int size, bad = 0;
	MPI_Comm_size(comm, &size);
	size_t room = (size_t)size * 3 * 20004;
	int *s = malloc(3 * 20004 * sizeof(int)), *ra = malloc(room * sizeof(int)), *rb = malloc(room * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int mode = 0; mode < 6; mode++) {
			int n = counts[k];
			/* a strided block of n ints spans 2n ints, a resized one 3n */
			size_t used = (size_t)size * (mode == 4 ? 3 * (size_t)n : mode == 3 ? 2 * (size_t)n : (size_t)n) + 1;
			bad += allgather_case(comm, n, mode, s, ra, rb, used < room ? used : room);
		}
	free(s);
	free(ra);
	free(rb);
	return agree(bad, comm);
}

/* Rank r sends (r * 5 + n) % 13 blocks (some none) of n / 13 + 1 ints,
 * placed in reverse rank order with a gap of 3 elements between. */
static int allgatherv_case(MPI_Comm comm, int n, int mode, int *s, int *ra, int *rb, int *rc, int *dp)
{
	int size, rank;
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	int unit = n / 13 + 1, at = 0;
	for (int r = size - 1; r >= 0; r--) {
		rc[r] = ((r * 5 + n) % 13) * unit * (n > 0);
		dp[r] = at;
		at += rc[r] + 3;
	}
	size_t room = (size_t)(mode == 2 ? 2 : 1) * at + 2;
	MPI_Datatype one, vec;
	MPI_Type_vector(1, 1, 2, MPI_INT, &one);
	MPI_Type_create_resized(one, 0, 2 * sizeof(int), &vec);
	MPI_Type_free(&one);
	MPI_Type_commit(&vec);
	for (int i = 0; i < rc[rank]; i++)
		s[i] = fill(rank * 13 + n, i);
	prefill(ra, rb, room, rank);
	switch (mode) {
	case 0:
		MPI_Allgatherv(s, rc[rank], MPI_INT, ra, rc, dp, MPI_INT, comm);
		PMPI_Allgatherv(s, rc[rank], MPI_INT, rb, rc, dp, MPI_INT, comm);
		break;
	case 1:
		for (int i = 0; i < rc[rank]; i++)
			ra[dp[rank] + i] = rb[dp[rank] + i] = s[i];
		MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ra, rc, dp, MPI_INT, comm);
		PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, rc, dp, MPI_INT, comm);
		break;
	default:
		MPI_Allgatherv(s, rc[rank], MPI_INT, ra, rc, dp, vec, comm);
		PMPI_Allgatherv(s, rc[rank], MPI_INT, rb, rc, dp, vec, comm);
		break;
	}
	MPI_Type_free(&vec);
	return memcmp(ra, rb, room * sizeof(int)) != 0;
}

static int check_allgatherv(MPI_Comm comm)
{
	int size, bad = 0;
	MPI_Comm_size(comm, &size);
	size_t room = (size_t)size * 2 * (20003 + 3) + 4;
	int *s = malloc(20004 * sizeof(int)), *ra = malloc(room * sizeof(int)), *rb = malloc(room * sizeof(int));
	int *rc = malloc((size_t)size * sizeof(int)), *dp = malloc((size_t)size * sizeof(int));
	for (int k = 0; k < NCOUNTS; k++)
		for (int mode = 0; mode < 3; mode++)
			bad += allgatherv_case(comm, counts[k], mode, s, ra, rb, rc, dp);
	free(s);
	free(ra);
	free(rb);
	free(rc);
	free(dp);
	return agree(bad, comm);
}

/* Every part of a split runs; MPI_COMM_WORLD's rank 0 reports them all. */
static void report(const char *name, MPI_Comm comm, int wrank)
{
	int bad1 = agree(check_allgather(comm), MPI_COMM_WORLD), bad2 = agree(check_allgatherv(comm), MPI_COMM_WORLD);
	int size;
	MPI_Comm_size(comm, &size);
	if (wrank == 0) {
		printf("%s - %s (%d ranks): allgather equal\n", bad1 ? "not ok" : "ok", name, size);
		printf("%s - %s (%d ranks): allgatherv equal\n", bad2 ? "not ok" : "ok", name, size);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm dup, half, mod3, rev, self;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 3, rank, &mod3);
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
	MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &self);
	report("world", MPI_COMM_WORLD, rank);
	report("dup", dup, rank);
	report("even/odd", half, rank);
	report("mod 3", mod3, rank);
	report("reversed", rev, rank);
	report("singleton", self, rank);
	/* the same call again: the cached choice and communicator state */
	report("world again", MPI_COMM_WORLD, rank);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&half);
	MPI_Comm_free(&mod3);
	MPI_Comm_free(&rev);
	MPI_Comm_free(&self);
	MPI_Finalize();
	return 0;
}
