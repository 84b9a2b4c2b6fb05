#!/usr/bin/env bash
# make demo: a simulated fat tree under ibsim, the real OpenSM with the
# osmtopo plugin, and topod receiving what OpenSM routed. Shows topod's
# answers next to the infiniband-diags tools' ground truth, then takes a
# link down and shows the reroute arrive as a new generation.
#
# Everything started here is killed by PID when the demo ends, also on ^C.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
LAB_QUIET=1
lab_init

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
q() { # one protocol line to topod, as anyone could with nc
	printf '%s\n' "$1" | nc -q 2 127.0.0.1 "$PORT"
}
tq() { # the same through libtii, as users do
	echo "\$ topoquery $*"
	"$ROOT/build/bin/topoquery" -s "127.0.0.1:$PORT" "$@"
}

say "1. A 3-level fat tree of 8-port switches (k=8: 128 hosts, 80 switches) for ibsim"
python3 tests/lab/fabgen.py fattree --k 8 --levels 3 -o "$LAB_DIR/fabric.net" \
	--meta "$LAB_DIR/fabric.json" --root-guid-file "$LAB_DIR/roots" || exit 1
grep -m3 '^Hca\|^Switch' "$LAB_DIR/fabric.net"
lab_start_ibsim "$LAB_DIR/fabric.net" || exit 1

say "2. topod, listening for snapshots on a UNIX socket"
lab_start_topod -a "$LAB_DIR/admin.sock" || exit 1
TOPOD_PID=$LAB_TOPOD_PID PORT=$LAB_TOPOD_PORT
echo "topod pid $TOPOD_PID, queries on 127.0.0.1:$PORT"
q info

say "3. OpenSM (ftree routing) with the plugin: event_plugin_name osmtopo"
mkdir -p "$LAB_DIR/spool"
echo "event_plugin_options sink=unix:$LAB_DIR/ingest.sock spool=$LAB_DIR/spool"
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LAB_OSM_SWEEP=2 lab_start_opensm ftree "root_guid_file $LAB_DIR/roots" \
	"event_plugin_name osmtopo" "event_plugin_options sink=unix:$LAB_DIR/ingest.sock spool=$LAB_DIR/spool" || exit 1
for _ in $(seq 100); do
	gen=$(q info | sed -n 's/.*generation=\([0-9]*\).*/\1/p')
	[ "${gen:-0}" != 0 ] && break
	sleep 0.1
done
q info
grep -a 'osmtopo' "$LAB_OSM_LOG" | tail -2 | cut -c1-200

say "4. What topod received equals what the switches hold (ibroute, over SMPs)"
"$ROOT/build/bin/topo-snap" info "$LAB_DIR/spool/fabric.snap" | sed -n '1,12p'
SW_LID=$(lab_umad ibswitches 2>/dev/null | sed -n '1s/.* lid \([0-9]*\) .*/\1/p')
SW_GUID=$(lab_umad ibswitches 2>/dev/null | sed -n '1s/^Switch\s*:\s*\(0x[0-9a-f]*\).*/\1/p')
echo "--- ibroute -n $SW_LID, read from the simulated switch:"
lab_umad ibroute -n "$SW_LID" 2>/dev/null | sed -n '4,8p'
echo "--- the same entries in the plugin's snapshot (switch GUID, LID, port):"
"$ROOT/build/bin/topo-snap" lfts "$LAB_DIR/spool/fabric.snap" | grep -i "^$SW_GUID " | head -5

say "5. Answers: hops, paths, the hierarchy, link sharing"
tq info
tq hops c401-101 c401-102
tq hops c401-101 c402-101
tq hops c401-101 c432-104
tq path c401-101 c432-104
A=$(q "resolve c401-101" | sed -n 's/.* lid=\([0-9]*\) .*/\1/p')
B=$(q "resolve c432-104" | sed -n 's/.* lid=\([0-9]*\) .*/\1/p')
echo "\$ ibtracert $A $B      # ground truth, over SMPs"
lab_umad ibtracert "$A" "$B" 2>/dev/null
echo "\$ echo 'query c401-101:c432-104' | nc 127.0.0.1 $PORT      # the form of Subramoni 2013's query server"
q "query c401-101:c432-104"
tq depth
tq clusters c401-101 c401-102 c402-101 c405-101 c432-104
tq shared c401-101 c402-101 c403-101 c404-101 c409-101 c410-101 c411-101 c412-101
echo "\$ topoquery slurm     # a Slurm topology.conf from the hierarchy (first lines)"
"$ROOT/build/bin/topoquery" -s "127.0.0.1:$PORT" slurm | head -6

say "6. Take an uplink down; OpenSM reroutes and topod serves a new generation"
before=$(q info | sed -n 's/.*generation=\([0-9]*\).*/\1/p')
L1=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); l=[x for x in m["links"] if x[0].startswith("ibsw") and x[2].startswith("ibsw")][0]; print("%s %s" % (l[0], l[1]))' "$LAB_DIR/fabric.json" 2>/dev/null)
if [ -n "$L1" ]; then
	set -- $L1
	echo "ibsim> Unlink \"$1\"[$2]"
	lab_ibsim_cmd "Unlink \"$1\"[$2]" >/dev/null
	for _ in $(seq 150); do
		now=$(q info | sed -n 's/.*generation=\([0-9]*\).*/\1/p')
		[ "$now" != "$before" ] && break
		sleep 0.1
	done
	q info
	[ "$now" != "$before" ] && echo "generation $before -> $now: the reroute reached topod"
fi

say "7. topod's log"
cat "$LAB_DIR/topod.log"
say "Done; tearing the lab down (ibsim, OpenSM, topod) by PID."
echo "To keep a fabric like this one up and query it yourself: make lab (tests/lab/README.md)."
