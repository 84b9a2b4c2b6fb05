/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmpi_stub.h - a fake MPI job of N ranks for measuring the profiler's own
 * code without running N processes.
 *
 * pmpi_stub.c defines the few PMPI calls profiler/count.c makes (they take
 * precedence over libmpi's when linked into the program): MPI_COMM_WORLD and
 * PMPI_STUB_NCOMM fake communicators all have N ranks, and a group
 * translation reverses ranks (as tests/mpi/prof_stencil.c does), so a
 * translation cache that returned the identity would be caught. The stub
 * knows nothing of the profiler: bench/prof_mem.c drives both, and the
 * dependency runs one way (benchmark -> profiler -> stub).
 */
#ifndef PMPI_STUB_H
#define PMPI_STUB_H

#include <mpi.h>

#define PMPI_STUB_NCOMM 64

/* Sets the size of every communicator (call before prof_init()). */
void pmpi_stub_set_size(int n);
/* Fake communicator i (0 <= i < PMPI_STUB_NCOMM) with an attribute slot. */
MPI_Comm pmpi_stub_comm(int i);

#endif
