#!/usr/bin/env bash
# t_real_fault.sh - bench/real_fault.sh end to end at k=4: ibsim, OpenSM's
# ftree with the plugin, topod; a leaf uplink down and back. The table it
# prints is what docs/performance.md quotes at k=56, so its parse of both
# logs must hold: a full generation, then deltas of the fault and the
# repair that carry LFT blocks, each with its plugin line -> served time.
# Its waits follow the logs with tail -F (ended with the script), which
# must leave nothing behind, and REAL_FAULT_KEEP keeps each pass's
# snapshot for bench_delta --files.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
d=$(mktemp -d)
RUN_PID=
cleanup() {
	[ -n "$RUN_PID" ] && kill -TERM "$RUN_PID" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT
# the lab's directory under $d: its followers are found by their arguments
TMPDIR=$d QUIET=3 REAL_FAULT_KEEP="$d/keep" timeout 300 bash bench/real_fault.sh 4 2 >"$d/out" 2>&1 &
RUN_PID=$!
wait "$RUN_PID"
rc=$?
RUN_PID=
[ "$rc" = 0 ] && ok "real_fault.sh 4 2 ends with 0" || nok "real_fault.sh 4 2 ended with $rc: $(tail -5 "$d/out")"
# its waits report a timeout in the output, not in its status
if grep -qE '^# (no quiet after|the first passes did not settle|ibsim: )' "$d/out"; then
	nok "every wait of real_fault.sh ended in time: $(grep '^# ' "$d/out")"
else
	ok "every wait of real_fault.sh ended in time"
fi
# gen kind pass ... | topod: blocks apply ... | line -> served (last byte, first -> last)
row='^[0-9]+ +(full|delta) +[a-z]+ [a-z]+ .*\| +[0-9]+ +[0-9.]+ .*\| +-?[0-9]+\.[0-9]'
full=$(grep -E "$row" "$d/out" | grep -c ' full ')
[ "$full" = 1 ] && ok "one full generation" || nok "full generations: $full ($(cat "$d/out"))"
# the fault and the repair: deltas of routing passes with LFT blocks
moved=$(grep -E "$row" "$d/out" | awk -F'|' '$1 ~ / delta +heavy sweep/ { split($2, a, " "); if (a[1] > 0) n++ } END { print n + 0 }')
[ "$moved" -ge 2 ] && ok "the fault and the repair are deltas with LFT blocks ($moved)" ||
	nok "deltas with LFT blocks: $moved ($(cat "$d/out"))"
for i in 0 1 2; do
	[ -s "$d/keep/pass.$i.snap" ] || { nok "pass.$i.snap kept"; continue; }
	ok "pass.$i.snap kept"
done
if [ ! -x build/bench/bench_delta ]; then
	nok "build/bench/bench_delta built (make tests)"
elif [ -s "$d/keep/pass.0.snap" ] && [ -s "$d/keep/pass.1.snap" ]; then
	timeout 120 build/bench/bench_delta --files "$d/keep/pass.0.snap" "$d/keep/pass.1.snap" >"$d/bd" 2>&1 &&
		grep -q 'incremental index' "$d/bd" && ok "bench_delta --files reads the kept passes" ||
		nok "bench_delta --files: $(tail -3 "$d/bd")"
fi
# tail --pid ends within its 1 s check after the script; grep with it.
# pgrep -f matches the lab's paths under $d, never itself.
left=
for _ in 1 2 3 4 5; do
	left=$(pgrep -af -- "$d" || true)
	[ -z "$left" ] && break
	sleep 1
done
[ -z "$left" ] && ok "no follower of the run's logs left" || nok "left running: $left"
exit $fail
