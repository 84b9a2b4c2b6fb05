#!/usr/bin/env bash
# t_plugin_lock.sh - how long libosmtopo.so holds OpenSM's lock, in a real
# OpenSM on ibsim, and that what it copies in slices and from noted LFT
# blocks is still exactly the fabric.
#
#  A. k=32 3-level fat tree (8,192 hosts, 1,280 switches, 12 MB of LFTs),
#     long-running OpenSM, a leaf uplink taken down and back twice:
#     every routing pass after the first holds the lock at most a third of
#     the first pass's whole copy at once (CPU time of the longest slice,
#     which preemption on a busy host cannot inflate; wall time is printed),
#     keeps its tables and copies only the blocks OpenSM stored; the last
#     snapshot (the link back) equals what topo-collect reads from the
#     switches
#  B. k=8 fat tree: after a reroute through noted blocks the snapshot equals
#     ibnetdiscover and ibroute of every switch, with the link down and back
# About 2 minutes here (A: ibsim loads k=32 in ~15 s, each pass ~8 s).
set -u
# shellcheck source=t_plugin_common.bash
. "$(dirname "$0")/t_plugin_common.bash"
tp_init

FACTOR=3
K=${TP_LOCK_K:-32}
COLLECT=$TP_ROOT/build/bin/topo-collect

# pass_field N FIELD: from the N-th "osmtopo: generation" line of the log:
#   total (held T ms), cpu (its CPU), slices, longest, longest_cpu, kept, whole,
#   where (the longest slice's "nodes A-B, notes C-D, F page faults (O in
#   other threads)" checked against the pass's nodes and notes: "ok ..." or
#   "bad ...")
pass_field() {
	grep -o 'osmtopo: generation.*' "$LAB_OSM_LOG" | sed -n "${1}p" | python3 -c '
import re, sys
l = sys.stdin.read()
m = re.search(r"held ([0-9.]+) ms \(([0-9.]+) ms CPU\) in ([0-9]+) slices, longest ([0-9.]+) ms \(([0-9.]+) ms CPU\)", l)
k = re.search(r"LFTs: ([0-9]+) whole, ([0-9]+) kept \+ [0-9]+ blocks of ([0-9]+) noted", l)
n = re.search(r": ([0-9]+) nodes,", l)
w = re.search(r"longest slice \(CPU\): nodes ([0-9]+)-([0-9]+), notes ([0-9]+)-([0-9]+), (-?[0-9]+) page faults \((-?[0-9]+) in other threads\)$", l.strip())
if not m or not k:
    sys.exit(1)
where = "bad: no location"
if w and n:
    a, b, c, d, flt, oth = (int(x) for x in w.groups())
    good = a <= b <= int(n[1]) and c <= d <= int(k[3]) and flt >= 0 and oth >= 0
    where = ("ok" if good else "bad") + f": nodes {a}-{b} of {n[1]}, notes {c}-{d} of {k[3]}, {flt} page faults ({oth} in other threads)"
f = dict(total=m[1], cpu=m[2], slices=m[3], longest=m[4], longest_cpu=m[5], whole=k[1], kept=k[2], where=where)
print(f[sys.argv[1]])' "$2"
}
npasses() { tp_osm_gens | grep -c .; }
# spool_has DIR GEN: the spool's fabric.snap is generation GEN (written by
# the plugin's worker after the pass is logged: wait for it)
spool_has() {
	TP_WAIT=30 tp_wait_for bash -c "'$TP_SNAP' info '$1/fabric.snap' | grep -qx 'generation $2'"
}
# spool_caught_up DIR G: the spool holds the last generation the plugin
# logged, G or a later one. After a routing pass OpenSM may reach subnet up
# and the plugin publish that too (same routes, ports now Active), which
# supersedes G in the spool before anyone reads it.
spool_caught_up() {
	local s l
	s=$("$TP_SNAP" info "$1/fabric.snap" 2>/dev/null | sed -n 's/^generation //p')
	l=$(tp_osm_gens | tail -n 1)
	[ -n "$s" ] && [ "$s" = "$l" ] && [ "$s" -ge "$2" ]
}
# flip CMD: one ibsim command, then wait for the routing pass it causes
flip() {
	local before
	before=$(grep -Ec 'osmtopo: generation .*\((heavy sweep|reroute) ' "$LAB_OSM_LOG")
	lab_ibsim_cmd "$1" >/dev/null || { tp_fail "ibsim console: $1"; return 1; }
	# a routing pass, not the previous sweep's subnet-up snapshot
	TP_WAIT=120 tp_wait_for bash -c "[ \$(grep -Ec 'osmtopo: generation .*\((heavy sweep|reroute) ' '$LAB_OSM_LOG') -gt $before ]" ||
		{ tp_fail "a routing pass after: $1"; return 1; }
}
# The last leaf's first uplink: far from the SM's own leaf (the first).
leaf_uplink() {	# META -> "leaf port"
	python3 - "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
sw = {s["node"] for s in m["switches"]}
up = [(a, pa) for a, pa, b, pb in m["links"] if a.startswith("ibsw-L1") and b in sw]
last = max(a for a, _ in up)
print(*next(x for x in up if x[0] == last))
PY
}
# dump DIR: ibnetdiscover and ibroute -n of every switch (-n: no lookups
# of each destination's name, which need routes back from every LID)
dump() {
	local lid
	mkdir -p "$1"
	lab_umad ibnetdiscover >"$1/topo.txt" 2>"$1/err" || return 1
	: >"$1/routes.txt"
	for lid in $(python3 "$TP_PY/ibcompare.py" --switch-lids "$1/topo.txt"); do
		lab_umad ibroute -n "$lid" >>"$1/routes.txt" 2>>"$1/err" || return 1
	done
}

# ---- A. the lock at k=32 ------------------------------------------------------------------
D=$LAB_DIR/a
mkdir -p "$D/spool"
python3 tests/lab/fabgen.py fattree --k "$K" --levels 3 -o "$D/f.net" --meta "$D/f.json" \
	--root-guid-file "$D/roots" >/dev/null || { tp_fail "fabgen k=$K"; tp_finish; }
LAB_IBSIM_TIMEOUT=300 lab_start_ibsim "$D/f.net" || { tp_fail "ibsim loads k=$K"; tp_finish; }
LAB_OSM_TIMEOUT=300 LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $D/roots" \
	"event_plugin_name osmtopo" "event_plugin_options spool=$D/spool" ||
	{ tp_fail "OpenSM routes k=$K"; tp_finish; }
TP_WAIT=60 tp_wait_for grep -q 'osmtopo: generation' "$LAB_OSM_LOG" || { tp_fail "first snapshot"; tp_finish; }
read -r leaf port < <(leaf_uplink "$D/f.json")
# ends with the link back: a down port's width and speed are OpenSM's last
# PortInfo in the snapshot, not what the switch says now
for cmd in "Unlink \"$leaf\"[$port]" "ReLink \"$leaf\"[$port]" "Unlink \"$leaf\"[$port]" "ReLink \"$leaf\"[$port]"; do
	flip "$cmd" || break
done
# the SUBNET_UP of the last sweep may add one more snapshot (the ports it
# activated): wait until no new one comes for 10 s
settle=$(npasses)
for _ in $(seq 30); do
	sleep 10
	[ "$(npasses)" = "$settle" ] && break
	settle=$(npasses)
done
n=$(npasses)
tp_note "k=$K: $(grep -o 'osmtopo: generation.*' "$LAB_OSM_LOG" | head -n 1)"
first_cpu=$(pass_field 1 cpu)
first_total=$(pass_field 1 total)
if [ "$n" -ge 5 ] && [ -n "$first_cpu" ]; then
	tp_ok "k=$K: $n snapshots (the first pass, then one per link change, and a subnet-up one where ports were activated)"
else
	tp_fail "k=$K: 5 routing passes (got $n)"
fi
[ "$(pass_field 1 whole)" -gt 0 ] 2>/dev/null && tp_ok "first pass copies every table whole" ||
	tp_fail "first pass copies every table whole"
for ((i = 2; i <= n; i++)); do
	lc=$(pass_field "$i" longest_cpu)
	lw=$(pass_field "$i" longest)
	sl=$(pass_field "$i" slices)
	kept=$(pass_field "$i" kept)
	whole=$(pass_field "$i" whole)
	tp_note "pass $i: held $(pass_field "$i" total) ms in $sl slices, longest $lw ms ($lc ms CPU); $kept tables kept, $whole whole"
	if awk -v l="$lc" -v f="$first_cpu" -v x="$FACTOR" 'BEGIN { exit !(l * x <= f) }'; then
		tp_ok "pass $i: longest hold $lc ms CPU <= 1/$FACTOR of the first pass's whole copy ($first_cpu ms CPU, $first_total ms wall)"
	else
		tp_fail "pass $i: longest hold $lc ms CPU <= 1/$FACTOR of the first pass's whole copy ($first_cpu ms CPU)"
	fi
	where=$(pass_field "$i" where)
	[ "${where%%:*}" = ok ] && tp_ok "pass $i: the log says where its longest slice was (${where#*: })" ||
		tp_fail "pass $i: the log says where its longest slice was ($where)"
	[ "${kept:-0}" -gt 0 ] && [ "${whole:-1}" -eq 0 ] &&
		tp_ok "pass $i: every table kept, only stored blocks copied" ||
		tp_fail "pass $i: every table kept, only stored blocks copied ($kept kept, $whole whole)"
done
last=$(tp_osm_gens | tail -n 1)
if spool_has "$D/spool" "$last" && lab_umad "$COLLECT" -o "$D/collected.snap" 2>"$D/collect.err"; then
	tp_check "k=$K after reroutes: topo-snap diff plugin-snapshot collector-snapshot (LFTs, links, LIDs)" \
		"$TP_SNAP" diff "$D/collected.snap" "$D/spool/fabric.snap"
	out=$(python3 tests/lib/collect_compare.py strict "$D/spool/fabric.snap" "$D/collected.snap" "k=$K after reroutes:")
	printf '%s\n' "$out"
	TP_FAILS=$((TP_FAILS + $(printf '%s\n' "$out" | grep -c '^not ok - ')))
else
	tp_fail "k=$K: spool holds generation $last and topo-collect reads the fabric ($(head -c 200 "$D/collect.err" 2>/dev/null))"
fi
lab_stop_opensm
lab_teardown

# ---- B. truth after a reroute from noted blocks, k=8 ----------------------------------------
lab_init || { tp_fail "lab_init (k=8)"; tp_finish; }
D=$LAB_DIR/b
mkdir -p "$D/spool"
python3 tests/lab/fabgen.py fattree --k 8 --levels 3 -o "$D/f.net" --meta "$D/f.json" \
	--root-guid-file "$D/roots" >/dev/null || { tp_fail "fabgen k=8"; tp_finish; }
lab_start_ibsim "$D/f.net" || { tp_fail "ibsim loads k=8"; tp_finish; }
LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $D/roots" "event_plugin_name osmtopo" \
	"event_plugin_options spool=$D/spool" || { tp_fail "OpenSM routes k=8"; tp_finish; }
TP_WAIT=30 tp_wait_for grep -q 'osmtopo: generation' "$LAB_OSM_LOG" || { tp_fail "k=8: first snapshot"; tp_finish; }
read -r leaf port < <(leaf_uplink "$D/f.json")
flip "Unlink \"$leaf\"[$port]"
g=$(tp_osm_gens | tail -n 1)
TP_WAIT=30 tp_wait_for spool_caught_up "$D/spool" "$g" && cp "$D/spool/fabric.snap" "$D/down.snap" &&
	g=$("$TP_SNAP" info "$D/down.snap" | sed -n 's/^generation //p')
[ "$(pass_field 2 kept)" -gt 0 ] 2>/dev/null && tp_ok "k=8: the reroute kept tables and copied noted blocks" ||
	tp_fail "k=8: the reroute kept tables and copied noted blocks"
if "$TP_SNAP" info "$D/down.snap" 2>/dev/null | grep -qx "generation $g" && dump "$D/ref"; then
	python3 tests/lib/ibcompare.py --snap "$D/down.snap" --ibnetdiscover "$D/ref/topo.txt" \
		--ibroute "$D/ref/routes.txt" --topo-snap "$TP_SNAP" --label "k=8 after reroute: " ||
		TP_FAILS=$((TP_FAILS + 1))
else
	tp_fail "k=8: spool holds generation $g; ibnetdiscover/ibroute dumps"
fi
flip "ReLink \"$leaf\"[$port]"
g=$(tp_osm_gens | tail -n 1)
if TP_WAIT=30 tp_wait_for spool_caught_up "$D/spool" "$g" && cp "$D/spool/fabric.snap" "$D/up.snap" &&
	dump "$D/ref2"; then
	python3 tests/lib/ibcompare.py --snap "$D/up.snap" --ibnetdiscover "$D/ref2/topo.txt" \
		--ibroute "$D/ref2/routes.txt" --topo-snap "$TP_SNAP" --label "k=8 link back: " ||
		TP_FAILS=$((TP_FAILS + 1))
else
	tp_fail "k=8: spool holds generation $g or the plugin's later one after the link is back; dumps"
fi
lab_stop_opensm
lab_teardown
tp_finish
