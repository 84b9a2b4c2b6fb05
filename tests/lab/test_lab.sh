#!/bin/bash
# tests/lab/test_lab.sh - self-test of the simulated-fabric lab.
#
# For every fabric kind: generate it (fabgen.py), start ibsim, run OpenSM once
# with the routing engine that suits the kind, check that this engine (not a
# minhop fallback) configured the switches, and that ibnetdiscover sees
# exactly the switches, CAs, GUIDs, NodeDescriptions and links of the meta
# JSON.  Then: node-name-map, console link down/up, a long-running OpenSM
# re-routing on the trap, teardown (error exit, SIGTERM, SIGKILL) and
# fabgen determinism.
#
# Prints "ok - ..." / "not ok - ..." per check, then "N passed, N failed";
# exits 0 iff all passed.  Takes about a minute.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FABGEN="python3 $HERE/fabgen.py"
COMPARE="python3 $HERE/ibnd_compare.py"
RES=$(mktemp "${TMPDIR:-/tmp}/topod-lab-test.XXXXXX")
trap 'rm -f "$RES"' EXIT
export LAB_QUIET=${LAB_QUIET:-1}

ok() { echo "ok - $*" | tee -a "$RES"; }
notok() { echo "not ok - $*" | tee -a "$RES"; }
check() {	# DESC CMD... : ok if CMD succeeds
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}

for t in ibsim opensm ibnetdiscover python3; do
	command -v "$t" >/dev/null || { echo "not ok - $t not installed"; echo "0 passed, 1 failed"; exit 1; }
done

# fabric NAME ENGINE "FABGEN ARGS" [CONF LINE...]
# CONF lines may use @DIR@ for the lab dir.
fabric() {
	local name=$1 engine=$2 gen=$3
	shift 3
	(
		. "$HERE/lab.sh"
		lab_init
		local net=$LAB_DIR/f.net meta=$LAB_DIR/f.json t0 conf=()
		# shellcheck disable=SC2086
		if ! $FABGEN $gen -o "$net" --meta "$meta" \
			--root-guid-file "$LAB_DIR/roots.txt" 2>"$LAB_DIR/fabgen.err"; then
			notok "$name: fabgen $gen ($(cat "$LAB_DIR/fabgen.err"))"
			exit 1
		fi
		ok "$name: fabgen $gen"
		if ! lab_start_ibsim "$net"; then
			notok "$name: ibsim starts"
			exit 1
		fi
		for l in "$@"; do conf+=("${l//@DIR@/$LAB_DIR}"); done
		t0=$(date +%s.%N)
		lab_run_opensm "$engine" "${conf[@]}"
		local rc=$? secs
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		check "$name: opensm -o -R $engine exits 0 (${secs}s)" [ $rc = 0 ]
		check "$name: $engine configured the switches (no fallback; used: $(lab_osm_engine_used))" \
			lab_osm_check_engine "$engine"
		lab_umad ibnetdiscover >"$LAB_DIR/ibnd.out" 2>"$LAB_DIR/ibnd.err"
		local cmp crc
		cmp=$($COMPARE "$meta" "$LAB_DIR/ibnd.out" 2>&1)
		crc=$?
		check "$name: ibnetdiscover matches meta: $(echo "$cmp" | head -n 3 | tr '\n' ';')" \
			[ $crc = 0 ]
		# kind-specific checks on the meta
		case $name in
		multi-rail*)
			check "$name: every host has HCA-1 and HCA-2 on different switches" \
				python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
bad = [h for h, cas in m["hosts"].items()
       if sorted(c["rail"] for c in cas) != [1, 2] or cas[0]["switch"] == cas[1]["switch"]]
sys.exit(1 if bad or not m["hosts"] else 0)' "$meta" ;;
		slimfly* | mlfm*)
			check "$name: diameter 2 (slim fly: between all switches; MLFM: between local routers)" python3 -c '
import json, sys
from collections import deque
m = json.load(open(sys.argv[1]))
sw = {s["node"] for s in m["switches"]}
adj = {s: set() for s in sw}
for a, pa, b, pb in m["links"]:
    if a in sw and b in sw:
        adj[a].add(b); adj[b].add(a)
# MLFM: measure between local routers only (GRs are not end-points)
src = [s["node"] for s in m["switches"] if s.get("role", "local") == "local"]
dia = 0
for s in src:
    d = {s: 0}; q = deque([s])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if v not in d:
                d[v] = d[u] + 1; q.append(v)
    if len(d) != len(sw): sys.exit(1)
    dia = max(dia, max(d[t] for t in src))
sys.exit(0 if dia == 2 else 1)' "$meta" ;;
		esac
	)
}

T0=$(date +%s)

fabric "xgft-2level" ftree "xgft --h 2 --m 4,6 --w 1,3"
fabric "xgft-3level" ftree "xgft --h 3 --m 3,3,4 --w 1,3,2"
fabric "stampede-small" ftree "stampede-small"
fabric "fattree-k6-fail2" ftree "fattree --k 6 --levels 3 --fail 2 --seed 5" \
	"root_guid_file @DIR@/roots.txt"
fabric "multi-rail" ftree "fattree --k 4 --levels 3 --rails 2"
fabric "torus2d" dor "torus2d --x 4 --y 3 --hosts-per-switch 2"
fabric "rrg" dfsssp "rrg --switches 16 --degree 4 --hosts-per-switch 2 --seed 3"
fabric "slimfly-q5" dfsssp "slimfly --q 5"
fabric "mlfm-h3" updn "mlfm --h 3" "root_guid_file @DIR@/roots.txt"

# ftree on a fat tree with failed links and *no* root GUID file: OpenSM's
# ftree rejects the "impure" tree and falls back to minhop - documented
# behaviour the lab must be able to observe.
(
	. "$HERE/lab.sh"
	lab_init
	$FABGEN fattree --k 6 --levels 3 --fail 2 --seed 5 -o "$LAB_DIR/f.net" 2>/dev/null
	lab_start_ibsim "$LAB_DIR/f.net" || { notok "ftree fallback: ibsim"; exit 1; }
	lab_run_opensm ftree
	check "ftree without root_guid_file on a fat tree with 2 failed links falls back to minhop (detected)" \
		[ "$(lab_osm_engine_used)" = minhop ]
	check "  ... and lab_osm_check_engine ftree reports it" \
		eval '! lab_osm_check_engine ftree 2>/dev/null'
)

# node-name-map, console link down/up, long-running OpenSM reacting to traps
(
	. "$HERE/lab.sh"
	lab_init
	$FABGEN fattree --k 4 --levels 3 -o "$LAB_DIR/f.net" --meta "$LAB_DIR/f.json" \
		--node-name-map "$LAB_DIR/nnm" --root-guid-file "$LAB_DIR/roots.txt"
	lab_start_ibsim "$LAB_DIR/f.net" || { notok "faults: ibsim"; exit 1; }
	first=$(head -n 1 "$LAB_DIR/nnm")
	guid=${first%% *}
	mapped=$(echo "$first" | cut -d'"' -f2)
	lab_umad ibnetdiscover -H --node-name-map "$LAB_DIR/nnm" >"$LAB_DIR/h.out" 2>/dev/null
	check "node-name-map overrides the NodeDescription in ibnetdiscover -H ($guid -> \"$mapped\")" \
		grep -q "$guid.*\"$mapped\"" "$LAB_DIR/h.out"
	check "GUIDs are deterministic: every CA in the map is found by GUID" \
		[ "$(grep -c '^Ca' "$LAB_DIR/h.out")" = "$(wc -l <"$LAB_DIR/nnm")" ]
	lab_umad ibnetdiscover >"$LAB_DIR/a.out" 2>/dev/null
	before=$($COMPARE x "$LAB_DIR/a.out" --summary)
	LAB_OSM_SWEEP=60 lab_start_opensm ftree "root_guid_file $LAB_DIR/roots.txt"
	check "long-running opensm: subnet up, ftree" lab_osm_check_engine ftree
	n_cfg=$(grep -c 'tables configured on all switches' "$LAB_OSM_LOG")
	lab_ibsim_cmd 'Unlink "ibsw-L1-001"[3]' >/dev/null
	check "console: Unlink \"ibsw-L1-001\"[3]" [ $? = 0 ]
	lab_umad ibnetdiscover >"$LAB_DIR/b.out" 2>/dev/null
	after=$($COMPARE x "$LAB_DIR/b.out" --summary)
	check "ibnetdiscover sees one link less after Unlink ($before -> $after)" \
		[ "$(echo "$before" | sed 's/.*links=\([0-9]*\) .*/\1/')" = \
		  "$(( $(echo "$after" | sed 's/.*links=\([0-9]*\) .*/\1/') + 1 ))" ]
	check "opensm got trap 128 and re-routed with ftree (sweep interval 60 s)" \
		lab_wait_osm_log 'num:128' 20
	for _ in $(seq 100); do
		[ "$(grep -c 'tables configured on all switches' "$LAB_OSM_LOG")" -gt "$n_cfg" ] && break
		sleep 0.1
	done
	check "  ... and the new routing is still ftree" lab_osm_check_engine ftree
	lab_ibsim_cmd 'ReLink "ibsw-L1-001"[3]' >/dev/null
	check "console: ReLink \"ibsw-L1-001\"[3]" [ $? = 0 ]
	lab_umad ibnetdiscover >"$LAB_DIR/c.out" 2>/dev/null
	again=$($COMPARE x "$LAB_DIR/c.out" --summary)
	check "ibnetdiscover sees the link again after ReLink ($again)" [ "$again" = "$before" ]
	lab_ibsim_cmd "Bogus" >/dev/null
	check "console: unknown command is reported" [ $? != 0 ]
	osm=$LAB_OSM_PID
	lab_stop_opensm
	check "lab_stop_opensm stops opensm (pid $osm)" eval '! kill -0 '"$osm"' 2>/dev/null'
)

# teardown: a test that starts ibsim + opensm and then fails must leave
# nothing behind; same for SIGTERM and SIGKILL (watchdog) of the test.
teardown_case() {	# HOW: exit | term | kill
	local how=$1 info
	info=$RES.$how
	{ (
		. "$HERE/lab.sh"
		lab_init
		$FABGEN fattree --k 4 --levels 2 -o "$LAB_DIR/f.net"
		lab_start_ibsim "$LAB_DIR/f.net" || exit 1
		LAB_OSM_SWEEP=5 lab_start_opensm minhop || exit 1
		echo "$LAB_DIR ${LAB_PIDS[*]}" >"$info"
		case $how in
		exit) false; exit 3 ;;
		term) kill -TERM $BASHPID; sleep 30 ;;
		kill) kill -KILL $BASHPID ;;
		esac
	) >/dev/null 2>&1; } 2>/dev/null
	local rc=$? dir pids p left=
	read -r dir pids <"$info"
	rm -f "$info"
	# the watchdog polls once a second and gives TERM 2 s before KILL
	for _ in $(seq 60); do
		left=
		for p in $pids; do
			if kill -0 "$p" 2>/dev/null &&
				[ "$(ps -o stat= -p "$p" | cut -c1)" != Z ]; then
				left="$left $p"
			fi
		done
		[ -z "$left" ] && [ ! -d "$dir" ] && break
		sleep 0.1
	done
	check "teardown after '$how' (rc $rc): no lab process left${left:+ (left:$left)}" [ -z "$left" ]
	check "teardown after '$how': temp dir removed" [ ! -d "$dir" ]
}
teardown_case exit
teardown_case term
teardown_case kill

# fabgen determinism and --fail bookkeeping
(
	d=$(mktemp -d "${TMPDIR:-/tmp}/topod-lab-fg.XXXXXX")
	trap 'rm -rf "$d"' EXIT
	$FABGEN fattree --k 6 --levels 3 --fail 3 --seed 9 -o "$d/a" --meta "$d/a.json" 2>"$d/a.err"
	$FABGEN fattree --k 6 --levels 3 --fail 3 --seed 9 -o "$d/b" --meta "$d/b.json" 2>/dev/null
	$FABGEN fattree --k 6 --levels 3 --fail 3 --seed 10 -o "$d/c" 2>/dev/null
	check "fabgen: same seed, same net file" cmp -s "$d/a" "$d/b"
	check "fabgen: other seed, other failed links" eval '! cmp -s "$d/a" "$d/c"'
	check "fabgen: --fail 3 reports 3 removed links on stderr and in meta" \
		python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
n = sum(1 for l in open(sys.argv[2]) if "removed link" in l)
sys.exit(0 if n == 3 and len(m["removed_links"]) == 3 and m["counts"]["switch_links"] == 108 - 3 else 1)' \
		"$d/a.json" "$d/a.err"
	check "fabgen: k=24 3-level fat tree has 3456 hosts and 720 switches" python3 -c '
import json, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
c = json.load(open(sys.argv[-1]))["counts"]
sys.exit(0 if (c["hosts"], c["switches"]) == (3456, 720) else 1)' \
		python3 "$HERE/fabgen.py" fattree --k 24 --levels 3 -o /dev/null --meta "$d/k24.json"
	check "fabgen: bad parameters are rejected" eval \
		'! $FABGEN slimfly --q 9 -o /dev/null 2>/dev/null'
)

pass=$(grep -c '^ok - ' "$RES")
fail=$(grep -c '^not ok - ' "$RES")
echo "# lab self-test took $(($(date +%s) - T0)) s"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
