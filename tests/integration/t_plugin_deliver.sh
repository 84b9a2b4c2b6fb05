#!/usr/bin/env bash
# t_plugin_deliver.sh - libosmtopo.so inside a real OpenSM on ibsim delivers
# the fabric to every sink, and what it delivers is what the switches hold.
#
#  1. the plugin exports only osm_event_plugin
#  2. a 3-level k=4 fat tree, ftree, run-once: a UNIX sink, a TCP sink and a
#     spool all get the same snapshot; it matches ibnetdiscover (nodes, LIDs,
#     links, width/speed) and ibroute (every LFT entry of every switch), both
#     through topo-snap and through the independent Python decoder; a second
#     OpenSM run gets a higher generation though its sweep counter restarts
#  3. a hand-written fabric with dual-port HCAs, parallel links, LMC 1 and a
#     63-byte NodeDescription, minhop: the same comparisons
set -u
# shellcheck source=t_plugin_common.bash
. "$(dirname "$0")/t_plugin_common.bash"
tp_init

# ---- 1. exports ---------------------------------------------------------------
syms=$(nm -D --defined-only "$TP_PLUGIN" | awk '{print $3}' | sort | tr '\n' ' ')
if [ "$syms" = "osm_event_plugin " ]; then
	tp_ok "plugin exports only osm_event_plugin"
else
	tp_fail "plugin exports only osm_event_plugin (exports: $syms)"
fi

# ---- 2. fat tree, three sinks -----------------------------------------------------
D=$LAB_DIR/ft
mkdir -p "$D/spool"
python3 tests/lab/fabgen.py fattree --k 4 --levels 3 -o "$D/f.net" \
	--root-guid-file "$D/roots" >/dev/null || { tp_fail "fabgen"; tp_finish; }
lab_start_ibsim "$D/f.net" || { tp_fail "ibsim starts"; tp_finish; }
tp_start_ingest U unix "$D/u" || { tp_fail "UNIX receiver starts"; tp_finish; }
tp_start_ingest T tcp "$D/t" || { tp_fail "TCP receiver starts"; tp_finish; }

opts="sink=$U_ADDR sink=$T_ADDR spool=$D/spool timeout_ms=3000 linger_ms=5000"
t0=$(tp_now)
lab_run_opensm ftree "event_plugin_name osmtopo" "event_plugin_options $opts" \
	"root_guid_file $D/roots"
rc=$?
secs=$(tp_since "$t0")
[ "$rc" -eq 0 ] && tp_ok "opensm -o with the plugin exits 0 (${secs} s)" ||
	tp_fail "opensm -o with the plugin exits 0 (status $rc)"
LOG1=$LAB_OSM_LOG
tp_check "routing engine ftree was used" lab_osm_check_engine ftree

# A routing pass publishes one generation. When OpenSM reaches subnet up
# before run-once exits and a port state changed since (Init -> Active), a
# second one follows, labelled "subnet up"; whether it does is a race.
gens=$(tp_osm_gens "$LOG1")
ngen=$(echo "$gens" | grep -c .)
last=$(echo "$gens" | tail -n 1)
if [ "$ngen" -eq 1 ] || { [ "$ngen" -eq 2 ] &&
	grep -q "osmtopo: generation $last (subnet up #1" "$LOG1"; }; then
	tp_ok "one snapshot per routing pass, at most one more at subnet up (generations ${gens//$'\n'/ })"
else
	tp_fail "one snapshot per routing pass, at most one more at subnet up (log has: ${gens//$'\n'/ })"
fi
tp_note "$(grep -o 'osmtopo: generation.*' "$LOG1" | head -n 1)"

# A generation may be superseded before the worker sends it; the sinks get
# the generations logged, each once, in order, ending with the last.
for s in u t; do
	got=$(awk '{print $1}' "$D/$s/received.log" 2>/dev/null)
	[ -n "$last" ] && [ "$(echo "$got" | tail -n 1)" = "$last" ] &&
		[ "$(echo "$got" | sort -u | grep -c .)" -eq "$(echo "$got" | grep -c .)" ] &&
		[ "$(echo "$got" | sort -n)" = "$got" ] && [ -z "$(comm -23 <(echo "$got" | sort) <(echo "$gens" | sort))" ] &&
		tp_ok "sink $s received each generation once, in order, the last $last" ||
		tp_fail "sink $s received generations of ${gens//$'\n'/ } once, in order, the last $last (log: $(cat "$D/$s/received.log" 2>/dev/null))"
done
[ -s "$D/spool/fabric.snap" ] && tp_ok "spool holds fabric.snap" || tp_fail "spool holds fabric.snap"
tmps=$(find "$D/spool" -name '*.tmp*' | wc -l)
[ "$tmps" -eq 0 ] && tp_ok "spool has no temp files left" || tp_fail "spool has no temp files left ($tmps)"
tp_check "UNIX, TCP and spool copies are byte-identical" \
	bash -c "cmp '$D/u/latest.snap' '$D/t/latest.snap' && cmp '$D/u/latest.snap' '$D/spool/fabric.snap'"

SNAP=$D/spool/fabric.snap
"$TP_SNAP" info "$SNAP" >"$D/info.txt" 2>&1
tp_check "snapshot header: engine ftree" grep -qx "engine ftree" "$D/info.txt"
tp_check "snapshot header: the last generation logged" grep -qx "generation $last" "$D/info.txt"
tp_check "snapshot header: sweep 1" grep -qx "sweep 1" "$D/info.txt"

tp_dump_fabric "$D/ref" || tp_fail "ibnetdiscover/ibroute dumps"
smport=$(sed -n 's/^# Initiated from node [0-9a-f]* port \([0-9a-f]*\)$/\1/p' "$D/ref/topo.txt")
tp_check "snapshot header: SM port GUID 0x$smport" grep -qx "sm_guid 0x$smport" "$D/info.txt"

python3 tests/lib/ibcompare.py --snap "$SNAP" --ibnetdiscover "$D/ref/topo.txt" \
	--ibroute "$D/ref/routes.txt" --topo-snap "$TP_SNAP" --label "fat tree (topo-snap): " ||
	TP_FAILS=$((TP_FAILS + 1))
python3 tests/lib/ibcompare.py --snap "$SNAP" --ibnetdiscover "$D/ref/topo.txt" \
	--ibroute "$D/ref/routes.txt" --decoder python --check-rates \
	--label "fat tree (snapdecode.py): " || TP_FAILS=$((TP_FAILS + 1))
tp_check "snapdecode.py and topo-snap agree on links and LFTs" bash -c "
	diff <(python3 tests/lib/snapdecode.py links '$SNAP') <('$TP_SNAP' links '$SNAP') &&
	diff <(python3 tests/lib/snapdecode.py lfts '$SNAP') <('$TP_SNAP' lfts '$SNAP')"
# The same fabric read back through the text-dump loader must be the same
# fabric: a second, independent parser of the same diags output.
if "$TP_SNAP" from-text "$D/ref/topo.txt" "$D/ref/routes.txt" "$D/ref.snap" >"$D/fromtext.err" 2>&1; then
	tp_check "topo-snap diff: plugin snapshot = ibnetdiscover+ibroute snapshot" \
		"$TP_SNAP" diff "$D/ref.snap" "$SNAP"
else
	tp_fail "topo-snap from-text reads the diags output ($(head -c 200 "$D/fromtext.err"))"
fi

# A restarted OpenSM starts its sweep counter again, but never its generation.
lab_run_opensm ftree "event_plugin_name osmtopo" "event_plugin_options spool=$D/spool" \
	"root_guid_file $D/roots" || tp_fail "second opensm -o exits 0"
gen2=$(tp_osm_gens | tail -n 1)
"$TP_SNAP" info "$D/spool/fabric.snap" >"$D/info2.txt" 2>&1
if [ -n "$gen2" ] && [ -n "$last" ] && [ "$gen2" -gt "$last" ] && grep -qx "generation $gen2" "$D/info2.txt" &&
	grep -qx "sweep 1" "$D/info2.txt"; then
	tp_ok "restarted OpenSM: generation $gen2 > $last, sweep counter 1 again"
else
	tp_fail "restarted OpenSM: generation ${gen2:-none} > ${last:-none} with sweep 1"
fi
tp_check "second run: spool snapshot still matches the fabric" \
	python3 tests/lib/ibcompare.py --snap "$D/spool/fabric.snap" --ibnetdiscover "$D/ref/topo.txt" \
	--ibroute "$D/ref/routes.txt" --topo-snap "$TP_SNAP"
tp_stop_pid "$U_PID"
tp_stop_pid "$T_PID"
lab_teardown

# ---- 3. dual-port HCAs, parallel links, LMC 1 ----------------------------------------
lab_init || { tp_fail "lab_init (second fabric)"; tp_finish; }
D=$LAB_DIR/dp
mkdir -p "$D/spool"
long=$(printf 'n%063d' 7)	# exactly 64 bytes: a NodeDescription with no NUL
cat >"$D/dp.net" <<EOF
caguid=0x0002c90300a00010
Ca	2 "hostA"	# "hostA dual-port"
[1]	"sw1"[1]
[2]	"sw2"[1]

caguid=0x0002c90300a00020
Ca	2 "hostB"	# "hostB dual-port"
[1]	"sw1"[2]
[2]	"sw2"[2]

caguid=0x0002c90300a00030
Ca	1 "$long"	# "$long"
[1]	"sw2"[3]

switchguid=0x0008f10500a00001
Switch	8 "sw1"	# "sw1"
[1]	"hostA"[1]
[2]	"hostB"[1]
[5]	"sw2"[5]
[6]	"sw2"[6]

switchguid=0x0008f10500a00002
Switch	8 "sw2"	# "sw2"
[1]	"hostA"[2]
[2]	"hostB"[2]
[3]	"$long"[1]
[5]	"sw1"[5]
[6]	"sw1"[6]

EOF
lab_start_ibsim "$D/dp.net" || { tp_fail "ibsim starts (dual-port fabric)"; tp_finish; }
lab_run_opensm minhop "event_plugin_name osmtopo" "event_plugin_options spool=$D/spool" "lmc 1"
rc=$?
[ "$rc" -eq 0 ] && tp_ok "dual-port fabric: opensm -o exits 0" ||
	tp_fail "dual-port fabric: opensm -o exits 0 (status $rc)"
SNAP=$D/spool/fabric.snap
[ -s "$SNAP" ] && tp_ok "dual-port fabric: spool holds fabric.snap" ||
	tp_fail "dual-port fabric: spool holds fabric.snap"
tp_dump_fabric "$D/ref" || tp_fail "dual-port fabric: ibnetdiscover/ibroute dumps"
python3 tests/lib/ibcompare.py --snap "$SNAP" --ibnetdiscover "$D/ref/topo.txt" \
	--ibroute "$D/ref/routes.txt" --decoder python --check-rates \
	--label "dual-port LMC 1 (snapdecode.py): " || TP_FAILS=$((TP_FAILS + 1))
python3 tests/lib/ibcompare.py --snap "$SNAP" --ibnetdiscover "$D/ref/topo.txt" \
	--ibroute "$D/ref/routes.txt" --topo-snap "$TP_SNAP" \
	--label "dual-port LMC 1 (topo-snap): " || TP_FAILS=$((TP_FAILS + 1))
tp_check "dual-port fabric: CA ports carry LMC 1" \
	bash -c "python3 tests/lib/snapdecode.py ports '$SNAP' | grep -q '^0x0002c90300a00020 2 .*lmc=1'"
# ibsim keeps 63 bytes of a NodeDescription (a NUL fills the 64th), so the
# full 64-byte case cannot be simulated; the longest one must survive intact.
tp_check "dual-port fabric: longest NodeDescription ibsim can make kept whole" \
	bash -c "'$TP_SNAP' nodes '$SNAP' | grep -qF '\"${long:0:63}\"'"
tp_check "dual-port fabric: both parallel sw1-sw2 links present" \
	bash -c "'$TP_SNAP' links '$SNAP' | grep -c '^0x0008f10500a00001 [56] 0x0008f10500a00002 [56]\$' | grep -qx 2"

tp_finish
