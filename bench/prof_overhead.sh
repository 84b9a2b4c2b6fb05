#!/usr/bin/env bash
# prof_overhead.sh [PAIRS] [ITERS] - topoprof's overhead on a small-message
# rate benchmark (bench/prof_rate.c, 8-byte MPI_Isend, window 64, 2 ranks):
# PAIRS alternating runs without and with LD_PRELOAD=libtopoprof.so, prints
# each rate, the medians and the best runs. On a shared, noisy machine (other
# jobs take the cores for whole runs) the best of many alternating runs is
# the least disturbed figure; the median is printed too.
set -u
cd "$(dirname "$0")/.." || exit 1
pairs=${1:-9}
iters=${2:-20000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < pairs; i++)); do
	mpirun --oversubscribe -np 2 build/bench/prof_rate "$iters" | sed -n 's/.*rate=//p' >>"$tmp/off"
	mpirun --oversubscribe -np 2 -x LD_PRELOAD="$PWD/build/lib/libtopoprof.so" -x TII_SERVERS=127.0.0.1:1 \
		-x TOPOPROF_OUT="$tmp/rep" build/bench/prof_rate "$iters" 2>/dev/null | sed -n 's/.*rate=//p' >>"$tmp/on"
done
python3 - "$tmp/off" "$tmp/on" <<'PY'
import statistics, sys
off = [float(x) for x in open(sys.argv[1])]
on = [float(x) for x in open(sys.argv[2])]
mo, mn = statistics.median(off), statistics.median(on)
print("without profiler: median %.0f msg/s  (runs: %s)" % (mo, " ".join("%.0f" % x for x in off)))
print("with topoprof:    median %.0f msg/s  (runs: %s)" % (mn, " ".join("%.0f" % x for x in on)))
print("overhead (median): %.1f %%" % (100.0 * (mo - mn) / mo))
bo, bn = max(off), max(on)
print("best runs: without %.0f, with %.0f msg/s; overhead (best of %d): %.1f %%" % (bo, bn, len(off), 100.0 * (bo - bn) / bo))
PY
