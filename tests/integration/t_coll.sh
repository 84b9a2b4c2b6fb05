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
#   - the hierarchical algorithms really ran (TOPOCOLL_STATS counts),
#     MPI_Alltoall by topod's schedule too (both MPIs), and the Bcast
#     variants (leaders depth- and breadth-first, pipelined) each forced;
#   - the choice by prediction: TOPOCOLL_VERBOSE shows predicted times and
#     what ran; with a margin no variant can meet, everything falls back;
#   - TOPOCOLL_TOPOLOGY (a platform file) instead of topod, topod down;
#   - the same source built with smpicc runs in SMPI on topod's platform;
#   - double sums stay the MPI's unless TOPOCOLL_ALLREDUCE_FLOAT=1;
#   - TOPOCOLL_DISABLE and TOPOCOLL=off leave those calls to the MPI;
#   - topod down, slow (never answers), and a host topod does not know:
#     every call the MPI's, results equal, and TOPOCOLL_VERBOSE says why;
#   - the wrong build preloaded (MPICH's under Open MPI) is refused;
#   - with the profiler: libtopocollprof.so (both in one library) runs
#     topocoll's algorithms and writes the profiler's report unchanged;
#   - the same program without the library (the baseline is sane);
#   - the library under AddressSanitizer and UBSan (Open MPI and MPICH).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for f in build/bin/topod build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/asan/libtopocoll.so \
	build/lib/asan/mpich/libtopocoll.so \
	build/lib/libtopocollprof.so build/lib/mpich/libtopocollprof.so \
	build/tests/mpi/coll_check build/tests/mpich/coll_check build/bench/bench_build; do
	[ -e "$f" ] || { nok "$f built (make all tests)"; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d "${TMPDIR:-/tmp}/t_coll.XXXXXX") || exit 1
TOPOD_PID= MPI_PID= MUTE_PID=
cleanup() {
	local p
	for p in $MPI_PID $TOPOD_PID $MUTE_PID; do
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
	# FLOAT_SUMS=1: reassociated double sums may differ in their last bits
	# (what TOPOCOLL_ALLREDUCE_FLOAT=1 accepts), so Allreduce is not compared
	if [ -n "${FLOAT_SUMS:-}" ]; then
		bad=$(grep '^not ok - ' "$d/$tag.out" | grep -vc 'allreduce equal')
	else
		bad=$(grep -c '^not ok - ' "$d/$tag.out")
	fi
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
		read -r h n < <(stat "ompi-$np" alltoall)
		[ "${h:-0}" -eq 6 ] && ok "ompi-$np: alltoall ran topod's schedule (6 calls)" || nok "ompi-$np: alltoall by schedule: $h/$n"
	fi
	run "mpich-$np" mpich "$np" "$d/$np.map" LD_PRELOAD="$MLIB" TOPOCOLL_MIN_BYTES=0 &&
		read -r h n < <(stat "mpich-$np" gather) &&
		{ [ "${h:-0}" -gt 0 ] && ok "mpich-$np: gather ran hierarchical ($h calls)" || nok "mpich-$np: gather hierarchical: $h/$n"; } &&
		read -r h n < <(stat "mpich-$np" alltoall) &&
		{ [ "${h:-0}" -eq 6 ] && ok "mpich-$np: alltoall ran topod's schedule (6 calls)" || nok "mpich-$np: alltoall by schedule: $h/$n"; }
done

# The Bcast variants, each forced: leaders depth-first and breadth-first
# from the root's leaf (communicators made on demand), pipelined segments.
for v in dfs bfs pipe; do
	run "bcast-$v" ompi 16 "$d/16.map" LD_PRELOAD="$LIB" TOPOCOLL_CHOICE=$v TOPOCOLL_VERBOSE=1 &&
		read -r h n < <(stat "bcast-$v" bcast) &&
		{ [ "${h:-0}" -eq 18 ] && grep -q "bcast on a communicator of 16 ranks (5 leaves): hierarchical, .*TOPOCOLL_CHOICE=$v" "$d/bcast-$v.err" &&
			ok "TOPOCOLL_CHOICE=$v: every bcast ran that variant, results equal" || nok "bcast $v: $h/$n"; }
done
run mpich-pipe mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_CHOICE=pipe

# By prediction (the default): rank 0 says per size class what is
# predicted and what runs; Alltoall (every block size, by
# TOPOCOLL_ALLTOALL_MIN=0) asks topod, which predicts no gain over XOR's
# steps for this job (its answer is XOR, or a schedule below the margin),
# so the MPI's own runs.
run predict ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_VERBOSE=1 TOPOCOLL_ALLTOALL_MIN=0
P="on a communicator of 12 ranks (3 leaves)"
nh=$(grep -c "^topocoll: [a-z]* $P: hierarchical[a-z ,-]*: [0-9]* bytes: predicted [0-9.]* us the MPI's own, [0-9.]* us hierarchical" "$d/predict.err")
nn=$(grep -c "^topocoll: [a-z]* $P: the MPI's own: [0-9]* bytes: predicted [0-9.]* us the MPI's own" "$d/predict.err")
if grep -q "^topocoll: leaf switches known from topod; delays: topod's routes and rates (6 hosts)" "$d/predict.err" &&
	[ "$nh" -gt 0 ] && [ "$nn" -gt 0 ] &&
	grep -q "^topocoll: alltoall $P: the MPI's own: topod predicts [0-9.]* us [a-z0-9]*, [0-9.]* us XOR's steps for 1 MiB blocks ([0-9.]*x, below the margin)" "$d/predict.err"; then
	ok "prediction: delays from topod; $nh size classes predicted faster hierarchical, $nn left to the MPI; alltoall: no gain over XOR, the MPI's"
else
	nok "prediction lines ($nh hierarchical, $nn the MPI's)"
	grep '^topocoll' "$d/predict.err" | head -8 | sed 's/^/# /'
fi
# A margin no variant can meet: every call falls back to the MPI's own.
run margin ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MARGIN=100 TOPOCOLL_VERBOSE=1
grep -q "bcast 0 hierarchical .* gather 0 hierarchical .* scatter 0 hierarchical .* allreduce 0 hierarchical" "$d/margin.err" &&
	grep -q "^topocoll: [a-z]* $P: the MPI's own: [0-9]* bytes: .* us hierarchical.* (.*x, below the margin)" "$d/margin.err" &&
	ok "TOPOCOLL_MARGIN=100: predicted faster but not by the margin, so the MPI's own" ||
	{ nok "margin fallback"; grep '^topocoll' "$d/margin.err" | tail -3 | sed 's/^/# /'; }

# TOPOCOLL_TOPOLOGY: leaves and delays from a platform file, topod down.
build/bin/topoquery -s "127.0.0.1:$PORT" simgrid $(sort -u "$d/12.map") >"$d/12.xml" 2>"$d/12.xml.err" ||
	nok "topoquery simgrid: $(cat "$d/12.xml.err")"
run topofile ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TII_SERVERS=127.0.0.1:1 TOPOCOLL_TOPOLOGY="$d/12.xml" TOPOCOLL_VERBOSE=1
grep -q "^topocoll: leaf switches known from TOPOCOLL_TOPOLOGY; delays: TOPOCOLL_TOPOLOGY (6 hosts)" "$d/topofile.err" &&
	grep -q "^topocoll: bcast $P: .*: 80012 bytes: predicted" "$d/topofile.err" &&
	ok "TOPOCOLL_TOPOLOGY with topod down: leaves and delays from the file, choices by prediction" ||
	{ nok "TOPOCOLL_TOPOLOGY"; grep '^topocoll' "$d/topofile.err" | head -3 | sed 's/^/# /'; }
printf '<platform><host id="x"/><route src="x" dst="y"><link_ctn id="nope"/></route></platform>\n' >"$d/bad.xml"
run badfile ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_TOPOLOGY="$d/bad.xml" TOPOCOLL_VERBOSE=1
grep -q "^topocoll: platform: route x -> y between unknown hosts" "$d/badfile.err" && grep -q "gather 0 hierarchical" "$d/badfile.err" &&
	ok "a broken TOPOCOLL_TOPOLOGY is refused and named; every call the MPI's" ||
	{ nok "broken platform"; grep '^topocoll' "$d/badfile.err" | head -3 | sed 's/^/# /'; }

# The same source under SMPI (bench/coll/bench.c): built with smpicc, run on
# topod's platform of 16 hosts on 5 leaves, pipelined Bcast forced.
if command -v smpicc >/dev/null; then
	. tests/lib/smpi.sh
	sort -u "$d/16.map" >"$d/16.hosts"
	build/bin/topoquery -s "127.0.0.1:$PORT" simgrid $(cat "$d/16.hosts") >"$d/16.xml" 2>/dev/null
	nh=$(wc -l <"$d/16.hosts")
	if smpicc -std=c11 -O2 -Wall -Wextra -Werror -DTOPOCOLL_SMPI -Icoll -Icommon -o "$d/smpibench" bench/coll/bench.c coll/*.c -lm \
		>"$d/smpicc.err" 2>&1; then
		TOPOCOLL_TOPOLOGY="$d/16.xml" TOPOCOLL_CHOICE=pipe timeout 120 smpirun "${SMPI_CFG[@]}" -platform "$d/16.xml" \
			-hostfile "$d/16.hosts" -np "$nh" "$d/smpibench" bcast,gather 1048576 1 >"$d/smpi.out" 2>"$d/smpi.err"
		if grep -q "^coll bcast 1048576 native=[0-9.]* topo=[0-9.]* variant=4 " "$d/smpi.out" &&
			grep -q "^coll gather 1048576 .* variant=1 " "$d/smpi.out"; then
			ok "SMPI: smpicc builds coll/ with bench/coll/bench.c; pipelined bcast and gather ran on $nh simulated hosts"
		else
			nok "SMPI run"; tail -3 "$d/smpi.err" | sed 's/^/# /'
		fi
	else
		nok "smpicc build"; tail -3 "$d/smpicc.err" | sed 's/^/# /'
	fi
else
	echo "ok - # SKIP smpicc not installed"
fi

# Reassociated double sums only when asked: then 25 hierarchical.
FLOAT_SUMS=1 run float ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_ALLREDUCE_FLOAT=1
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

# topod slow: a server that accepts and never answers; rank 0 gives up
# after TOPOCOLL_TIMEOUT_MS and every call is the MPI's.
python3 -c 'import socket,sys,time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True: held.append(s.accept()[0])' >"$d/mute.port" &
MUTE_PID=$!
for _ in $(seq 100); do [ -s "$d/mute.port" ] && break; sleep 0.1; done
MPORT=$(cat "$d/mute.port")
run slow ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_VERBOSE=1 TOPOCOLL_TIMEOUT_MS=500 TII_SERVERS=127.0.0.1:${MPORT:-1}
grep -q "bcast 0 hierarchical .* allreduce 0 hierarchical .* alltoall 0 hierarchical" "$d/slow.err" &&
	grep -q "^topocoll: topod: topod did not answer in time" "$d/slow.err" &&
	ok "topod slow (never answers): after TOPOCOLL_TIMEOUT_MS every call the MPI's, rank 0 says why" ||
	{ nok "slow topod"; { grep topocoll "$d/slow.err" | head -3; grep "MPI_COMM_WORLD" "$d/slow.err"; } | sed 's/^/# /'; }
kill "$MUTE_PID" 2>/dev/null && wait "$MUTE_PID" 2>/dev/null
MUTE_PID=

# With the profiler: one library holding both (two PMPI libraries preloaded
# together do not stack). topocoll still runs its algorithms, and the
# profiler's report is the one it writes alone (it counts the program's
# calls, not topocoll's messages).
if run collprof ompi 12 "$d/12.map" LD_PRELOAD="$ROOT/build/lib/libtopocollprof.so" TOPOCOLL_MIN_BYTES=0 TOPOPROF_OUT="$d/cp" &&
	run profonly ompi 12 "$d/12.map" LD_PRELOAD="$ROOT/build/lib/libtopoprof.so" TOPOPROF_OUT="$d/po"; then
	read -r h n < <(stat collprof gather)
	read -r h2 n2 < <(stat collprof bcast)
	calls=$(sed -n 's/^  calls (summed over ranks): //p' "$d/cp.txt")
	if [ "${h:-0}" -gt 0 ] && [ "${h2:-0}" -gt 0 ] && [ -n "$calls" ] &&
		diff <(grep -v '^report time' "$d/cp.txt") <(grep -v '^report time' "$d/po.txt") >"$d/prof.diff"; then
		ok "libtopocollprof.so: gather ($h) and bcast ($h2) hierarchical, the profiler's report the same as alone ($calls)"
	else
		nok "libtopocollprof.so: gather $h, bcast $h2 hierarchical; report: ${calls:-none}"
		head -5 "$d/prof.diff" | sed 's/^/# /'
	fi
fi
run collprof-mpich mpich 7 "$d/7.map" LD_PRELOAD="$ROOT/build/lib/mpich/libtopocollprof.so" TOPOCOLL_MIN_BYTES=0 TOPOPROF_OUT="$d/cpm" &&
	read -r h n < <(stat collprof-mpich gather) &&
	{ [ "${h:-0}" -gt 0 ] && grep -q '^  calls (summed over ranks): bcast [1-9]' "$d/cpm.txt" &&
		ok "mpich/libtopocollprof.so: gather hierarchical ($h calls) and the profiler's report" ||
		nok "mpich/libtopocollprof.so: gather $h hierarchical, report $(grep -c calls "$d/cpm.txt" 2>/dev/null)"; }

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
# MPICH's build too, on the prime shape (uneven leaves)
run asan-mpich mpich 7 "$d/7.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/mpich/libtopocoll.so" TOPOCOLL_MIN_BYTES=0 \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	read -r h n < <(stat asan-mpich gather) && [ "${h:-0}" -gt 0 ] &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-mpich.err" &&
	ok "MPICH under AddressSanitizer and UBSan: no error ($h gathers hierarchical)" ||
	{ nok "MPICH AddressSanitizer/UBSan"; grep -m3 "ERROR\|runtime error" "$d/asan-mpich.err" | sed 's/^/# /'; }

[ "$failed" -eq 0 ]
