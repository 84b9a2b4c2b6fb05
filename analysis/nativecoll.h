/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nativecoll.h - the MPIs' own Bcast, Gather, Scatter, Allreduce, Reduce
 * and Allgather as the cost model times them: which algorithm each SMPI
 * selector runs for a communicator, message and operation, and that
 * algorithm's sends, receives and waits rank by rank (mprog.h), as its
 * code makes them (docs/cost-model.md "Every collective").
 *
 * Read off SimGrid 3.32's sources (src/smpi/colls): the Open MPI selector
 * (smpi_openmpi_selector.cpp, Open MPI 4.1's coll/tuned fixed decision)
 * and the MPICH selector (smpi_mpich_selector.cpp), with the algorithms
 * they call: binomial, k-nomial, chain and binary-tree pipelines, scatter
 * then recursive-doubling or ring allgather, SMPI's SMP-aware binomial
 * (MPICH, when every host holds as many of the communicator's ranks);
 * binomial, linear and linear-sync gathers, binomial, linear and
 * non-blocking linear scatters; recursive doubling, Rabenseifner, the
 * ring, reduce + bcast and MVAPICH2's two-level Allreduce (MPICH's, on
 * commutative operations: every host's ranks, then the hosts' leaders by
 * recursive doubling); Open MPI's segmented tree reduces; Bruck,
 * recursive doubling, SMPI's "ring" (a direct shift), neighbour exchange
 * and pairwise allgathers. An algorithm that calls the selected
 * collective again (a remainder, reduce + bcast) calls the model again.
 *
 * NATIVE_OMPI and NATIVE_MPICH (the real MPIs) take the SMPI selectors'
 * programs, MPICH's without SMPI's SMP-aware variants: not checked against
 * runs.
 *
 * A communicator is its ranks' program ranks m[k] (mprog's) and each one's
 * host (hosts[k], any ids: MPICH's selector groups ranks by host as
 * SMPI's init_smp does). Counts are elements of tsize bytes (the type's
 * extent taken as its size). Every function appends the collective's
 * operations to p and returns AN_OK, AN_E_NOTAPPLIC for an algorithm not
 * modelled here (Open MPI's split binary tree Bcast from 256 ranks, the
 * segmented ring Allreduce beyond a megabyte per rank: err says which) or
 * AN_E_NOMEM.
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_NATIVECOLL_H
#define AN_NATIVECOLL_H

#include <stdint.h>

#include "an_err.h"
#include "mprog.h"
#include "native.h"

struct nc_comm {
	uint32_t k;
	const uint32_t *m;       /* [k] program rank of communicator rank i */
	const uint32_t *host;    /* [k] its host */
};

int nc_bcast(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	     uint32_t tsize, char err[AN_ERR_LEN]);
/* count: each rank's block */
int nc_gather(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	      uint32_t tsize, char err[AN_ERR_LEN]);
int nc_scatter(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	       uint32_t tsize, char err[AN_ERR_LEN]);
int nc_allreduce(enum native_model md, struct mprog *p, const struct nc_comm *c, uint64_t count, uint32_t tsize,
		 int commutative, char err[AN_ERR_LEN]);
int nc_reduce(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	      uint32_t tsize, int commutative, char err[AN_ERR_LEN]);
int nc_allgather(enum native_model md, struct mprog *p, const struct nc_comm *c, uint64_t count, uint32_t tsize,
		 char err[AN_ERR_LEN]);

#endif
