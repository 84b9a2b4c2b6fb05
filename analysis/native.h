/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * native.h - the MPIs' own MPI_Alltoall, as the cost model times it: which
 * algorithm each MPI's selector runs for a communicator size and block, and
 * that algorithm's messages step by step (docs/cost-model.md "Every message
 * size").
 *
 * A prediction that advises a job states its baseline; for an all-to-all
 * the baseline is what the job gets without us, the MPI's own Alltoall, not
 * a stand-in. The selectors are read off the sources:
 *
 *   smpi-ompi   SimGrid SMPI 3.32's Open MPI selector (alltoall__ompi), a
 *               port of Open MPI 4.1's coll/tuned fixed decision: by
 *               communicator size and block, linear (every Irecv and Isend
 *               posted at once), pairwise, modified Bruck, linear_sync and
 *               two_proc; SMPI runs linear_sync and two_proc as linear and
 *               pairwise as `pair` (step i: r <-> r XOR i, P a power of two).
 *   smpi-mpich  SMPI 3.32's MPICH selector (alltoall__mpich): Bruck below
 *               256 bytes on 8 ranks or more, below 32 KiB the scattered
 *               exchange with 4 pairs in flight (mvapich2_scatter_dest),
 *               else pair on an odd size and the ring (step i: r -> r + i,
 *               r <- r - i) on an even one.
 *   ompi        Open MPI 4.1 itself: the same table, linear_sync and
 *               two_proc as linear (their request limit is 0, unlimited, by
 *               default), pairwise as Open MPI's (step i: r -> r + i).
 *   mpich       MPICH 4.0 itself: Bruck up to 256 bytes on 8 ranks or
 *               more, the scattered exchange with 32 pairs in flight
 *               (MPIR_CVAR_ALLTOALL_THROTTLE) up to 32 KiB, else pairwise
 *               (XOR on a power of two, else r -> r + i).
 *
 * Only the SMPI selectors are checked against runs here (SMPI has the
 * sources above built in); the real MPIs' rows are their sources' rules,
 * not measured on hardware.
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_NATIVE_H
#define AN_NATIVE_H

#include <stdint.h>

#include "an_err.h"

enum native_model { NATIVE_SMPI_OMPI, NATIVE_SMPI_MPICH, NATIVE_OMPI, NATIVE_MPICH, NATIVE_NMODELS };

enum native_algo {
	NATIVE_LINEAR,   /* one step: every pair at once */
	NATIVE_PAIR,     /* P-1 steps r <-> r XOR i (P a power of two) */
	NATIVE_SHIFT,    /* P-1 steps r -> r + i, r <- r - i */
	NATIVE_BRUCK,    /* ceil(log2 P) steps r -> r + 2^k carrying the blocks whose index has bit k */
	NATIVE_SCATTER,  /* batches of `throttle` pairs: r <- r + j, r -> r - j for j in the batch */
	NATIVE_NALGOS
};

const char *native_model_name(enum native_model m);
int native_model_parse(const char *s, enum native_model *m); /* AN_OK or AN_E_INVAL */
const char *native_algo_name(enum native_algo a);

struct native_choice {
	enum native_algo algo;
	uint32_t throttle;     /* NATIVE_SCATTER: pairs in flight */
};

/* What model m's MPI_Alltoall runs on nranks ranks with blocks of `block`
 * bytes. */
void native_alltoall(enum native_model m, uint32_t nranks, uint64_t block, struct native_choice *out);

/* An algorithm's messages as the MPI posts them: steps of flows src -> dst
 * carrying mult blocks each, a rank's flows of one step posted together and
 * waited for together (MPI_Sendrecv, or Irecv/Isend and Waitall). Copies a
 * rank makes of its own blocks cost nothing (SMPI's Sendrecv to itself is
 * a copy) and are not listed; a message a rank posts to itself through the
 * network is (the scattered exchange's first batch). */
struct native_sched {
	uint32_t nranks, nsteps;
	uint32_t *step_off;    /* [nsteps + 1] */
	uint32_t *src, *dst, *mult;
};

int native_build(const struct native_choice *c, uint32_t nranks, struct native_sched **out, char err[AN_ERR_LEN]);
void native_free(struct native_sched *s);   /* NULL is a no-op */

#endif
