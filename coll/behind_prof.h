/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * behind_prof.h - forced into the profiler's wrappers (gcc -include) when
 * the profiler and topocoll are built as one library, libtopocollprof.so.
 *
 * Two PMPI libraries preloaded together do not stack: each wrapper calls
 * PMPI_X, which is the MPI's, so whichever library comes first takes
 * MPI_Init and the collectives and the other never runs (not even its
 * MPI_Init). In the one library the profiler's wrappers come first and
 * count the program's calls as they are asked for; their calls to the MPI
 * go to topocoll's entry points instead (topocoll_MPI_X, coll.h's
 * TC_ENTRY under TOPOCOLL_BEHIND_PROF), which run topocoll's algorithm or
 * the MPI's own. topocoll's own messages go to the MPI directly, so the
 * profiler counts a collective's logical traffic once, as it does for the
 * MPI's own algorithms.
 */
#ifndef TOPOCOLL_BEHIND_PROF_H
#define TOPOCOLL_BEHIND_PROF_H
#define PMPI_Init topocoll_MPI_Init
#define PMPI_Init_thread topocoll_MPI_Init_thread
#define PMPI_Finalize topocoll_MPI_Finalize
#define PMPI_Bcast topocoll_MPI_Bcast
#define PMPI_Gather topocoll_MPI_Gather
#define PMPI_Scatter topocoll_MPI_Scatter
#define PMPI_Allreduce topocoll_MPI_Allreduce
#define PMPI_Alltoall topocoll_MPI_Alltoall
#define PMPI_Allgather topocoll_MPI_Allgather
#define PMPI_Allgatherv topocoll_MPI_Allgatherv
#endif
