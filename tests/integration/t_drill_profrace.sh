#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_drill_profrace.sh - issue 21, item 11: the profiler's world-rank
# translation table, missed by 4 threads at once on a fresh communicator
# (MPI_THREAD_MULTIPLE), is built and set once; setting it again would free
# the first table (the attribute's delete callback) under the threads
# reading it. tests/drill/prof_interpose.c, preloaded before libtopoprof,
# widens the window (2 ms per PMPI_Comm_size) and counts set_attr calls that
# replace a table. Before the fix (da591c4^): 80 sets, 60 replaced in 20
# rounds; now 20 and 0. Also: every message counted, TOPOPROF_QUIET holds.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
LIB=$ROOT/build/lib/libtopoprof.so
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
for t in mpicc.openmpi mpirun python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
[ -e "$LIB" ] || { nok "$LIB built (make all tests)"; exit 1; }
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
d=$(mktemp -d)
MPI_PID=
cleanup() {
	[ -n "$MPI_PID" ] && kill -TERM "$MPI_PID" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT
W="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Werror"
mpicc.openmpi $W -fPIC -shared -o "$d/interpose.so" tests/drill/prof_interpose.c -ldl &&
	mpicc.openmpi $W -pthread -o "$d/race" tests/drill/prof_race.c ||
	{ nok "tests/drill/prof_interpose.c and prof_race.c build"; exit 1; }

timeout 90 mpirun --oversubscribe -np 1 -x LD_PRELOAD="$d/interpose.so:$LIB" -x TOPOPROF_OUT="$d/rep" \
	-x TOPOPROF_QUIET=1 -x TII_SERVERS=127.0.0.1:1 "$d/race" >"$d/out" 2>"$d/err" </dev/null &
MPI_PID=$!
wait "$MPI_PID"
rc=$?
MPI_PID=
if grep -q "^skip" "$d/out"; then
	echo "skip - $(grep '^skip' "$d/out")"
	exit 0
fi
line=$(grep -o "set_attr [0-9]*, replaced [0-9]*" "$d/err")
sets=$(echo "$line" | awk '{print $2}' | tr -d ,)
rep=$(echo "$line" | awk '{print $4}')
[ "$rc" -eq 0 ] && [ "${sets:-0}" -eq 20 ] && [ "${rep:-1}" -eq 0 ] &&
	ok "4 threads miss the translation cache of 20 fresh communicators together: $sets tables set, $rep replaced under a reader (before the fix: 80 set, 60 replaced)" ||
	nok "translation tables: exit $rc, '$line' (want 20 set, 0 replaced); $(tail -c 300 "$d/err")"
msgs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["p2p"]["messages"])' "$d/rep.json" 2>/dev/null)
[ "$msgs" = 80 ] && ok "every message counted: $msgs of 80 (4 threads x 20 rounds)" ||
	nok "messages in the report: '${msgs}', want 80"
grep -q "topoprof: report in" "$d/err" && nok "TOPOPROF_QUIET=1 still printed a report line" ||
	ok "TOPOPROF_QUIET=1: no report line"
exit $fail
