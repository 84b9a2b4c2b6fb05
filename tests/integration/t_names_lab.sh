#!/usr/bin/env bash
# Stable, named hierarchy on a real OpenSM (issue 26): an over-subscribed
# 3-level tree with redundant uplinks (XGFT(3; 4,2,2; 1,2,2): 16 hosts, 4
# hosts per leaf, each leaf and each spine with two uplinks), routed by a
# long-running OpenSM (ftree) whose osmtopo plugin feeds topod.
#   - topology.conf names every switch after the fabric's switches: leaves
#     ibsw-L1-*, each with exactly its hosts, pods and root after their
#     smallest-GUID switch (ibsw-L2-*, ibsw-L3-001);
#   - a host goes away (ibsim Unlink of its HCA): the next topology.conf
#     still lists it under its leaf and says so in a comment; every
#     SwitchName/Nodes/Switches line is the same bytes;
#   - it comes back (ReLink): the file is byte-identical to the first;
#   - a redundant leaf uplink fails: byte-identical again;
#   - tree --json names the clusters and lists the gone host; shared and
#     load --links print switch names next to GUIDs.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. tests/lib/tap.bash
TQ=$ROOT/build/bin/topoquery

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
lab_fabgen xgft --h 3 --m 4,2,2 --w 1,2,2 || { nok "fabgen"; exit 1; }
lab_start_ibsim "$d/f.net" || { nok "ibsim"; exit 1; }
lab_start_topod || { nok "topod"; exit 1; }
if ! LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $d/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest.sock"; then
	nok "OpenSM did not come up"; exit 1
fi
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT
ask() { python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "$@"; }

# settle PRED: waits (60 s at most) until PRED holds and the generation has
# not moved for 2 s (OpenSM may publish a reroute in several sweeps).
settle() {
	local i g last= same=0
	for ((i = 0; i < 600; i++)); do
		g=$(lab_topod_generation)
		if [ -n "$g" ] && [ "$g" != 0 ] && "$@"; then
			[ "$g" = "$last" ] && same=$((same + 1)) || same=0
			last=$g
			[ "$same" -ge 20 ] && return 0
		fi
		sleep 0.1
	done
	return 1
}
hosts_now() { ask hosts | tail -n +2 | awk '{print $1}' | sort; }
has_host() { hosts_now | grep -qx "$1"; }
lacks_host() { ! has_host "$1"; }
always() { true; }
victim=c402-103

settle has_host "$victim" || { nok "no first generation with $victim (see $d/topod.log)"; exit 1; }
n=$(hosts_now | wc -l)
check "OpenSM's routing is served: 16 hosts ($n)" [ "$n" -eq 16 ]
"$TQ" slurm -o "$d/conf.1" || nok "topoquery slurm -o (1)"
sed 's/^/# /' "$d/conf.1"

# The names are the switches' NodeDescriptions, the structure fabgen's.
python3 - "$d/f.json" "$d/conf.1" <<'PY' || failed=$((failed + 1))
import json, re, sys
m = json.load(open(sys.argv[1]))
sw = {}
for line in open(sys.argv[2]):
    if line.startswith("SwitchName="):
        kv = dict(w.split("=", 1) for w in line.split())
        sw[kv["SwitchName"]] = kv
bad = 0
def check(ok, what):
    global bad
    print(("ok - " if ok else "not ok - ") + what)
    bad += not ok
leaf_hosts = {}
for h, rails in m["hosts"].items():
    leaf_hosts.setdefault(rails[0]["switch"], []).append(h)
leaves = {n: kv for n, kv in sw.items() if "Nodes" in kv}
check(sorted(leaves) == sorted(leaf_hosts), "the leaves are named after the leaf switches: %s" % sorted(leaves))
def expand(e):
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", e):
        mm = re.match(r"^(.*)\[(.*)\]$", part)
        if not mm:
            out.append(part)
            continue
        for r in mm.group(2).split(","):
            lo, _, hi = r.partition("-")
            out += [mm.group(1) + str(v).zfill(len(lo)) for v in range(int(lo), int(hi or lo) + 1)]
    return sorted(out)
check(all(expand(leaves[n]["Nodes"]) == sorted(leaf_hosts.get(n, [])) for n in leaves),
      "each leaf switch lists exactly its hosts")
ups = {n: kv["Switches"].split(",") for n, kv in sw.items() if "Switches" in kv}
l2 = sorted(s["node"] for s in m["switches"] if s["level"] == 2)
check(len(ups) == 3 and set(ups) - {"ibsw-L3-001"} <= set(l2) and "ibsw-L3-001" in ups,
      "pods and root named after their smallest-GUID spine and core switch: %s" % sorted(ups))
sys.exit(1 if bad else 0)
PY

# 1. a host goes away
lab_ibsim_cmd "Unlink \"$victim HCA-1\"" >/dev/null || nok "ibsim Unlink $victim"
settle lacks_host "$victim" || nok "$victim is not gone from topod's hosts after Unlink"
"$TQ" slurm -o "$d/conf.2" || nok "topoquery slurm -o (2)"
check "after $victim went away: every SwitchName line is the same bytes" \
	cmp -s <(grep -v '^#' "$d/conf.1") <(grep -v '^#' "$d/conf.2")
check "and a comment says $victim is not in the fabric now" grep -q "^# $victim: not in the fabric now" "$d/conf.2"
grep '^#' "$d/conf.2" | sed 's/^/# /'
"$TQ" --json tree >"$d/tree.2.json" || nok "tree --json"
python3 - "$d/tree.2.json" "$victim" "$d/f.json" <<'PY' || failed=$((failed + 1))
import json, sys
t = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[3]))["hosts"][sys.argv[2]][0]["switch"]
names = [c["name"] for c in t["clusters"]]
gone = [g["name"] for g in t["gone"]]
ok = all(n and n.startswith("ibsw-") for n in names) and len(set(names)) == len(names) and gone == [sys.argv[2]]
print(("ok" if ok else "not ok") + " - tree --json: clusters named ibsw-*, gone = [%s]: %s %s" % (sys.argv[2], names, gone))
par = [g["parent"] for g in t["gone"]]
leaf = [c for c in t["clusters"] if c["id"] == (par[0] if par else None)]
ok = bool(leaf) and leaf[0]["name"] == want
print(("ok" if ok else "not ok") + " - the gone host hangs under its leaf %s: %s" % (want, leaf))
sys.exit(0 if ok else 1)
PY

# 2. it comes back
lab_ibsim_cmd "ReLink \"$victim HCA-1\"" >/dev/null || nok "ibsim ReLink $victim"
settle has_host "$victim" || nok "$victim did not come back"
"$TQ" slurm -o "$d/conf.3" || nok "topoquery slurm -o (3)"
check "after $victim came back: topology.conf is byte-identical to the first" cmp "$d/conf.1" "$d/conf.3"

# 3. a redundant leaf uplink fails
links0=$(ask info | sed -n 's/.* links=\([0-9]*\) .*/\1/p')
g0=$(lab_topod_generation)
lab_ibsim_cmd 'Unlink "ibsw-L1-001"[5]' >/dev/null || nok "ibsim Unlink ibsw-L1-001[5]"
gen_moved() { [ "$(lab_topod_generation)" -gt "$g0" ] 2>/dev/null; }
settle gen_moved || nok "no generation after the uplink failed (served $(lab_topod_generation), before $g0)"
links=$(ask info | sed -n 's/.* links=\([0-9]*\) .*/\1/p')
check "topod serves the fabric without that link (links $links0 -> $links)" [ "${links:-0}" -eq $((links0 - 1)) ]
"$TQ" slurm -o "$d/conf.4" || nok "topoquery slurm -o (4)"
check "after a redundant uplink failed: topology.conf is byte-identical to the first" \
	cmp "$d/conf.1" "$d/conf.4"

# names next to GUIDs
out=$("$TQ" shared c401-101 c401-102 c402-101 c403-101 c404-101 2>&1)
check "shared: groups name their switch (NAME (0xGUID) port P)" \
	grep -Eq '^group ibsw-L[0-9]-[0-9]+ \(0x[0-9a-f]{16}\) port [0-9]+ ' <<<"$out"
out=$("$TQ" load --links alltoall c401-101 c402-101 c403-101 2>&1)
check "load --links: link lines name both ends" \
	grep -Eq '^link ibsw-L[0-9]-[0-9]+ \(0x[0-9a-f]{16}\) port [0-9]+ [0-9]>[0-9] [0-9]+ [0-9]+ (ibsw-L|c40)' <<<"$out"
out=$("$TQ" clusters c401-101 c404-104 2>&1)
check "clusters: the leaf level names ibsw-L1-001 and ibsw-L1-004" \
	grep -q '^c404-104 0x[0-9a-f]* [0-9]* ibsw-L1-004$' <<<"$out"

lab_teardown
[ "$failed" -eq 0 ]
