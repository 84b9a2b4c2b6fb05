#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_allgather.sh - topocoll's MPI_Allgather and MPI_Allgatherv (the ring in
# the fabric's order, coll/allgather.c) give exactly the MPI's own results,
# under Open MPI and MPICH: a real topod serving the k=24 fat tree;
# tests/mpi/allgather_check.c runs every case through MPI_X (taken by the
# library) and PMPI_X and compares the whole receive buffers byte for byte
# (counts 0 to 20,003, in place, strided, resized and reordered types, uneven
# Allgatherv counts and displacements; world, dup, split, reversed,
# singleton communicators).
# Shapes: 12 ranks on 3 leaves (2 hosts per leaf, 2 ranks per host), 7
# ranks (a prime) on uneven leaves, 16 ranks on 5 leaves, 12 ranks
# placed cyclically (rank r on host r mod 6), where rank order is not the
# fabric's, 16 ranks four per host, placed cyclically on 2 leaves, and 8
# ranks one per host, 4 on each of 2 leaves, placed cyclically.
# Checked besides equality:
#   - the ring really ran (TOPOCOLL_STATS), forced by TOPOCOLL_MIN_BYTES=0;
#   - the variants gathered at host leaders and at leaf leaders, forced by
#     TOPOCOLL_CHOICE=hosts and leaves (and by the size rule), ran on every
#     call on MPI_COMM_WORLD and are named; by prediction, whatever ran was
#     the fastest predicted and faster than the MPI's own by the margin;
#   - by prediction on the cyclic job: the ring is chosen for large blocks
#     and said so with both predictions, the MPI's own for small ones;
#   - the grid (TOPOCOLL_CHOICE=hier on equal leaves) named and run on
#     every call, each of its plans in turn (TOPOCOLL_TEST_CYCLE), also
#     under AddressSanitizer and UBSan;
#   - a margin no prediction meets: every call the MPI's;
#   - TOPOCOLL_DISABLE=allgather; topod down (every call the MPI's);
#   - topod's allgather schedule (TOPOCOLL_CHOICE=sched): asked of topod
#     (`schedule agbest`) per communicator, and read from
#     TOPOCOLL_ALLGATHER_SCHEDULE's file (kPrefix, kShift, on 7, 12 and 16
#     ranks, cyclic and uneven hosts); hostile files (a block missing, a
#     block forwarded before it arrived, a rank out of range) refused, each
#     for its reason, and the result still equal (the ring ran);
#   - the same program without the library; topocoll and the profiler as
#     one library (libtopocollprof.so); the library under
#     AddressSanitizer and UBSan (each variant), and under it with topod down.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
YIELD=$ROOT/build/tests/lib/libucx_yield.so
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for f in build/bin/topod build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/asan/libtopocoll.so build/tests/lib/libucx_yield.so \
	build/lib/libtopocollprof.so build/tests/mpi/allgather_check build/tests/mpich/allgather_check build/bench/bench_build; do
	[ -e "$f" ] || { nok "$f built (make all tests)"; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d "${TMPDIR:-/tmp}/t_allgather.XXXXXX") || exit 1
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
# host h of leaf l (12 hosts per leaf, in topod's order)
H() { sed -n "$(($1 * 12 + $2 + 1))p" "$d/hosts"; }
{ for l in 0 1 2; do for h in 0 1; do H $l $h; H $l $h; done; done; } >"$d/12.map"
{ H 0 0; H 0 1; H 0 1; H 1 0; H 5 3; H 5 3; H 5 4; } >"$d/7.map"
{ for r in $(seq 0 15); do case $r in 0) H 9 0 ;; *) H $((r % 4)) $((r % 3)) ;; esac; done; } >"$d/16.map"
# cyclic: rank r on host r mod 6 (hosts 2 per leaf on 3 leaves)
{ for r in $(seq 0 11); do h=$((r % 6)); H $((h / 2)) $((h % 2)); done; } >"$d/cyc.map"
# four ranks per host, placed cyclically: rank r on host r mod 4 (2 per leaf on 2 leaves)
{ for r in $(seq 0 15); do h=$((r % 4)); H $((h / 2)) $((h % 2)); done; } >"$d/4ph.map"
# one rank per host, 4 hosts on each of 2 leaves, rank r on leaf r mod 2: the grid's shape
{ for r in $(seq 0 7); do H $((r % 2)) $((r / 2)); done; } >"$d/grid.map"

# run TAG MPI NP MAP [ENV=VAL ...]: allgather_check under one MPI
run() {
	local tag=$1 mpi=$2 np=$3 map=$4 rc=0 e args=() t0=$SECONDS
	shift 4
	if [ "$mpi" = mpich ]; then
		# idle ranks yield (tests/lib/ucx_yield.c), after whatever else is preloaded
		local pre=${LD_PRELOAD:+$LD_PRELOAD:}$YIELD
		for e in "$@"; do [ "${e%%=*}" = LD_PRELOAD ] && pre="${e#*=}:$YIELD"; done
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do
			[ "${e%%=*}" = LD_PRELOAD ] || args+=(-genv "${e%%=*}" "${e#*=}")
		done
		args+=(-genv LD_PRELOAD "$pre")
		timeout 300 mpiexec.mpich -launcher fork -n "$np" "${args[@]}" build/tests/mpich/allgather_check \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	else
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do args+=(-x "$e"); done
		timeout 300 mpirun --oversubscribe -np "$np" "${args[@]}" build/tests/mpi/allgather_check \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	fi
	MPI_PID=$!
	wait "$MPI_PID" || rc=$?
	MPI_PID=
	local good bad
	good=$(grep -c '^ok - ' "$d/$tag.out")
	bad=$(grep -c '^not ok - ' "$d/$tag.out")
	if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -eq 14 ]; then
		ok "$tag: $good communicator cases equal to the MPI's own results ($((SECONDS - t0)) s)"
	else
		nok "$tag: exit $rc, $good equal, $bad different"
		grep '^not ok' "$d/$tag.out" | head -5 | sed 's/^/# /'
		tail -5 "$d/$tag.err" | sed 's/^/# /'
		return 1
	fi
}
# stat TAG: "H N" ring and native Allgather(v) calls of rank 0 on MPI_COMM_WORLD
stat() { sed -n "s/.* allgather \([0-9]*\) hierarchical \([0-9]*\) native.*/\1 \2/p" "$d/$1.err"; }
# 2 reports on MPI_COMM_WORLD x (5 counts x 6 Allgather modes + 5 x 3 Allgatherv modes)
WORLD_CALLS=90

LIB=$ROOT/build/lib/libtopocoll.so
MLIB=$ROOT/build/lib/mpich/libtopocoll.so
ASAN_RT=$(gcc -print-file-name=libasan.so)
UBSAN_RT=$(gcc -print-file-name=libubsan.so)
for np in 12 7 16; do
	for mpi in ompi mpich; do
		l=$LIB
		[ "$mpi" = mpich ] && l=$MLIB
		run "$mpi-$np" $mpi "$np" "$d/$np.map" LD_PRELOAD="$l" TOPOCOLL_MIN_BYTES=0 || continue
		read -r h n < <(stat "$mpi-$np")
		[ "${h:-0}" -eq "$WORLD_CALLS" ] && [ "${n:-1}" -eq 0 ] &&
			ok "$mpi-$np: every Allgather(v) on MPI_COMM_WORLD ran the ring ($h calls)" ||
			nok "$mpi-$np: ring ran $h times, the MPI's $n (want $WORLD_CALLS, 0)"
	done
done

# By prediction on the cyclic job: in rank order two ranks of each host
# send at once; the ring in the fabric's order sends one flow per host.
P="allgather on a communicator of 12 ranks (3 leaves)"
for mpi in ompi mpich; do
	l=$LIB
	[ "$mpi" = mpich ] && l=$MLIB
	run "cyc-$mpi" $mpi 12 "$d/cyc.map" LD_PRELOAD="$l" TOPOCOLL_VERBOSE=1 || continue
	nr=$(grep -c "^topocoll: $P: ring in the fabric's order: [0-9]* bytes: predicted [0-9.]* us the MPI's own, [0-9.]* us ring in the fabric's order ([0-9.]*x)" "$d/cyc-$mpi.err")
	nn=$(grep -c "^topocoll: $P: the MPI's own: [0-9]* bytes: predicted" "$d/cyc-$mpi.err")
	big=$(grep -c "^topocoll: $P: ring in the fabric's order: 80012 bytes" "$d/cyc-$mpi.err")
	read -r h n < <(stat "cyc-$mpi")
	if [ "$nr" -gt 0 ] && [ "$nn" -gt 0 ] && [ "$big" -ge 1 ] && [ "${h:-0}" -gt 0 ] && [ "${n:-0}" -gt 0 ]; then
		ok "cyc-$mpi: by prediction the ring for $nr size classes (20,003 ints among them), the MPI's own for $nn; $h ring, $n native calls"
	else
		nok "cyc-$mpi: prediction lines: $nr ring, $nn the MPI's, 80012 bytes ring: $big; calls $h/$n"
		grep "^topocoll: allgather" "$d/cyc-$mpi.err" | head -6 | sed 's/^/# /'
	fi
done
# The variants gathered at leaders, forced (TOPOCOLL_CHOICE=hosts, leaves):
# several ranks per host (2 on 12.map and cyc.map, 1 or 2 on 7.map, 4 on
# 4ph.map), every communicator of the program; rank 0 names the variant
# that ran on MPI_COMM_WORLD, and every call there ran topocoll's way.
declare -A VNAME=([hosts]="hosts gathered, their leaders' ring in the fabric's order" [leaves]="leaf-hierarchical")
for v in hosts leaves; do
	for mpi in ompi mpich; do
		l=$LIB
		[ "$mpi" = mpich ] && l=$MLIB
		# MPICH's ranks poll: 16 of them on a small machine take minutes
		maps="4ph 7"
		[ "$mpi" = mpich ] && maps=7
		for map in $maps; do
			np=$(wc -l <"$d/$map.map")
			run "$v-$mpi-$map" $mpi "$np" "$d/$map.map" LD_PRELOAD="$l" TOPOCOLL_CHOICE=$v TOPOCOLL_VERBOSE=1 || continue
			read -r h n < <(stat "$v-$mpi-$map")
			nl=$(grep -c "^topocoll: allgather on a communicator of $np ranks ([0-9]* leaves): ${VNAME[$v]}: TOPOCOLL_CHOICE=$v" "$d/$v-$mpi-$map.err")
			if [ "${h:-0}" -eq "$WORLD_CALLS" ] && [ "${n:-1}" -eq 0 ] && [ "$nl" -ge 1 ]; then
				ok "$v-$mpi-$map: every Allgather(v) on MPI_COMM_WORLD ran ${VNAME[$v]} ($h calls)"
			else
				nok "$v-$mpi-$map: $h topocoll's, $n the MPI's (want $WORLD_CALLS, 0), $nl lines naming it"
				grep "^topocoll: allgather" "$d/$v-$mpi-$map.err" | head -4 | sed 's/^/# /'
			fi
		done
	done
done
# The grid (the leaves' i-th ranks, then each leaf; coll/plan.c gen_grid),
# forced by TOPOCOLL_CHOICE=hier where each leaf holds as many ranks: on
# one rank per host (grid.map: its only `hier` plans) it is named, and
# every call on MPI_COMM_WORLD runs topocoll's way (the grid; empty and
# uneven calls the ring); every one of its plans in turn
# (TOPOCOLL_TEST_CYCLE: recursive doubling, Bruck, the ring) gives the
# MPI's results there, and beside the host leaders' plans on 12 ranks of 3
# leaves (cyc.map).
GN="a grid: the leaves' i-th ranks' [A-Za-z' ]*, then each leaf's"
for mpi in ompi mpich; do
	l=$LIB
	[ "$mpi" = mpich ] && l=$MLIB
	if run "grid-$mpi" $mpi 8 "$d/grid.map" LD_PRELOAD="$l" TOPOCOLL_CHOICE=hier TOPOCOLL_VERBOSE=1; then
		read -r h n < <(stat "grid-$mpi")
		nl=$(grep -c "^topocoll: allgather on a communicator of 8 ranks (2 leaves): $GN: TOPOCOLL_CHOICE=hier" "$d/grid-$mpi.err")
		[ "${h:-0}" -eq "$WORLD_CALLS" ] && [ "${n:-1}" -eq 0 ] && [ "$nl" -ge 1 ] &&
			ok "grid-$mpi: every Allgather(v) on MPI_COMM_WORLD ran topocoll's way ($h calls), the grid named $nl times" ||
			{ nok "grid-$mpi: $h topocoll's, $n the MPI's, $nl lines naming the grid"
			  grep "^topocoll: allgather" "$d/grid-$mpi.err" | head -4 | sed 's/^/# /'; }
	fi
	run "gridcycle-$mpi-grid" $mpi 8 "$d/grid.map" LD_PRELOAD="$l" TOPOCOLL_CHOICE=hier TOPOCOLL_TEST_CYCLE=1 \
		TOPOCOLL_VERBOSE=1 &&
		{ grep -q "^topocoll: allgather on a communicator of 8 ranks (2 leaves): $GN: TOPOCOLL_TEST_CYCLE" "$d/gridcycle-$mpi-grid.err" &&
			ok "gridcycle-$mpi-grid: the grid's plans ran" || nok "gridcycle-$mpi-grid: no grid named"; }
	run "gridcycle-$mpi-cyc" $mpi 12 "$d/cyc.map" LD_PRELOAD="$l" TOPOCOLL_CHOICE=hier TOPOCOLL_TEST_CYCLE=1
done
run asan-grid ompi 8 "$d/grid.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" \
	TOPOCOLL_CHOICE=hier TOPOCOLL_TEST_CYCLE=1 ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-grid.err" &&
	read -r h n < <(stat asan-grid) && [ "${h:-0}" -eq "$WORLD_CALLS" ] &&
	ok "under AddressSanitizer and UBSan, the grid's plans: no error ($h calls)" ||
	{ nok "AddressSanitizer/UBSan, the grid"; grep -m3 "ERROR\|runtime error" "$d/asan-grid.err" | sed 's/^/# /'; }

# The size rule forces the same variant: TOPOCOLL_MIN_BYTES picks when,
# TOPOCOLL_CHOICE which (1000 ints and more, blocks of 4,000 bytes).
run min-hosts ompi 16 "$d/4ph.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=4000 TOPOCOLL_CHOICE=hosts TOPOCOLL_VERBOSE=1 &&
	read -r h n < <(stat min-hosts) &&
	{ [ "${h:-0}" -gt 0 ] && [ "${n:-0}" -gt 0 ] &&
		grep -q "^topocoll: allgather on a communicator of 16 ranks (2 leaves): ${VNAME[hosts]}: at or above TOPOCOLL_MIN_BYTES" "$d/min-hosts.err" &&
		ok "TOPOCOLL_MIN_BYTES=4000 TOPOCOLL_CHOICE=hosts: $h calls gathered at host leaders, $n the MPI's" ||
		{ nok "min-hosts: $h/$n calls"; grep '^topocoll: allgather' "$d/min-hosts.err" | head -3 | sed 's/^/# /'; }; }

# By prediction with four ranks per host: TOPOCOLL_VERBOSE=2 gives every
# candidate's prediction; the plans gathering each host's blocks at its
# leader must be predicted (for a block of 80,012 bytes; the forced-only
# `hosts` and `leaves` variants are not modelled: a negative time), and
# whatever ran must be the fastest predicted and faster than the MPI's own
# by the rule (both predictions' 4 % against it, 0.98x: 1.04 x 0.98 / 0.96 = 1.062x).
for mpi in ompi; do
	l=$LIB
	run "pred4-$mpi" $mpi 16 "$d/4ph.map" LD_PRELOAD="$l" TOPOCOLL_VERBOSE=2 || continue
	e=$d/pred4-$mpi.err
	nh=$(grep -c "^topocoll: allgather, 80012 bytes on 16 ranks: predicted [0-9.]* us each host's blocks at its leader, the leaders' [A-Za-z' ]* in the fabric's order, [0-9.]* us the MPI's own" "$e")
	# "V: B bytes: predicted N us the MPI's own, T us V (R x)": the chosen V
	# must be the least of the candidates' T for B, and N >= 1.10 T
	bad=$(python3 - "$e" <<'PY'
import re, sys
cand, bad, seen = {}, 0, 0
for line in open(sys.argv[1]):
    m = re.match(r"topocoll: allgather, (\d+) bytes on 16 ranks: predicted (-?[\d.]+) us (.*), [\d.]+ us the MPI's own$", line)
    if m:
        if float(m.group(2)) > 0:
            cand.setdefault(m.group(1), []).append(float(m.group(2)))
        continue
    m = re.match(r"topocoll: allgather on a communicator of 16 ranks \(2 leaves\): (.*?): (\d+) bytes: predicted ([\d.]+) us the MPI's own, ([\d.]+) us (.*) \(", line)
    if not m or m.group(1) == "the MPI's own":
        continue
    seen += 1
    b, n, t = m.group(2), float(m.group(3)), float(m.group(4))
    if n < 1.0617 * t - 0.1 or t > min(cand.get(b, [t])) + 0.05:
        bad += 1
print(bad if seen else -1)
PY
)
	if [ "$nh" -ge 1 ] && [ "$bad" = 0 ]; then
		ok "pred4-$mpi: $nh host-leader plans predicted; every plan chosen was the fastest predicted, by the rule"
	else
		nok "pred4-$mpi: host-leader plans predicted $nh; choices against the rule: $bad"
		grep "^topocoll: allgather" "$e" | head -8 | sed 's/^/# /'
	fi
done

run margin ompi 12 "$d/cyc.map" LD_PRELOAD="$LIB" TOPOCOLL_MARGIN=100 TOPOCOLL_VERBOSE=1 &&
	read -r h n < <(stat margin) &&
	{ [ "${h:-1}" -eq 0 ] && grep -q "^topocoll: $P: the MPI's own: 80012 bytes: .*x, below the margin)" "$d/margin.err" &&
		ok "TOPOCOLL_MARGIN=100: the ring predicted faster but not by the margin, so the MPI's own" ||
		{ nok "margin: $h ring calls"; grep '^topocoll: allgather' "$d/margin.err" | tail -3 | sed 's/^/# /'; }; }

run disable ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_DISABLE=allgather &&
	read -r h n < <(stat disable) &&
	{ [ "${h:-1}" -eq 0 ] && ok "TOPOCOLL_DISABLE=allgather: every call the MPI's" || nok "TOPOCOLL_DISABLE: $h ring calls"; }
run down ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_VERBOSE=1 TII_SERVERS=127.0.0.1:1 &&
	read -r h n < <(stat down) &&
	{ [ "${h:-1}" -eq 0 ] && grep -q "^topocoll: topod: cannot connect" "$d/down.err" &&
		grep -q "^topocoll: allgather on a communicator of 12 ranks (0 leaves): the MPI's own: no leaf for rank 0" "$d/down.err" &&
		ok "topod down: every Allgather(v) the MPI's, and rank 0 says why" ||
		{ nok "topod down: $h ring calls"; grep '^topocoll' "$d/down.err" | head -3 | sed 's/^/# /'; }; }
run mpich-down mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_MIN_BYTES=0 TII_SERVERS=127.0.0.1:1

# topocoll and the profiler as one library: the profiler's Allgather(v)
# wrappers hand the call to topocoll, which runs the ring
run collprof ompi 7 "$d/7.map" LD_PRELOAD="$ROOT/build/lib/libtopocollprof.so" TOPOCOLL_MIN_BYTES=0 TOPOPROF_OUT="$d/cp" &&
	read -r h n < <(stat collprof) &&
	{ [ "${h:-0}" -eq "$WORLD_CALLS" ] && grep -q calls "$d/cp.txt" &&
		ok "libtopocollprof.so: every Allgather(v) on MPI_COMM_WORLD ran the ring ($h calls), the profiler reported" ||
		nok "libtopocollprof.so: ring ran ${h:-0} times, report $(grep -c calls "$d/cp.txt" 2>/dev/null)"; }

run baseline ompi 12 "$d/12.map"
run mpich-baseline mpich 12 "$d/12.map"

# Under AddressSanitizer and UBSan (Open MPI's own leaks are not ours), with
# topod up (the ring) and down (the fallback).
for t in up down; do
	s=$TII_SERVERS
	[ $t = down ] && s=127.0.0.1:1
	run "asan-$t" ompi 12 "$d/cyc.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" \
		TOPOCOLL_MIN_BYTES=0 TII_SERVERS=$s ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
		! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-$t.err" &&
		ok "under AddressSanitizer and UBSan, topod $t: no error" ||
		{ nok "AddressSanitizer/UBSan, topod $t"; grep -m3 "ERROR\|runtime error" "$d/asan-$t.err" | sed 's/^/# /'; }
done
for v in hosts leaves; do
	run "asan-$v" ompi 7 "$d/7.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" \
		TOPOCOLL_CHOICE=$v ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
		! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-$v.err" &&
		read -r h n < <(stat "asan-$v") && [ "${h:-0}" -eq "$WORLD_CALLS" ] &&
		ok "under AddressSanitizer and UBSan, ${VNAME[$v]}: no error ($h calls)" ||
		{ nok "AddressSanitizer/UBSan, $v"; grep -m3 "ERROR\|runtime error" "$d/asan-$v.err" | sed 's/^/# /'; }
done
# topod's allgather schedule, forced (TOPOCOLL_CHOICE=sched): each
# communicator asks topod `schedule agbest` for its ranks' hosts on its
# first call, every call on MPI_COMM_WORLD runs it, named with topod's answer.
SN="topod's allgather schedule"
for mpi in ompi mpich; do
	l=$LIB
	maps="12 7 16 cyc"
	[ "$mpi" = mpich ] && l=$MLIB && maps="7 cyc"
	for map in $maps; do
		np=$(wc -l <"$d/$map.map")
		run "sched-$mpi-$map" $mpi "$np" "$d/$map.map" LD_PRELOAD="$l" TOPOCOLL_CHOICE=sched TOPOCOLL_VERBOSE=1 || continue
		read -r h n < <(stat "sched-$mpi-$map")
		nl=$(grep -c "^topocoll: allgather on a communicator of $np ranks ([0-9]* leaves): $SN: TOPOCOLL_CHOICE=sched; topod: [a-z]* [0-9.]* us, the ring in rank order [0-9.]* us" "$d/sched-$mpi-$map.err")
		if [ "${h:-0}" -eq "$WORLD_CALLS" ] && [ "${n:-1}" -eq 0 ] && [ "$nl" -ge 1 ]; then
			ok "sched-$mpi-$map: every Allgather(v) on MPI_COMM_WORLD ran topod's schedule ($h calls; $(grep -o "topod: [a-z]*" "$d/sched-$mpi-$map.err" | head -1))"
		else
			nok "sched-$mpi-$map: $h topocoll's, $n the MPI's (want $WORLD_CALLS, 0), $nl lines naming it"
			grep "^topocoll: allgather" "$d/sched-$mpi-$map.err" | head -4 | sed 's/^/# /'
		fi
	done
done
# agfile OUT MAP REQUEST...: topod's answer to `schedule REQUEST form=ranks
# HOSTS` in the file form TOPOCOLL_ALLGATHER_SCHEDULE reads (bench/coll's):
# "# " and the reply's head, then each step's SRC:DST:BLOCK flows
agfile() {
	python3 - "$PORT" "$@" <<'PY'
import socket, sys
port, out, hmap, req = int(sys.argv[1]), sys.argv[2], sys.argv[3], " ".join(sys.argv[4:])
hosts = open(hmap).read().split()
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("schedule %s form=ranks %s\n" % (req, " ".join(hosts))).encode())
f = s.makefile()
head = f.readline().strip()
if not head.startswith("OK"):
    sys.exit(head)
n = int(head.rsplit("lines=", 1)[1])
with open(out, "w") as o:
    o.write("# %s\n" % head)
    for _ in range(n):
        l = f.readline().split()
        if l and l[0] == "STEP":
            o.write(" ".join(w for w in l[6:] if ":" in w) + "\n")
PY
}
# kPrefix on 12 and 16 ranks (k = 4, 8: powers of two dividing P; topod
# answers NOTAPPLICABLE for 7), kShift on 7 (a prime, k = 3: not dividing
# P) and on the cyclic 12 (k = 5), from files on MPI_COMM_WORLD (the other
# communicators, which a file does not describe, ask topod)
for spec in "12 allgather k=4" "16 allgather k=8" "7 kshift k=3" "cyc kshift k=5"; do
	set -- $spec
	map=$1 algo=$2 k=$3
	np=$(wc -l <"$d/$map.map")
	agfile "$d/ag-$map-$algo" "$d/$map.map" "$algo" "$k" fallback=0 || { nok "topod's $algo $k for $map.map"; continue; }
	[ "$(tail -n +2 "$d/ag-$map-$algo" | grep -c :)" -eq $((np - 1)) ] || nok "file-$map-$algo: $((np - 1)) steps"
	run "file-$map-$algo" ompi "$np" "$d/$map.map" LD_PRELOAD="$LIB" TOPOCOLL_CHOICE=sched TOPOCOLL_VERBOSE=1 \
		TOPOCOLL_ALLGATHER_SCHEDULE="$d/ag-$map-$algo" || continue
	read -r h n < <(stat "file-$map-$algo")
	if [ "${h:-0}" -eq "$WORLD_CALLS" ] && [ "${n:-1}" -eq 0 ] &&
		grep -q "^topocoll: allgather on a communicator of $np ranks ([0-9]* leaves): $SN: TOPOCOLL_CHOICE=sched; topod: $algo " "$d/file-$map-$algo.err"; then
		ok "file-$map-$algo ($k): every Allgather(v) on MPI_COMM_WORLD ran it ($h calls)"
	else
		nok "file-$map-$algo: $h topocoll's, $n the MPI's, or not named"
		grep "^topocoll: allgather" "$d/file-$map-$algo.err" | head -4 | sed 's/^/# /'
	fi
done
# Hostile files, each refused for its reason (the ring runs instead, and the
# results are still equal): a flow dropped (rank 1 never gets a block), a
# step forwarding blocks moved first (sent before they arrived), a rank
# out of range, a block delivered twice.
f=$d/ag-12-allgather
if [ -s "$f" ]; then
	# kPrefix, k = 4: steps 0-2 exchange own blocks (r -> r XOR x), step 3
	# is the ring step, step 4 forwards what step 3 brought
	{ head -1 "$f"; sed -n '2s/\(^\| \)[0-9]*:1:[0-9]*//;2p' "$f"; tail -n +3 "$f"; } >"$d/bad-missing"
	{ head -1 "$f"; sed -n 6p "$f"; sed -n 2,5p "$f"; tail -n +7 "$f"; } >"$d/bad-early"
	{ head -1 "$f"; sed -n '2s/^[0-9]*:/12:/;2p' "$f"; tail -n +3 "$f"; } >"$d/bad-range"
	{ head -1 "$f"; sed -n 2p "$f"; sed -n "3s/^[^ ]*/$(sed -n '2s/ .*//p' "$f")/;3p" "$f"; tail -n +4 "$f"; } >"$d/bad-twice"
	declare -A WHY=([missing]="never gets block" [early]="a block sent before its sender has it"
		[range]="a rank out of range" [twice]="a block its receiver already has")
	for b in missing early range twice; do
		cmp -s "$f" "$d/bad-$b" && { nok "bad-$b: the file was not changed"; continue; }
		run "bad-$b" ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_CHOICE=sched TOPOCOLL_VERBOSE=1 \
			TOPOCOLL_ALLGATHER_SCHEDULE="$d/bad-$b" || continue
		read -r h n < <(stat "bad-$b")
		if grep -q "^topocoll: allgather on a communicator of 12 ranks: no schedule from topod: schedule: .*${WHY[$b]}" "$d/bad-$b.err" &&
			grep -q "^topocoll: allgather on a communicator of 12 ranks ([0-9]* leaves): ring in the fabric's order: TOPOCOLL_CHOICE=sched, no schedule" "$d/bad-$b.err" &&
			[ "${h:-0}" -eq "$WORLD_CALLS" ]; then
			ok "bad-$b: refused ($(grep -o "no schedule from topod: .*" "$d/bad-$b.err" | head -1)), the ring ran instead"
		else
			nok "bad-$b: not refused as it should be ($h ring calls)"
			grep "^topocoll: allgather" "$d/bad-$b.err" | head -4 | sed 's/^/# /'
		fi
	done
fi
# By prediction: topod's schedule asked for blocks of TOPOCOLL_ALLGATHER_MIN
# (64 KiB) and more, predicted beside the other variants (VERBOSE=2), and
# run only where the fastest by the margin (on the k=24 tree topod's
# ring and the library's tie: never by the margin)
run "sched-pred" ompi 12 "$d/cyc.map" LD_PRELOAD="$LIB" TOPOCOLL_VERBOSE=2 TOPOCOLL_ALLGATHER_MIN=4000 &&
	{ ns=$(grep -c "^topocoll: allgather, [0-9]* bytes on 12 ranks: predicted [0-9.]* us $SN, " "$d/sched-pred.err")
	  nb=$(grep -c "^topocoll: allgather, 28 bytes on 12 ranks: predicted [0-9.]* us $SN, " "$d/sched-pred.err")
	  [ "$ns" -ge 2 ] && [ "$nb" -eq 0 ] && ok "by prediction: topod's schedule predicted for $ns size classes, none below TOPOCOLL_ALLGATHER_MIN" ||
		{ nok "sched-pred: $ns predictions, $nb below the minimum"; grep '^topocoll: allgather' "$d/sched-pred.err" | head -6 | sed 's/^/# /'; }; }
run asan-sched ompi 12 "$d/cyc.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" \
	TOPOCOLL_CHOICE=sched ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-sched.err" &&
	read -r h n < <(stat asan-sched) && [ "${h:-0}" -eq "$WORLD_CALLS" ] &&
	ok "under AddressSanitizer and UBSan, $SN: no error ($h calls)" ||
	{ nok "AddressSanitizer/UBSan, sched"; grep -m3 "ERROR\|runtime error" "$d/asan-sched.err" | sed 's/^/# /'; }
run asan-sched-bad ompi 12 "$d/12.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" \
	TOPOCOLL_CHOICE=sched TOPOCOLL_ALLGATHER_SCHEDULE="$d/bad-early" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
run down-sched mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_CHOICE=sched TII_SERVERS=127.0.0.1:1
run down-hosts mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_CHOICE=hosts TII_SERVERS=127.0.0.1:1
read -r h n < <(stat asan-up)
[ "${h:-0}" -eq "$WORLD_CALLS" ] && ok "under AddressSanitizer the ring ran ($h calls)" || nok "asan: ring ran $h times"

[ "$failed" -eq 0 ]
