#!/usr/bin/env bash
# bench/apps/build_hpcc.sh MPI TARBALL OUTDIR
# HPC Challenge 1.5.0 (Debian's hpcc .orig tarball, unmodified) built for
#   smpi   SimGrid's SMPI (smpicc): OUTDIR/hpcc, the plain application, and
#          OUTDIR/hpcc-topocoll, the same objects bound to libtopocoll
#          (bench/apps/bind.sh)
#   ompi   Open MPI (mpicc): OUTDIR/hpcc, run with LD_PRELOAD=libtopocoll.so
#   mpich  MPICH (mpicc.mpich): OUTDIR/hpcc, with mpich/libtopocoll.so
# HPL's Make.<arch> (HPCC's build configuration, which every site writes) is
# the only file added: reference BLAS (libblas-dev), no FFTW (HPCC's own
# FFTE), and -DRA_SANDIA_OPT2 (HPCC's README: Sandia's RandomAccess, bulk
# exchanges over a hypercube; the standard one sends short messages by the
# million, which SMPI simulates one by one: still running after ten minutes
# at 16 ranks). All of HPCC is archived into libhpl.a, and smpicc links a
# program as a shared object that SMPI loads, so the archive is linked
# whole (a plain link would pull nothing: nobody refers to main). The SMPI
# builds also link bench/apps/smpi_time.c (a fixed time(): PTRANS's grid map
# is seeded by the clock).
#
# Incremental: HPCC is compiled once per OUTDIR and kept while OUTDIR/stamp
# names the same tarball and the same version of this script (what makes
# HPCC's objects); only the binding to libtopocoll is redone, and only when
# one of the library's SMPI objects changed (bench/apps/bind.sh). So a
# second run of the benchmark or of its test builds nothing: the library
# under test is always the current one (the real MPIs' builds take it by
# LD_PRELOAD at run time). APPS_REBUILD=1 compiles HPCC again.
set -eu
mpi=$1 tarball=$2 out=$3
. "$(dirname "$0")/bind.sh"
defs=""
case $mpi in
smpi) cc=smpicc ;;
# HPL calls MPI_Address and MPI_Type_struct, which MPI-3.0 removed: Open MPI
# 4.1 still exports them but hides their declarations unless asked.
ompi) cc=mpicc defs=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0 ;;
mpich) cc=mpicc.mpich ;;
*) echo "build_hpcc: MPI is smpi, ompi or mpich" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src
lib=$src/hpl/lib/$mpi/libhpl.a
here=$(cd "$(dirname "$0")" && pwd)

# compile_hpcc: HPCC from the tarball into $src, linked as $out/hpcc
compile_hpcc() {
	rm -rf "$src"
	mkdir -p "$src"
	tar xzf "$tarball" -C "$src" --strip-components=1
	cat >"$src/hpl/Make.$mpi" <<MAKE
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir -p
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = \$(arch)
TOPdir       = ../../..
INCdir       = \$(TOPdir)/include
BINdir       = \$(TOPdir)/bin/\$(ARCH)
LIBdir       = \$(TOPdir)/lib/\$(ARCH)
HPLlib       = \$(LIBdir)/libhpl.a
LAlib        = -lblas
F2CDEFS      = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS     = \$(HPLlib) \$(LAlib) -lm
HPL_DEFS     = \$(F2CDEFS) \$(HPL_INCLUDES)
CC           = $cc
CCNOOPT      = \$(HPL_DEFS)
CCFLAGS      = \$(HPL_DEFS) $defs -DRA_SANDIA_OPT2 -O2 -w
LINKER       = $cc
LINKFLAGS    = \$(CCFLAGS)
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = ranlib
MAKE
	# HPCC's makefile ends with a link of the archive alone; we link ourselves.
	make -C "$src" -j"${APPS_MAKE_JOBS:-2}" arch="$mpi" >"$out/build.log" 2>&1 ||
		{ tail -20 "$out/build.log" >&2; return 1; }
	[ -s "$lib" ] || { echo "build_hpcc: $lib not built" >&2; return 1; }
	local extra=()
	if [ "$mpi" = smpi ]; then
		smpicc -std=c11 -O2 -Wall -Wextra -Werror -c -o "$out/smpi_time.o" "$here/smpi_time.c"
		extra=("$out/smpi_time.o")
	fi
	$cc -O2 -o "$out/hpcc" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive "${extra[@]}" -lblas -lm
}

# what HPCC's objects are made of: the tarball, this script, smpi_time.c
stamp="$(cat "$tarball" "$0" "$here/smpi_time.c" | sha256sum | cut -c1-64) $mpi"
if [ "${APPS_REBUILD:-0}" != 1 ] && [ -s "$lib" ] && [ -x "$out/hpcc" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "build_hpcc: $mpi: HPCC kept ($out/stamp)" >&2
else
	rm -f "$out/stamp" "$out/hpcc" "$out/hpcc-topocoll"
	compile_hpcc
	echo "$stamp" >"$out/stamp"
fi
if [ "$mpi" = smpi ]; then
	mapfile -t objs < <(coll_smpi_objs "${APPS_COLL_DIR:-$out/coll}")
	ncoll=$(find "$APPS_ROOT/coll" -maxdepth 1 -name '*.c' | wc -l)
	[ "${#objs[@]}" -eq "$ncoll" ] || { echo "build_hpcc: libtopocoll did not build for SMPI" >&2; exit 1; }
	# bound again only when the library (or HPCC) changed
	if [ ! -x "$out/hpcc-topocoll" ] || [ -n "$(find "$lib" "${objs[@]}" -newer "$out/hpcc-topocoll")" ]; then
		rm -f "$out/hpcc-topocoll"
		cp "$lib" "$out/libhpl-topocoll.a"
		args=$(bind_args "${objs[@]}")
		bind_topocoll "$args" "$out/libhpl-topocoll.a"
		echo "$args" >"$out/bound.txt"
		smpicc -O2 -o "$out/hpcc-topocoll.tmp" -Wl,--whole-archive "$out/libhpl-topocoll.a" -Wl,--no-whole-archive \
			"${objs[@]}" "$out/smpi_time.o" -lblas -lm
		mv "$out/hpcc-topocoll.tmp" "$out/hpcc-topocoll"
	fi
fi
echo "$out/hpcc"
