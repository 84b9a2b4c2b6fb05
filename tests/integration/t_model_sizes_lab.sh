#!/usr/bin/env bash
# The cost model at every message size against SMPI, on a small lab
# (issue 34 items 1-2): XGFT(2; 4,8; 1,2) under ftree (32 hosts, 8 leaves of
# 4, 2:1; ibsim + OpenSM + the plugin + topod), a contiguous and a fragmented
# 16-host job, blocks of 1 KiB, 8 KiB, 32 KiB, 256 KiB and 1 MiB.
#   - bench/jobspeed/sizes.py: topod's prediction of the MPI's own Alltoall
#     under SMPI's Open MPI and MPICH selectors, and of its route schedule
#     with 1, 2, 4 and 8 steps in flight, is within 5 % of SMPI's time of
#     the same thing, every one of them (the model drifting fails this);
#   - bench/coll/run.py: libtopocoll's Alltoall, with its defaults and the
#     schedule files it would get from topod, is never below 0.98x of the
#     MPI's own at any size under either selector; where it runs the
#     schedule, SMPI's time is within 5 % of what topod predicted; at 1 KiB
#     under MPICH's selector (its scattered exchange, 4 pairs in flight) it
#     runs the schedule and wins; it is within 1.10x of topod's route bound
#     at every size, and at least 1.25x faster wherever the MPI's own is
#     more than 1.25x above the bound from 32 KiB;
#   - the job where topod's default was furthest from the bound: ft3
#     (3-level, 2:1 at each level, ftree), 64 contiguous hosts, 1 MiB,
#     under MPICH's selector (its shift at 1.30x the bound): the library
#     within 1.03x of the bound and at least 1.25x faster than the MPI's
#     own (it runs route's order for steps in flight, docs/cost-model.md
#     "The order of route's steps"; the order for one step at a time gave
#     1.248x);
#   - libtopocoll's Allgather grid and its Gather through the root leaf's
#     hosts, re-timed on the exported platform (details below);
#   - a TERM in the middle leaves no lab behind (run.py ends it by PID).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/driver.bash
driver_init t_model_sizes

# run TAG SECS ARGS...: a driver in the background, waited for SECS.
run() {
	local tag=$1 secs=$2
	shift 2
	driver "$tag" "$@"
	wait_driver "$secs"
	local rc=$?
	if [ $rc -eq 124 ]; then
		nok "$tag did not finish within $secs s"
		return 1
	fi
	[ $rc -eq 0 ] || { nok "$tag exited $rc"; tail -5 "$R/$tag.err" | sed 's/^/# /'; return 1; }
	return 0
}

SIZES=1024,8192,32768,262144,1048576
if run sizes 900 bench/jobspeed/sizes.py "$R/sizes" --fabrics ft2-small --sizes 16 --bytes $SIZES; then
	python3 - "$R/sizes/sizes.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = 2 * 5 * 6  # jobs x sizes x (two selectors' own + four windows)
done = [r for r in rows if r["smpi"] and r["pred"]]
print(("ok" if len(done) == want else "not ok") + " - every prediction and SMPI run is there: %d of %d" % (len(done), want))
off = [(float(r["smpi"]) / float(r["pred"]), r) for r in done]
bad = [(e, r) for e, r in off if abs(e - 1) > 0.05]
worst = max(off, key=lambda x: abs(x[0] - 1)) if off else (1, {})
print(("ok" if not bad else "not ok") + " - every prediction within 5 %% of SMPI (worst %.3f: %s %s %s)"
      % (worst[0], worst[1].get("shape"), worst[1].get("bytes"), worst[1].get("variant")))
for e, r in bad[:5]:
    print("# off: %s %s %s %s: SMPI %s predicted %s (%.3f)" % (r["shape"], r["bytes"], r["variant"], r["algo"],
                                                             r["smpi"], r["pred"], e))
algos = {(r["variant"], r["bytes"]): r["algo"] for r in rows}
# the selectors' own algorithms at 16 ranks, as SMPI 3.32's tables say
exp = {("native-ompi", "1024"): "linear", ("native-ompi", "1048576"): "linear",
       ("native-mpich", "1024"): "scatter:4", ("native-mpich", "1048576"): "shift"}
wrong = [k for k, v in exp.items() if algos.get(k) != v]
print(("ok" if not wrong else "not ok") + " - the MPIs' own algorithms are the selectors' (%s)"
      % ", ".join("%s %s=%s" % (k[0], k[1], algos.get(k)) for k in exp))
EOF
fi

if run coll 900 bench/coll/run.py "$R/coll" --fabrics ft2-small --sizes 16 --shapes contiguous,fragmented \
	--ops alltoall --bytes $SIZES; then
	python3 - "$R/coll/coll.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["op"] == "alltoall"]
print(("ok" if len(rows) == 2 * 2 * 5 else "not ok") + " - libtopocoll's Alltoall ran every case: %d of 20" % len(rows))
low = [r for r in rows if float(r["speedup"]) < 0.98]
print(("ok" if not low else "not ok") + " - never below 0.98x of the MPI's own (lowest %.3f)"
      % min(float(r["speedup"]) for r in rows))
for r in low:
    print("# %s %s %s: %.3f" % (r["shape"], r["selector"], r["bytes"], float(r["speedup"])))
taken = [r for r in rows if r["variant"] == "sched"]
off = [r for r in taken if abs(float(r["topo"]) / float(r["pred"]) - 1) > 0.05]
print(("ok" if taken and not off else "not ok") + " - where it runs the schedule (%d cases), SMPI within 5 %% of topod's "
      "prediction" % len(taken))
small = [r for r in rows if r["selector"] == "mpich" and r["bytes"] == "1024"]
print(("ok" if small and all(r["variant"] == "sched" and float(r["speedup"]) > 1.02 for r in small) else "not ok")
      + " - at 1 KiB under MPICH's selector the schedule runs and wins (%s)"
      % ", ".join("%s %s %.2fx" % (r["shape"], r["variant"], float(r["speedup"])) for r in small))
# over topod's route bound of the job (bound_us of the schedule files)
bound = [r for r in rows if r["bound"] and float(r["bound"]) > 0]
print(("ok" if len(bound) == len(rows) else "not ok") + " - every case has topod's route bound: %d of %d"
      % (len(bound), len(rows)))
over = max((float(r["over_bound"]), r["shape"], r["selector"], r["bytes"]) for r in bound) if bound else (0,)
print(("ok" if bound and over[0] <= 1.10 else "not ok") + " - the library's Alltoall within 1.10x of the route bound "
      "at every size (worst %.3f: %s)" % (over[0], " ".join(over[1:])))
far = [r for r in bound if int(r["bytes"]) >= 32768 and float(r["native"]) / float(r["bound"]) > 1.25]
miss = [r for r in far if float(r["speedup"]) < 1.25]
print(("ok" if not miss else "not ok") + " - where the MPI's own is more than 1.25x above the bound at 32 KiB and more "
      "(%d cases), the library at least 1.25x faster%s" % (len(far), "".join(
          "; not %s %s %s: %.2fx" % (r["shape"], r["selector"], r["bytes"], float(r["speedup"])) for r in miss)))
EOF
fi

if run ft3 900 bench/coll/run.py "$R/ft3" --fabrics ft3 --sizes 64 --shapes contiguous --ops alltoall \
	--bytes 1048576 --selectors mpich; then
	python3 - "$R/ft3/coll.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["op"] == "alltoall"]
r = rows[0] if len(rows) == 1 else {}
try:
    far, over, sp = float(r["native"]) / float(r["bound"]), float(r["over_bound"]), float(r["speedup"])
    ok = far > 1.25 and r["variant"] == "sched" and over <= 1.03 and sp >= 1.25
    said = "the MPI's own %.3fx the bound, the library %.4f (%s), %.4fx faster" % (far, over, r["variant"], sp)
except (KeyError, ValueError, ZeroDivisionError) as e:
    ok, said = False, "%d rows, no figures (%r)" % (len(rows), e)
print(("ok" if ok else "not ok") + " - ft3 contiguous 64, MPICH, 1 MiB: %s (want > 1.25, <= 1.03, sched, >= 1.25)"
      % said)
EOF
fi

# Two plans of libtopocoll's other collectives (docs/collectives.md),
# re-timed on the coll run's exported platform of 16 contiguous hosts (4
# leaves of 4), under both selectors:
#   - the Allgather grid: with the ranks in a random order, 1 KiB and
#     4 KiB blocks run the grid (`hier`), at least 1.2x faster than the
#     MPI's own;
#   - the Gather through the root leaf's hosts: on the same platform with
#     every cable between switches 4x slower, 64 KiB and 1 MiB blocks run
#     `hier` at least 1.3x faster than the MPI's own, within 2.5x of the
#     root's cable bound. The MPIs' send every block from the other
#     leaves down the one slow cable their routes into the root share
#     (about 3.4x the bound); the leaf has two such cables, so the relays
#     can halve that part at best (measured 1.42x, 2.40x the bound: they
#     pass their blocks on once all have arrived).
# Nowhere below 0.98x.
P16=$R/coll/runs/ft2-small/contiguous-16
mkdir -p "$R/slow/ft2-small/contiguous-16"
[ -f "$P16/platform.xml" ] && python3 - "$P16" "$R/slow/ft2-small/contiguous-16" <<'EOF'
import re, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
xml = open(src + "/platform.xml").read()
ends = set()
for m in re.finditer(r'<route src="[^"]+" dst="[^"]+"[^>]*>(.*?)</route>', xml, re.S):
    links = re.findall(r'<link_ctn id="([^"]+)"/>', m.group(1))
    ends.update([links[0], links[-1]])
def slow(m):
    if m.group(1) in ends:
        return m.group(0)
    return m.group(0).replace('bandwidth="%sbps"' % m.group(2), 'bandwidth="%dbps"' % (int(m.group(2)) // 4))
out, n = re.subn(r'<link id="([^"]+)" bandwidth="(\d+)bps"[^>]*>', slow, xml)
open(dst + "/platform.xml", "w").write(out)
shutil.copy(src + "/hosts", dst + "/hosts")
print("# %d links, %d of them host cables" % (n, len(ends)))
EOF
if [ ! -f "$P16/platform.xml" ]; then
	nok "no exported platform of the coll run for the grid and the relays"
elif run grid 600 bench/coll/run.py "$R/grid" --platforms "$R/coll/runs" --fabrics ft2-small --sizes 16 \
		--shapes random --ops allgather --bytes 1024,4096 &&
	run relay 600 bench/coll/run.py "$R/relay" --platforms "$R/slow" --fabrics ft2-small --sizes 16 \
		--shapes contiguous --ops gather --bytes 65536,1048576; then
	python3 - "$R/grid/coll.csv" "$R/relay/coll.csv" <<'EOF'
import csv, sys
grid, relay = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
def cells(rs):
    return ", ".join("%s %s %s %.2fx%s" % (r["selector"], r["bytes"], r["variant"], float(r["speedup"]),
                                          " (%.2f)" % float(r["over_bound"]) if r["over_bound"] else "") for r in rs)
ok = len(grid) == 4 and all(r["variant"] == "hier" and float(r["speedup"]) >= 1.2 for r in grid)
print(("ok" if ok else "not ok") + " - Allgather, random rank order, 1 and 4 KiB: the grid, >= 1.2x (%s)" % cells(grid))
ok = len(relay) == 4 and all(r["variant"] == "hier" and float(r["speedup"]) >= 1.3 and float(r["over_bound"]) <= 2.5
                             for r in relay)
print(("ok" if ok else "not ok") + " - Gather, 4x slower switch cables: through the root leaf's hosts, >= 1.3x, "
      "<= 2.5x the bound (%s)" % cells(relay))
low = [r for r in grid + relay if float(r["speedup"]) < 0.98]
print(("ok" if grid and relay and not low else "not ok") + " - none below 0.98x (%s)" % cells(low))
EOF
fi

# A TERM while SMPI runs: the driver ends its lab (by PID) and exits.
driver term bench/jobspeed/sizes.py "$R/term" --fabrics ft2-small --sizes 16 --shapes contiguous --bytes 1048576
for _ in $(seq 1 1200); do grep -q 'native-ompi' "$R/term.err" 2>/dev/null && break; sleep 0.1; done
lab=$(labdir_of term)
kill -TERM "$DRIVER_PID" 2>/dev/null
wait_driver 30
if [ $? -eq 124 ]; then
	nok "sizes.py did not end within 30 s of TERM"
elif [ -z "$lab" ]; then
	nok "sizes.py named no lab before the TERM"
else
	# the lab's processes hold its folder in their command lines; smpirun
	# holds the results folder
	left=$(ps -eo args | grep -F -e "$lab" -e "$R/term" | grep -vc grep)
	for _ in $(seq 1 100); do [ "$left" -eq 0 ] && break; sleep 0.1; left=$(ps -eo args | grep -F -e "$lab" -e "$R/term" | grep -vc grep); done
	[ "$left" -eq 0 ] && [ ! -e "$lab" ] && ok "a TERM during the runs leaves no lab, folder or smpirun behind" ||
		nok "a TERM left $left processes: $(ps -eo pid,args | grep -F -e "$lab" -e "$R/term" | grep -v grep | head -3)"
fi
exit $((failed > 0))
