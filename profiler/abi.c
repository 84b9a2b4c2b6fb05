/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.c - the profiler refuses a program of the other MPI, before main
 * (common/mpiabi.h says why and how).
 */
#include "mpiabi.h"

__attribute__((constructor)) static void prof_check_abi(void)
{
	mpiabi_refuse_foreign("topoprof", "docs/profiler.md");
}
