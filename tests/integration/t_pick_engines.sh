#!/usr/bin/env bash
# t_pick_engines.sh - pick keeps its promises on every routing engine the
# lab runs (issues 19 and 27): one over-subscribed 3-level tree (54 hosts,
# 6 per leaf over 4 uplinks, 3 pods), routed in turn by ftree, updn, minhop
# and dfsssp in one ibsim; after each, tests/lib/pickengines.py checks
# pick's leaves and pods against the true minimum computed from the fabric
# file, and the prediction fields (time_us <= first_fit_time_us).
# Skips (exit 0) without ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
failed=0
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

lab_init || { nok "lab_init"; exit 1; }
lab_fabgen xgft --h 3 --m 6,3,3 --w 1,4,2 || { nok "fabgen"; exit 1; }
# routing: ENGINE; waits for topod to serve a generation after PREV
route() {
	local engine=$1 prev=$2 i gen
	LD_LIBRARY_PATH="$LAB_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		lab_run_opensm "$engine" "root_guid_file $LAB_DIR/roots" "event_plugin_name osmtopo" \
		"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || return 1
	lab_osm_check_engine "$engine" || return 1
	for ((i = 0; i < 100; i++)); do
		gen=$(lab_topod_generation)
		[ -n "$gen" ] && [ "$gen" != "$prev" ] && [ "$gen" != 0 ] && { echo "$gen"; return 0; }
		sleep 0.1
	done
	return 1
}
if ! lab_start_ibsim "$LAB_DIR/f.net" || ! lab_start_topod; then
	nok "ibsim + topod"
	exit 1
fi
gen=0
seed=3
for engine in ftree updn minhop dfsssp; do
	if ! gen=$(route "$engine" "$gen"); then
		nok "$engine: OpenSM routed with $engine and topod served it"
		gen=$(lab_topod_generation)
		continue
	fi
	echo "ok - $engine: OpenSM routed with $engine, topod serves generation $gen"
	python3 tests/lib/pickengines.py --port "$LAB_TOPOD_PORT" --meta "$LAB_DIR/f.json" --label "$engine" \
		--seed "$seed" || failed=$((failed + 1))
	seed=$((seed + 1))
	[ "$engine" = ftree ] || continue
	# libtii and topoquery carry the same figures as the protocol
	mapfile -t all < <(python3 -c 'import json, sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["hosts"])))' "$LAB_DIR/f.json")
	if "$LAB_ROOT/build/bin/topoquery" -s "127.0.0.1:$LAB_TOPOD_PORT" --json pick 20 "${all[@]}" >"$LAB_DIR/p.json" &&
		python3 - "$LAB_DIR/p.json" <<'PY'; then
import json, sys
p = json.load(open(sys.argv[1]))
assert p["picked"] == 20 and len(p["hosts"]) == 20 and p["method"] in ("pick", "first_fit"), p
assert p["min_leaves"] == 4 and p["min_pods"] == 2 and p["time_us"] > 0 and p["first_fit_time_us"] > 0, p
assert p["time_us"] <= p["first_fit_time_us"] * (1 + 1e-6) and p["pick_time_us"] > 0, p
PY
		echo "ok - topoquery --json pick (libtii): min_leaves, min_pods, method, time_us <= first_fit_time_us"
	else
		nok "topoquery --json pick: $(head -c 300 "$LAB_DIR/p.json")"
	fi
done
lab_teardown
exit $((failed != 0))
