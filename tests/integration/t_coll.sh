#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_coll.sh - topocoll (libtopocoll.so, preloaded into an unmodified MPI
# program) gives exactly the MPI's own results, under Open MPI and MPICH:
#   a real topod serving the k=24 fat tree (3,456 hosts, 12 per leaf);
#   tests/mpi/coll_check.c runs every case through MPI_X (taken by the
#   library) and PMPI_X (the MPI itself) and compares byte for byte, on
#   MPI_COMM_WORLD, a dup, even/odd, mod 3, reversed and singleton
#   communicators.
# Shapes: 12 ranks on 3 leaves (2 hosts per leaf, 2 ranks per host), 7
# ranks (a prime) on uneven leaves, 16 ranks on 5 leaves one of which holds
# a single rank; 12 and 16 under Open MPI, 7 under MPICH (each MPI job
# costs 10-40 s on 2 cores: the cases kept are the ones that prove
# something, the whole within ~8 minutes). Checked besides equality:
#   - topocoll's algorithms really ran (TOPOCOLL_STATS counts), MPI_Alltoall
#     by topod's schedule too (both MPIs); each family forced, and every
#     candidate plan in turn (TOPOCOLL_TEST_CYCLE);
#   - the choice by prediction: TOPOCOLL_VERBOSE shows predicted times and
#     what ran; with a margin no variant can meet, everything falls back;
#   - TOPOCOLL_TOPOLOGY (a platform file) instead of topod, topod down;
#   - the same source built with smpicc runs in SMPI on topod's platform;
#   - every predefined reduction on every predefined type, and user-defined
#     ones (one not commutative), through every candidate plan in turn
#     (tests/mpi/reduce_check.c), under both MPIs; double sums left to
#     the MPI with TOPOCOLL_ALLREDUCE_FLOAT=0;
#   - TOPOCOLL_DISABLE and TOPOCOLL=off leave those calls to the MPI;
#   - topod down, slow (never answers), and a host topod does not know:
#     every call the MPI's, results equal, and TOPOCOLL_VERBOSE says why;
#   - the wrong build preloaded (MPICH's under Open MPI) is refused, with
#     one line naming the right one (t_devpath_lab.sh tries every pairing);
#   - with the profiler: libtopocollprof.so (both in one library) runs
#     topocoll's algorithms and writes the profiler's report unchanged;
#   - the library under AddressSanitizer and UBSan (Open MPI and MPICH),
#     every candidate plan in turn (reduce_check is not run under them:
#     its thousands of Allreduces took minutes there).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
YIELD=$ROOT/build/tests/lib/libucx_yield.so
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for f in build/bin/topod build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/asan/libtopocoll.so build/tests/lib/libucx_yield.so \
	build/lib/asan/mpich/libtopocoll.so \
	build/lib/libtopocollprof.so build/lib/mpich/libtopocollprof.so \
	build/tests/mpi/coll_check build/tests/mpich/coll_check build/tests/mpi/reduce_check build/tests/mpich/reduce_check \
	build/bench/bench_build; do
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

# run TAG MPI NP MAP [ENV=VAL ...]: coll_check (REDUCE=1: reduce_check) under one MPI with the library
run() {
	local tag=$1 mpi=$2 np=$3 map=$4 rc=0 e args=() prog=coll_check want=24
	[ -n "${REDUCE:-}" ] && prog=reduce_check want=6
	shift 4
	if [ "$mpi" = mpich ]; then
		# idle ranks yield (tests/lib/ucx_yield.c), after whatever else is preloaded
		local pre=${LD_PRELOAD:+$LD_PRELOAD:}$YIELD
		for e in "$@"; do [ "${e%%=*}" = LD_PRELOAD ] && pre="${e#*=}:$YIELD"; done
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do
			[ "${e%%=*}" = LD_PRELOAD ] || args+=(-genv "${e%%=*}" "${e#*=}")
		done
		args+=(-genv LD_PRELOAD "$pre")
		timeout 300 mpiexec.mpich -launcher fork -n "$np" "${args[@]}" build/tests/mpich/$prog \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	else
		for e in TII_SERVERS=$TII_SERVERS TII_HOSTMAP=$map TOPOCOLL_STATS=1 "$@"; do args+=(-x "$e"); done
		timeout 300 mpirun --oversubscribe -np "$np" "${args[@]}" build/tests/mpi/$prog \
			>"$d/$tag.out" 2>"$d/$tag.err" </dev/null &
	fi
	MPI_PID=$!
	local t0=$SECONDS
	wait "$MPI_PID" || rc=$?
	MPI_PID=
	echo "# $tag: $((SECONDS - t0)) s"
	local good bad
	good=$(grep -c '^ok - ' "$d/$tag.out")
	bad=$(grep -c '^not ok - ' "$d/$tag.out")
	if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -ge "$want" ]; then
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
# Each shape under one MPI (Open MPI's collectives on the even ones, MPICH's
# on the prime one with uneven leaves): every MPI job costs seconds on 2 cores.
for np in 12 16; do
	if run "ompi-$np" ompi "$np" "$d/$np.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0; then
		read -r h n < <(stat "ompi-$np" bcast)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: bcast ran hierarchical ($h calls)" || nok "ompi-$np: bcast hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" gather)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: gather ran hierarchical ($h calls)" || nok "ompi-$np: gather hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" scatter)
		[ "${h:-0}" -gt 0 ] && ok "ompi-$np: scatter ran hierarchical ($h calls)" || nok "ompi-$np: scatter hierarchical: $h/$n"
		read -r h n < <(stat "ompi-$np" allreduce)
		# 4 non-empty counts x 5 reductions (double sums too: TOPOCOLL_ALLREDUCE_FLOAT's default)
		[ "${h:-0}" -eq 20 ] && [ "${n:-1}" -eq 0 ] && ok "ompi-$np: allreduce: all 20 topocoll's" ||
			nok "ompi-$np: allreduce counts $h hierarchical, $n native (want 20, 0)"
		read -r h n < <(stat "ompi-$np" alltoall)
		[ "${h:-0}" -eq 6 ] && ok "ompi-$np: alltoall ran topod's schedule (6 calls)" || nok "ompi-$np: alltoall by schedule: $h/$n"
	fi
done
run mpich-7 mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_MIN_BYTES=0 &&
	read -r h n < <(stat mpich-7 gather) &&
	{ [ "${h:-0}" -gt 0 ] && ok "mpich-7: gather ran hierarchical ($h calls)" || nok "mpich-7: gather hierarchical: $h/$n"; } &&
	read -r h n < <(stat mpich-7 alltoall) &&
	{ [ "${h:-0}" -eq 6 ] && ok "mpich-7: alltoall ran topod's schedule (6 calls)" || nok "mpich-7: alltoall by schedule: $h/$n"; }

# A family forced (TOPOCOLL_CHOICE; its parameters by prediction): trees
# by levels and pipelined chains. Then every candidate plan in turn
# (TOPOCOLL_TEST_CYCLE: each call the next one of every family, trees of
# every shape, chains, scatter-allgather, recursive doubling, Rabenseifner,
# rings, by hosts), results equal every time, under both MPIs.
for v in hier pipe; do
	run "force-$v" ompi 16 "$d/16.map" LD_PRELOAD="$LIB" TOPOCOLL_CHOICE=$v TOPOCOLL_VERBOSE=1 &&
		read -r h n < <(stat "force-$v" bcast) &&
		{ [ "${h:-0}" -eq 16 ] && [ "${n:-1}" -eq 0 ] &&
			grep -q "^topocoll: bcast on a communicator of 16 ranks (5 leaves): .*: TOPOCOLL_CHOICE=$v" "$d/force-$v.err" &&
			ok "TOPOCOLL_CHOICE=$v: every non-empty bcast ran it, results equal" ||
			{ nok "force $v: bcast $h/$n"; grep '^topocoll: bcast' "$d/force-$v.err" | head -3 | sed 's/^/# /'; }; }
done
run cycle-all ompi 16 "$d/16.map" LD_PRELOAD="$LIB" TOPOCOLL_TEST_CYCLE=1
run mpich-cycle mpich 7 "$d/7.map" LD_PRELOAD="$MLIB" TOPOCOLL_TEST_CYCLE=1

# Allreduce, every predefined operation on every predefined type it takes
# and user-defined ones (one not commutative), tests/mpi/reduce_check.c:
# every candidate plan in turn, under both MPIs, reversed rank order too.
# MPICH on 4 ranks (2 leaves, 3 hosts, one with 2 ranks): its ranks
# busy-poll, and oversubscribed on 2 cores reduce_check's thousands of calls
# took over 5 minutes on 12 ranks, 4.4 on 7, 1.5 on 4 (a loaded machine).
head -4 "$d/7.map" >"$d/4.map"
for mpi in ompi mpich; do
	l=$LIB np=12
	[ "$mpi" = mpich ] && l=$MLIB np=4
	REDUCE=1 run "reduce-$mpi" $mpi $np "$d/$np.map" LD_PRELOAD="$l" TOPOCOLL_TEST_CYCLE=1 &&
		read -r h n < <(stat "reduce-$mpi" allreduce) &&
		{ [ "${h:-0}" -gt 800 ] && ok "reduce-$mpi: $h Allreduces topocoll's ($n the MPI's: Open MPI's saturating small-integer sums)" ||
			nok "reduce-$mpi: $h topocoll's, $n the MPI's"; }
done

# By prediction (the default): rank 0 says per size class what is
# predicted and what runs; Alltoall (every block size, by
# TOPOCOLL_ALLTOALL_MIN=0) asks topod per size class for its schedule with
# steps in flight against Open MPI's own Alltoall at that size, and says
# both predictions and which runs.
run predict ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_VERBOSE=1 TOPOCOLL_ALLTOALL_MIN=0
P="on a communicator of 12 ranks (3 leaves)"
nh=$(grep "^topocoll: [a-z]* $P: .*: [0-9]* bytes: predicted [0-9.]* us the MPI's own, [0-9.]* us .* ([0-9.]*x)$" "$d/predict.err" |
	grep -vc "^topocoll: [a-z]* $P: the MPI's own")
nn=$(grep -c "^topocoll: [a-z]* $P: the MPI's own: [0-9]* bytes: predicted [0-9.]* us the MPI's own" "$d/predict.err")
if grep -q "^topocoll: leaf switches known from topod; delays: topod's routes and rates (6 hosts)" "$d/predict.err" &&
	[ "$nh" -gt 0 ] && [ "$nn" -gt 0 ] &&
	grep -q "^topocoll: alltoall $P: [A-Za-z' ]*: topod predicts [0-9.]* us [a-z0-9]* with [1-9][0-9]* steps\{0,1\} in flight, [0-9.]* us the MPI's own ([a-z]*[:0-9]*) for [0-9]*-byte blocks ([0-9.]*x" "$d/predict.err"; then
	ok "prediction: routes from topod; $nh size classes predicted faster topocoll's way, $nn left to the MPI; alltoall: topod's schedule against Open MPI's own at the block size"
else
	nok "prediction lines ($nh hierarchical, $nn the MPI's)"
	{ grep '^topocoll' "$d/predict.err" | head -6; grep -m2 '^topocoll: alltoall' "$d/predict.err"; } | sed 's/^/# /'
fi
# A margin no variant can meet: every call falls back to the MPI's own.
run margin ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MARGIN=100 TOPOCOLL_VERBOSE=1
grep -q "bcast 0 hierarchical .* gather 0 hierarchical .* scatter 0 hierarchical .* allreduce 0 hierarchical" "$d/margin.err" &&
	grep -q "^topocoll: [a-z]* $P: the MPI's own: [0-9]* bytes: .* us .* (.*x, below the margin)" "$d/margin.err" &&
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

# What the library adds to each communicator whose Alltoalls stay the
# MPI's (bench/coll/comm_cost.c): 20 communicators of MPI_COMM_WORLD's
# ranks with two 64 KiB Alltoalls each, the schedule predicted no faster
# than the MPI's own. A dup inherits the world's state and costs nothing;
# one made by MPI_Comm_split costs less than one MPI_Comm_split (a private
# communicator made anyway, or the steps shared though nobody runs them,
# cost 2.3 splits before). Where the schedule is predicted faster, it runs
# on every one of them. SMPI's times are deterministic.
smpi_comm_cost() {
	local k=20 b=65536 m f
	if ! smpicc -std=c11 -O2 -Wall -Wextra -Werror -DTOPOCOLL_SMPI -Icoll -Icommon -Ianalysis -Isnapshot \
		-o "$d/comm_cost" bench/coll/comm_cost.c coll/*.c -lm >"$d/comm_cost.err" 2>&1; then
		nok "smpicc comm_cost"; tail -3 "$d/comm_cost.err" | sed 's/^/# /'
		return
	fi
	# a shift schedule for nh ranks: step s, rank i sends to i + s
	{
		echo "# OK algo=route bytes=$b time_us=100 window=1 native=smpi-ompi native_algo=linear native_time_us=100 fallback=native"
		for s in $(seq 1 $((nh - 1))); do
			for i in $(seq 0 $((nh - 1))); do printf ' %d:%d' "$i" $(((i + s) % nh)); done
			echo
		done
	} >"$d/nk.sched"
	sed 's/ time_us=100 / time_us=10 /; s/ fallback=native//' "$d/nk.sched" >"$d/kp.sched"
	declare -A us
	# tag: mode, schedule, how the communicators are made
	for m in "split split - dup" "plain plain - dup" "plain-split plain - split" "nk lib nk dup" \
		"nk-split lib nk split" "kp lib kp dup" "kp-split lib kp split"; do
		set -- $m
		f=
		[ "$3" != - ] && f="$d/$3.sched"
		TOPOCOLL_TOPOLOGY="$d/16.xml" TOPOCOLL_SCHEDULE="$f" TOPOCOLL_MODEL=smpi-ompi TOPOCOLL_VERBOSE=1 \
			timeout 120 smpirun "${SMPI_CFG[@]}" --cfg=smpi/coll-selector:ompi -platform "$d/16.xml" \
			-hostfile "$d/16.hosts" -np "$nh" "$d/comm_cost" "$2" "$k" "$b" "$4" >"$d/cc-$1.out" 2>"$d/cc-$1.err"
		us[$1]=$(sed -n 's/^comm_cost .* us=\([0-9.]*\) ok=1$/\1/p' "$d/cc-$1.out")
	done
	per() { awk -v a="$1" -v b="$2" -v k="$k" 'BEGIN { printf "%.1f", (a - b) / k }'; }
	if [ -n "${us[split]}" ] && [ -n "${us[plain]}" ] && [ -n "${us[nk]}" ] && [ -n "${us[nk-split]}" ] &&
		[ -n "${us[plain-split]}" ] && ! grep -q "topod's schedule" "$d/cc-nk.err" "$d/cc-nk-split.err" &&
		awk -v s="${us[split]}" -v p="${us[plain]}" -v n="${us[nk]}" -v ps="${us[plain-split]}" -v ns="${us[nk-split]}" \
			'BEGIN { exit !(n - p < 0.001 && ns - ps < s) }'; then
		ok "SMPI: $k communicators with their Alltoalls left to the MPI: each dup $(per "${us[nk]}" "${us[plain]}") us with the library, each split $(per "${us[nk-split]}" "${us[plain-split]}") us, below one MPI_Comm_split ($(per "${us[split]}" 0) us)"
	else
		nok "per-communicator cost: split '${us[split]}', dups plain '${us[plain]}' lib '${us[nk]}', splits plain '${us[plain-split]}' lib '${us[nk-split]}' us for $k"
		grep -m3 "topocoll\|rror" "$d/cc-nk.err" "$d/cc-nk-split.err" | sed 's/^/# /'
	fi
	if [ -n "${us[kp]}" ] && [ -n "${us[kp-split]}" ] && [ "$(grep -c "alltoall .*topod's schedule" "$d/cc-kp.err")" -eq $((k + 1)) ] &&
		[ "$(grep -c "alltoall .*topod's schedule" "$d/cc-kp-split.err")" -eq $((k + 1)) ]; then
		ok "SMPI: where the schedule is predicted faster it runs on the world and each of the $k dups and splits, every block right"
	else
		nok "kept schedule: '${us[kp]}' '${us[kp-split]}' us, $(grep -c "topod's schedule" "$d/cc-kp.err") and $(grep -c "topod's schedule" "$d/cc-kp-split.err") of $((k + 1)) communicators"
		grep -m3 "topocoll\|rror" "$d/cc-kp.err" | sed 's/^/# /'
	fi
}

# The same source under SMPI (bench/coll/bench.c): built with smpicc, run on
# topod's platform of 16 hosts on 5 leaves, pipelined Bcast forced.
if command -v smpicc >/dev/null; then
	. tests/lib/smpi.sh
	sort -u "$d/16.map" >"$d/16.hosts"
	build/bin/topoquery -s "127.0.0.1:$PORT" simgrid $(cat "$d/16.hosts") >"$d/16.xml" 2>/dev/null
	nh=$(wc -l <"$d/16.hosts")
	if smpicc -std=c11 -O2 -Wall -Wextra -Werror -DTOPOCOLL_SMPI -Icoll -Icommon -Ianalysis -Isnapshot -o "$d/smpibench" bench/coll/bench.c coll/*.c -lm \
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
	smpi_comm_cost
else
	echo "ok - # SKIP smpicc not installed"
fi

# Floating-point reductions left to the MPI when asked (TOPOCOLL_ALLREDUCE_FLOAT=0):
# then the 5 double sums are the MPI's, byte for byte (coll_check compares them).
run float ompi 12 "$d/12.map" LD_PRELOAD="$LIB" TOPOCOLL_MIN_BYTES=0 TOPOCOLL_ALLREDUCE_FLOAT=0
read -r h n < <(stat float allreduce)
[ "${h:-0}" -eq 16 ] && [ "${n:-0}" -eq 5 ] && ok "TOPOCOLL_ALLREDUCE_FLOAT=0: double sums the MPI's, byte for byte" ||
	nok "TOPOCOLL_ALLREDUCE_FLOAT=0: $h hierarchical, $n native (want 16, 5)"
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
# The wrong build.
rc=0
timeout 60 mpirun --oversubscribe -np 2 -x LD_PRELOAD="$MLIB" build/tests/mpi/coll_check >"$d/wrong.out" 2>"$d/wrong.err" </dev/null || rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^ok' "$d/wrong.out" &&
	[ "$(grep -c 'is built for MPICH, but the program runs Open MPI; preload the Open MPI build instead' "$d/wrong.err")" = 1 ] &&
	ok "MPICH's build preloaded under Open MPI stops with one line naming the Open MPI build (exit $rc)" ||
	{ nok "MPICH's build under Open MPI: exit $rc"; sed 's/^/# /' "$d/wrong.err" | head -3; }

# Under AddressSanitizer and UBSan (Open MPI's own leaks are not ours).
ASAN_RT=$(gcc -print-file-name=libasan.so)
UBSAN_RT=$(gcc -print-file-name=libubsan.so)
run asan ompi 12 "$d/12.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/libtopocoll.so" TOPOCOLL_TEST_CYCLE=1 \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan.err" &&
	ok "under AddressSanitizer and UBSan, every candidate plan in turn: no error" || { nok "AddressSanitizer/UBSan"; grep -m3 "ERROR\|runtime error" "$d/asan.err" | sed 's/^/# /'; }
# MPICH's build too, on the prime shape (uneven leaves)
run asan-mpich mpich 7 "$d/7.map" LD_PRELOAD="$ASAN_RT:$UBSAN_RT:$ROOT/build/lib/asan/mpich/libtopocoll.so" TOPOCOLL_TEST_CYCLE=1 \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 >/dev/null &&
	read -r h n < <(stat asan-mpich gather) && [ "${h:-0}" -gt 0 ] &&
	! grep -q "ERROR: AddressSanitizer\|runtime error:" "$d/asan-mpich.err" &&
	ok "MPICH under AddressSanitizer and UBSan: no error ($h gathers hierarchical)" ||
	{ nok "MPICH AddressSanitizer/UBSan"; grep -m3 "ERROR\|runtime error" "$d/asan-mpich.err" | sed 's/^/# /'; }

[ "$failed" -eq 0 ]
