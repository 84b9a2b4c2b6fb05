#!/usr/bin/env bash
# t_plugin_states.sh - port states that are true from the first minute: a
# fresh OpenSM (with libosmtopo.so) on ibsim, and topod's port states must
# equal iblinkinfo's on every port within the SM's first minute, with
# `links --state notactive` empty; then one cable Unlinked in ibsim is
# exactly the one cable not active (listed Down, though OpenSM's subnet no
# longer has it), and after ReLink none is.
#
# The plugin's routing-pass snapshot has the ports at Init (OpenSM arms and
# activates them after routing); the SUBNET_UP of the same sweep sends the
# states as a delta. Fabric: TS_K-port switches, TS_LEVELS levels (4, 3:
# 20 switches, 16 hosts; TS_K=8 is make lab's 128 hosts).
set -u
# shellcheck source=t_plugin_common.bash
. "$(dirname "$0")/t_plugin_common.bash"
tp_init
LAB_QUIET=1
K=${TS_K:-4} LEVELS=${TS_LEVELS:-3}
TQ=$TP_ROOT/build/bin/topoquery

lab_fabgen fattree --k "$K" --levels "$LEVELS" || { tp_fail "fabgen: $(cat "$LAB_DIR/fabgen.err")"; tp_finish; }
lab_start_ibsim "$LAB_DIR/f.net" || { tp_fail "ibsim did not start"; tp_finish; }
lab_start_topod || { tp_fail "topod did not start"; tp_finish; }
tq() { "$TQ" -s "127.0.0.1:$LAB_TOPOD_PORT" "$@"; }

# compare: topod's cables (links --json) against iblinkinfo --line, port by
# port. Prints "ok N" (ports compared) or the first differences.
compare() {
	tq --json links >"$LAB_DIR/links.json" 2>"$LAB_DIR/links.err" || { echo "links failed: $(cat "$LAB_DIR/links.err")"; return 1; }
	lab_umad iblinkinfo --line >"$LAB_DIR/ibl.txt" 2>/dev/null || { echo "iblinkinfo failed"; return 1; }
	python3 - "$LAB_DIR/f.json" "$LAB_DIR/ibl.txt" "$LAB_DIR/links.json" <<'PY'
import json, re, sys
meta = json.load(open(sys.argv[1]))
# iblinkinfo names a CA by its port GUID; topod by its node GUID
node_of = {int(r["port_guid"], 16): int(r["guid"], 16) for rs in meta["hosts"].values() for r in rs}
line = re.compile(r'^0x([0-9a-f]+)\s+"[^"]*"\s+\d+\s+(\d+)\[[^]]*\]\s+==\((.*?)\)==>\s*(?:0x([0-9a-f]+)\s+\d+\s+(\d+)\[)?')
truth = {}   # (node, port) -> (state, (peer node, peer port) or None)
for l in open(sys.argv[2]):
    m = line.match(l)
    if not m:
        continue
    g = int(m[1], 16)
    st = re.search(r'(Down|Init|Armed|Active)/', m[3])
    peer = (node_of.get(int(m[4], 16), int(m[4], 16)), int(m[5])) if m[4] else None
    truth[(node_of.get(g, g), int(m[2]))] = (st[1] if st else "?", peer)
got = {}
for k in json.load(open(sys.argv[3]))["links"]:
    a = (int(k["a"]["node"], 16), k["a"]["port"])
    b = (int(k["b"]["node"], 16), k["b"]["port"])
    down = k["state"] == "Down"
    got[a] = (k["a"]["state"], None if down else b)
    got[b] = (k["b"]["state"], None if down else a)
bad = []
for end, (st, peer) in sorted(truth.items()):
    if peer is None:
        # an uncabled port, or a cable topod remembers as Down
        if end in got and got[end] != ("Down", None):
            bad.append("%x/%d: iblinkinfo %s unlinked, topod %s" % (end[0], end[1], st, got[end]))
    elif got.get(end) != (st, peer):
        bad.append("%x/%d: iblinkinfo %s to %s, topod %s" % (end[0], end[1], st, peer, got.get(end)))
for end in got:
    if end not in truth:
        bad.append("%x/%d: topod lists a port iblinkinfo has not" % end)
if bad or not truth:
    print("%d of %d ports differ: %s" % (len(bad), len(truth), "; ".join(bad[:4])))
    sys.exit(1)
print("ok %d" % len(truth))
PY
}

# wait_true SECONDS: until compare passes and notactive is empty; prints
# the seconds it took; 1 when the time ran out (the last difference shown).
wait_true() {
	local t0 i res=
	t0=$(date +%s.%N)
	for ((i = 0; i < $1 * 4; i++)); do
		res=$(compare) && [ -z "$(tq links --state notactive 2>&1)" ] && {
			awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", e - s }'
			return 0
		}
		sleep 0.25
	done
	echo "$res"
	return 1
}

t0=$(date +%s.%N)
LD_LIBRARY_PATH="$TP_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LAB_OSM_SWEEP=10 \
	lab_start_opensm ftree "root_guid_file $LAB_DIR/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || { tp_fail "OpenSM did not bring the subnet up"; tp_finish; }
if res=$(wait_true 60); then
	secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	tp_ok "fresh OpenSM: topod's port states equal iblinkinfo's on every port ($(compare)) and links --state notactive is empty, ${secs} s after OpenSM started"
else
	tp_fail "fresh OpenSM: after 60 s topod's states still differ from iblinkinfo's: $res"
fi
gens=$(tp_osm_gens | wc -l)
grep -q 'osmtopo: generation .*(subnet up #1' "$LAB_OSM_LOG" &&
	tp_ok "the plugin published the first sweep twice: routing, then subnet up ($gens generations)" ||
	tp_fail "no 'subnet up' generation in the OpenSM log"
# the routing pass's own snapshot had them at Init: the subnet-up one is a delta of port records
tq history >"$LAB_DIR/hist" 2>&1
[ "$(grep -c ' delta ' "$LAB_DIR/hist")" -ge 1 ] && tp_ok "topod keeps the routing pass's generation as a delta from the subnet-up one" ||
	tp_fail "history: $(cat "$LAB_DIR/hist")"
tq links | grep -q 'Init, not yet Active' &&
	tp_fail "links still shows a cable at Init" || tp_ok "no cable reads Init"

# one cable down: exactly it is not active, and it is listed as Down
read -r L P R RP < <(lab_leaf_uplink)
g0=$(lab_topod_generation)
lab_ibsim_cmd "Unlink \"$L\"[$P]" >/dev/null || tp_fail "ibsim Unlink $L[$P]"
if res=$(for _ in $(seq 120); do
	out=$(tq links --state notactive 2>&1)
	[ "$(echo "$out" | grep -c .)" = 1 ] && compare >/dev/null && { echo "$out"; exit 0; }
	sleep 0.25
done; echo "last: $out"; exit 1); then
	case $res in
	*"\"$L\" ==( Down )==> "*" $RP \"$R\""* | *"\"$R\" ==( Down )==> "*" $P \"$L\""*)
		tp_ok "Unlink $L[$P]: links --state notactive is exactly that cable, Down: $res" ;;
	*) tp_fail "Unlink $L[$P]: notactive names another cable: $res" ;;
	esac
else
	tp_fail "Unlink $L[$P]: notactive never became that one cable ($res)"
fi
[ "$(tq links --down | grep -c .)" = 1 ] && tp_ok "links --down: that one cable" || tp_fail "links --down: $(tq links --down 2>&1)"
tq --json links --state notactive | python3 -c '
import json, sys
l = json.load(sys.stdin)["links"]
sys.exit(not (len(l) == 1 and l[0]["state"] == "Down" and l[0]["transition"] is False and l[0]["a"]["state"] == "Down"))' &&
	tp_ok "--json: the cable is Down, not in transition" || tp_fail "--json notactive: $(tq --json links --state notactive)"
g1=$(lab_topod_generation)
[ "$g1" != "$g0" ] && tp_ok "a new generation is served" || tp_fail "no new generation after Unlink"
# the administrator's next question: what changed? A summary, not a line per switch
out=$(tq diff "$g0" "$g1" 2>&1)
n=$(echo "$out" | grep -c .)
[ "$n" -le 10 ] && echo "$out" | grep -q "^down: 1 cable: $L port $P - $R port $RP\$\|^down: 1 cable: $R port $RP - $L port $P\$" &&
	tp_ok "diff $g0 $g1: $n lines, naming the cable that went down" || tp_fail "diff summary ($n lines): $out"
nd=$(tq diff --detail "$g0" "$g1" 2>&1 | grep -c .)
[ "$nd" -gt "$n" ] && tp_ok "diff --detail: every record ($nd lines)" || tp_fail "diff --detail: $nd lines"

lab_ibsim_cmd "ReLink \"$L\"[$P]" >/dev/null || tp_fail "ibsim ReLink $L[$P]"
if res=$(wait_true 30); then
	tp_ok "ReLink $L[$P]: every port equals iblinkinfo's again and nothing is not active (${res} s)"
else
	tp_fail "ReLink $L[$P]: $res"
fi
tp_finish
