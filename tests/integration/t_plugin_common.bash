# shellcheck shell=bash
# t_plugin_common.bash - shared by tests/integration/t_plugin_*.sh (sourced;
# named .bash so that tests/run.sh, which runs t_*.sh, does not run it).
#
# Gives: tp_ok/tp_fail/tp_skip/tp_check (TAP-like lines and a failure count),
# tp_init (lab + cleanup of everything we start), tp_start_ingest,
# tp_stop_pid, tp_dump_fabric, tp_osm_gens, tp_wait_for, tp_finish.

TP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TP_FAILS=0
TP_PIDS=()
TP_PLUGIN=$TP_ROOT/build/lib/libosmtopo.so
TP_SNAP=$TP_ROOT/build/bin/topo-snap
TP_PY=$TP_ROOT/tests/lib

tp_ok() { echo "ok - $*"; }
tp_fail() { echo "not ok - $*"; TP_FAILS=$((TP_FAILS + 1)); }
tp_skip() { echo "skip - $*"; }
tp_note() { echo "# $*"; }

# tp_check "what" CMD...: ok if CMD succeeds; on failure its output is shown.
tp_check() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		tp_ok "$what"
	else
		tp_fail "$what"
		[ -n "$out" ] && printf '%s\n' "$out" | head -n 15 | sed 's/^/#   /'
	fi
}

tp_finish() {
	[ "$TP_FAILS" -eq 0 ]
	exit $?
}

# Called by lab_teardown (EXIT/INT/TERM) before it kills the lab's own
# processes: stop every helper we started, by PID.
lab_user_cleanup() {
	local p
	for p in "${TP_PIDS[@]}"; do
		tp_stop_pid "$p"
	done
	TP_PIDS=()
}

tp_stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# Skips the whole test (exit 0) when the lab's tools are missing; fails it
# when the plugin was not built.
tp_init() {
	local t
	for t in ibsim opensm ibnetdiscover ibroute python3 nm; do
		if ! command -v "$t" >/dev/null 2>&1; then
			tp_skip "$t not installed (make deps)"
			exit 0
		fi
	done
	if [ ! -f "$TP_PLUGIN" ] || [ ! -x "$TP_SNAP" ]; then
		tp_fail "build/lib/libosmtopo.so and build/bin/topo-snap built (run make)"
		exit 1
	fi
	cd "$TP_ROOT" || exit 1
	# shellcheck source=../lab/lab.sh
	. tests/lab/lab.sh
	LAB_QUIET=${LAB_QUIET:-1}
	lab_init || { tp_fail "lab_init"; exit 1; }
	# OpenSM dlopen()s "libosmtopo.so" by bare name.
	export LD_LIBRARY_PATH=$TP_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# tp_start_ingest VAR unix|tcp DIR [MODE]: starts fake_ingest.py, waits until
# it listens; sets VAR_PID and VAR_ADDR (the sink= value).
tp_start_ingest() {
	local var=$1 kind=$2 dir=$3 mode=${4:-normal} pid i ready addr
	mkdir -p "$dir"
	rm -f "$dir/ready"
	case $kind in
	unix) addr=unix:$dir/ingest.sock
		python3 "$TP_PY/fake_ingest.py" --unix "$dir/ingest.sock" --out "$dir" \
			--mode "$mode" >"$dir/ready" 2>"$dir/stderr" &
		;;
	tcp)
		python3 "$TP_PY/fake_ingest.py" --tcp "127.0.0.1:${TP_TCP_PORT:-0}" --out "$dir" \
			--mode "$mode" >"$dir/ready" 2>"$dir/stderr" &
		;;
	esac
	pid=$!
	TP_PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		ready=$(head -n 1 "$dir/ready" 2>/dev/null)
		[ -n "$ready" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	case $ready in
	"ready port="*) addr=tcp:127.0.0.1:${ready#ready port=} ;;
	"ready path="*) ;;
	*) echo "fake_ingest did not start: $(cat "$dir/stderr")" >&2; return 1 ;;
	esac
	printf -v "${var}_PID" '%s' "$pid"
	printf -v "${var}_ADDR" '%s' "$addr"
}

# A TCP port on 127.0.0.1 that nobody listens on (bound, then released).
tp_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# tp_dump_fabric DIR: ibnetdiscover -> DIR/topo.txt, ibroute of every switch
# -> DIR/routes.txt (what ibcompare.py compares a snapshot with).
tp_dump_fabric() {
	local dir=$1 lid
	mkdir -p "$dir"
	lab_umad ibnetdiscover >"$dir/topo.txt" 2>"$dir/ibnetdiscover.err" || return 1
	: >"$dir/routes.txt"
	for lid in $(python3 "$TP_PY/ibcompare.py" --switch-lids "$dir/topo.txt"); do
		lab_umad ibroute "$lid" >>"$dir/routes.txt" 2>>"$dir/ibroute.err" || return 1
	done
	[ -s "$dir/routes.txt" ]
}

# tp_osm_gens [LOG]: the generations the plugin logged, in order.
tp_osm_gens() {
	grep -o 'osmtopo: generation [0-9]*' "${1:-$LAB_OSM_LOG}" | awk '{print $3}'
}

# tp_wait_for CMD... : retry CMD for up to TP_WAIT seconds (default 20).
tp_wait_for() {
	local i
	for ((i = 0; i < ${TP_WAIT:-20} * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

tp_now() { date +%s.%N; }
tp_since() { awk -v s="$1" -v e="$(tp_now)" 'BEGIN { printf "%.1f", e - s }'; }
