#!/usr/bin/env bash
# Every kind of lab fabric, end to end on the real stack:
#   ibsim fabric -> OpenSM (its routing engine) + the osmtopo plugin -> topod
# and, for each fabric:
#   - OpenSM routed with the engine asked for (no silent fallback);
#   - the plugin's snapshot equals ibnetdiscover (nodes, LIDs, links) and
#     ibroute (every switch, every LID);
#   - topo-collect, reading the fabric over SMPs, produces the same snapshot;
#   - topod serves the plugin's generation, and for hundreds of random host
#     pairs its switch sequence equals ibtracert's;
#   - on trees, the hierarchy's levels are the leaf switches, the pods and
#     the whole fabric, as fabgen built them.
# The big fabric, 3,456 hosts (k=24 fat tree), is t_fabrics_big.sh's
# (TOPOD_FABRICS=big): apart, the two run side by side in make check
# instead of one test of half an hour. TOPOD_FABRICS=all runs both here;
# TOPOD_FABRIC_ONLY=TEXT runs only the fabrics whose label contains TEXT.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

# fabric LABEL ENGINE PAIRS ROOTS(yes|no) RAILS(yes|no) FABGEN-ARGS...
fabric() {
	local label=$1 engine=$2 pairs=$3 roots=$4 rails=$5
	case "$label" in *"${TOPOD_FABRIC_ONLY:-}"*) ;; *) return ;; esac
	shift 5
	lab_init || { nok "$label: lab_init"; return; }
	local d=$LAB_DIR conf=()
	if ! lab_fabgen "$@"; then
		nok "$label: fabgen $*"
		return
	fi
	[ "$roots" = yes ] && conf+=("root_guid_file $d/roots")
	[ -n "${FABRIC_LMC:-}" ] && conf+=("lmc $FABRIC_LMC")
	lab_start_ibsim "$d/f.net" || { nok "$label: ibsim"; return; }

	lab_start_topod || { nok "$label: topod did not start"; return; }
	local port=$LAB_TOPOD_PORT

	mkdir -p "$d/spool"
	local t0=$SECONDS
	if ! lab_run_opensm "$engine" "${conf[@]}" "event_plugin_name osmtopo" \
		"event_plugin_options sink=unix:$d/ingest.sock spool=$d/spool"; then
		nok "$label: opensm -R $engine failed (log $LAB_OSM_LOG)"
		return
	fi
	if lab_osm_check_engine "$engine"; then
		ok "$label: OpenSM routed with $engine ($((SECONDS - t0)) s)"
	else
		nok "$label: OpenSM fell back from $engine to $(lab_osm_engine_used)"
	fi
	local snap=$d/spool/fabric.snap
	[ -s "$snap" ] || { nok "$label: the plugin delivered no snapshot to its spool"; return; }

	local gen
	gen=$("$ROOT/build/bin/topo-snap" info "$snap" | sed -n 's/^generation //p')
	local served=
	for _ in $(seq 300); do
		served=$(printf 'info\n' | nc -q 2 127.0.0.1 "$port" | sed -n 's/.* generation=\([0-9]*\).*/\1/p')
		[ "$served" = "$gen" ] && break
		sleep 0.1
	done
	if [ "$served" = "$gen" ]; then ok "$label: topod serves the plugin's generation $gen"; else nok "$label: topod serves '$served', plugin sent $gen"; fi

	lab_umad ibnetdiscover >"$d/ibnd.out" 2>/dev/null
	: >"$d/ibroute.out"
	# LID-routed ibroute first (fast); on degraded fabrics some engines leave
	# a switch's own LID unroutable from the SM's host, and those switches
	# are read by directed route instead (slow: every destination lookup
	# then times out, so only where needed).
	python3 tests/lib/drpaths.py "$d/ibnd.out" >"$d/drpaths"
	while read -r lid path; do
		if ! lab_umad ibroute -n "$lid" >"$d/one.out" 2>/dev/null || ! grep -q "^Unicast lids" "$d/one.out"; then
			lab_umad ibroute -n -D "$path" >"$d/one.out" 2>/dev/null
		fi
		cat "$d/one.out" >>"$d/ibroute.out"
	done <"$d/drpaths"
	python3 tests/lib/ibcompare.py --snap "$snap" --ibnetdiscover "$d/ibnd.out" --ibroute "$d/ibroute.out" \
		--topo-snap "$ROOT/build/bin/topo-snap" | sed "s/^\(ok\|not ok\) - /\1 - $label: plugin snapshot vs ibnetdiscover\/ibroute: /" >"$d/cmp.out"
	cat "$d/cmp.out"
	grep -q '^not ok' "$d/cmp.out" && failed=$((failed + 1))

	if lab_umad "$ROOT/build/bin/topo-collect" -o "$d/coll.snap" >"$d/collect.out" 2>&1 &&
		"$ROOT/build/bin/topo-snap" diff "$snap" "$d/coll.snap" >"$d/diff.out"; then
		ok "$label: topo-collect's snapshot equals the plugin's (nodes, links, every LFT)"
	else
		nok "$label: topo-collect differs from the plugin"
		head -5 "$d/collect.out" "$d/diff.out" | sed 's/^/# /'
	fi

	local rf=()
	[ "$rails" = yes ] && rf=(--rails)
	[ -n "${FABRIC_LMC:-}" ] && rf+=(--lmc)
	lab_umad python3 tests/lib/tracecheck.py --port "$port" --pairs "$pairs" "${rf[@]}" --label "$label" \
		>"$d/trace.out" 2>"$d/trace.err"
	cat "$d/trace.out"
	grep -q '^not ok' "$d/trace.out" && failed=$((failed + 1))
	grep -q '^ok' "$d/trace.out" || { nok "$label: tracecheck ran no check"; tail -3 "$d/trace.err" | sed 's/^/# /'; }
	if [ "${FABRIC_TREE:-}" = yes ]; then
		python3 tests/lib/hiercheck.py --port "$port" --meta "$d/f.json" --label "$label" >"$d/hier.out" 2>&1
		cat "$d/hier.out"
		grep -q '^not ok' "$d/hier.out" && failed=$((failed + 1))
		grep -q '^ok' "$d/hier.out" || { nok "$label: hiercheck ran no check"; tail -3 "$d/hier.out" | sed 's/^/# /'; }
	fi
	lab_teardown
}

if [ "${TOPOD_FABRICS:-small}" != big ]; then
FABRIC_TREE=yes fabric "fat tree k=4, 3 levels" ftree 200 no no fattree --k 4 --levels 3
FABRIC_TREE=yes fabric "XGFT(2;8,6;1,4)" ftree 200 no no xgft --h 2 --m 8,6 --w 1,4
FABRIC_TREE=yes fabric "5:4 over-subscribed (stampede-small)" ftree 200 no no stampede-small
fabric "fat tree k=6 with 3 failed links" ftree 200 yes no fattree --k 6 --levels 3 --fail 3 --seed 7
FABRIC_TREE=yes fabric "multi-rail fat tree k=4" ftree 200 no yes fattree --k 4 --levels 3 --rails 2
fabric "2D torus 4x4, dor" dor 200 no no torus2d --x 4 --y 4
fabric "random regular 16x4, dfsssp" dfsssp 200 no no rrg --switches 16 --degree 4 --seed 3
fabric "Slim Fly q=5, minhop" minhop 200 no no slimfly --q 5 --hosts-per-switch 2
fabric "3-level fat tree, updn" updn 200 yes no fattree --k 4 --levels 3
FABRIC_LMC=1 fabric "fat tree k=4 with LMC 1, updn (lid:N routes)" updn 200 yes no fattree --k 4 --levels 3
fi
if [ "${TOPOD_FABRICS:-small}" != small ]; then
	FABRIC_TREE=yes fabric "fat tree k=24 (3,456 hosts)" ftree 100 no no fattree --k 24 --levels 3
fi
[ "$failed" -eq 0 ]
