#!/usr/bin/env bash
# t_pick_balance.sh - pick spreads a leaf's hosts over the upper switches
# their traffic comes down through (issue 27), on a lab fabric: a 2:1
# over-subscribed 2-level tree (6 leaves of 8 hosts, 4 spines) routed by
# OpenSM's ftree. tests/lib/pickbalance.py reads the LFTs the switches hold
# (ibroute) and the CA LIDs (ibnetdiscover), not topod, and checks that no
# two hosts of a leaf routed down through one spine are picked where the
# free list offers another (at most ceil(c/d) per spine beyond that), and
# that topoquery --json (libtii) carries the reply's new fields, pick trade and
# pick pattern=ring; and that pick leaves=any takes more leaves than the
# fewest exactly when topod's `load` predicts them faster, while the default
# keeps the fewest and states wider_time_us under limit=uplinks.
# Skips (exit 0) without ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
for t in ibsim opensm python3 ibroute ibnetdiscover; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
failed=0
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

lab_init || { nok "lab_init"; exit 1; }
lab_fabgen xgft --h 2 --m 8,6 --w 1,4 || { nok "fabgen"; exit 1; }
if ! lab_bring_up "$LAB_DIR/f.net" ftree "root_guid_file $LAB_DIR/roots"; then
	nok "ibsim + OpenSM (ftree) + topod"
	exit 1
fi
lab_osm_check_engine ftree || nok "OpenSM routed with ftree"
for ((i = 0; i < 100; i++)); do
	gen=$(lab_topod_generation)
	[ -n "$gen" ] && [ "$gen" != 0 ] && break
	sleep 0.1
done
[ -n "$gen" ] && [ "$gen" != 0 ] || nok "topod serves a generation"
lab_umad ibnetdiscover >"$LAB_DIR/ibnd.out" 2>/dev/null
python3 tests/lib/drpaths.py "$LAB_DIR/ibnd.out" >"$LAB_DIR/drpaths"
: >"$LAB_DIR/ibroute.out"
while read -r lid _; do
	lab_umad ibroute -n "$lid" >>"$LAB_DIR/ibroute.out" 2>/dev/null
done <"$LAB_DIR/drpaths"
python3 tests/lib/pickbalance.py --port "$LAB_TOPOD_PORT" --meta "$LAB_DIR/f.json" --ibnd "$LAB_DIR/ibnd.out" \
	--ibroute "$LAB_DIR/ibroute.out" --label ftree --seed 5 --topoquery "$LAB_ROOT/build/bin/topoquery" ||
	failed=$((failed + 1))
lab_teardown
exit $((failed != 0))
