/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smpi_rand.c - rand() and srand() of one rank for applications simulated
 * in SMPI: each rank draws its own sequence, as it does in a real run.
 *
 * SMPI runs every rank in one process and privatises the program's own
 * globals (one copy of its image per rank), but libc is loaded once: its
 * rand() state is shared, so the ranks' draws interleave and no rank sees
 * the sequence its srand() asked for. FFTW 2's MPI test (mpi/fftw_mpi_test.c)
 * has every rank seed with the same value (rank 0's, broadcast) and then
 * flip coins for each transform (in-place pairwise exchanges or MPI_Alltoall
 * with a work array) and draw the input it checks against a serial
 * transform: with a shared state the ranks chose differently and SMPI
 * stopped on a deadlock. Linked into the SMPI builds only (the program's own
 * definitions come first for it, as smpi_time.c's time() does), these keep
 * the state in the program's image, where SMPI gives each rank its own, and
 * draw with glibc's own generator (random_r on a 128-byte state, what
 * rand() and srand() use): each rank gets the numbers it gets for real.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

static char state[128];
static struct random_data data;
static int ready;

void srand(unsigned int seed)
{
	if (!ready) {
		initstate_r(seed, state, sizeof state, &data);
		ready = 1;
	}
	srandom_r(seed, &data);
}

int rand(void)
{
	int32_t r;

	/* glibc: rand() before any srand() draws as after srand(1) */
	if (!ready)
		srand(1);
	random_r(&data, &r);
	return r;
}
