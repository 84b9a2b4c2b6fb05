#!/usr/bin/env bash
# bench/apps/build_fftw.sh TARBALL OUTDIR MPI...
# FFTW 2.1.5 (Debian's fftw .orig tarball, unmodified) with its MPI library,
# and the MPI test program that ships with it (mpi/fftw_mpi_test: 3-D FFTs
# distributed in slabs over all ranks by fftwnd_mpi, each checked against
# FFTW's serial transform), built for each MPI asked:
#   smpi   SimGrid's SMPI: OUTDIR/smpi/fftw_mpi_test, the plain program, and
#          OUTDIR/smpi/fftw_mpi_test-topocoll, the same objects bound to
#          libtopocoll (bench/apps/bind.sh)
#   ompi   Open MPI (mpicc): OUTDIR/ompi/fftw_mpi_test
#   mpich  MPICH (mpicc.mpich): OUTDIR/mpich/fftw_mpi_test
# One configure (FFTW's own: --enable-mpi, double precision only, no Fortran
# wrappers, static libraries) and one build of the serial library, which
# calls no MPI (built position-independent: smpicc links a program as a
# shared object that SMPI loads); then for each MPI FFTW's own mpi/ makefile
# again with that MPI's compiler (six files). The SMPI builds also link
# bench/apps/smpi_time.c (the test seeds its random inputs and coin flips
# with time()) and bench/apps/smpi_rand.c (one rand() state per rank, as
# each rank has for real). Nothing of FFTW is changed.
set -eu
tarball=$1 out=$2
shift 2
[ $# -gt 0 ] || { echo "build_fftw: which MPI (smpi, ompi, mpich)?" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bind.sh"
mpicc_of() {
	case $1 in
	smpi) echo smpicc ;;
	ompi) echo mpicc ;;
	mpich) echo mpicc.mpich ;;
	*) echo "build_fftw: MPI is smpi, ompi or mpich, not $1" >&2; return 2 ;;
	esac
}
for mpi in "$@"; do mpicc_of "$mpi" >/dev/null; done
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src
log=$out/build.log
jobs=${APPS_MAKE_JOBS:-2}
: >"$log"
fail() { tail -20 "$log" >&2; echo "build_fftw: $*" >&2; exit 1; }
if [ ! -s "$src/fftw/.libs/libfftw.a" ] || [ ! -s "$src/tests/test_main.o" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	tar xzf "$tarball" -C "$src" --strip-components=1
	(cd "$src" && ./configure --enable-mpi --disable-fortran CC=gcc CFLAGS="-O2 -fPIC" \
		MPICC="$(mpicc_of "$1")") >>"$log" 2>&1 || fail "configure failed"
	grep -q '^FFTW_MPI_LIBLIST *= *libfftw_mpi.la' "$src/mpi/Makefile" ||
		fail "configure found no usable MPI compiler ($(mpicc_of "$1"))"
	make -C "$src/fftw" -j"$jobs" >>"$log" 2>&1 || fail "the serial library did not build"
	make -C "$src/tests" test_main.o >>"$log" 2>&1 || fail "tests/test_main.o did not build"
fi
for mpi in "$@"; do
	cc=$(mpicc_of "$mpi")
	dir=$out/$mpi
	mkdir -p "$dir"
	make -C "$src/mpi" clean >>"$log" 2>&1
	make -C "$src/mpi" -j"$jobs" CC="$cc" MPICC="$cc" libfftw_mpi.la fftw_mpi_test.o >>"$log" 2>&1 ||
		fail "mpi/ did not build with $cc"
	cp "$src/mpi/.libs/libfftw_mpi.a" "$src/mpi/fftw_mpi_test.o" "$dir/"
	objs=("$dir/fftw_mpi_test.o" "$src/tests/test_main.o")
	libs=("$dir/libfftw_mpi.a" "$src/fftw/.libs/libfftw.a")
	extra=()
	if [ "$mpi" = smpi ]; then
		smpicc -std=c11 -O2 -Wall -Wextra -Werror -c -o "$dir/smpi_time.o" "$here/smpi_time.c"
		smpicc -std=c11 -O2 -Wall -Wextra -Werror -c -o "$dir/smpi_rand.o" "$here/smpi_rand.c"
		extra=("$dir/smpi_time.o" "$dir/smpi_rand.o")
	fi
	$cc -O2 -o "$dir/fftw_mpi_test" "${objs[@]}" "${libs[@]}" "${extra[@]}" -lm >>"$log" 2>&1 ||
		fail "fftw_mpi_test did not link with $cc"
	if [ "$mpi" = smpi ]; then
		mapfile -t coll < <(coll_smpi_objs "${APPS_COLL_DIR:-$dir/coll}")
		cp "$dir/fftw_mpi_test.o" "$dir/fftw_mpi_test-topocoll.o"
		cp "$dir/libfftw_mpi.a" "$dir/libfftw_mpi-topocoll.a"
		args=$(bind_args "${coll[@]}")
		bind_topocoll "$args" "$dir/fftw_mpi_test-topocoll.o" "$dir/libfftw_mpi-topocoll.a"
		echo "$args" >"$dir/bound.txt"
		smpicc -O2 -o "$dir/fftw_mpi_test-topocoll" "$dir/fftw_mpi_test-topocoll.o" "$src/tests/test_main.o" \
			"$dir/libfftw_mpi-topocoll.a" "$src/fftw/.libs/libfftw.a" "${coll[@]}" "${extra[@]}" -lm >>"$log" 2>&1 ||
			fail "fftw_mpi_test-topocoll did not link"
	fi
	echo "$dir/fftw_mpi_test"
done
