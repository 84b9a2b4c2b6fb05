/*
 * abi.c - a PMPI library is bound to the ABI of the MPI it was compiled
 * with: Open MPI's MPI_COMM_WORLD is the address of a structure, MPICH's
 * the integer 0x44000000. Preloaded into a program of the other MPI, every
 * wrapper hands the program's handles to the wrong library, and the job
 * dies in its first MPI call with "Invalid communicator" (MPICH) or a
 * segmentation fault (Open MPI), on every rank, with no hint why.
 *
 * So, before main: if the process holds the other implementation's
 * library, say which build to preload instead and stop, once per rank.
 */
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(OPEN_MPI)
#define PROF_BUILT_FOR "Open MPI"
#define PROF_FOREIGN "libmpich.so"
#define PROF_FOREIGN_NAME "MPICH"
#define PROF_OTHER_DIR "mpich"
#elif defined(MPICH)
#define PROF_BUILT_FOR "MPICH"
#define PROF_FOREIGN "libmpi.so.40"
#define PROF_FOREIGN_NAME "Open MPI"
#define PROF_OTHER_DIR "openmpi"
#else
#error "libtopoprof is built for Open MPI or MPICH"
#endif

static int foreign_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	return strncmp(base, PROF_FOREIGN, strlen(PROF_FOREIGN)) == 0;
}

__attribute__((constructor)) static void prof_check_abi(void)
{
	if (!dl_iterate_phdr(foreign_lib, NULL))
		return;
	static const char msg[] =
		"topoprof: this libtopoprof.so is built for " PROF_BUILT_FOR ", but the program runs " PROF_FOREIGN_NAME
		"; preload the " PROF_FOREIGN_NAME " build instead (LIBDIR/" PROF_OTHER_DIR "/libtopoprof.so, "
		"docs/profiler.md)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(1);
}
