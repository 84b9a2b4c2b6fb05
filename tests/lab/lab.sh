# shellcheck shell=bash
# tests/lab/lab.sh - simulated InfiniBand fabric lab (ibsim + OpenSM) for tests.
#
# Source it from a bash test script:
#
#   . tests/lab/lab.sh
#   lab_init
#   python3 tests/lab/fabgen.py fattree --k 4 --levels 3 -o "$LAB_DIR/f.net" --meta "$LAB_DIR/f.json"
#   lab_start_ibsim "$LAB_DIR/f.net"
#   lab_run_opensm ftree || exit 1
#   lab_osm_engine_used            # -> ftree
#   lab_umad ibnetdiscover
#   lab_ibsim_cmd 'Unlink "ibsw-L1-001"[3]'
#
# Everything the lab starts is killed (by PID) and its temp dir removed on
# EXIT/INT/TERM (keep the dir with LAB_KEEP=1).  A watchdog process also
# tears the lab down if the sourcing shell dies without running its traps
# (e.g. SIGKILL).  If the caller wants its own cleanup, define a function
# lab_user_cleanup; lab_teardown calls it first.
#
# Functions:
#   lab_init
#   lab_start_ibsim NETFILE
#   lab_ibsim_cmd "CONSOLE COMMAND"       prints ibsim's answer
#   lab_stop_ibsim
#   lab_umad CMD [ARGS...]
#   lab_run_opensm ROUTING [CONF_LINE...]  run-once OpenSM, returns its status
#   lab_start_opensm ROUTING [CONF_LINE...] long-running OpenSM (background)
#   lab_stop_opensm
#   lab_osm_engine_used [LOGFILE]         engine named in "X tables configured"
#   lab_osm_check_engine ENGINE [LOGFILE] 0 if ENGINE routed, no fallback
#   lab_wait_osm_log REGEX [TIMEOUT_S]     wait until the OpenSM log matches
#   lab_own PID                           teardown kills PID too
#   lab_leaf_uplink [META]                "LEAF PORT PEER PEERPORT": a leaf uplink
#   lab_start_topod [TOPOD_ARGS...]       this tree's topod; LAB_TOPOD_PORT
#   lab_fabgen FABGEN_ARGS...             $LAB_DIR/f.net, f.json, roots
#   lab_topod_generation                  the generation topod serves
#   lab_bring_up NETFILE ROUTING [CONF...] ibsim + topod + OpenSM with the plugin
#   lab_teardown
#
# Variables (set by the lab):
#   LAB_DIR           private temp dir (mktemp -d)
#   IBSIM_SOCKNAME    exported; unique per lab (topod-lab-<pid>-<random>)
#   LAB_IBSIM_PID     ibsim's PID;  LAB_IBSIM_LOG its console/log output
#   LAB_OSM_PID       PID of the background OpenSM (lab_start_opensm)
#   LAB_OSM_LOG       log file of the last OpenSM run/start
#   LAB_OSM_CONF      osm.conf of the last OpenSM run/start
# Tunables (set before calling):
#   LAB_KEEP=1              keep LAB_DIR after teardown
#   LAB_UMAD2SIM            path of libumad2sim.so
#   LAB_IBSIM_ARGS          default "-s -N 20000 -S 3000 -P 100000"
#   LAB_IBSIM_TIMEOUT       seconds to wait for ibsim to be ready (120)
#   LAB_OSM_TIMEOUT         seconds for a run-once OpenSM (300)
#   LAB_OSM_SWEEP           sweep_interval for lab_start_opensm (10)
#   LAB_OSM_ARGS            extra opensm command line arguments
#   LAB_QUIET=1             no progress messages on stderr

LAB_UMAD2SIM=${LAB_UMAD2SIM:-/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so}
LAB_PIDS=()
LAB_DIR=
LAB_IBSIM_PID=
LAB_IBSIM_FD=
LAB_IBSIM_LOG=
LAB_OSM_PID=
LAB_OSM_LOG=
LAB_OSM_CONF=
LAB_OSM_RUNS=0
LAB_WATCHDOG_PID=
LAB_TORN_DOWN=

LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

lab__log() {
	[ -n "${LAB_QUIET:-}" ] || echo "lab: $*" >&2
}

lab__now() {
	date +%s.%N
}

lab__elapsed() {	# START -> seconds with 2 decimals
	awk -v s="$1" -v e="$(lab__now)" 'BEGIN { printf "%.2f", e - s }'
}

# Record a PID as owned by the lab (for teardown and the watchdog).
lab__own() {
	LAB_PIDS+=("$1")
	[ -n "$LAB_DIR" ] && [ -d "$LAB_DIR" ] && echo "$1" >>"$LAB_DIR/pids"
	return 0
}

# lab_own PID: teardown (and the watchdog) kill PID like the lab's own.
lab_own() {
	lab__own "$1"
}

# lab_start_topod [TOPOD_ARGS...]: this tree's topod on 127.0.0.1 (a free
# port), snapshots on $LAB_DIR/ingest.sock, state in $LAB_DIR, log in
# $LAB_DIR/topod.log; waits for its "ready" line. Sets LAB_TOPOD_PID and
# LAB_TOPOD_PORT. LAB_TOPOD overrides the binary (e.g. an installed one).
lab_start_topod() {
	lab__need_init || return 1
	local bin=${LAB_TOPOD:-$LAB_ROOT/build/bin/topod} i
	"$bin" -f -l 127.0.0.1:0 -i "unix:$LAB_DIR/ingest.sock" -d "$LAB_DIR" "$@" \
		</dev/null >"$LAB_DIR/topod.out" 2>"$LAB_DIR/topod.log" &
	LAB_TOPOD_PID=$!
	lab__own "$LAB_TOPOD_PID"
	LAB_TOPOD_PORT=
	for ((i = 0; i < 100; i++)); do
		LAB_TOPOD_PORT=$(sed -n 's/^ready port=//p' "$LAB_DIR/topod.out" 2>/dev/null)
		[ -n "$LAB_TOPOD_PORT" ] && return 0
		lab__alive "$LAB_TOPOD_PID" || break
		sleep 0.1
	done
	echo "lab: topod did not start; see $LAB_DIR/topod.log" >&2
	return 1
}

# lab_fabgen FABGEN_ARGS...: writes $LAB_DIR/f.net (ibsim), f.json (what
# fabgen built: hosts, switches, links) and roots (OpenSM root GUIDs);
# fabgen's messages go to $LAB_DIR/fabgen.err.
lab_fabgen() {
	lab__need_init || return 1
	python3 "$LAB_ROOT/tests/lab/fabgen.py" "$@" -o "$LAB_DIR/f.net" --meta "$LAB_DIR/f.json" \
		--root-guid-file "$LAB_DIR/roots" >/dev/null 2>"$LAB_DIR/fabgen.err"
}

# lab_leaf_uplink [META]: "LEAF PORT PEER PEERPORT", the first leaf uplink
# in fabgen's meta ($LAB_DIR/f.json by default): a cable to Unlink/ReLink.
lab_leaf_uplink() {
	python3 - "${1:-$LAB_DIR/f.json}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
sw = {s["node"] for s in m["switches"]}
for a, pa, b, pb in m["links"]:
    if a.startswith("ibsw-L1") and b in sw:
        print(a, pa, b, pb)
        break
PY
}

# lab_topod_generation: the generation topod serves (0 before any), asked
# over bash's /dev/tcp so that no client is needed.
lab_topod_generation() {
	local line=
	exec {fd}<>"/dev/tcp/127.0.0.1/$LAB_TOPOD_PORT" || return 1
	printf 'info\n' >&"$fd"
	IFS= read -r -t 10 line <&"$fd"
	exec {fd}>&-
	line=${line#* generation=}
	[ "$line" != "${line%% *}" ] && echo "${line%% *}" || echo 0
}

# lab_bring_up NETFILE ROUTING [CONF_LINE...]: ibsim on NETFILE, this
# tree's topod (lab_start_topod, with the options in the array
# LAB_BRING_UP_TOPOD_ARGS when set), and one OpenSM run whose osmtopo plugin
# delivers to topod; returns 0 once topod serves that snapshot.
lab_bring_up() {
	local net=$1 routing=$2 i gen
	shift 2
	lab_start_ibsim "$net" || return 1
	lab_start_topod ${LAB_BRING_UP_TOPOD_ARGS[@]+"${LAB_BRING_UP_TOPOD_ARGS[@]}"} || return 1
	LD_LIBRARY_PATH="$LAB_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		lab_run_opensm "$routing" "$@" "event_plugin_name osmtopo" \
		"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || return 1
	for ((i = 0; i < 100; i++)); do
		gen=$(lab_topod_generation)
		[ -n "$gen" ] && [ "$gen" != 0 ] && return 0
		sleep 0.1
	done
	echo "lab: topod got no snapshot from the plugin; see $LAB_OSM_LOG and $LAB_DIR/topod.log" >&2
	return 1
}

lab__alive() {
	[ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null
}

# Print the PIDs of all descendants of PID $1 (depth first, children first).
lab__descendants() {
	local p c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		lab__descendants "$c"
		echo "$c"
	done
}

# Kill one PID (and anything it started): TERM, wait up to $2 s, then KILL.
lab__kill_tree() {
	local pid=$1 grace=${2:-5} all p i
	lab__alive "$pid" || { wait "$pid" 2>/dev/null || true; return 0; }
	all="$(lab__descendants "$pid") $pid"
	for p in $all; do kill -TERM "$p" 2>/dev/null || true; done
	for ((i = 0; i < grace * 10; i++)); do
		local any=
		for p in $all; do
			if lab__alive "$p" && [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != Z ]; then
				any=1
				break
			fi
		done
		[ -z "$any" ] && break
		sleep 0.1
	done
	for p in $all; do
		if lab__alive "$p" && [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != Z ]; then
			lab__log "pid $p did not stop on TERM, sending KILL"
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
	wait "$pid" 2>/dev/null || true	# reap it if it is our child
	return 0
}

lab_teardown() {
	local rc=$? i
	[ -n "$LAB_TORN_DOWN" ] && return 0
	LAB_TORN_DOWN=1
	if declare -F lab_user_cleanup >/dev/null; then
		lab_user_cleanup || true
	fi
	# newest first: opensm before ibsim
	for ((i = ${#LAB_PIDS[@]} - 1; i >= 0; i--)); do
		[ "${LAB_PIDS[$i]}" = "$LAB_WATCHDOG_PID" ] && continue
		lab__kill_tree "${LAB_PIDS[$i]}" 5
	done
	if [ -n "$LAB_IBSIM_FD" ]; then
		eval "exec ${LAB_IBSIM_FD}>&-"
		LAB_IBSIM_FD=
	fi
	[ -n "$LAB_WATCHDOG_PID" ] && lab__kill_tree "$LAB_WATCHDOG_PID" 2
	LAB_PIDS=()
	LAB_IBSIM_PID=
	LAB_OSM_PID=
	if [ -n "$LAB_DIR" ] && [ -d "$LAB_DIR" ]; then
		if [ "${LAB_KEEP:-0}" = 1 ]; then
			lab__log "keeping $LAB_DIR"
		else
			rm -rf "$LAB_DIR"
		fi
	fi
	return $rc
}

lab__on_exit() {
	local rc=$?
	lab_teardown
	exit $rc
}

lab__on_signal() {
	# The signal may arrive inside a builtin run with a temporary IFS
	# (`IFS= read`): teardown splits PID lists on the default one.
	IFS=$' \t\n'
	lab__log "caught SIG$1, tearing down"
	trap - EXIT
	lab_teardown
	case $1 in
	INT) exit 130 ;;
	*) exit 143 ;;
	esac
}

# Background process that tears the lab down if the sourcing shell dies
# without running its EXIT trap (SIGKILL, a crash).
lab__start_watchdog() {
	local parent=$BASHPID dir=$LAB_DIR keep=${LAB_KEEP:-0} sock=$IBSIM_SOCKNAME
	(
		# only TERM (from lab_teardown) stops us: not ^C, and not the
		# SIGHUP of a closed terminal, which the lab's shell may die of
		trap '' INT HUP
		exec </dev/null >/dev/null 2>&1
		while kill -0 "$parent" 2>/dev/null; do
			sleep 1
		done
		# Only signal PIDs that still carry this lab's IBSIM_SOCKNAME in
		# their environment (guards against PID reuse).
		lab__wd_ours() {
			[ "$1" != "$BASHPID" ] &&
				tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null |
				grep -qx "IBSIM_SOCKNAME=$sock"
		}
		if [ -f "$dir/pids" ]; then
			for p in $(tac "$dir/pids"); do
				lab__wd_ours "$p" && kill -TERM "$p" 2>/dev/null
			done
			sleep 2
			for p in $(tac "$dir/pids"); do
				lab__wd_ours "$p" && kill -KILL "$p" 2>/dev/null
			done
		fi
		[ "$keep" = 1 ] || rm -rf "$dir"
	) &
	LAB_WATCHDOG_PID=$!
	lab__own "$LAB_WATCHDOG_PID"
}

lab_init() {
	# a second lab_init in the same shell first tears the previous lab down
	if [ -n "$LAB_DIR" ] && [ -z "$LAB_TORN_DOWN" ]; then
		lab_teardown
	fi
	LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/topod-lab.XXXXXX") || return 1
	: >"$LAB_DIR/pids"
	export IBSIM_SOCKNAME="topod-lab-$$-$RANDOM"
	LAB_PIDS=()
	LAB_TORN_DOWN=
	LAB_OSM_RUNS=0
	trap lab__on_exit EXIT
	trap 'lab__on_signal INT' INT
	trap 'lab__on_signal TERM' TERM
	lab__start_watchdog
	lab__log "dir $LAB_DIR, IBSIM_SOCKNAME=$IBSIM_SOCKNAME"
}

lab__need_init() {
	if [ -z "$LAB_DIR" ] || [ ! -d "$LAB_DIR" ]; then
		echo "lab: call lab_init first" >&2
		return 1
	fi
}

# ibsim's control socket is "@<IBSIM_SOCKNAME>:ctl" in the abstract namespace.
lab__ibsim_ready() {
	grep -q "@${IBSIM_SOCKNAME}:ctl@*\$" /proc/net/unix 2>/dev/null
}

lab_start_ibsim() {
	local net=$1 t0 i limit
	lab__need_init || return 1
	[ -f "$net" ] || { echo "lab: no net file $net" >&2; return 1; }
	if lab__alive "$LAB_IBSIM_PID"; then
		echo "lab: ibsim already running (pid $LAB_IBSIM_PID)" >&2
		return 1
	fi
	local fifo=$LAB_DIR/ibsim.console
	LAB_IBSIM_LOG=$LAB_DIR/ibsim.log
	rm -f "$fifo"
	mkfifo "$fifo" || return 1
	# Keep the console FIFO open read-write in this shell: ibsim never sees
	# EOF on stdin (it would spin on it), and lab_ibsim_cmd writes here.
	exec {LAB_IBSIM_FD}<>"$fifo"
	t0=$(lab__now)
	# No -n: ibsim's -n ("no console") stops it reading stdin at all.
	# shellcheck disable=SC2086
	ibsim ${LAB_IBSIM_ARGS:--s -N 20000 -S 3000 -P 100000} "$net" \
		<"$fifo" >"$LAB_IBSIM_LOG" 2>&1 &
	LAB_IBSIM_PID=$!
	lab__own "$LAB_IBSIM_PID"
	limit=$(( ${LAB_IBSIM_TIMEOUT:-120} * 10 ))
	for ((i = 0; i < limit; i++)); do
		if lab__ibsim_ready; then
			lab__log "ibsim pid $LAB_IBSIM_PID ready in $(lab__elapsed "$t0") s"
			return 0
		fi
		if ! lab__alive "$LAB_IBSIM_PID"; then
			echo "lab: ibsim died; log:" >&2
			tail -n 20 "$LAB_IBSIM_LOG" >&2
			wait "$LAB_IBSIM_PID" 2>/dev/null || true
			LAB_IBSIM_PID=
			return 1
		fi
		sleep 0.1
	done
	echo "lab: ibsim not ready after ${LAB_IBSIM_TIMEOUT:-120} s" >&2
	return 1
}

# Stop ibsim (and close its console FIFO); a new lab_start_ibsim may follow.
lab_stop_ibsim() {
	[ -n "$LAB_IBSIM_PID" ] && lab__kill_tree "$LAB_IBSIM_PID" 5
	LAB_IBSIM_PID=
	if [ -n "$LAB_IBSIM_FD" ]; then
		eval "exec ${LAB_IBSIM_FD}>&-"
		LAB_IBSIM_FD=
	fi
	return 0
}

# Send one console command to ibsim and print its answer (the text it wrote
# before its next "sim> " prompt).  Returns 1 on timeout or unknown command.
#   Unlink "nodeid"[port]      take a link down (both ends go Down/Polling,
#                              the switch(es) send trap 128)
#   ReLink "nodeid"[port]      restore it;  ReLink "nodeid" restores all
#   Link "a"[p] "b"[q]         cable two free ports
#   Unlink "nodeid"            remove all links of a node
#   Dump ["nodeid"], Attached, Help
lab_ibsim_cmd() {
	local cmd=$1 before i out
	lab__alive "$LAB_IBSIM_PID" || { echo "lab: ibsim not running" >&2; return 1; }
	before=$(stat -c %s "$LAB_IBSIM_LOG")
	printf '%s\n' "$cmd" >&"$LAB_IBSIM_FD"
	# ibsim's own warnings (stderr) share the log and may follow the prompt;
	# the answer is everything up to the first "sim> " after the command.
	for ((i = 0; i < 200; i++)); do
		out=$(tail -c +$((before + 1)) "$LAB_IBSIM_LOG")
		case $out in
		*"sim> "*) break ;;
		esac
		sleep 0.05
	done
	out=${out%%sim> *}
	[ -n "$out" ] && printf '%s\n' "${out%$'\n'}"
	if [ "$i" -ge 200 ]; then
		echo "lab: no prompt from ibsim after '$cmd'" >&2
		return 1
	fi
	case $out in
	"command '"*"' unknown"* | "# "*"not found"* | "# can't"* | "# no "* | "# port "*"not linked"*)
		return 1 ;;
	esac
	return 0
}

lab_umad() {
	LD_PRELOAD="$LAB_UMAD2SIM${LD_PRELOAD:+:$LD_PRELOAD}" \
		IBSIM_SOCKNAME="$IBSIM_SOCKNAME" "$@"
}

# Write $LAB_DIR/<name>.conf from `opensm -c` defaults, pointing every file
# at LAB_DIR, then apply the caller's extra lines (replacing same keys).
lab__write_osm_conf() {
	local conf=$1 log=$2 routing=$3 sweep=$4
	shift 4
	local base=$LAB_DIR/osm.defaults.conf
	if [ ! -s "$base" ]; then
		opensm -c "$base" >/dev/null 2>&1 </dev/null
		[ -s "$base" ] || { echo "lab: opensm -c failed" >&2; return 1; }
	fi
	local -A over=(
		[log_file]="$log"
		[accum_log_file]=FALSE
		[force_log_flush]=TRUE
		[dump_files_dir]="$LAB_DIR/"
		[partition_config_file]="$LAB_DIR/partitions.conf"
		[per_module_logging_file]="$LAB_DIR/per-module-logging.conf"
		[qos_policy_file]="$LAB_DIR/qos-policy.conf"
		[prefix_routes_file]="$LAB_DIR/prefix-routes.conf"
		[torus_config]="$LAB_DIR/torus-2QoS.conf"
		[routing_engine]="$routing"
		[sweep_interval]="$sweep"
		[console]=off
		[daemon]=FALSE
	)
	local line key
	for line in "$@"; do
		[ -z "$line" ] && continue
		key=${line%%[[:space:]]*}
		over[$key]=${line#"$key"}
		over[$key]=${over[$key]#"${over[$key]%%[![:space:]]*}"}
	done
	{
		local k
		while IFS= read -r line; do
			k=${line%%[[:space:]]*}
			case $line in
			'#'* | '') printf '%s\n' "$line"; continue ;;
			esac
			if [ -n "${over[$k]+x}" ]; then
				printf '%s %s\n' "$k" "${over[$k]}"
				unset 'over[$k]'
			else
				printf '%s\n' "$line"
			fi
		done <"$base"
		for k in "${!over[@]}"; do
			printf '%s %s\n' "$k" "${over[$k]}"
		done
	} >"$conf"
}

lab__osm_prepare() {	# ROUTING SWEEP [LINES...] -> sets LAB_OSM_CONF/LOG
	local routing=$1 sweep=$2
	shift 2
	lab__need_init || return 1
	lab__alive "$LAB_IBSIM_PID" || { echo "lab: ibsim not running" >&2; return 1; }
	LAB_OSM_RUNS=$((LAB_OSM_RUNS + 1))
	LAB_OSM_CONF=$LAB_DIR/osm.$LAB_OSM_RUNS.conf
	LAB_OSM_LOG=$LAB_DIR/opensm.$LAB_OSM_RUNS.log
	lab__write_osm_conf "$LAB_OSM_CONF" "$LAB_OSM_LOG" "$routing" "$sweep" "$@" || return 1
	ln -sfn "opensm.$LAB_OSM_RUNS.log" "$LAB_DIR/opensm.log"
}

# Run OpenSM once (one sweep, -o) with routing engine ROUTING; extra osm.conf
# lines (e.g. "event_plugin_name osmtopo") may follow.  Returns opensm's exit
# status (124 on timeout).  stdout/stderr -> $LAB_DIR/opensm.N.out.
lab_run_opensm() {
	local routing=$1 t0 pid i limit rc
	shift
	lab__osm_prepare "$routing" 0 "$@" || return 1
	local out=${LAB_OSM_LOG%.log}.out
	t0=$(lab__now)
	# shellcheck disable=SC2086
	OSM_TMP_DIR=$LAB_DIR OSM_CACHE_DIR=$LAB_DIR \
		LD_PRELOAD="$LAB_UMAD2SIM${LD_PRELOAD:+:$LD_PRELOAD}" \
		opensm -F "$LAB_OSM_CONF" -s 0 -o -R "$routing" ${LAB_OSM_ARGS:-} \
		</dev/null >"$out" 2>&1 {LAB_IBSIM_FD}>&- &
	pid=$!
	lab__own "$pid"
	limit=$(( ${LAB_OSM_TIMEOUT:-300} * 10 ))
	for ((i = 0; i < limit; i++)); do
		lab__alive "$pid" || break
		sleep 0.1
	done
	if lab__alive "$pid"; then
		echo "lab: opensm timed out after ${LAB_OSM_TIMEOUT:-300} s" >&2
		lab__kill_tree "$pid" 5
		return 124
	fi
	rc=0
	wait "$pid" || rc=$?
	LAB_OSM_LAST_SECONDS=$(lab__elapsed "$t0")
	lab__log "opensm -R $routing (run once) exited $rc after ${LAB_OSM_LAST_SECONDS} s; engine used: $(lab_osm_engine_used)"
	return $rc
}

# Start a long-running OpenSM in the background (sweep interval LAB_OSM_SWEEP,
# default 10 s).  Waits (up to LAB_OSM_TIMEOUT) until the first sweep has
# configured the subnet ("SUBNET UP" in the log); returns 1 if it did not.
lab_start_opensm() {
	local routing=$1 t0 i limit
	shift
	if lab__alive "$LAB_OSM_PID"; then
		echo "lab: opensm already running (pid $LAB_OSM_PID)" >&2
		return 1
	fi
	lab__osm_prepare "$routing" "${LAB_OSM_SWEEP:-10}" "$@" || return 1
	local out=${LAB_OSM_LOG%.log}.out
	t0=$(lab__now)
	# shellcheck disable=SC2086
	OSM_TMP_DIR=$LAB_DIR OSM_CACHE_DIR=$LAB_DIR \
		LD_PRELOAD="$LAB_UMAD2SIM${LD_PRELOAD:+:$LD_PRELOAD}" \
		opensm -F "$LAB_OSM_CONF" -s "${LAB_OSM_SWEEP:-10}" -R "$routing" ${LAB_OSM_ARGS:-} \
		</dev/null >"$out" 2>&1 {LAB_IBSIM_FD}>&- &
	LAB_OSM_PID=$!
	lab__own "$LAB_OSM_PID"
	limit=$(( ${LAB_OSM_TIMEOUT:-300} * 10 ))
	for ((i = 0; i < limit; i++)); do
		if grep -q "SUBNET UP" "$LAB_OSM_LOG" 2>/dev/null; then
			lab__log "opensm pid $LAB_OSM_PID: subnet up after $(lab__elapsed "$t0") s; engine used: $(lab_osm_engine_used)"
			return 0
		fi
		if ! lab__alive "$LAB_OSM_PID"; then
			echo "lab: opensm exited early; see $out" >&2
			wait "$LAB_OSM_PID" 2>/dev/null || true
			LAB_OSM_PID=
			return 1
		fi
		sleep 0.1
	done
	echo "lab: opensm: no SUBNET UP after ${LAB_OSM_TIMEOUT:-300} s" >&2
	return 1
}

lab_stop_opensm() {
	[ -n "$LAB_OSM_PID" ] || return 0
	lab__kill_tree "$LAB_OSM_PID" 5
	LAB_OSM_PID=
}

# Wait until the current OpenSM log (or $3) matches REGEX (grep -E);
# default timeout 30 s.
lab_wait_osm_log() {
	local re=$1 t=${2:-30} log=${3:-$LAB_OSM_LOG} i
	for ((i = 0; i < t * 10; i++)); do
		grep -Eq -- "$re" "$log" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Name of the routing engine that configured the switches in the last
# sweep of the given (default: last) OpenSM log, e.g. "ftree" or "minhop".
lab_osm_engine_used() {
	local log=${1:-$LAB_OSM_LOG}
	grep -o '[^ ]* tables configured on all switches' "$log" 2>/dev/null |
		tail -n 1 | cut -d' ' -f1
}

# 0 if ENGINE configured the switches and OpenSM did not fall back to
# minhop or disable the engine; otherwise prints the reason and returns 1.
lab_osm_check_engine() {
	local want=$1 log=${2:-$LAB_OSM_LOG} used
	used=$(lab_osm_engine_used "$log")
	if [ "$used" != "$want" ]; then
		echo "lab: wanted routing engine $want, log says '${used:-none}'" >&2
		grep -E 'ERR|cannot build|falling back|fall back|disabling|No routing engine' "$log" 2>/dev/null | head -n 5 >&2
		return 1
	fi
	if grep -Eq "disabling UPDN algorithm|No routing engine able|$want: cannot build" "$log"; then
		echo "lab: $want reported a failure in $log" >&2
		return 1
	fi
	return 0
}
