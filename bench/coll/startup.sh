#!/usr/bin/env bash
# bench/coll/startup.sh [N ...] - what topocoll adds to MPI_Init
# (docs/performance.md, beside Subramoni 2013's Table 4.2), on this machine: a real topod
# serving the k=24 fat tree (3,456 hosts, 12 per leaf), job hosts the
# first N (default 64 256 1024), one rank per host, named by TII_HOSTMAP.
#   rank 0's questions (every host's leaf; the delays: topod's SimGrid
#   platform of the hosts, or above 128 hosts of one host per leaf) are
#   timed at each N by startup_tii.c without N processes (median of 5);
#   the whole MPI_Init, and the first collective on a split communicator,
#   by startup.c under MPICH at 64 ranks with and without the library
#   (oversubscribed on this machine's cores, so the MPI parts are the
#   machine's scheduling more than the library's work).
set -u
cd "$(dirname "$0")/../.." || exit 1
[ $# -gt 0 ] || set -- 64 256 1024
d=$(mktemp -d "${TMPDIR:-/tmp}/coll_startup.XXXXXX") || exit 1
TOPOD_PID=
cleanup() {
	[ -n "$TOPOD_PID" ] && kill -TERM "$TOPOD_PID" 2>/dev/null && wait "$TOPOD_PID" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
build/bench/bench_build 24 1024 "$d/k24.snap" >/dev/null 2>&1 || { echo "bench_build failed"; exit 1; }
build/bin/topod -f -l 127.0.0.1:0 --load "$d/k24.snap" >"$d/topod.out" 2>"$d/topod.log" &
TOPOD_PID=$!
for _ in $(seq 100); do grep -q '^ready port=' "$d/topod.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^ready port=//p' "$d/topod.out")
[ -n "$PORT" ] || { echo "topod did not start"; exit 1; }
export TII_SERVERS=127.0.0.1:$PORT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf 'hosts\n' | nc -q 2 127.0.0.1 "$PORT" | tail -n +2 | awk '{print $1}' >"$d/hosts"
mpicc.openmpi -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Icoll -Icommon -Ilibtii -Ianalysis -Isnapshot -o "$d/startup_tii" \
	bench/coll/startup_tii.c coll/*.c build/lib/libtii.a -pthread -lm || exit 1
mpicc.mpich -std=c11 -O2 -Wall -Wextra -Werror -o "$d/startup" bench/coll/startup.c || exit 1
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf '%-6s %-8s %-12s %-12s %s\n' ranks nodes "leaves ms" "delays ms" source
for n in "$@"; do
	"$d/startup_tii" "$d/hosts" "$n" 5 >"$d/tii-$n.out" 2>&1
	l=$(sed -n 's/.* leaves_ms=\([0-9.]*\).*/\1/p' "$d/tii-$n.out" | med)
	m=$(sed -n 's/.* delays_ms=\([0-9.]*\).*/\1/p' "$d/tii-$n.out" | med)
	printf '%-6s %-8s %-12s %-12s %s\n' "$n" "$(sed -n '1s/.* nodes=\([0-9]*\).*/\1/p' "$d/tii-$n.out")" "$l" "$m" \
		"$(sed -n '1s/.* source=//p' "$d/tii-$n.out")"
done
head -64 "$d/hosts" >"$d/64.map"
for lib in "" "$PWD/build/lib/mpich/libtopocoll.so"; do
	label="without topocoll:"
	[ -n "$lib" ] && label="with topocoll:"
	timeout 300 mpiexec.mpich -launcher fork -n 64 -genv TII_HOSTMAP "$d/64.map" -genv TOPOCOLL_VERBOSE 2 \
		-genv LD_PRELOAD "$lib" "$d/startup" 2>&1 | grep '^startup\|MPI_Init:' | sed "s|^|$label |"
done
