#!/usr/bin/env bash
# make lab: the demo's simulated fabric (ibsim, OpenSM with the osmtopo
# plugin, topod) kept up until ^C or `make lab-stop`, for trying queries by
# hand. Prints how to query it, how to change the fabric, and how to stop it.
#
#   bash tests/lab/keep.sh          start (foreground; ^C stops)
#   bash tests/lab/keep.sh stop     stop the lab started from this tree
#
# Tunables: LAB_K (switch radix, 8), LAB_LEVELS (3), LAB_ROUTING (ftree),
# LAB_PIDFILE (/tmp/topod-lab.pid: the one lab `make lab-stop` stops).
# Everything is stopped by PID (tests/lab/lab.sh), also when this shell dies.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
PIDFILE=${LAB_PIDFILE:-/tmp/topod-lab.pid}

running() { # the PID in the pid file, if it is a live lab of ours
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qa "keep.sh" "/proc/$pid/cmdline" 2>/dev/null &&
		echo "$pid"
}

if [ "${1:-}" = stop ]; then
	pid=$(running) || { echo "make lab-stop: no lab is running ($PIDFILE)"; exit 0; }
	kill -TERM "$pid"
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || { echo "lab $pid stopped"; exit 0; }
		sleep 0.1
	done
	echo "make lab-stop: lab $pid did not stop within 15 s" >&2
	exit 1
fi
if pid=$(running); then
	echo "make lab: a lab is already running (pid $pid); stop it with: make lab-stop" >&2
	exit 1
fi

. tests/lab/lab.sh
LAB_QUIET=1
lab_init
K=${LAB_K:-8} LEVELS=${LAB_LEVELS:-3} ROUTING=${LAB_ROUTING:-ftree}
lab_user_cleanup() { rm -f "$PIDFILE"; }

lab_fabgen fattree --k "$K" --levels "$LEVELS" || { cat "$LAB_DIR/fabgen.err" >&2; exit 1; }
lab_start_ibsim "$LAB_DIR/f.net" || exit 1
lab_start_topod || exit 1
LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LAB_OSM_SWEEP=2 \
	lab_start_opensm "$ROUTING" "root_guid_file $LAB_DIR/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || exit 1
for _ in $(seq 100); do
	gen=$(lab_topod_generation)
	[ -n "$gen" ] && [ "$gen" != 0 ] && break
	sleep 0.1
done
echo $$ >"$PIDFILE"
# ibsim reads its console on this shell's descriptor: commands written to
# the FIFO are passed on, answers appended to ibsim.out.
mkfifo "$LAB_DIR/ibsim.cmd"
exec {cmdfd}<>"$LAB_DIR/ibsim.cmd"   # read-write: never blocks on open, never sees EOF
# two hosts far apart and one uplink, for the examples
read -r H1 H2 SW SWP < <(python3 -c 'import json,sys
m = json.load(open(sys.argv[1])); h = sorted(m["hosts"])
l = [x for x in m["links"] if x[0].startswith("ibsw") and x[2].startswith("ibsw")][0]
print(h[0], h[-1], l[0], l[1])' "$LAB_DIR/f.json" 2>/dev/null)
cat <<EOF
lab ready: a $LEVELS-level fat tree of $K-port switches, routed by OpenSM ($ROUTING), generation ${gen:-?}
  topod     pid $LAB_TOPOD_PID, queries on 127.0.0.1:$LAB_TOPOD_PORT, log $LAB_DIR/topod.log
  OpenSM    pid $LAB_OSM_PID, sweeps every 2 s, log $LAB_OSM_LOG
  ibsim     pid $LAB_IBSIM_PID

Query it:
  build/bin/topoquery -s 127.0.0.1:$LAB_TOPOD_PORT info
  build/bin/topoquery -s 127.0.0.1:$LAB_TOPOD_PORT path $H1 $H2
  echo 'hops $H1 $H2' | nc -q 2 127.0.0.1 $LAB_TOPOD_PORT
Ground truth over SMPs (infiniband-diags against the simulator):
  LD_PRELOAD=$LAB_UMAD2SIM IBSIM_SOCKNAME=$IBSIM_SOCKNAME ibnetdiscover
Change the fabric (ibsim's console; OpenSM reroutes, topod serves a new generation):
  echo 'Unlink "$SW"[$SWP]' > $LAB_DIR/ibsim.cmd; cat $LAB_DIR/ibsim.out
  (ReLink "$SW" restores it; the console's commands: echo help > $LAB_DIR/ibsim.cmd)
Stop it: ^C here, or from anywhere in this tree: make lab-stop
EOF
while :; do
	# A timed read, so that ^C and make lab-stop are handled within a second.
	# Not `IFS= read`: a trap runs inside the builtin, with its IFS.
	if read -r -t 1 -u "$cmdfd" line; then
		[ -n "$line" ] && { echo "ibsim> $line"; lab_ibsim_cmd "$line"; } >>"$LAB_DIR/ibsim.out" 2>&1
	fi
	lab__alive "$LAB_TOPOD_PID" && lab__alive "$LAB_OSM_PID" && lab__alive "$LAB_IBSIM_PID" || {
		echo "make lab: a lab process ended; see $LAB_DIR" >&2
		exit 1
	}
done
