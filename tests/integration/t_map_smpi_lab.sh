#!/usr/bin/env bash
# `map` against block in SMPI, on the real stack (ibsim -> OpenSM ftree +
# osmtopo plugin -> topod): XGFT(2;4,8;1,2), 8 leaves of 4 hosts with 2
# uplinks (2:1). The job: the 16 hosts of leaves 1-4, listed so that block
# mapping puts every pair of grid neighbours on two leaves (a scheduler's
# free list in an unlucky order); one rank per host. The graph: a 4x4 periodic halo (stencil:4x4:periodic,
# 1 MiB to each of 4 neighbours, all posted at once: bench/jobspeed/a2a.c's
# `sched` mode with one step of every directed edge).
#   - topod's map answer is never predicted slower than block;
#   - SMPI (tests/lib/smpi.sh) on `topoquery simgrid`'s platform: the
#     answered mapping takes at most 1.02x block's time;
#   - topod's predicted times (time_us, block_time_us) are within 15 % of
#     SMPI's for both mappings.
# Also on the same lab: the bytes= option scales the times, a bad bytes= is
# ERR USAGE, and topoquery map --json carries the same times as the protocol.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
for t in ibsim opensm python3 smpicc smpirun; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
. tests/lib/smpi.sh
export LAB_QUIET=1
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

lab_init || { nok "lab_init"; exit 1; }
lab_fabgen xgft --h 2 --m 4,8 --w 1,2 || { nok "fabgen"; exit 1; }
if ! lab_bring_up "$LAB_DIR/f.net" ftree "root_guid_file $LAB_DIR/roots"; then
	nok "lab bring-up"
	exit 1
fi
D=$LAB_DIR
ask() { printf '%s\n' "$1" | nc -q 5 127.0.0.1 "$LAB_TOPOD_PORT"; }

# the 16 hosts of leaves 1-4 (cRRR-PPP: port PPP-100 of leaf RRR-400) in an
# order that puts grid neighbours on different leaves under block mapping:
# rank (x, y) on leaf (x mod 2) + 2 (y mod 2), so every halo flow leaves
# its leaf (16 per leaf over 2 uplinks against 4 per host cable)
HOSTS=()
for r in $(seq 0 15); do
	x=$((r % 4)) y=$((r / 4))
	HOSTS+=("c$((401 + x % 2 + 2 * (y % 2)))-$((101 + x / 2 + 2 * (y / 2)))")
done
ask "map stencil:4x4:periodic ${HOSTS[*]}" >"$D/map.out"
ask "map bytes=4096 stencil:4x4:periodic ${HOSTS[*]}" >"$D/map4k.out"
ask "map bytes=0 stencil:4x4:periodic ${HOSTS[*]}" >"$D/map0.out"
head -1 "$D/map.out" | grep -q '^OK ' && ok "map: $(head -1 "$D/map.out" | cut -c1-400)" ||
	{ nok "map: $(head -c 300 "$D/map.out")"; exit 1; }
grep -q '^ERR USAGE' "$D/map0.out" && ok "map bytes=0: $(head -1 "$D/map0.out")" || nok "map bytes=0: $(head -1 "$D/map0.out")"

if ! "$ROOT/build/bin/topoquery" -s "127.0.0.1:$LAB_TOPOD_PORT" --json map stencil:4x4:periodic "${HOSTS[@]}" \
	>"$D/tq.json" 2>"$D/tq.err"; then
	nok "topoquery map: $(head -c 200 "$D/tq.err")"
fi
"$ROOT/build/bin/topoquery" simgrid -s "127.0.0.1:$LAB_TOPOD_PORT" -o "$D/p.xml" "${HOSTS[@]}" 2>"$D/sg.err" ||
	"$ROOT/build/bin/topoquery" -s "127.0.0.1:$LAB_TOPOD_PORT" simgrid -o "$D/p.xml" "${HOSTS[@]}" 2>"$D/sg.err" ||
	{ nok "topoquery simgrid: $(head -c 200 "$D/sg.err")"; exit 1; }

# host files (rank r's host on line r), the halo's one step, the protocol's figures
python3 - "$D" "${HOSTS[@]}" <<'PY' || { nok "map reply"; exit 1; }
import json, sys
d, hosts = sys.argv[1], sys.argv[2:]
lines = open(d + "/map.out").read().split("\n")
kv = dict(w.split("=", 1) for w in lines[0].split()[1:])
n = int(kv["lines"])
rh = [l.split()[1] for l in lines[1:1 + n]]
open(d + "/hf.block", "w").write("\n".join(hosts) + "\n")
open(d + "/hf.map", "w").write("\n".join(rh) + "\n")
X = Y = 4
edges = []
for r in range(X * Y):
    x, y = r % X, r // X
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        edges.append("%d:%d" % (r, (x + dx) % X + X * ((y + dy) % Y)))
open(d + "/halo.sched", "w").write(" ".join(edges) + "\n")
kv4 = dict(w.split("=", 1) for w in open(d + "/map4k.out").readline().split()[1:])
tq = json.load(open(d + "/tq.json"))
with open(d + "/fig", "w") as f:
    f.write("%s %s %s %s %s %s %s\n" % (kv["method"], kv["reason"], kv["time_us"], kv["block_time_us"],
                                       kv["rr_time_us"], kv4["time_us"], kv4["block_time_us"]))
    same = tq["rank_host"] == rh and abs(tq["time_s"] * 1e6 - float(kv["time_us"])) < 1e-3 and \
        abs(tq["block_time_s"] * 1e6 - float(kv["block_time_us"])) < 1e-3 and tq["method"] == kv["method"]
    f.write("%d\n" % same)
PY
read -r METHOD REASON T_MAP T_BLK T_RR T4_MAP T4_BLK <"$D/fig"
[ "$(sed -n 2p "$D/fig")" = 1 ] && ok "topoquery map --json (libtii) carries the protocol's mapping and times" ||
	nok "topoquery map --json differs from the protocol: $(head -c 300 "$D/tq.json")"
awk -v m="$T_MAP" -v b="$T_BLK" 'BEGIN { exit !(m <= b) }' &&
	ok "map is never predicted slower than block: method=$METHOD reason=$REASON $T_MAP us, block $T_BLK us, rr $T_RR us" ||
	nok "map predicted $T_MAP us > block $T_BLK us"
# bytes=4096: the bandwidth term scales by 4096 / 2^20, latency stays (~0.7 us)
awk -v a="$T_BLK" -v b="$T4_BLK" 'BEGIN { r = (b - 0.7) / (a - 0.7); exit !(r > 0.0039 && r < 0.0040) }' &&
	ok "bytes=4096: block's predicted time $T4_BLK us, 1/256 of $T_BLK us's bandwidth term" ||
	nok "bytes=4096: block $T4_BLK us against $T_BLK us"

# A Scotch .grf with vertex and edge weights (flags 011; x edges weigh 5,
# y edges 1) maps as the same graph sent as csr: with those weights, and
# its times are for those weights (a double free once crashed topoquery here).
python3 - "$D" <<'PY'
d, X, Y = __import__("sys").argv[1], 4, 4
adj = []
for r in range(X * Y):
    x, y = r % X, r // X
    adj.append([((x + dx) % X + X * ((y + dy) % Y), 5 if dx else 1) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))])
with open(d + "/w.grf", "w") as f:
    f.write("0\n%d %d\n0 011\n" % (X * Y, sum(len(a) for a in adj)))
    for a in adj:
        f.write("7 %d %s\n" % (len(a), " ".join("%d %d" % (w, u) for u, w in a)))
open(d + "/w.csr", "w").write(" ".join(",".join("%d:%d" % (u, w) for u, w in a) for a in adj))
PY
ask "map csr:16 ${HOSTS[*]} -- $(cat "$D/w.csr")" >"$D/wcsr.out"
if "$ROOT/build/bin/topoquery" -s "127.0.0.1:$LAB_TOPOD_PORT" --json map "$D/w.grf" "${HOSTS[@]}" >"$D/wgrf.json" 2>"$D/wgrf.err" &&
	python3 - "$D" <<'PY'; then
import json, sys
d = sys.argv[1]
lines = open(d + "/wcsr.out").read().split("\n")
kv = dict(w.split("=", 1) for w in lines[0].split()[1:])
rh = [l.split()[1] for l in lines[1:1 + int(kv["lines"])]]
g = json.load(open(d + "/wgrf.json"))
assert g["rank_host"] == rh, "rank_host"
assert abs(g["time_s"] * 1e6 - float(kv["time_us"])) < 1e-3 and g["hop_bytes"] == int(kv["hop_bytes"]), "figures"
assert g["hop_bytes"] > 0 and g["time_s"] <= g["block_time_s"], "never slower"
PY
	ok "a weighted .grf (vertex and edge weights) maps as the same csr: graph: method $(sed -n 's/.*"method":"\([a-z]*\)".*/\1/p' "$D/wgrf.json")"
else
	nok "weighted .grf against csr: $(head -c 300 "$D/wgrf.err") $(head -c 200 "$D/wcsr.out")"
fi

BIN=$D/a2a
smpicc -O1 -o "$BIN" bench/jobspeed/a2a.c >"$D/smpicc.log" 2>&1 || { nok "smpicc: $(tail -c 300 "$D/smpicc.log")"; exit 1; }
run() { # HOSTFILE -> simulated seconds of the halo
	timeout 120 smpirun "${SMPI_CFG[@]}" -platform "$D/p.xml" -hostfile "$1" -np 16 "$BIN" 1048576 sched \
		"$D/halo.sched" 2>>"$D/smpirun.log" | sed -n 's/^a2a sched .* time=\([0-9.]*\)$/\1/p'
}
S_BLK=$(run "$D/hf.block")
S_MAP=$(run "$D/hf.map")
[ -n "$S_BLK" ] && [ -n "$S_MAP" ] || { nok "smpirun: $(tail -c 400 "$D/smpirun.log")"; lab_teardown; exit 1; }
awk -v m="$S_MAP" -v b="$S_BLK" 'BEGIN { exit !(m <= 1.02 * b) }' &&
	ok "SMPI: the halo takes $S_MAP s mapped ($METHOD), $S_BLK s block: $(awk -v m="$S_MAP" -v b="$S_BLK" 'BEGIN { printf "%.3f", b / m }')x" ||
	nok "SMPI: mapped $S_MAP s > 1.02 x block $S_BLK s"
near15() { awk -v p="$1" -v s="$2" 'BEGIN { p /= 1e6; d = p - s; if (d < 0) d = -d; exit !(s > 0 && d <= 0.15 * s) }'; }
near15 "$T_MAP" "$S_MAP" && ok "prediction of the answer $T_MAP us, SMPI $S_MAP s" ||
	nok "prediction of the answer $T_MAP us against SMPI $S_MAP s (15 %)"
near15 "$T_BLK" "$S_BLK" && ok "prediction of block $T_BLK us, SMPI $S_BLK s" ||
	nok "prediction of block $T_BLK us against SMPI $S_BLK s (15 %)"
lab_teardown
exit $((failed != 0))
