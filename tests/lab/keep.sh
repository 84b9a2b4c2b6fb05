#!/usr/bin/env bash
# make lab: the demo's simulated fabric (ibsim, OpenSM with the osmtopo
# plugin, topod) kept up until ^C or `make lab-stop`, for trying queries by
# hand. Prints how to query it, how to change the fabric, and how to stop it.
#
#   bash tests/lab/keep.sh          start (foreground; ^C stops)
#   bash tests/lab/keep.sh stop     stop the lab started from this tree
#   bash tests/lab/keep.sh env      its client settings (export TII_SERVERS=...)
#
# Tunables: LAB_K (switch radix, 8), LAB_LEVELS (3), LAB_ROUTING (ftree),
# LAB_TOPOD_ARGS (more topod options, split on spaces; @LAB@ stands for the
# lab's folder, e.g. "--http 127.0.0.1:8080 --admin @LAB@/admin.sock"),
# LAB_PIDFILE (/tmp/topod-lab.pid: the one lab `make lab-stop` stops).
#
# Everything is stopped by PID (tests/lab/lab.sh), also when this shell
# dies. ^C, SIGTERM (make lab-stop) and SIGHUP (its terminal closed) only
# set a flag: the loop below ends within a second and the lab is torn down
# by the EXIT trap outside any signal handler (a teardown run inside the
# TERM handler of a shell started in the background could hang in a
# command substitution, its SIGCHLD blocked). If it still does not end,
# make lab-stop kills what the pid file names itself.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
PIDFILE=${LAB_PIDFILE:-/tmp/topod-lab.pid}

# The pid file: "PID LAB_DIR IBSIM_SOCKNAME" of a running lab.
running() { # the PID in the pid file, if it is a live lab of ours
	local pid
	[ -f "$PIDFILE" ] || return 1
	read -r pid _ <"$PIDFILE" || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qa "keep.sh" "/proc/$pid/cmdline" 2>/dev/null &&
		echo "$pid"
}

descendants() { # PID -> its descendants, children first
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		descendants "$c"
		echo "$c"
	done
}

# The lab did not tear itself down: kill, by PID, what its folder lists
# (only processes that carry its IBSIM_SOCKNAME, against PID reuse), the
# keep.sh shell and its descendants, then remove the folder.
force_stop() {
	local pid=$1 dir=$2 sock=$3 p all
	all="$(descendants "$pid") $pid"
	[ -n "$dir" ] && [ -f "$dir/pids" ] && [ -n "$sock" ] &&
		for p in $(tac "$dir/pids"); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "IBSIM_SOCKNAME=$sock" &&
				all="$all $(descendants "$p") $p"
		done
	for p in $all; do kill -TERM "$p" 2>/dev/null; done
	sleep 2
	for p in $all; do kill -KILL "$p" 2>/dev/null; done
	case $dir in
	"${TMPDIR:-/tmp}"/topod-lab.*) rm -rf "$dir" ;;
	esac
	rm -f "$PIDFILE"
}

# make lab-env: the running lab's client settings, for eval "$(make -s lab-env)"
# in another terminal or a script (docs/collectives.md's recipe).
if [ "${1:-}" = env ]; then
	pid=$(running) || { echo "make lab-env: no lab is running ($PIDFILE); start one with: make lab" >&2; exit 1; }
	read -r _ dir _ <"$PIDFILE"
	# written with the banner: the fabric is served by then
	[ -s "$dir/client.env" ] || { echo "make lab-env: lab $pid is still starting; try again" >&2; exit 1; }
	cat "$dir/client.env"
	exit 0
fi
if [ "${1:-}" = stop ]; then
	pid=$(running) || { echo "make lab-stop: no lab is running ($PIDFILE)"; exit 0; }
	read -r _ dir sock <"$PIDFILE"
	own=$(cat "$dir/pids" 2>/dev/null)
	kill -TERM "$pid"
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "make lab-stop: lab $pid did not stop within 15 s; killing its processes" >&2
		force_stop "$pid" "$dir" "$sock"
	fi
	left=
	for p in $pid $own; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
	[ -d "$dir" ] && left="$left $dir"
	[ -z "$left" ] && { echo "lab $pid stopped"; exit 0; }
	echo "make lab-stop: still there:$left" >&2
	exit 1
fi
if pid=$(running); then
	echo "make lab: a lab is already running (pid $pid); stop it with: make lab-stop" >&2
	exit 1
fi

. tests/lab/lab.sh
LAB_QUIET=1
lab_init
STOP=
trap 'STOP=INT' INT
trap 'STOP=TERM' TERM
# its terminal is gone: nothing may write to it any more
trap 'STOP=HUP; exec >/dev/null 2>&1' HUP
K=${LAB_K:-8} LEVELS=${LAB_LEVELS:-3} ROUTING=${LAB_ROUTING:-ftree}
lab_user_cleanup() { rm -f "$PIDFILE"; }
# written at once, so that make lab-stop finds a lab that is still starting
echo "$$ $LAB_DIR $IBSIM_SOCKNAME" >"$PIDFILE"
LAB_TOPOD_ARGS=${LAB_TOPOD_ARGS:-}
read -r -a TOPOD_ARGS <<<"${LAB_TOPOD_ARGS//@LAB@/$LAB_DIR}"

lab_fabgen fattree --k "$K" --levels "$LEVELS" || { cat "$LAB_DIR/fabgen.err" >&2; exit 1; }
lab_start_ibsim "$LAB_DIR/f.net" || exit 1
lab_start_topod "${TOPOD_ARGS[@]}" || exit 1
LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LAB_OSM_SWEEP=2 \
	lab_start_opensm "$ROUTING" "root_guid_file $LAB_DIR/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || exit 1
for _ in $(seq 100); do
	gen=$(lab_topod_generation)
	[ -n "$gen" ] && [ "$gen" != 0 ] && break
	[ -n "$STOP" ] && exit 0
	sleep 0.1
done
# ibsim reads its console on this shell's descriptor: commands written to
# the FIFO are passed on, answers appended to ibsim.out.
mkfifo "$LAB_DIR/ibsim.cmd"
exec {cmdfd}<>"$LAB_DIR/ibsim.cmd"   # read-write: never blocks on open, never sees EOF
# two hosts far apart and one uplink, for the examples
read -r H1 H2 SW SWP < <(python3 -c 'import json,sys
m = json.load(open(sys.argv[1])); h = sorted(m["hosts"])
l = [x for x in m["links"] if x[0].startswith("ibsw") and x[2].startswith("ibsw")][0]
print(h[0], h[-1], l[0], l[1])' "$LAB_DIR/f.json" 2>/dev/null)
echo "export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT" >"$LAB_DIR/client.env"
cat <<EOF
lab ready: a $LEVELS-level fat tree of $K-port switches, routed by OpenSM ($ROUTING), generation ${gen:-?}
  topod     pid $LAB_TOPOD_PID, queries on 127.0.0.1:$LAB_TOPOD_PORT, log $LAB_DIR/topod.log
  OpenSM    pid $LAB_OSM_PID, sweeps every 2 s, log $LAB_OSM_LOG
  ibsim     pid $LAB_IBSIM_PID
  folder    $LAB_DIR${LAB_TOPOD_ARGS:+
  topod options: ${TOPOD_ARGS[*]}}

Client settings (topoquery, libtii and libtopocoll read them):
  export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT
  (in another terminal of this tree: eval "\$(make -s lab-env)")

Query it (with TII_SERVERS exported, -s may be left out):
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
while [ -z "$STOP" ]; do
	# A timed read, so that ^C and make lab-stop are handled within a second.
	# Not `IFS= read`: a trap runs inside the builtin, with its IFS.
	if read -r -t 1 -u "$cmdfd" line; then
		[ -n "$line" ] && { echo "ibsim> $line"; lab_ibsim_cmd "$line"; } >>"$LAB_DIR/ibsim.out" 2>&1
	fi
	# ^C reaches topod and OpenSM too (they handle SIGINT): not a failure
	[ -n "$STOP" ] && break
	lab__alive "$LAB_TOPOD_PID" && lab__alive "$LAB_OSM_PID" && lab__alive "$LAB_IBSIM_PID" || {
		echo "make lab: a lab process ended; see $LAB_DIR" >&2
		exit 1
	}
done
# A stop that was asked for is a success: the EXIT trap tears the lab down.
exit 0
