/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpiabi.h - a PMPI library refuses a program of the other MPI: the one
 * check of every PMPI layer (the profiler, libtopocoll, both in one).
 *
 * A PMPI library is bound to the ABI of the MPI it was compiled with: Open
 * MPI's MPI_COMM_WORLD is the address of a structure, MPICH's the integer
 * 0x44000000. Preloaded into a program of the other MPI, every wrapper
 * hands the program's handles to the wrong library, and the job dies in
 * its first MPI call ("Invalid communicator", MPI_ERR_ARG in
 * MPI_Comm_create_keyval, a segmentation fault) with no hint why. Nor can
 * the library step aside: its MPI_* already stand in front of the MPI's,
 * with the other ABI's argument types.
 *
 * So, from a constructor (before main, before MPI_Init): if the process
 * holds the other implementation's library, one line on stderr (rank 0 of
 * the job only, as far as the launcher's environment tells ranks apart)
 * naming the build to preload instead, then _exit(1) on every rank.
 *
 * Header-only (static inline), like mpihost.h: each PMPI library is one
 * self-contained shared object built per MPI implementation.
 */
#ifndef TOPO_MPIABI_H
#define TOPO_MPIABI_H

#ifndef _GNU_SOURCE
#error "mpiabi.h needs -D_GNU_SOURCE (dladdr, dl_iterate_phdr)"
#endif
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(OPEN_MPI)
#define MPIABI_BUILT_FOR "Open MPI"
#define MPIABI_FOREIGN "libmpich.so"
#define MPIABI_FOREIGN_NAME "MPICH"
#elif defined(MPICH)
#define MPIABI_BUILT_FOR "MPICH"
#define MPIABI_FOREIGN "libmpi.so.40"
#define MPIABI_FOREIGN_NAME "Open MPI"
#else
#error "a PMPI library of topod is built for Open MPI or MPICH"
#endif

/* an address inside the library that includes this header, for dladdr */
static const char mpiabi__here = 0;

static inline int mpiabi__foreign(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	return strncmp(base, MPIABI_FOREIGN, strlen(MPIABI_FOREIGN)) == 0;
}

/* The launcher's rank of this process: 0 where none says otherwise. */
static inline int mpiabi__rank0(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return strcmp(v, "0") == 0;
	}
	return 1;
}

/* other[n]: the other build's file beside `self` (make install and the
 * build tree lay them out alike: DIR/libX.so and DIR/openmpi/libX.so for
 * Open MPI, DIR/mpich/libX.so for MPICH), if it is there. */
static inline int mpiabi__other(const char *self, char *other, size_t n)
{
	const char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	int dirlen = (int)(slash - self), d = dirlen;
	while (d > 0 && self[d - 1] != '/')
		d--;
	/* in DIR/mpich/ or DIR/openmpi/: the builds' common DIR is one up */
	if (d > 0 && (!strncmp(self + d, "mpich/", 6) || !strncmp(self + d, "openmpi/", 8)))
		dirlen = d - 1;
#if defined(OPEN_MPI)
	int w = snprintf(other, n, "%.*s/mpich/%s", dirlen, self, slash + 1);
#else
	int w = snprintf(other, n, "%.*s/%s", dirlen, self, slash + 1);
#endif
	return w > 0 && (size_t)w < n && access(other, R_OK) == 0 ? 0 : -1;
}

/* Call from the library's constructor; `tool` names it in the message. */
static inline void mpiabi_refuse_foreign(const char *tool, const char *doc)
{
	if (!dl_iterate_phdr(mpiabi__foreign, NULL))
		return;
	if (mpiabi__rank0()) {
		Dl_info me;
		char other[4096] = "";
		const char *self = dladdr(&mpiabi__here, &me) && me.dli_fname ? me.dli_fname : "this library";
		if (mpiabi__other(self, other, sizeof(other)))
			snprintf(other, sizeof(other), "its %s build", MPIABI_FOREIGN_NAME);
		/* one write: under mpirun a line written in pieces interleaves */
		char line[8192];
		int w = snprintf(line, sizeof(line),
				 "%s: %s is built for %s, but the program runs %s; preload the %s build instead: %s (%s)\n",
				 tool, self, MPIABI_BUILT_FOR, MPIABI_FOREIGN_NAME, MPIABI_FOREIGN_NAME, other, doc);
		if (w > 0) {
			ssize_t r = write(2, line, (size_t)w < sizeof(line) ? (size_t)w : sizeof(line) - 1);
			(void)r;
		}
	}
	_exit(1);
}

#endif
