#!/usr/bin/env bash
# t_lab_stop.sh - `make lab` leaves nothing behind, however it was started:
# in the foreground of a script, in the background of a script (where a
# teardown inside the TERM trap once hung), and under a pseudo-terminal
# (python pty): each is stopped with `make lab-stop`, and then no process
# of the lab (keep.sh, its watchdog, ibsim, OpenSM, topod) and not its
# folder or pid file may be left; `make lab` exits 0 without "Error". Under
# the terminal also ^C, and closing the terminal (SIGHUP), stop it whole.
# LAB_TOPOD_ARGS reach topod (an admin socket in @LAB@) and the banner
# prints the client settings, which work as printed.
set -u
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d)
export LAB_PIDFILE=$T/lab.pid LAB_K=4 LAB_LEVELS=2
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
STARTED=
cleanup() { # a failed run must not leave its lab either: by PID, what it recorded
	local p
	for p in $STARTED; do kill -TERM "$p" 2>/dev/null; done
	[ -f "$LAB_PIDFILE" ] && make -s lab-stop >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

# wait_banner OUT: until the lab's banner is complete in OUT (or 120 s).
wait_banner() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '^Stop it' "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# snapshot_lab: the lab's folder and every PID it owns (keep.sh first),
# read from the pid file and the folder's list before the stop.
snapshot_lab() {
	local pid dir sock
	read -r pid dir sock <"$LAB_PIDFILE" || return 1
	LAB_DIR_SEEN=$dir
	LAB_PIDS_SEEN="$pid $(cat "$dir/pids" 2>/dev/null)"
	LAB_SOCK_SEEN=$sock
	STARTED="$STARTED $LAB_PIDS_SEEN"
}

# nothing_left HOW: no process of the lab (by its PIDs, and by its
# IBSIM_SOCKNAME in any process's environment), no folder, no pid file.
nothing_left() {
	local how=$1 left= p i
	for ((i = 0; i < 100; i++)); do
		left=
		for p in $LAB_PIDS_SEEN; do
			[ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && left="$left $p"
		done
		for p in $(grep -lsx "IBSIM_SOCKNAME=$LAB_SOCK_SEEN" /proc/[0-9]*/environ 2>/dev/null |
			cut -d/ -f3); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "IBSIM_SOCKNAME=$LAB_SOCK_SEEN" &&
				left="$left $p"
		done
		[ -z "$left" ] && [ ! -e "$LAB_DIR_SEEN" ] && [ ! -e "$LAB_PIDFILE" ] && break
		sleep 0.2
	done
	[ -z "$left" ] && ok "$how: no process of the lab is left ($(echo $LAB_PIDS_SEEN | wc -w) PIDs)" ||
		nok "$how: still running:$left ($(ps -o pid=,args= -p "${left// /,}" 2>/dev/null | head -5 | tr '\n' ';'))"
	[ ! -e "$LAB_DIR_SEEN" ] && ok "$how: its folder is removed" || nok "$how: $LAB_DIR_SEEN is left"
	[ ! -e "$LAB_PIDFILE" ] && ok "$how: its pid file is removed" || nok "$how: the pid file is left"
}

stop_it() { # HOW: make lab-stop, which must say it stopped the lab
	local out
	out=$(make -s lab-stop 2>&1) && case $out in "lab "*" stopped") true ;; *) false ;; esac &&
		ok "$1: make lab-stop: $out" || nok "$1: make lab-stop: $out"
}

# ---- 1. in the background of a script ----
LAB_TOPOD_ARGS="--admin @LAB@/admin.sock" make -s lab >"$T/bg.out" 2>&1 &
MK=$!
if wait_banner "$T/bg.out"; then
	snapshot_lab
	ok "background: make lab is up"
	port=$(sed -n 's/^  export TII_SERVERS=127.0.0.1:\([0-9]*\)$/\1/p' "$T/bg.out")
	line=$(grep '^  export TII_SERVERS=' "$T/bg.out")
	out=$(eval "${line# }"; build/bin/topoquery info 2>&1) && [ -n "$port" ] &&
		ok "the banner's '${line# }' lets topoquery find topod without -s" || nok "TII_SERVERS: '$line' -> $out"
	[ -S "$LAB_DIR_SEEN/admin.sock" ] && ok "LAB_TOPOD_ARGS reach topod: its admin socket is in the lab's folder" ||
		nok "no admin socket in $LAB_DIR_SEEN (LAB_TOPOD_ARGS): $(ls "$LAB_DIR_SEEN" | tr '\n' ' ')"
	grep -q "topod options: --admin $LAB_DIR_SEEN/admin.sock" "$T/bg.out" &&
		ok "the banner names topod's options" || nok "banner: $(grep -i option "$T/bg.out")"
	stop_it background
	wait "$MK"
	rc=$?
	[ "$rc" = 0 ] && ! grep -q 'Error' "$T/bg.out" && ok "background: make lab exits 0, no 'Error'" ||
		nok "background: make lab exited $rc: $(tail -3 "$T/bg.out")"
	nothing_left background
else
	nok "background: make lab did not come up: $(tail -5 "$T/bg.out")"
fi

# ---- 2. in the foreground of a script, stopped from elsewhere ----
(wait_banner "$T/fg.out" && sleep 1 && make -s lab-stop >"$T/fg.stop" 2>&1) &
STOPPER=$!
make -s lab >"$T/fg.out" 2>&1 </dev/null &
MK=$!
wait_banner "$T/fg.out" && snapshot_lab
wait "$MK"
rc=$?
wait "$STOPPER"
grep -q '^lab .* stopped$' "$T/fg.stop" && ok "foreground: make lab-stop: $(cat "$T/fg.stop")" ||
	nok "foreground: make lab-stop: $(cat "$T/fg.stop" 2>&1)"
[ "$rc" = 0 ] && ! grep -q 'Error' "$T/fg.out" && ok "foreground: make lab exits 0, no 'Error'" ||
	nok "foreground: make lab exited $rc: $(tail -3 "$T/fg.out")"
[ -n "${LAB_DIR_SEEN:-}" ] && nothing_left foreground

# ---- 3. under a pseudo-terminal: make lab-stop, ^C, the terminal closed ----
# lab_term.py HOW OUT: runs make lab on a new pty as its session leader; HOW is
# stop (wait for it to end), intr (type ^C) or hangup (SIGHUP to the job,
# the master closed).
cat >"$T/lab_term.py" <<'PY'
import os, pty, select, signal, sys, time
how, out = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("make", ["make", "-s", "lab"])
log = open(out, "ab", buffering=0)
def pump(t):
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                b = os.read(fd, 65536)
            except OSError:
                return False
            if not b:
                return False
            log.write(b)
    return True
for _ in range(1500):  # 300 s: make lab under a CI load of 25 took over 120
    if not pump(0.2) or b"Stop it" in open(out, "rb").read():
        break
open(out + ".ready", "w").close()
# the test notes the lab's PIDs and folder before it is stopped (OUT.go):
# a ^C sent at once could stop it before a loaded machine let it look
for _ in range(600):
    if os.path.exists(out + ".go"):
        break
    pump(0.1)
if how == "intr":
    os.write(fd, b"\x03")
elif how == "hangup":
    # what the terminal's shell does when the terminal goes: SIGHUP to the
    # job's process group (pty.fork made make its leader), then it is gone
    os.killpg(pid, signal.SIGHUP)
    os.close(fd)
    fd = None
end = time.time() + 60
while time.time() < end:
    if fd is not None:
        pump(0.2)
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        print("exit", os.waitstatus_to_exitcode(st))
        sys.exit(0)
    time.sleep(0.1)
print("still running")
PY
for how in stop intr hangup; do
	rm -f "$T/pty.$how" "$T/pty.$how.ready" "$T/pty.$how.go"
	python3 "$T/lab_term.py" "$how" "$T/pty.$how" >"$T/pty.$how.rc" 2>&1 &
	PY=$!
	for _ in $(seq 1500); do [ -e "$T/pty.$how.ready" ] && break; sleep 0.2; done
	up=0
	grep -q 'Stop it' "$T/pty.$how" 2>/dev/null && snapshot_lab && up=1
	touch "$T/pty.$how.go"
	if [ "$up" = 1 ]; then
		ok "pty ($how): make lab is up under a terminal"
		[ "$how" = stop ] && stop_it "pty"
		wait "$PY"
		case $how in
		stop) grep -qx 'exit 0' "$T/pty.$how.rc" && ! grep -q Error "$T/pty.$how" &&
			ok "pty: make lab exits 0, no 'Error'" || nok "pty: $(cat "$T/pty.$how.rc"): $(tail -c 300 "$T/pty.$how")" ;;
		*) grep -q '^exit' "$T/pty.$how.rc" && ok "pty ($how): make lab ended ($(cat "$T/pty.$how.rc"))" ||
			nok "pty ($how): $(cat "$T/pty.$how.rc")" ;;
		esac
		nothing_left "pty ($how)"
	else
		nok "pty ($how): make lab did not come up: $(tail -c 300 "$T/pty.$how" 2>&1)"
		wait "$PY"
	fi
done
out=$(make -s lab-stop 2>&1) && ok "make lab-stop with no lab: '$out', exit 0" || nok "make lab-stop with no lab: $out"
exit $fail
