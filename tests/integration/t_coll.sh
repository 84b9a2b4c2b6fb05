#!/usr/bin/env bash
# t_coll.sh - topocoll (libtopocoll.so, preloaded into an unmodified MPI
# program) gives exactly the MPI's own results, under Open MPI and MPICH:
#   a real topod serving the k=24 fat tree (3,456 hosts, 12 per leaf);
#   tests/mpi/coll_check.c runs every case through MPI_X (taken by the
#   library) and PMPI_X (the MPI itself) and compares byte for byte, on
#   MPI_COMM_WORLD, a dup, even/odd, mod 3, reversed and singleton
#   communicators.
# Shapes: 12 ranks on 3 leaves (2 hosts per leaf, 2 ranks per host), 7
# ranks (a prime) on uneven leaves, 16 ranks on 5 leaves one of which holds
# a single rank. Checked besides equality:
#   - the hierarchical algorithms really ran (TOPOCOLL_STATS counts);
#   - double sums stay the MPI's unless TOPOCOLL_ALLREDUCE_FLOAT=1;
#   - TOPOCOLL_DISABLE and TOPOCOLL=off leave those calls to the MPI;
#   - topod down, and a host topod does not know: every call the MPI's,
#     results equal, and TOPOCOLL_VERBOSE says why;
#   - the wrong build preloaded (MPICH's under Open MPI) is refused;
#   - the same program without the library (the baseline is sane);
#   - the library under AddressSanitizer and UBSan (Open MPI).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for f in build/bin/topod build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/asan/libtopocoll.so \
	build/tests/mpi/coll_check build/tests/mpich/coll_check build/bench/bench_build; do
	[ -e "$f" ] || { nok "$f built (make all tests)"; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d "${TMPDIR:-/tmp}/t_coll.XXXXXX") || exit 1
TOPOD_PID= MPI_PID=
cleanup() {
	local p
	for p in $MPI_PID $TOPOD_PID; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

build/bench/bench_build 24 1024 "$d/k24.snap" >/dev/null 2>&1 || { nok "the k=24 snapshot"; exit 1; }
build/bin/topod -f -l 127.0.0.1:0 --load "$d/k24.snap" >"$d/topod.out" 2>"$d/topod.log" &
TOPOD_PID=$!
for _ in $(seq 600); do grep -q '^ready port=' "$d/topod.out" && break; sleep 0.1; done
PORT=$(sed -n 's/^ready port=//p' "$d/topod.out")
[ -n "$PORT" ] || { nok "topod started"; exit 1; }
export TII_SERVERS=127.0.0.1:$PORT
build/bin/topoquery -s "127.0.0.1:$PORT" hosts | awk '{print $1}' >"$d/hosts"
[ "$(wc -l <"$d/hosts")" -eq 3456 ] || { nok "topod serves the k=24 hosts"; exit 1; }
# host h of leaf l (12 hosts per leaf, in topod's order: hosts sorted by name = by leaf)
H() { sed -n "$(($1 * 12 + $2 + 1))p" "$d/hosts"; }
{ for l in 0 1 2; do for h in 0 1; do H $l $h; H $l $h; done; done; } >"$d/12.map"
{ H 0 0; H 0 1; H 0 1; H 1 0; H 5 3; H 5 3; H 5 4; } >"$d/7.map"
{ for r in $(seq 0 15); do case $r in 0) H 9 0 ;; *) H $((r % 4)) $((r % 3)) ;; esac; done; } >"$d/16.map"

# run TAG MPI NP MAP [ENV=VAL ...]: coll_check under one MPI with the library
run() {
	local tag=$1 mpi=$2 np=$3 map=$4 rc=0 e args=()
	shift 4
	if [ "$mpi" = mpich ]; then
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do
			args+=(-genv "${e%%=*}" "${e#*=}")
		done
		timeout 300 mpiexec.mpich -launcher fork -n "$np" "${args[@]}" build/tests/mpich/coll_check \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	else
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do args+=(-x "$e"); done
		timeout 300 mpirun --oversubscribe -np "$np" "${args[@]}" build/tests/mpi/coll_check \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	fi
	MPI_PID=$!
	wait "$MPI_PID" || rc=$?
	MPI_PID=
	local good bad
	good=$(grep -c '^ok - ' "$d/$tag.out")
	bad=$(grep -c '^not ok - ' "$d/$tag.out")
	if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -ge 24 ]; then
		ok "$tag: $good cases equal to the MPI's own results"
	else
		nok "$tag: exit $rc, $good equal, $bad different"
		grep '^not ok' "$d/$tag.out" | head -5 | sed 's/^/# /'
		tail -5 "$d/$tag.err" | sed 's/^/# /'
		return 1
	fi
}
# stat TAG OP: "H N" hierarchical and native calls of rank 0 on MPI_COMM_WORLD
stat() { sed -n "s/.* $2 \([0-9]*\) hierarchical \([0-9]*\) native.*/\1 \2/p" "$d/$1.err"; }

LIB=$ROOT/build/lib/libtopocoll.so
MLIB=$ROOT/build/lib/mpich/libtopocoll.so
for np in 12 7 16; do
	if run "ompi-$np" ompi "$np" "$d/$np.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0; then
		read -r h n < <(stat "ompi-$np" bcast)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: bcast ran hierarchical ($h calls)" || nok "ompi-$np: bcast hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" gather)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: gather ran hierarchical ($h calls)" || nok "ompi-$np: gather hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" scatter)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: scatter ran hierarchical ($h calls)" || nok "ompi-$np: scatter hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" allreduce)
		# 5 counts x (4 exact hierarchical + 1 double sum left to the MPI)
		[ "${h:-0}" -eq 20 ] && [ "${n:-0}" -eq 5 ] && ok "ompi-$np: allreduce: 20 exact hierarchical, 5 double sums the MPI's" ||
			nok "ompi-$np: allreduce counts $h hierarchical, $n native (want 20, 5)"
	fi
	run "mpich-$np" mpich "$np" "$d/$np.map" LD_PRELOAD="$MLIB" TOPOCOLL_MIN_BYTES=0 &&
		read -r h n < <(stat "mpich-$np" gather) &&
		{ [ "${h:-0}" -gt 0 ] && ok "mpich-$np: gather ran hierarchical ($h calls)" || nok "mpich-$np: gather hierarchical: $h/$n"; }
done

# Reassociated double sums only when asked: then 25 hierarchical.
run float ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_ALLREDUCE_FLOAT=1
read -r h n < <(stat float allreduce)
[ "${h:-0}" -eq 25 ] && ok "TOPOCOLL_ALLREDUCE_FLOAT=1: double sums go hierarchical too" ||
	nok "TOPOCOLL_ALLREDUCE_FLOAT=1: $h hierarchical, $n native (want 25, 0)"
# Off switches
run disable ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_DISABLE=gather,bcast
read -r h n < <(stat disable gather)
read -r h2 n2 < <(stat disable scatter)
[ "${h:-1}" -eq 0 ] && [ "${h2:-0}" -gt 0 ] && ok "TOPOCOLL_DISABLE=gather,bcast: gather the MPI's, scatter still hierarchical" ||
	nok "TOPOCOLL_DISABLE: gather $h hierarchical, scatter $h2"
run off ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL=off
grep -q "bcast 0 hierarchical .* allreduce 0 hierarchical" "$d/off.err" && ok "TOPOCOLL=off: nothing hierarchical" ||
	nok "TOPOCOLL=off: $(tail -1 "$d/off.err")"
# Default thresholds: large cases hierarchical, small ones the MPI's.
run defaults ompi 12 "$d/12.map" LD_PRELOAD="$LIB"
read -r h n < <(stat defaults bcast)
[ "${h:-0}" -gt 0 ] && [ "${n:-0}" -gt 0 ] && ok "default thresholds: bcast hierarchical for large messages ($h), the MPI's for small ($n)" ||
	nok "default thresholds: bcast $h hierarchical, $n native"

# topod down; a host it does not know: the MPI's algorithms, results equal, said why.
TII_SERVERS=127.0.0.1:1 run down ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_VERBOSE=1 TII_SERVERS=127.0.0.1:1
grep -q "bcast 0 hierarchical" "$d/down.err" && grep -q "^topocoll: topod: cannot connect" "$d/down.err" &&
	ok "topod down: every call the MPI's, and rank 0 says topod could not be reached" ||
	{ nok "topod down"; head -3 "$d/down.err" | sed 's/^/# /'; }
sed '5s/.*/nosuch-host-9/' "$d/12.map" >"$d/bad.map"
run unknown ompi 12 "$d/bad.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_VERBOSE=1
grep -q "gather 0 hierarchical" "$d/unknown.err" && grep -q "^topocoll: topod: no such host .*nosuch-host-9" "$d/unknown.err" &&
	ok "a host topod does not know: every call the MPI's, the host named" ||
	{ nok "unknown host"; grep topocoll "$d/unknown.err" | head -3 | sed 's/^/# /'; }

# Without the library, the same program (both sides the MPI's), and the wrong build.
run baseline ompi 12 "$d/12.map"
rc=0
timeout 60 mpirun --oversubscribe -np 2 -x LD_PRELOAD="$MLIB" build/tests/mpi/coll_check >"$d/wrong.out" 2>"$d/wrong.err" </dev/null || rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^ok' "$d/wrong.out" && ok "MPICH's build preloaded under Open MPI does not run (exit $rc)" ||
	nok "MPICH's build under Open MPI: exit $rc"

# Under AddressSanitizer and UBSan (Open MPI's own leaks are not ours).
ASAN_RT=$(gcc -print-file-name=libasan.so)
UBSAN_RT=$(gcc -print-file-name=libubsan.so)
run asan ompi 12 "$d/12.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" TOPOCOLL_MIN_BYTES=0 \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan.err" &&
	ok "under AddressSanitizer and UBSan: no error" || { nok "AddressSanitizer/UBSan"; grep -m3 "ERROR\|runtime error" "$d/asan.err" | sed 's/^/# /'; }

[ "$failed" -eq 0 ]
