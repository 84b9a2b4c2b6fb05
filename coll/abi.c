/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.c - libtopocoll refuses a program of the other MPI, before main
 * (common/mpiabi.h says why and how; docs/collectives.md). Not under SMPI,
 * whose MPI is the simulator's, nor behind the profiler in
 * libtopocollprof.so, whose profiler/abi.c already checks.
 */
#if !defined(TOPOCOLL_SMPI) && !defined(TOPOCOLL_BEHIND_PROF)
#include "mpiabi.h"

__attribute__((constructor)) static void tc_check_abi(void)
{
	mpiabi_refuse_foreign("topocoll", "docs/collectives.md");
}
#else
typedef int tc_abi_not_checked; /* ISO C: a translation unit is not empty */
#endif
