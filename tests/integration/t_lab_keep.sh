#!/usr/bin/env bash
# t_lab_keep.sh - `make lab` (tests/lab/keep.sh) keeps a fabric up, its
# printed commands work as written, a change through its ibsim FIFO reaches
# topod, and `make lab-stop` stops every process it started.
set -u
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d)
export LAB_PIDFILE=$T/lab.pid LAB_K=4 LAB_LEVELS=2
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
KEEP=
cleanup() {
	[ -n "$KEEP" ] && kill -TERM "$KEEP" 2>/dev/null && sleep 3
	[ -n "$KEEP" ] && kill -KILL "$KEEP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

bash tests/lab/keep.sh >"$T/out" 2>&1 &
KEEP=$!
for _ in $(seq 600); do
	grep -q '^Stop it' "$T/out" && break
	kill -0 "$KEEP" 2>/dev/null || break
	sleep 0.2
done
grep -q '^lab ready' "$T/out" && ok "make lab: the fabric is up and the lab says how to use it" ||
	{ nok "make lab did not come up: $(tail -5 "$T/out")"; exit 1; }
pids=$(sed -n 's/^  \(topod\|OpenSM\|ibsim\) *pid \([0-9]*\).*/\2/p' "$T/out")
[ "$(echo "$pids" | wc -w)" = 3 ] && ok "it names the PIDs of topod, OpenSM and ibsim" || nok "PIDs: '$pids'"

# Run the printed query lines exactly as printed.
qline=$(grep -m1 'topoquery -s .* path ' "$T/out" | sed 's/^ *//')
out=$(eval "$qline" 2>&1) && [ "$(echo "$out" | wc -l)" -ge 2 ] && ok "printed: $qline" ||
	nok "printed '$qline' answered: $out"
hline=$(grep -m1 "^  echo 'hops" "$T/out" | sed 's/^ *//')
out=$(eval "$hline" 2>&1)
case "$out" in "OK "*hops=[0-9]*) ok "printed: $hline -> $out" ;; *) nok "printed '$hline' answered '$out'" ;; esac
gen() { build/bin/topoquery -s "127.0.0.1:$(sed -n 's/.*queries on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/out")" info 2>/dev/null |
	sed -n 's/^generation //p'; }
g0=$(gen)
uline=$(grep -m1 "^  echo 'Unlink" "$T/out" | sed 's/^ *//; s/; cat .*//')
eval "$uline"
# up to 90 s: the next sweep, OpenSM's reroute and topod's build, on a
# machine that may be at a load of 25 (20 s was once not enough)
for _ in $(seq 450); do
	g1=$(gen)
	[ -n "$g1" ] && [ "$g1" != "$g0" ] && break
	sleep 0.2
done
[ -n "$g1" ] && [ "$g1" != "$g0" ] && ok "printed: $uline -> a new generation ($g0 -> $g1)" ||
	nok "after '$uline' topod still serves $g0"

make -s lab-stop >"$T/stop" 2>&1 && ok "make lab-stop: $(cat "$T/stop")" || nok "make lab-stop: $(cat "$T/stop")"
for _ in $(seq 50); do kill -0 "$KEEP" 2>/dev/null || break; sleep 0.1; done
kill -0 "$KEEP" 2>/dev/null && nok "the lab's shell is still running" || { ok "the lab's shell ended"; KEEP=; }
left=
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -z "$left" ] && ok "topod, OpenSM and ibsim are gone" || nok "still running:$left"
[ ! -e "$LAB_PIDFILE" ] && ok "the pid file is removed" || nok "the pid file is left behind"
out=$(make -s lab-stop 2>&1) && ok "make lab-stop with no lab: '$out', exit 0" || nok "make lab-stop with no lab: $out"
exit $fail
