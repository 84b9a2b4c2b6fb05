#!/usr/bin/env bash
# The fabric over time, with real OpenSM on ibsim (issue 13):
#   a 3-level fat tree (k=4, 16 hosts) routed by a long-running OpenSM whose
#   osmtopo plugin delivers to topod; a leaf uplink is taken down and brought
#   back through ibsim's console.
#   - every reroute arrives, as a delta (topod's log and the plugin's);
#   - `diff G1 G2` names exactly the link taken down (then up), and the
#     host pairs whose routes changed are exactly those whose ibtracert
#     switch sequence changed (every ordered pair, traced before and after);
#   - `history` lists the generations;
#   - 20 `topoquery watch` clients wake for each new generation;
#   - a topod that lost the base (restarted on an empty state directory)
#     refuses the next delta with ERR NOBASE and the plugin recovers at once
#     with the full snapshot.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. tests/lib/tap.bash
TQ=$ROOT/build/bin/topoquery

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
lab_fabgen fattree --k 4 --levels 3 || { nok "fabgen"; exit 1; }
lab_start_ibsim "$d/f.net" || { nok "ibsim"; exit 1; }
lab_start_topod || { nok "topod"; exit 1; }
if ! LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $d/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest.sock"; then
	nok "OpenSM did not come up"; exit 1
fi

# G: waits until topod serves a generation above G, prints it. A deadline
# in seconds, not a count of polls: under make check's parallel load no
# generation reached the restarted topod within 30 s of polling once; on a
# quiet machine a reroute (OpenSM's trap, sweep and routing pass, the
# plugin, topod) takes about 6 s.
wait_gen_above() {
	local g end=$((SECONDS + 90))
	while ((SECONDS < end)); do
		g=$(lab_topod_generation)
		[ -n "$g" ] && [ "$g" -gt "$1" ] 2>/dev/null && { echo "$g"; return 0; }
		sleep 0.1
	done
	return 1
}
# Why no generation came: what topod and the plugin last said.
no_gen() {
	nok "$1"
	tail -5 "$d/topod.log" | sed 's/^/# topod: /'
	grep -E "osmtopo|SUBNET UP|Heavy Sweep|trap" "$LAB_OSM_LOG" | tail -8 | sed 's/^/# opensm: /'
	exit 1
}
ask() { python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "$@"; } # the whole last reply
trace() { lab_umad python3 tests/lib/tracepairs.py --port "$LAB_TOPOD_PORT" "$1"; }

g1=$(wait_gen_above 0) || no_gen "no first generation"
ok "OpenSM's first routing pass is served (generation $g1)"
trace "$d/t.$g1.json" || nok "ibtracert of every pair before"
hosts=$(ask hosts | tail -n +2 | awk '{print $1}' | tr '\n' ' ')

# The link: the first leaf uplink in fabgen's meta, and its far end.
read -r leaf port peer pport < <(lab_leaf_uplink "$d/f.json")
cat >"$d/check.py" <<'PY'
import json, sys
meta, diff, t1, t2, leaf, port, peer, pport, kind = sys.argv[1:]
m = json.load(open(meta))
guid = {s["node"]: int(s["guid"], 16) for s in m["switches"]}
rows = open(diff).read().splitlines()
links = [r.split() for r in rows[1:] if r.startswith("link-")]
def end(x):
    g, p = x.split("/")
    return (int(g, 16), int(p))
want = sorted([(guid[leaf], int(port)), (guid[peer], int(pport))])
ok = len(links) == 1 and links[0][0] == "link-" + kind and sorted([end(links[0][1]), end(links[0][2])]) == want
print("%s - diff names exactly the link taken %s: %s" % ("ok" if ok else "not ok", kind, [" ".join(l[:3]) for l in links]))
a, b = json.load(open(t1)), json.load(open(t2))
truth = sorted(tuple(k.split()) for k in a if a[k] != b.get(k))
mine = sorted(tuple(r.split()[1:3]) for r in rows[1:] if r.startswith("route "))
ok2 = truth == mine and len(truth) > 0
print("%s - link %s: the host pairs whose routes changed equal ibtracert's before/after (%d of %d pairs)" %
      ("ok" if ok2 else "not ok", kind, len(truth), len(a)))
if not ok2:
    print("# only ibtracert: %s" % sorted(set(truth) - set(mine))[:5])
    print("# only diff: %s" % sorted(set(mine) - set(truth))[:5])
sys.exit(0 if ok and ok2 else 1)
PY
[ -n "${leaf:-}" ] || { nok "no leaf uplink in f.json"; exit 1; }
# Watchers: 20 topoquery processes waiting for the generation after g1.
watchers() { # AFTER TAG: start them
	local i
	W_PIDS=()
	for ((i = 0; i < 20; i++)); do
		TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" watch --after "$1" --count 1 --wait 60 \
			>"$d/watch.$2.$i" 2>&1 &
		W_PIDS+=($!)
		lab_own "$!"
	done
}
# woke BEFORE TAG: every watcher exited 0 naming the same generation above
# BEFORE, which it sets in WOKE (not in a subshell: wait needs the watchers'
# own shell). That is the routing pass's generation: the plugin
# may publish its subnet-up generation (the ports' new states) a moment
# later, so topod may already serve a newer one when the test looks.
woke() {
	local i bad=0 g first=
	for ((i = 0; i < 20; i++)); do
		wait "${W_PIDS[$i]}" || bad=$((bad + 1))
		g=$(sed -n 's/^generation \([0-9]*\) .*/\1/p' "$d/watch.$2.$i" | head -1)
		[ -n "$first" ] || first=$g
		{ [ -n "$g" ] && [ "$g" = "$first" ] && [ "$g" -gt "$1" ]; } || bad=$((bad + 1))
	done
	WOKE=$first
	[ "$bad" -eq 0 ]
}
# reroute CONSOLE_CMD BEFORE TAG KIND: with 20 watchers on generation
# BEFORE, one ibsim console command; the new generation (set in NEW) wakes
# them, arrives as a delta, and `diff BEFORE NEW` names exactly the link
# that went KIND (down/up) and the pairs whose ibtracert route changed.
reroute() {
	local cmd=$1 before=$2 tag=$3 kind=$4 after i same=0 g
	# Let a subnet-up generation that follows BEFORE arrive first (the
	# generation stays the same for 2 s), and watch from whatever is served.
	for ((i = 0; i < 100 && same < 20; i++)); do
		g=$(lab_topod_generation)
		if [ -n "$g" ] && [ "$g" = "$before" ]; then same=$((same + 1)); else same=0 before=${g:-$before}; fi
		sleep 0.1
	done
	watchers "$before" "$tag"
	sleep 0.5
	lab_ibsim_cmd "$cmd" >/dev/null || nok "ibsim $cmd"
	wait_gen_above "$before" >/dev/null || no_gen "no generation after $cmd"
	if woke "$before" "$tag"; then
		after=$WOKE
		ok "20 topoquery watch clients woke for generation $after"
	else
		nok "20 topoquery watch clients woke for one generation above $before"
		after=$(wait_gen_above "$before")
	fi
	ok "the reroute after $cmd is served (generation $after)"
	# A delta is against the plugin's last publication. When OpenSM
	# publishes twice in a row (the routing pass, then subnet up with the
	# port Active) and the second supersedes the first before the sink had
	# it, the sink's base is older than the delta's: it gets the whole
	# snapshot, by design. Then a generation lies between the two.
	local between
	between=$(grep -o 'osmtopo: generation [0-9]*' "$LAB_OSM_LOG" |
		awk -v a="$before" -v b="$after" '$3 > a && $3 < b { print $3; exit }')
	if grep -q "delta from .*generation $after from $before" "$d/topod.log"; then
		ok "it arrived as a delta (topod's log)"
	elif [ -n "$between" ] && grep -q "osmtopo: generation $after " "$LAB_OSM_LOG"; then
		ok "it arrived whole: generation $between, published between, was superseded before the sink had it"
	else
		nok "it arrived as a delta (topod's log; no generation published between $before and $after)"
		grep -E "generation $after|delta from" "$d/topod.log" | tail -3 | sed 's/^/# /'
	fi
	trace "$d/t.$after.json" || nok "ibtracert of every pair after $cmd"
	ask tree | tail -n +2 >"$d/tree.$after"
	ask "diff $before $after $hosts" >"$d/diff.$after"
	head -1 "$d/diff.$after" | sed 's/^/# /'
	python3 "$d/check.py" "$d/f.json" "$d/diff.$after" "$d/t.$before.json" "$d/t.$after.json" "$leaf" "$port" \
		"$peer" "$pport" "$kind" || failed=$((failed + 1))
	NEW=$after
}
reroute "Unlink \"$leaf\"[$port]" "$g1" a down
g2=$NEW
# No leaf's hop count to a host changed (the leaf goes up its other
# uplink): the delta keeps the clusters and only renames them (issue 22);
# the end of this test compares them with a hierarchy built from scratch.
check "generation $g2 kept the clusters, renamed over the new links (topod's log)" \
	grep -q "serving generation $g2 .*renamed over the new links" "$d/topod.log"
reroute "ReLink \"$leaf\"[$port]" "$g2" b up
ask history >"$d/history.txt"
n=$(head -1 "$d/history.txt" | sed -n 's/.* lines=\([0-9]*\).*/\1/p')
check "history lists the three generations (${n:-?})" [ "${n:-0}" -ge 3 ]
check "the older ones are kept as deltas" grep -q "generation=$g1 kind=delta" "$d/history.txt"

# A topod without the base: the plugin's next delta is refused, the full
# snapshot follows at once.
kill "$LAB_TOPOD_PID"; wait "$LAB_TOPOD_PID" 2>/dev/null
mkdir -m 700 "$d/state2"
lab_start_topod -d "$d/state2" || { nok "topod restart"; exit 1; }
lab_ibsim_cmd "Unlink \"$leaf\"[$port]" >/dev/null || nok "ibsim Unlink (2)"
g4=$(wait_gen_above 0) || no_gen "no generation on the new topod"
check "the new topod refused the delta: ERR NOBASE" grep -q "rejected delta .*no fabric is served yet" "$d/topod.log"
check "the plugin logged the refusal and sent the full snapshot" \
	grep -q "delta of generation $g4 refused" "$LAB_OSM_LOG"
ok "and generation $g4 is served"
ask tree | tail -n +2 >"$d/tree.full.$g4"
check "its hierarchy, built from the full snapshot of the same fault, equals the one generation $g2 kept and renamed" \
	cmp -s "$d/tree.full.$g4" "$d/tree.$g2"

[ "$failed" -eq 0 ]
