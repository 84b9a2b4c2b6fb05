#!/usr/bin/env bash
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
# fabric's, and 16 ranks four per host, placed cyclically on 2 leaves.
# Checked besides equality:
#   - the ring really ran (TOPOCOLL_STATS), forced by TOPOCOLL_MIN_BYTES=0;
#   - the variants gathered at host leaders and at leaf leaders, forced by
#     TOPOCOLL_CHOICE=hosts and leaves (and by the size rule), ran on every
#     call on MPI_COMM_WORLD and are named; by prediction, whatever ran was
#     the fastest predicted and faster than the MPI's own by the margin;
#   - by prediction on the cyclic job: the ring is chosen for large blocks
#     and said so with both predictions, the MPI's own for small ones;
#   - a margin no prediction meets: every call the MPI's;
#   - TOPOCOLL_DISABLE=allgather; topod down (every call the MPI's);
#   - the same program without the library; topocoll and the profiler as
#     one library (libtopocollprof.so); the library under
#     AddressSanitizer and UBSan (each variant), and under it with topod down.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for f in build/bin/topod build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/asan/libtopocoll.so \
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

# run TAG MPI NP MAP [ENV=VAL ...]: allgather_check under one MPI
run() {
	local tag=$1 mpi=$2 np=$3 map=$4 rc=0 e args=()
	shift 4
	if [ "$mpi" = mpich ]; then
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do
			args+=(-genv "${e%%=*}" "${e#*=}")
		done
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
		ok "$tag: $good communicator cases equal to the MPI's own results"
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
# The size rule forces the same variant: TOPOCOLL_MIN_BYTES picks when,
# TOPOCOLL_CHOICE which (1000 ints and more, blocks of 4,000 bytes).
run min-hosts ompi 16 "$d/4ph.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=4000 TOPOCOLL_CHOICE=hosts TOPOCOLL_VERBOSE=1 &&
	read -r h n < <(stat min-hosts) &&
	{ [ "${h:-0}" -gt 0 ] && [ "${n:-0}" -gt 0 ] &&
		grep -q "^topocoll: allgather on a communicator of 16 ranks (2 leaves): ${VNAME[hosts]}: at or above TOPOCOLL_MIN_BYTES" "$d/min-hosts.err" &&
		ok "TOPOCOLL_MIN_BYTES=4000 TOPOCOLL_CHOICE=hosts: $h calls gathered at host leaders, $n the MPI's" ||
		{ nok "min-hosts: $h/$n calls"; grep '^topocoll: allgather' "$d/min-hosts.err" | head -3 | sed 's/^/# /'; }; }

# By prediction with four ranks per host: TOPOCOLL_VERBOSE=2 gives every
# candidate's prediction; the gathered variants must be predicted (both, for
# a block of 80,012 bytes), and whatever ran must be the fastest predicted
# and faster than the MPI's own by the margin (1.10).
for mpi in ompi; do
	l=$LIB
	run "pred4-$mpi" $mpi 16 "$d/4ph.map" LD_PRELOAD="$l" TOPOCOLL_VERBOSE=2 || continue
	e=$d/pred4-$mpi.err
	nh=$(grep -c "^topocoll: allgather, 80012 bytes on 16 ranks: predicted [0-9.]* us ${VNAME[hosts]}, [0-9.]* us the MPI's own" "$e")
	nlf=$(grep -c "^topocoll: allgather, 80012 bytes on 16 ranks: predicted [0-9.]* us ${VNAME[leaves]}, [0-9.]* us the MPI's own" "$e")
	# "V: B bytes: predicted N us the MPI's own, T us V (R x)": the chosen V
	# must be the least of the candidates' T for B, and N >= 1.10 T
	bad=$(python3 - "$e" <<'PY'
import re, sys
cand, bad, seen = {}, 0, 0
for line in open(sys.argv[1]):
    m = re.match(r"topocoll: allgather, (\d+) bytes on 16 ranks: predicted ([\d.]+) us (.*), [\d.]+ us the MPI's own$", line)
    if m:
        cand.setdefault(m.group(1), []).append(float(m.group(2)))
        continue
    m = re.match(r"topocoll: allgather on a communicator of 16 ranks \(2 leaves\): (.*?): (\d+) bytes: predicted ([\d.]+) us the MPI's own, ([\d.]+) us (.*) \(", line)
    if not m or m.group(1) == "the MPI's own":
        continue
    seen += 1
    b, n, t = m.group(2), float(m.group(3)), float(m.group(4))
    if n < 1.10 * t - 0.1 or t > min(cand.get(b, [t])) + 0.05:
        bad += 1
print(bad if seen else -1)
PY
)
	if [ "$nh" -ge 1 ] && [ "$nlf" -ge 1 ] && [ "$bad" = 0 ]; then
		ok "pred4-$mpi: both gathered variants predicted; every variant chosen was the fastest predicted, by the margin"
	else
		nok "pred4-$mpi: predictions for the host leaders' ring $nh, leaf-hierarchical $nlf; choices against the rule: $bad"
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
ASAN_RT=$(gcc -print-file-name=libasan.so)
UBSAN_RT=$(gcc -print-file-name=libubsan.so)
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
run down-hosts mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_CHOICE=hosts TII_SERVERS=127.0.0.1:1
read -r h n < <(stat asan-up)
[ "${h:-0}" -eq "$WORLD_CALLS" ] && ok "under AddressSanitizer the ring ran ($h calls)" || nok "asan: ring ran $h times"

[ "$failed" -eq 0 ]
