#!/usr/bin/env bash
# t_pick_fewest_brute.sh - `pick leaves=fewest` equals brute force's
# promise (issue 34) on small free lists of every routing engine the lab
# runs: tests/lib/pickfewest.py enumerates every N-subset of each free list
# and computes the fewest leaves, then pods, then sharing hosts, then the
# most free hosts on the leaves, from the LFTs the switches hold (ibroute)
# walked over the cables ibnetdiscover reports (ibtracert for a top LID
# ibroute omits), and compares topod's answer; `shared` on each answer must
# agree with those walks.
# Fabrics and engines:
#   - an over-subscribed 3-level tree (54 hosts, 6 per leaf over 4 uplinks,
#     3 pods), routed in turn by ftree, updn, minhop and dfsssp in one ibsim;
#   - the same tree with 3 failed links, routed by updn;
#   - a 4x4 torus (2 hosts a switch), routed by dor;
#   - a random regular graph (16 switches, 3 hosts each), routed by dfsssp.
# PICK_FEWEST_CASES sets the free lists per engine (default 40);
# PICK_FEWEST_ONLY=TEXT runs only the fabrics whose label contains TEXT.
# Skips (exit 0) without ibsim/opensm/infiniband-diags.
set -u
cd "$(dirname "$0")/../.." || exit 1
for t in ibsim opensm python3 ibroute ibnetdiscover; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
failed=0
cases=${PICK_FEWEST_CASES:-40}
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

# route ENGINE PREV [CONF...]: OpenSM routes with ENGINE (its plugin feeds
# topod); prints the generation topod then serves (other than PREV)
route() {
	local engine=$1 prev=$2 i gen
	shift 2
	LD_LIBRARY_PATH="$LAB_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		lab_run_opensm "$engine" "$@" "event_plugin_name osmtopo" \
		"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || return 1
	lab_osm_check_engine "$engine" || return 1
	for ((i = 0; i < 100; i++)); do
		gen=$(lab_topod_generation)
		[ -n "$gen" ] && [ "$gen" != "$prev" ] && [ "$gen" != 0 ] && { echo "$gen"; return 0; }
		sleep 0.1
	done
	return 1
}

# tables: the fabric's own cables and LFTs (infiniband-diags), read by LID
# and, where an engine leaves a switch's LID unroutable, by directed route
tables() {
	local d=$LAB_DIR lid path
	lab_umad ibnetdiscover >"$d/ibnd.out" 2>/dev/null || return 1
	python3 tests/lib/drpaths.py "$d/ibnd.out" >"$d/drpaths" || return 1
	: >"$d/ibroute.out"
	while read -r lid path; do
		if ! lab_umad ibroute -n "$lid" >"$d/one.out" 2>/dev/null || ! grep -q "^Unicast lids" "$d/one.out"; then
			lab_umad ibroute -n -D "$path" >"$d/one.out" 2>/dev/null
		fi
		cat "$d/one.out" >>"$d/ibroute.out"
	done <"$d/drpaths"
}

# fabric LABEL "ENGINE..." ROOTS(yes|no) SEED FABGEN-ARGS...
fabric() {
	local label=$1 engines=$2 roots=$3 seed=$4 conf=() gen=0 engine
	shift 4
	case "$label" in *"${PICK_FEWEST_ONLY:-}"*) ;; *) return ;; esac
	lab_init || { nok "$label: lab_init"; return; }
	lab_fabgen "$@" || { nok "$label: fabgen $*"; return; }
	[ "$roots" = yes ] && conf+=("root_guid_file $LAB_DIR/roots")
	if ! lab_start_ibsim "$LAB_DIR/f.net" || ! lab_start_topod; then
		nok "$label: ibsim + topod"
		return
	fi
	for engine in $engines; do
		if ! gen=$(route "$engine" "$gen" "${conf[@]}"); then
			nok "$label: OpenSM routed with $engine and topod served it"
			gen=$(lab_topod_generation)
			continue
		fi
		if ! tables; then
			nok "$label, $engine: ibnetdiscover/ibroute"
			continue
		fi
		lab_umad python3 tests/lib/pickfewest.py --port "$LAB_TOPOD_PORT" --meta "$LAB_DIR/f.json" --ibnd "$LAB_DIR/ibnd.out" \
			--ibroute "$LAB_DIR/ibroute.out" --label "$label, $engine" --seed "$seed" --cases "$cases" ||
			failed=$((failed + 1))
		seed=$((seed + 1))
	done
	lab_teardown
}

fabric "3-level tree 6/4" "ftree updn minhop dfsssp" yes 11 xgft --h 3 --m 6,3,3 --w 1,4,2
fabric "3-level tree 6/4, 3 failed links" "updn" yes 21 xgft --h 3 --m 6,3,3 --w 1,4,2 --fail 3 --seed 5
fabric "torus 4x4" "dor" no 31 torus2d --x 4 --y 4 --hosts-per-switch 2
fabric "random regular 16x4" "dfsssp" no 41 rrg --switches 16 --degree 4 --seed 3 --hosts-per-switch 3
exit $((failed != 0))
