#!/usr/bin/env bash
# prof_overhead.sh [REPS] - topoprof's overhead on a small-message rate
# benchmark (bench/prof_rate.c: 8-byte MPI_Isend, window 64).
#
#   1. whole runs, alternating without / with LD_PRELOAD=libtopoprof.so, 2
#      ranks: messages per second, the median of the per-pair ratios and the
#      best runs. On a shared 2-core machine other jobs take the cores for
#      whole runs, so this is reported but is not what decides;
#   2. in one process ("ab" mode, 1 rank streaming to itself and 2 ranks):
#      400 finely interleaved rounds counted / not counted (MPI_Pcontrol),
#      the least time per message of each; with the profiler the difference
#      is its counting cost; without it (control) MPI_Pcontrol does nothing;
#      plus the interposition alone (TOPOPROF_DISABLE=1) against no preload.
set -u
cd "$(dirname "$0")/.." || exit 1
reps=${1:-7}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LIB=$PWD/build/lib/libtopoprof.so
PRE=(-x LD_PRELOAD="$LIB" -x TII_SERVERS=127.0.0.1:1 -x TOPOPROF_QUIET=1 -x TOPOPROF_OUT="$tmp/rep")
for ((i = 0; i < reps; i++)); do
	mpirun --oversubscribe -np 2 build/bench/prof_rate 10000 | sed -n 's/.* rate=\([0-9]*\).*/\1/p' >>"$tmp/off"
	mpirun --oversubscribe -np 2 "${PRE[@]}" build/bench/prof_rate 10000 2>/dev/null |
		sed -n 's/.* rate=\([0-9]*\).*/\1/p' >>"$tmp/on"
	for np in 1 2; do
		mpirun --oversubscribe -np $np build/bench/prof_rate 0 ab >>"$tmp/ab_off_$np"
		mpirun --oversubscribe -np $np "${PRE[@]}" build/bench/prof_rate 0 ab 2>/dev/null >>"$tmp/ab_on_$np"
		mpirun --oversubscribe -np $np -x LD_PRELOAD="$LIB" -x TOPOPROF_DISABLE=1 build/bench/prof_rate 0 ab \
			>>"$tmp/ab_dis_$np"
	done
done
python3 - "$tmp" <<'PY'
import re, statistics, sys
d = sys.argv[1]
off = [float(x) for x in open(d + "/off")]
on = [float(x) for x in open(d + "/on")]
r = statistics.median(b / a for a, b in zip(off, on))
print("1. whole runs, 2 ranks: without median %.0f (best %.0f) msg/s; with median %.0f (best %.0f) msg/s; "
      "median per-pair ratio %.3f (overhead %.1f %%)" % (statistics.median(off), max(off), statistics.median(on), max(on),
                                                      r, 100 * (1 - r)))


def ab(f):
    v = [tuple(map(float, re.findall(r"=(-?[0-9.]+)", l)[:2])) for l in open(f)]
    return min(x[0] for x in v), min(x[1] for x in v)


for np in (1, 2):
    p0, c0 = ab("%s/ab_off_%d" % (d, np))
    pd, cd = ab("%s/ab_dis_%d" % (d, np))
    p1, c1 = ab("%s/ab_on_%d" % (d, np))
    base = min(p0, c0)
    print("2. %d rank%s, ns per message (least of %d runs): no profiler %.1f / %.1f (control); preloaded but disabled "
          "%.1f; topoprof paused %.1f, counting %.1f -> counting costs %.1f ns, %.1f %% over no profiler" % (
              np, "" if np == 1 else "s", len(open("%s/ab_on_%d" % (d, np)).readlines()), p0, c0, min(pd, cd), p1, c1,
              c1 - p1, 100 * (c1 - base) / base))
PY
