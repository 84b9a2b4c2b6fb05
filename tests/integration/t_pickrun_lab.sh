#!/usr/bin/env bash
# pick run=route (issue 34 item 3) in SMPI on a lab fabric: ft3 (3-level
# XGFT(3;8,4,4;1,4,2) under ftree, 128 hosts, 2:1 at both levels), a free
# list of 64 hosts drawn at random, 32 wanted, 32 KiB blocks
# (bench/jobspeed/pickrun.py). Each host set runs topod's route all-to-all
# (`schedule route window=auto`, as libtopocoll asks for it) from its file
# in SMPI on the exported platform. Asserts:
#   - the replies say what judged them (judged=bound, judged=route);
#   - the pick with run=route runs at least 0.98x first-fit's hosts and
#     the random picks' mean (SMPI's times: the issue's done-when);
#   - its stated time_us is the route schedule's prediction on the answered
#     hosts (within 1e-3) and within 5 % of SMPI's time;
#   - pickrun.py's lab is gone when it ends.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/driver.bash
driver_init t_pickrun

# The pick takes about 1 s of CPU, but topod's heavy workers run at nice
# +10: with a CI machine's load of 10-20 at nice 0 the same pick waited
# 53-62 s for the CPU (measured with 12 busy loops beside it), past
# topod's default 60 s deadline. The deadline and the wait are raised for
# that; the pick's wall time is printed below.
start=$SECONDS
driver pick bench/jobspeed/pickrun.py "$R/res" --fabrics ft3 --sizes 32 --bytes 32768 --runs bound,route \
	--request-timeout 900
wait_driver 1200
rc=$?
[ "$rc" = 0 ] && ok "pickrun.py finished in $((SECONDS - start)) s" || nok "pickrun.py exited $rc: $(tail -c 600 "$R/pick.err")"
lab=$(labdir_of pick)
[ -n "$lab" ] && [ ! -e "$lab" ] && ok "its lab ($lab) is gone" || nok "lab dir '${lab:-unknown}' still there"
sed 's/^/# /' "$R/pick.err" "$R/pick.out"

csv=$R/res/pickrun.csv
[ -s "$csv" ] || { nok "no $csv"; exit 1; }
python3 - "$csv" <<'PY' || failed=$((failed + 1))
import csv, sys
rows = {r["run"]: r for r in csv.DictReader(open(sys.argv[1]))}
bad = 0
def check(cond, msg):
    global bad
    print(("ok - " if cond else "not ok - ") + msg)
    bad += not cond
check(sorted(rows) == ["bound", "route"], "one row per run: %s" % sorted(rows))
for run, r in sorted(rows.items()):
    check(r["judged"] == run, "pick run=%s replies judged=%s" % (run, r["judged"]))
r = rows.get("route", {})
f = lambda k: float(r[k]) if r.get(k) not in (None, "") else None
tp, tf, tr = f("t_pick"), f("t_ff"), f("t_random")
check(tp and tf and tp > 0 and tf / tp >= 0.98,
      "run=route's pick runs topod's route all-to-all %.3fx first-fit's hosts in SMPI (%s / %s s, >= 0.98)"
      % ((tf / tp) if tp and tf else 0, tf, tp))
check(tp and tr and tr / tp >= 0.98,
      "run=route's pick runs it %.3fx the random picks' mean (>= 0.98)" % ((tr / tp) if tp and tr else 0))
pp, pt = f("p_pick"), f("p_time")
check(pp and pt and abs(pp - pt) <= 1e-3 * pp,
      "the pick's time_us %s s is `schedule route window=auto`'s prediction on its hosts (%s s)" % (pt, pp))
check(pt and tp and abs(tp / pt - 1) <= 0.05, "predicted %s s, SMPI %s s (x%.3f, within 5 %%)"
      % (pt, tp, tp / pt if pt and tp else 0))
b = rows.get("bound", {})
print("# run=bound's pick: %s s in SMPI, %.3fx first-fit; run=route's pick wall %s s, bound's %s s"
      % (b.get("t_pick"), float(b["vs_ff"]) if b.get("vs_ff") else 0, r.get("pick_wall_s"), b.get("pick_wall_s")))
sys.exit(1 if bad else 0)
PY
exit $((failed != 0))
