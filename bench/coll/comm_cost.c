/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_cost.c - what libtopocoll adds to a communicator whose collectives
 * stay the MPI's (t_coll runs it in SMPI, built with the coll sources and
 * -DTOPOCOLL_SMPI). Libraries make a communicator per plan (FFTW dups
 * MPI_COMM_WORLD for each); the library's setup on each must stay below
 * the cost of one MPI_Comm_split, or a short job runs measurably slower
 * with it.
 *
 *   comm_cost plain|lib|split K BYTES [dup|split]
 *
 * plain, lib: one Alltoall on MPI_COMM_WORLD (untimed: as an application
 * uses the world first), then K times: a communicator of the same ranks
 * (MPI_Comm_dup, or MPI_Comm_split with the last argument `split`), two
 * Alltoalls of BYTES per block on it (the MPI's own, or topocoll's entry
 * point), free it; every block checked. split: K times, MPI_Comm_split of
 * MPI_COMM_WORLD and free (what a private communicator costs). Rank 0
 * prints
 *   comm_cost MODE comms=K bytes=B us=T ok=0|1
 * T the simulated microseconds of the K rounds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int topocoll_MPI_Init(int *argc, char ***argv);
int topocoll_MPI_Finalize(void);
int topocoll_MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			  MPI_Comm comm);

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5)
		return 2;
	int by_split = argc == 5 && !strcmp(argv[4], "split");
	const char *mode = argv[1];
	int lib = !strcmp(mode, "lib"), split = !strcmp(mode, "split");
	int k = atoi(argv[2]), b = atoi(argv[3]), rank, size;
	if (lib)
		topocoll_MPI_Init(&argc, &argv);
	else
		MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	unsigned char *s = malloc((size_t)b * size), *r = malloc((size_t)b * size);
	int ok = s && r;
	for (int p = 0; ok && p < size; p++)
		memset(s + (size_t)p * b, (rank * 31 + p) & 0xff, (size_t)b);
	if (ok && !split)
		(lib ? topocoll_MPI_Alltoall : MPI_Alltoall)(s, b, MPI_BYTE, r, b, MPI_BYTE, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; ok && i < k; i++) {
		MPI_Comm c;
		if (split) {
			MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c);
			MPI_Comm_free(&c);
			continue;
		}
		if (by_split)
			MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c);
		else
			MPI_Comm_dup(MPI_COMM_WORLD, &c);
		for (int rep = 0; rep < 2; rep++) {
			memset(r, 0xee, (size_t)b * size);
			(lib ? topocoll_MPI_Alltoall : MPI_Alltoall)(s, b, MPI_BYTE, r, b, MPI_BYTE, c);
			for (int p = 0; p < size; p++)
				ok &= r[(size_t)p * b] == ((p * 31 + rank) & 0xff) &&
				      r[(size_t)p * b + b - 1] == ((p * 31 + rank) & 0xff);
		}
		MPI_Comm_free(&c);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double t = MPI_Wtime() - t0;
	int all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (rank == 0)
		printf("comm_cost %s comms=%d bytes=%d us=%.3f ok=%d\n", mode, k, b, t * 1e6, all);
	free(s);
	free(r);
	if (lib)
		topocoll_MPI_Finalize();
	else
		MPI_Finalize();
	return all ? 0 : 1;
}
