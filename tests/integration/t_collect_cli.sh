#!/usr/bin/env bash
# t_collect_cli.sh - topo-collect's command line, outputs and sinks:
# usage errors (exit 2), a missing CA (exit 1), a fabric no SM has configured
# yet, -o and spool= writing the same bytes, the window size not changing
# the result, delivery to a UNIX and a TCP ingest socket (fake_ingest.py),
# a dead sink failing within its bounds, and --loop --changed-only noticing
# a node that leaves the fabric, then stopping cleanly on SIGTERM.
#
# Run from the repo root by tests/run.sh. The lab kills ibsim by PID; the
# collectors and fake ingest servers started here are killed by PID in
# lab_user_cleanup, which the lab calls on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1

fails=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; fails=$((fails + 1)); }
check() {	# check WHAT CMD...: ok if CMD succeeds
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

TC=build/bin/topo-collect
if [ ! -x "$TC" ]; then
	fail "$TC is built (run make)"
	exit 1
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/t_collect_cli.XXXXXX") || exit 1

MY_PIDS=()
lab_user_cleanup() {
	local p i
	for p in "${MY_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${MY_PIDS[@]}"; do
		for ((i = 0; i < 30; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	MY_PIDS=()
	rm -rf "$T"
}
# Until the lab takes over the traps, clean up on our own.
trap 'lab_user_cleanup' EXIT

# ---- usage: exit 2, one "topo-collect: " line, nothing written ------------
usage_case() {	# NAME EXPECTED-STDERR-REGEX ARGS...
	local name=$1 re=$2 rc
	shift 2
	"$TC" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -Eq "$re" "$T/err" && [ ! -e "$T/x.snap" ]; then
		pass "usage: $name exits 2 ($(head -n 1 "$T/err"))"
	else
		fail "usage: $name exits 2 with /$re/ (got $rc: $(head -n 1 "$T/err"))"
	fi
}
usage_case "no output given" '^topo-collect: nothing to do'
usage_case "window 0" '^topo-collect: -w 0: ' -w 0 -o "$T/x.snap"
usage_case "window 257" '^topo-collect: -w 257: ' -w 257 -o "$T/x.snap"
usage_case "timeout not a number" '^topo-collect: -t 5s: ' -t 5s -o "$T/x.snap"
usage_case "unknown option" '^topo-collect: --bogus: unknown option' --bogus -o "$T/x.snap"
usage_case "missing argument" '^topo-collect: -o: needs an argument' -o
usage_case "unknown key=value" "^topo-collect: unknown option 'bogus'" bogus=1 -o "$T/x.snap"
usage_case "word without =" '^topo-collect: spool: expected key=value' spool -o "$T/x.snap"
usage_case "bad sink address" '^topo-collect: .*sink must be unix:PATH or tcp:HOST:PORT' sink=udp:x -o "$T/x.snap"
usage_case "-o onto a device" '^topo-collect: /dev/null: exists and is not a regular file' -o /dev/null
usage_case "--changed-only without --loop" '^topo-collect: --changed-only needs --loop' --changed-only -o "$T/x.snap"
if "$TC" -h >"$T/out" 2>&1 && grep -q '^usage: topo-collect' "$T/out" && grep -q 'sink=unix:PATH' "$T/out"; then
	pass "usage: -h prints the usage on stdout and exits 0"
else
	fail "usage: -h prints the usage on stdout and exits 0"
fi

# No LD_PRELOAD and a CA that cannot exist: never touches real hardware.
"$TC" -C no_such_ca0 -o "$T/x.snap" >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q '^topo-collect: collect: discovery through no_such_ca0:0 failed' "$T/err" &&
	[ ! -e "$T/x.snap" ]; then
	pass "a missing CA exits 1 with 'topo-collect: collect: ...' and writes nothing"
else
	fail "a missing CA exits 1 with 'topo-collect: collect: ...' (got $rc: $(grep '^topo' "$T/err" | head -n 1))"
fi

for tool in ibsim opensm python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "skip - t_collect_cli fabric cases: $tool not installed"
		[ "$fails" -eq 0 ]
		exit
	fi
done

export LAB_QUIET=1
# shellcheck source=tests/lab/lab.sh
. tests/lab/lab.sh
lab_init || { fail "lab_init"; exit 1; }
D=$LAB_DIR
umad() { LD_PRELOAD=$LAB_UMAD2SIM IBSIM_SOCKNAME=$IBSIM_SOCKNAME "$@"; }
py_snap() {	# py_snap FILE EXPR: evaluate EXPR with s = the decoded snapshot
	python3 -c "import sys; sys.path.insert(0, 'tests/lib'); import snapdecode as d; s = d.load(sys.argv[1]); print($2)" "$1"
}

python3 tests/lab/fabgen.py fattree --k 4 --levels 2 -o "$D/f.net" 2>/dev/null
read -r NSW NCA NLINKS < <(sed -n 's/^# \([0-9]*\) switches, \([0-9]*\) CAs.*, \([0-9]*\) links.*/\1 \2 \3/p' "$D/f.net")
if ! lab_start_ibsim "$D/f.net"; then
	fail "ibsim starts"
	exit 1
fi

# ---- before any SM: DR discovery still works, there are no LIDs or LFTs ----
if umad "$TC" -o "$D/raw.snap" 2>"$D/raw.err"; then
	got=$(py_snap "$D/raw.snap" '"%d %d %d %d %d" % (len(s.nodes), len(d.links(s)), sum(p.lid for n in s.nodes for p in n.ports), sum(len(n.lft) for n in s.nodes), s.sm_guid)')
	if [ "$got" = "$((NSW + NCA)) $NLINKS 0 0 0" ]; then
		pass "unconfigured fabric: $((NSW + NCA)) nodes, $NLINKS links, no LIDs, empty LFTs, sm_guid 0"
	else
		fail "unconfigured fabric: want '$((NSW + NCA)) $NLINKS 0 0 0' (nodes links lidsum lftsum sm_guid), got '$got'"
	fi
else
	fail "unconfigured fabric: topo-collect exits 0"
	grep '^topo' "$D/raw.err" | sed 's/^/#   /'
fi

if ! lab_run_opensm minhop; then
	fail "run-once OpenSM"
	exit 1
fi

# ---- -o and spool= get the same bytes; -v reports timings -----------------
mkdir -p "$D/spool"
if umad "$TC" -v -o "$D/o.snap" "spool=$D/spool" 2>"$D/v.err"; then
	check "-o FILE and spool=DIR get identical bytes" cmp -s "$D/o.snap" "$D/spool/fabric.snap"
	check "-v reports discovery and LFT timings" grep -Eq '^topo-collect: discovery [0-9.]+ s \([0-9]+ MADs\), LFTs [0-9.]+ s' "$D/v.err"
	check "-v names where sm_guid came from" grep -Eq '^topo-collect: .*sm_guid 0x[0-9a-f]{16} from (SMInfo|MasterSMLID)' "$D/v.err"
	check "sm_guid is set after an SM ran" [ "$(py_snap "$D/o.snap" 's.sm_guid != 0')" = True ]
	check "engine is \"unknown\"" [ "$(py_snap "$D/o.snap" 's.engine')" = unknown ]
else
	fail "topo-collect -v -o FILE spool=DIR exits 0"
	grep '^topo' "$D/v.err" | sed 's/^/#   /'
fi

# The window only changes how many SMPs are in flight, never the result:
# the payload (everything after the 64-byte header) must be identical.
if umad "$TC" -w 1 -o "$D/w1.snap" 2>/dev/null && umad "$TC" -w 256 -o "$D/w256.snap" 2>/dev/null &&
	cmp -s <(tail -c +65 "$D/w1.snap") <(tail -c +65 "$D/o.snap") &&
	cmp -s <(tail -c +65 "$D/w256.snap") <(tail -c +65 "$D/o.snap"); then
	pass "-w 1 and -w 256 give byte-identical payloads"
else
	fail "-w 1 and -w 256 give byte-identical payloads"
fi
g1=$(py_snap "$D/w1.snap" s.generation)
g2=$(py_snap "$D/w256.snap" s.generation)
check "generations increase from run to run ($g1 < $g2)" [ "$g1" -lt "$g2" ]

# ---- UNIX and TCP sinks ------------------------------------------------------
start_ingest() {	# start_ingest OUTDIR ARGS...: sets INGEST_PID, INGEST_READY
	local out=$1 i
	shift
	python3 tests/lib/fake_ingest.py "$@" --out "$out" --lifetime 60 >"$out.ready" 2>"$out.err" &
	INGEST_PID=$!
	MY_PIDS+=("$INGEST_PID")
	INGEST_READY=
	for ((i = 0; i < 100; i++)); do
		INGEST_READY=$(grep -m1 '^ready ' "$out.ready" 2>/dev/null)
		[ -n "$INGEST_READY" ] && return 0
		sleep 0.1
	done
	return 1
}

if start_ingest "$D/in-unix" --unix "$D/ingest.sock" --count 1; then
	if umad "$TC" "sink=unix:$D/ingest.sock" 2>"$D/unix.err"; then
		gen=$(py_snap "$D/in-unix/latest.snap" s.generation 2>/dev/null)
		if [ -n "$gen" ] && grep -qx "$gen [0-9]*" "$D/in-unix/received.log" &&
			build/bin/topo-snap diff "$D/in-unix/latest.snap" "$D/o.snap" >/dev/null; then
			pass "sink=unix: delivered one snapshot, generation $gen, same fabric as -o"
		else
			fail "sink=unix: delivered one snapshot (received.log: $(cat "$D/in-unix/received.log" 2>/dev/null))"
		fi
	else
		fail "sink=unix: topo-collect exits 0"
		grep '^topo' "$D/unix.err" | sed 's/^/#   /'
	fi
else
	fail "fake_ingest.py --unix starts"
fi

if start_ingest "$D/in-tcp" --tcp 127.0.0.1:0 --count 1; then
	port=${INGEST_READY#ready port=}
	if umad "$TC" "sink=tcp:127.0.0.1:$port" timeout_ms=3000 2>"$D/tcp.err" &&
		[ -s "$D/in-tcp/latest.snap" ]; then
		pass "sink=tcp:127.0.0.1:$port delivered"
	else
		fail "sink=tcp:127.0.0.1:$port delivered"
		grep '^topo' "$D/tcp.err" | sed 's/^/#   /'
	fi
else
	fail "fake_ingest.py --tcp starts"
fi

# Nobody listens: exit 1 after one bounded attempt, but -o is still written.
t0=$SECONDS
umad "$TC" -o "$D/dead.snap" "sink=unix:$D/nobody.sock" timeout_ms=300 linger_ms=0 2>"$D/dead.err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "^topo-collect: deliver: unix:$D/nobody.sock: " "$D/dead.err" &&
	[ -s "$D/dead.snap" ] && [ $((SECONDS - t0)) -lt 10 ]; then
	pass "dead sink: exit 1, '$(grep -m1 '^topo-collect: deliver' "$D/dead.err")', -o still written"
else
	fail "dead sink: exit 1 within 10 s with a deliver error and -o written (rc $rc, $((SECONDS - t0)) s)"
	grep '^topo' "$D/dead.err" | sed 's/^/#   /'
fi

# A receiver that rejects: linger_ms bounds the retries.
if start_ingest "$D/in-close" --unix "$D/close.sock" --mode close; then
	t0=$SECONDS
	umad "$TC" "sink=unix:$D/close.sock" timeout_ms=500 linger_ms=1500 2>"$D/close.err"
	rc=$?
	n=$(grep -c "^topo-collect: deliver: unix:$D/close.sock" "$D/close.err")
	if [ "$rc" -eq 1 ] && [ "$n" -eq 1 ] && [ $((SECONDS - t0)) -lt 10 ]; then
		pass "a receiver that closes at once: retried for linger_ms, exit 1, '$(grep -m1 '^topo-collect: deliver' "$D/close.err")'"
	else
		fail "a receiver that closes at once: exit 1 with one error within 10 s (rc $rc, $n errors, $((SECONDS - t0)) s)"
	fi
else
	fail "fake_ingest.py --mode close starts"
fi

# ---- --loop --changed-only -------------------------------------------------
gen_of() { py_snap "$1" s.generation 2>/dev/null; }
wait_new_gen() {	# wait_new_gen FILE OLD-GEN SECONDS -> prints the new generation
	local i g
	for ((i = 0; i < $3 * 10; i++)); do
		g=$(gen_of "$1")
		if [ -n "$g" ] && [ "$g" != "$2" ]; then
			echo "$g"
			return 0
		fi
		sleep 0.1
	done
	return 1
}
mkdir -p "$D/loop"
LD_PRELOAD=$LAB_UMAD2SIM IBSIM_SOCKNAME=$IBSIM_SOCKNAME \
	"$TC" -v --loop 1 --changed-only "spool=$D/loop" 2>"$D/loop.err" &
LOOP_PID=$!
MY_PIDS+=("$LOOP_PID")
if g1=$(wait_new_gen "$D/loop/fabric.snap" none 20); then
	pass "--loop: first snapshot written (generation $g1)"
	sleep 2.5
	g_same=$(gen_of "$D/loop/fabric.snap")
	if [ "$g_same" = "$g1" ] && grep -q '^topo-collect: fabric unchanged' "$D/loop.err"; then
		pass "--loop --changed-only: an unchanged fabric is not written again"
	else
		fail "--loop --changed-only: an unchanged fabric is not written again ($g1 -> $g_same)"
	fi
	# The last CA in the file: the first one is where we are attached.
	victim=$(sed -n 's/^Ca\t[0-9]* "\([^"]*\)".*/\1/p' "$D/f.net" | tail -n 1)
	n1=$(py_snap "$D/loop/fabric.snap" 'len(s.nodes)')
	if lab_ibsim_cmd "Unlink \"$victim\"" >/dev/null && g2=$(wait_new_gen "$D/loop/fabric.snap" "$g1" 20); then
		n2=$(py_snap "$D/loop/fabric.snap" 'len(s.nodes)')
		check "--loop: after Unlink \"$victim\" a new generation has $((n1 - 1)) nodes (got $n2)" [ "$n2" -eq $((n1 - 1)) ]
	else
		fail "--loop: a new snapshot after Unlink \"$victim\""
	fi
else
	fail "--loop: first snapshot written"
	grep '^topo' "$D/loop.err" | sed 's/^/#   /'
fi
kill -TERM "$LOOP_PID" 2>/dev/null
for ((i = 0; i < 100; i++)); do
	kill -0 "$LOOP_PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$LOOP_PID" 2>/dev/null; then
	fail "--loop: stops within 10 s of SIGTERM"
else
	wait "$LOOP_PID"
	rc=$?
	check "--loop: SIGTERM ends the loop with exit status 0 (got $rc)" [ "$rc" -eq 0 ]
fi

# ---- a live SM answers SMInfo -------------------------------------------------
# With the run-once SM gone, sm_guid came from PortInfo:MasterSMLID; a running
# OpenSM answers SMInfo itself, and must name the same port.
if LAB_OSM_SWEEP=30 lab_start_opensm minhop; then
	if umad "$TC" -v -o "$D/live.snap" 2>"$D/live.err" &&
		grep -q '^topo-collect: .*sm_guid 0x[0-9a-f]* from SMInfo$' "$D/live.err" &&
		[ "$(py_snap "$D/live.snap" s.sm_guid)" = "$(py_snap "$D/o.snap" s.sm_guid)" ]; then
		pass "a running OpenSM: sm_guid read with SMInfo, same port as MasterSMLID named"
	else
		fail "a running OpenSM: sm_guid read with SMInfo"
		grep '^topo' "$D/live.err" | sed 's/^/#   /'
	fi
	lab_stop_opensm
else
	fail "lab_start_opensm minhop"
fi

[ "$fails" -eq 0 ]
