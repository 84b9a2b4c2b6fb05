#!/usr/bin/env bash
# t_collect_fabrics.sh - topo-collect on simulated fabrics that a run-once
# OpenSM has configured: a fat tree (ftree), a 2-D torus with LMC 1
# (minhop) and an irregular random graph with failed links and QDR links
# (updn). For each, the collector's snapshot must agree with
# infiniband-diags (ibnetdiscover for nodes, LIDs, links and rates; ibroute
# for every switch and every LID), follow the LFT-shape convention, and,
# when the OpenSM plugin is built, equal the plugin's own snapshot of the
# same sweep (topo-snap diff plus the fields diff ignores).
#
# Run from the repo root by tests/run.sh. Everything started here is owned
# by tests/lab/lab.sh, which kills it by PID on exit, error or signal.
set -u
cd "$(dirname "$0")/../.." || exit 1

fails=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; fails=$((fails + 1)); }
# Echo a checker's ok/not ok lines and count its failures.
tally() {
	local out=$1
	printf '%s\n' "$out"
	fails=$((fails + $(printf '%s\n' "$out" | grep -c '^not ok - ')))
}

for tool in ibsim opensm ibnetdiscover ibroute python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "skip - t_collect_fabrics: $tool not installed"
		exit 0
	fi
done
if [ ! -x build/bin/topo-collect ] || [ ! -x build/bin/topo-snap ]; then
	fail "build/bin/topo-collect and build/bin/topo-snap are built (run make)"
	exit 1
fi

export LAB_QUIET=1
# shellcheck source=tests/lab/lab.sh
. tests/lab/lab.sh

PLUGIN_DIR=$PWD/build/lib
have_plugin() { [ -f "$PLUGIN_DIR/libosmtopo.so" ]; }

# check_fabric NAME ROUTING FABGEN-ARGS... [-- OSM-CONF-LINES...]
check_fabric() {
	local name=$1 routing=$2
	shift 2
	local gen=() conf=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		gen+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	conf=("$@")

	lab_init || { fail "$name: lab_init"; return; }
	local d=$LAB_DIR
	if ! python3 tests/lab/fabgen.py "${gen[@]}" -o "$d/f.net" \
		--root-guid-file "$d/roots" --cn-guid-file "$d/cns" 2>"$d/fabgen.err"; then
		fail "$name: fabgen.py ${gen[*]}"
		sed 's/^/#   /' "$d/fabgen.err"
		lab_teardown
		return
	fi
	case $routing in
	ftree | updn)
		# A random graph has no natural roots: root updn at its first switch.
		[ -s "$d/roots" ] || sed -n 's/^switchguid=//p' "$d/f.net" | head -n 1 >"$d/roots"
		conf+=("root_guid_file $d/roots" "cn_guid_file $d/cns")
		;;
	esac
	if ! lab_start_ibsim "$d/f.net"; then
		fail "$name: ibsim starts"
		lab_teardown
		return
	fi
	if have_plugin; then
		mkdir -p "$d/spool"
		conf+=("event_plugin_name osmtopo" "event_plugin_options spool=$d/spool")
	fi
	# OpenSM dlopen()s lib<name>.so by bare name.
	if LD_LIBRARY_PATH=$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		lab_run_opensm "$routing" "${conf[@]}" && lab_osm_check_engine "$routing"; then
		pass "$name: run-once OpenSM routed with $routing"
	else
		fail "$name: run-once OpenSM routed with $routing"
		lab_teardown
		return
	fi

	local t0 t1
	t0=$(date +%s.%N)
	if lab_umad build/bin/topo-collect -v -o "$d/c.snap" 2>"$d/collect.err"; then
		t1=$(date +%s.%N)
		pass "$name: topo-collect -o exits 0 ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s)"
	else
		fail "$name: topo-collect -o exits 0"
		grep -v '^ibwarn' "$d/collect.err" | sed 's/^/#   /'
		lab_teardown
		return
	fi
	grep '^topo-collect: ' "$d/collect.err" | sed 's/^/#   /'

	lab_umad ibnetdiscover >"$d/topo.txt" 2>/dev/null
	: >"$d/routes.txt"
	local lid
	for lid in $(python3 tests/lib/ibcompare.py --switch-lids "$d/topo.txt"); do
		lab_umad ibroute -a -n "$lid" >>"$d/routes.txt" 2>/dev/null
	done
	tally "$(python3 tests/lib/ibcompare.py --snap "$d/c.snap" --ibnetdiscover "$d/topo.txt" \
		--ibroute "$d/routes.txt" --decoder python --check-rates --label "$name: vs diags: ")"
	tally "$(python3 tests/lib/collect_compare.py conventions "$d/c.snap" "$d/topo.txt" "$name:")"

	if have_plugin; then
		if [ -s "$d/spool/fabric.snap" ]; then
			local out
			if out=$(build/bin/topo-snap diff "$d/spool/fabric.snap" "$d/c.snap" 2>&1); then
				pass "$name: topo-snap diff plugin-snapshot collector-snapshot: $out"
			else
				fail "$name: topo-snap diff plugin-snapshot collector-snapshot"
				printf '%s\n' "$out" | head -20 | sed 's/^/#   /'
			fi
			tally "$(python3 tests/lib/collect_compare.py strict "$d/spool/fabric.snap" "$d/c.snap" "$name: plugin vs collector:")"
		else
			fail "$name: the plugin wrote $d/spool/fabric.snap"
			grep -i osmtopo "$LAB_OSM_LOG" | head -5 | sed 's/^/#   /'
		fi
	else
		echo "skip - $name: plugin vs collector ($PLUGIN_DIR/libosmtopo.so not built)"
	fi
	lab_teardown
}

check_fabric fattree-k4 ftree fattree --k 4 --levels 3
check_fabric torus-4x4-lmc1 minhop torus2d --x 4 --y 4 --hosts-per-switch 2 -- "lmc 1"
check_fabric rrg-fail-qdr updn rrg --switches 12 --degree 4 --hosts-per-switch 2 --fail 3 --seed 7 --speed QDR

[ "$fails" -eq 0 ]
