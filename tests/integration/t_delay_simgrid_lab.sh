#!/usr/bin/env bash
# The delay matrix and the whole-fabric SimGrid export on the real stack
# (ibsim -> OpenSM + osmtopo plugin -> topod), on t_simgrid_lab's fabric: a
# 2-level fat tree (k=4: 4 leaves of 2 hosts, 2 spines) at 4x QDR (32 Gb/s
# of data, 4e9 B/s) with c401-101's cable 1x QDR (1e9 B/s).
#   delay of 4,000,000 bytes, latency 100 ns per cable and per switch:
#     c402-102 -> c402-101 (one leaf, 4x):   4e6 / 4e9 s + 300 ns = 1,000,300 ns
#     c401-102 -> c401-101 (over the 1x):    4e6 / 1e9 s + 300 ns = 4,000,300 ns
#     c402-101 -> c401-101 (3 switches, 1x): 4,000,000 + 700 ns   = 4,000,700 ns
#   simgrid --all: SMPI times of the same flows on the whole-fabric platform
#   equal those on the per-job platform (same routes, rates, latencies).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
. tests/lib/smpi.sh
export LAB_QUIET=1
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
TQ=$ROOT/build/bin/topoquery

for tool in smpicc smpirun; do
	command -v $tool >/dev/null || { nok "$tool missing (make deps installs libsimgrid-dev)"; exit 1; }
done
lab_init || { nok "lab_init"; exit 1; }
lab_fabgen fattree --k 4 --levels 2 || { nok "fabgen"; exit 1; }
# Port rates as PortInfo bitmasks (w=2 4x, w=1 1x, s=4 QDR), tab-separated;
# c401-101's cable (both ends) is 1x.
awk '/^(Ca|Switch)/ { node = $0 }
     /^\[[0-9]+\]/ {
	w = 2
	if (node ~ /"c401-101 HCA-1"/ && $1 == "[1]") w = 1
	if (node ~ /"ibsw-L1-001"/ && $1 == "[1]") w = 1
	sub(/\t#.*/, "\tw=" w "\ts=4")
     } { print }' "$LAB_DIR/f.net" >"$LAB_DIR/rated.net"
if ! lab_bring_up "$LAB_DIR/rated.net" ftree; then
	nok "lab bring-up"
	exit 1
fi
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT

# ---- the delay matrix --------------------------------------------------------
D=(c401-101 c401-102 c402-101 c402-102)
"$TQ" matrix --delay=4000000 "${D[@]}" >"$LAB_DIR/delay.txt" 2>"$LAB_DIR/delay.err"
row() { awk -v h="$1" -v c="$2" '$1 == h { print $(c + 2) }' "$LAB_DIR/delay.txt"; }
a=$(row c402-102 2) b=$(row c401-102 0) c=$(row c402-101 0) d=$(row c401-101 0)
[ "$a" = 1000300 ] && ok "delay c402-102 -> c402-101 (4x QDR, one leaf): $a ns" ||
	nok "delay 4x: '${a}', want 1000300 ($(head -c 300 "$LAB_DIR/delay.txt" "$LAB_DIR/delay.err"))"
[ "$b" = 4000300 ] && ok "delay c401-102 -> c401-101 over the 1x cable: $b ns, four times as long" ||
	nok "delay 1x: '${b}', want 4000300"
[ "$c" = 4000700 ] && [ "$d" = 0 ] && ok "delay across leaves into the 1x cable: $c ns (3 switches); 0 on the diagonal" ||
	nok "delay across leaves: '${c}', want 4000700; diagonal '${d}'"
"$TQ" -j matrix --delay=0 "${D[@]}" | python3 -c '
import json, sys
j = json.load(sys.stdin)
m = j["delay_ns"]
good = j["unit"] == "ns" and j["bytes"] == 0 and m[1][0] == 300 and m[2][0] == 700 and m[0][0] == 0
print("%s - JSON, 0 bytes: latencies alone, one switch %s ns, three %s ns" % ("ok" if good else "not ok", m[1][0], m[2][0]))
sys.exit(0 if good else 1)' || failed=$((failed + 1))
printf 'delaymatrix bytes=4000000 c401-102 c401-101\n' | nc -q 2 127.0.0.1 "$LAB_TOPOD_PORT" >"$LAB_DIR/raw.txt"
[ "$(head -1 "$LAB_DIR/raw.txt" | sed 's/gen=[0-9]* //')" = "OK n=2 bytes=4000000 unit=ns lines=2" ] &&
	[ "$(sed -n 2p "$LAB_DIR/raw.txt")" = "0 4000300" ] && ok "the protocol reply: $(tr '\n' '|' <"$LAB_DIR/raw.txt")" ||
	nok "delaymatrix reply: $(head -c 200 "$LAB_DIR/raw.txt")"

# ---- the whole fabric ----------------------------------------------------------
W=$LAB_DIR/whole.xml
t0=$(date +%s%N)
if "$TQ" simgrid --all -o "$W" 2>"$LAB_DIR/all.err" && grep -q '</platform>' "$W"; then
	ms=$((($(date +%s%N) - t0) / 1000000))
	ok "topoquery simgrid --all: $(grep -c '<host ' "$W") hosts, $(wc -c <"$W") bytes, ${ms} ms"
else
	nok "simgrid --all: $(head -c 300 "$LAB_DIR/all.err")"
	lab_teardown
	exit 1
fi
[ "$(grep -c '<host ' "$W")" = 8 ] && [ "$(grep -c '<zone id="z:' "$W")" = 4 ] &&
	ok "every host of the fabric, one zone per leaf" || nok "hosts/zones: $(grep -c '<host ' "$W") / $(grep -c '<zone id="z:' "$W")"
"$TQ" simgrid --all c401-101 >/dev/null 2>&1
[ $? = 2 ] && ok "--all with hosts is a usage error" || nok "--all with hosts"

HOSTS=(c401-101 c401-102 c402-101 c402-102 c403-101)
J=$LAB_DIR/job.xml
"$TQ" simgrid -o "$J" "${HOSTS[@]}" 2>"$LAB_DIR/job.err" || nok "per-job export: $(head -c 200 "$LAB_DIR/job.err")"
BIN=$LAB_DIR/flows
if ! smpicc -O1 -o "$BIN" tests/simgrid/flows.c >"$LAB_DIR/smpicc.log" 2>&1; then
	nok "smpicc: $(tail -c 300 "$LAB_DIR/smpicc.log")"
	lab_teardown
	exit 1
fi
printf '%s\n' "${HOSTS[@]}" >"$LAB_DIR/hostfile"
run() { # PLATFORM FLOWS... -> "SRC DST SECONDS" lines, sorted
	timeout 120 smpirun "${SMPI_CFG[@]}" -platform "$1" -hostfile "$LAB_DIR/hostfile" -np ${#HOSTS[@]} \
		"$BIN" 4000000 "${@:2}" 2>>"$LAB_DIR/smpirun.log" | awk '$1 == "flow" { print $2, $3, $4 }' | sort
}
# One flow across leaves over the 1x cable; two sharing a leaf cable; an
# exchange mixing all of them (the job's ranks 0..4 are HOSTS in order).
for flows in "2:0" "2:3 4:3" "0:2 2:0 1:3 3:4 4:1 2:3"; do
	# shellcheck disable=SC2086
	tj=$(run "$J" $flows) tw=$(run "$W" $flows)
	n=$(echo "$flows" | wc -w)
	[ -n "$tj" ] && [ "$(echo "$tj" | wc -l)" = "$n" ] && [ "$tj" = "$tw" ] &&
		ok "SMPI on the whole fabric = on the job's platform for flows $flows: $(echo "$tw" | awk '{ printf "%s ", $3 }')" ||
		nok "flows $flows: job '$(echo $tj)', whole '$(echo $tw)' ($(tail -c 300 "$LAB_DIR/smpirun.log"))"
done
lab_teardown
exit $((failed != 0))
