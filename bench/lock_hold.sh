#!/usr/bin/env bash
# lock_hold.sh - how long libosmtopo.so holds OpenSM's lock, measured in a
# real OpenSM on ibsim: the first routing pass (a full copy) and REROUTES
# routing passes after a leaf uplink goes down or comes back (ibsim
# Unlink/ReLink, trap 128, heavy sweep).  Prints the plugin's log line per
# pass ("lock ... held X ms (Y ms CPU)") and a summary.
#
#   bash bench/lock_hold.sh [K] [REROUTES]      (defaults 24, 4; needs make)
#
# K=32 (8,192 hosts, 1,280 switches) takes ~3 GB and several minutes here;
# K=56 needs LAB_IBSIM_ARGS with -L 49152 and more memory than a lab VM has.
set -u
cd "$(dirname "$0")/.." || exit 1
K=${1:-24}
N=${2:-4}
for tool in ibsim opensm python3; do
	command -v "$tool" >/dev/null || { echo "skip - $tool not installed"; exit 0; }
done
[ -f build/lib/libosmtopo.so ] || { echo "build first (make)"; exit 1; }
export LAB_QUIET=1 LAB_OSM_TIMEOUT=1200 LAB_IBSIM_TIMEOUT=600
# shellcheck source=tests/lab/lab.sh
. tests/lab/lab.sh
lab_init || exit 1
D=$LAB_DIR
python3 tests/lab/fabgen.py fattree --k "$K" --levels 3 -o "$D/f.net" --meta "$D/f.json" \
	--root-guid-file "$D/roots" >/dev/null || exit 1
lab_start_ibsim "$D/f.net" || { echo "ibsim did not load k=$K"; exit 1; }
mkdir -p "$D/spool"
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $D/roots" "event_plugin_name osmtopo" \
	"event_plugin_options spool=$D/spool" || { echo "OpenSM did not come up"; exit 1; }
echo "# k=$K: subnet up after $(( $(date +%s) - t0 )) s"
read -r leaf port _ < <(lab_leaf_uplink "$D/f.json")
passes() { grep -c 'osmtopo: generation' "$LAB_OSM_LOG"; }
lab_wait_osm_log 'osmtopo: generation' 600 || { echo "no first snapshot"; exit 1; }
for ((i = 1; i <= N; i++)); do
	before=$(passes)
	if ((i % 2)); then cmd="Unlink \"$leaf\"[$port]"; else cmd="ReLink \"$leaf\"[$port]"; fi
	lab_ibsim_cmd "$cmd" >/dev/null || echo "# ibsim: $cmd failed"
	for ((w = 0; w < 3000; w++)); do
		[ "$(passes)" -gt "$before" ] && break
		sleep 0.1
	done
done
sleep 1
grep -o 'osmtopo: generation.*' "$LAB_OSM_LOG" | sed 's/^/# /'
# "held T ms (C ms CPU) in N slices, longest L ms": T is the whole copy, L
# the longest the lock stayed taken (before slicing, T = L).
grep -o 'held [0-9.]* ms.*longest [0-9.]* ms' "$LAB_OSM_LOG" | awk -v k="$K" '
	{ t = $2 + 0; l = $(NF - 1) + 0
	  if (NR == 1) { ft = t; fl = l } else { n++; if (l > mx) mx = l; if (t > mt) mt = t; s += l } }
	END { printf "k=%s: first pass held %.3f ms in all, longest slice %.3f ms; %d later passes:" \
		" longest slice max %.3f ms (mean %.3f), held in all max %.3f ms\n", k, ft, fl, n, mx, n ? s / n : 0, mt }'
cp "$LAB_OSM_LOG" "${LOCK_HOLD_LOG:-/dev/null}" 2>/dev/null
lab_teardown
