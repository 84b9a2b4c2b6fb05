#!/usr/bin/env bash
# Runs every test, several at once, and ends with one summary line
# "N passed, N failed, N skipped".
#
# Unit tests: build/tests/* and build/tests/asan/* (ASan+UBSan builds of the
# same sources). Integration tests: tests/integration/t_*.sh and t_*.py. Every test
# program prints TAP-like lines, "ok - what" / "not ok - what" / "skip - what";
# each line counts once. A program that exits non-zero without printing
# "not ok" counts as one failure, so a crash can never pass silently; so does
# one killed by the time limit.
#
#   tests/run.sh [PATTERN]    only tests whose file name contains PATTERN
#
# Parallel: up to TEST_JOBS tests run at once (default: 3 per core; most
# integration tests wait on OpenSM sweeps, sockets and sleeps, and 3 per core
# measured fastest on 2 cores, docs/performance.md "make check's own time").
# TEST_JOBS=1 runs them one after another. Each test's output goes to its
# own log, build/test-logs/NAME.log; one line per test is printed as it ends,
# with the "not ok" lines and "#" notes of a failed one.
#
# Longest first: tests start in decreasing order of their last known
# duration, so that a long one never starts last. The durations come from
# the previous run (build/test-logs/durations.txt, written at the end of
# every run) and else from tests/durations.txt (checked in, so a fresh clone
# schedules well too; refresh it with: cp build/test-logs/durations.txt
# tests/durations.txt after a full run). A test in neither counts as long as
# the longest known one: a new test is often a heavy one.
#
# Serial tests: a test that cannot run beside others (it installs into the
# system, takes a fixed resource, or asserts a time or a latency that other
# tests' load would break) has a line
#     # test: serial - REASON
# among its first 40 lines (a unit test: " * test: serial - REASON" in the
# comment at the top of tests/unit/NAME.c; it holds for its ASan build too).
# Serial tests run one at a time with nothing else running, after the
# parallel ones.
#
# Locks: tests that only collide with each other have a line
#     # test: lock NAME - REASON
# and run beside any other test, but never two with the same NAME at once
# (lock mpi: real MPI jobs, whose ranks busy-poll; two oversubscribed jobs
# on 2 cores starve each other past their mpirun timeouts). Prefer fixing a collision (ephemeral
# ports, mktemp directories, unique socket names) to marking a test serial.
#
# Limits: TEST_TIMEOUT seconds per test (default 2400), then the test gets
# SIGTERM (its cleanup traps run), SIGKILL 30 s later, and counts as failed.
# t_fabrics took 1,797 s of a 1,800 s limit in one whole run on 2 cores and
# was killed at 1,800 s in the next; 2,400 s keeps a whole run under an hour.
set -u
cd "$(dirname "$0")/.." || exit 1
pat=${1:-}
ncpu=$(nproc 2>/dev/null || echo 2)
jobs=${TEST_JOBS:-$((3 * ncpu))}
case $jobs in '' | *[!0-9]* | 0) echo "run.sh: TEST_JOBS must be a positive number" >&2; exit 2 ;; esac
limit=${TEST_TIMEOUT:-2400}
logdir=build/test-logs
mkdir -p "$logdir"
passed=0 failed=0 skipped=0
t_begin=$EPOCHREALTIME

# ---- the tests: NAME, how to run it, serial or not -------------------------
names=() files=() serial=() lock=()
add() { # NAME FILE
	names+=("$1")
	files+=("$2")
	local s=0 l= src=$2 m
	case $2 in build/tests/*) src=$(ls tests/*/"${2##*/}.c" 2>/dev/null | head -1) ;; esac
	if [ -n "$src" ]; then
		m=$(head -40 "$src" | sed -En 's,^ ?(#|//|/?\*)? ?test: ,,p' | head -1)
		case $m in serial | serial[!a-z]*) s=1 ;; lock\ *) l=${m#lock }; l=${l%% *} ;; esac
	fi
	serial+=("$s")
	lock+=("$l")
}
for t in build/tests/* build/tests/asan/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	case "$t" in *asan/*) add "unit-asan/${t##*/}" "$t" ;; *) add "unit/${t##*/}" "$t" ;; esac
done
for t in tests/integration/t_*.sh tests/integration/t_*.py; do
	[ -f "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	add "${t#tests/}" "$t"
done

# ---- the order: longest known duration first ---------------------------------
declare -A dur=()
for f in tests/durations.txt "$logdir/durations.txt"; do # the later wins
	[ -f "$f" ] || continue
	while read -r s n; do
		case $s in '#'* | '') continue ;; esac
		dur[$n]=$s
	done <"$f"
done
# A test without a record counts as long as the longest one known (or
# starts first when none is known): a new test is often a heavy one, and
# the longest known still starts at once (unit tests come first on a tie).
longest=$(for n in "${names[@]}"; do echo "${dur[$n]:-}"; done | sort -gr | head -1)
# "SERIAL SECONDS INDEX" sorted: parallel ones first, each group longest first
order=()
while read -r _ _ i; do order+=("$i"); done < <(
	for i in "${!names[@]}"; do
		printf '%d %s %d\n' "${serial[$i]}" "${dur[${names[$i]}]:-${longest:-999999}}" "$i"
	done | sort -k1,1n -k2,2gr -k3,3n)

# ---- running ---------------------------------------------------------------
# Each test runs under a small background shell that writes its exit status
# and times to $st/INDEX.done when it ends; the loop below looks for those
# files. (bash's wait -n can lose a child when several end at once.)
st=$logdir/.running.$$
rm -rf "$st" && mkdir -p "$st" || exit 1
declare -A running=() took=() held=()

logof() { echo "$logdir/$(echo "$1" | tr '/' '_').log"; }

start() { # INDEX: runs test INDEX in the background
	local i=$1 f=${files[$1]} log
	log=$(logof "${names[$1]}")
	: >"$log"
	(
		t0=$EPOCHREALTIME
		case $f in
		build/*) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			timeout -k 30 "$limit" "$f" >>"$log" 2>&1 </dev/null & ;;
		*.py) timeout -k 30 "$limit" python3 "$f" >>"$log" 2>&1 </dev/null & ;;
		*) timeout -k 30 "$limit" bash "$f" >>"$log" 2>&1 </dev/null & ;;
		esac
		echo $! >"$st/$i.pid"
		wait $!
		echo "$? $t0 $EPOCHREALTIME" >"$st/$i.tmp" && mv "$st/$i.tmp" "$st/$i.done"
	) >>"$log" 2>&1 &	# bash's own "Segmentation fault" goes to the log too
	running[$i]=1
	[ -z "${lock[$i]}" ] || held[${lock[$i]}]=1
}

finish() { # INDEX: counts the test's lines and prints its line
	local i=$1 n=${names[$1]} log rc t0 t1 p f s secs
	log=$(logof "$n")
	read -r rc t0 t1 <"$st/$i.done"
	unset "running[$i]"
	[ -z "${lock[$i]}" ] || unset "held[${lock[$i]}]"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	took[$n]=$secs
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	s=$(grep -c '^skip - ' "$log")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "not ok - $n killed after the time limit (TEST_TIMEOUT=$limit s)" >>"$log"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $n exited with status $rc" >>"$log"
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	printf '%-44s %4d ok %3d failed %3d skipped  (%.0fs)\n' "$n" "$p" "$f" "$s" "$secs"
	if [ "$f" -gt 0 ]; then
		grep -E '^not ok - |^#' "$log" | head -20 | sed 's/^/    /'
		echo "    (full log: $log)"
	fi
}

reap() { # waits until at least one running test has ended
	local i found=0
	while :; do
		for i in "${!running[@]}"; do
			[ -e "$st/$i.done" ] || continue
			finish "$i"
			found=1
		done
		[ "$found" = 1 ] && return
		sleep 0.25
	done
}

stop_all() { # on ^C or SIGTERM: timeout passes SIGTERM on, cleanup traps run
	local i
	trap '' INT TERM
	for i in "${!running[@]}"; do
		[ -s "$st/$i.pid" ] && kill -TERM "$(cat "$st/$i.pid")" 2>/dev/null
	done
	wait
	rm -rf "$st"
	echo "run.sh: interrupted"
	exit 130
}
trap stop_all INT TERM

nserial=0
echo "# ${#names[@]} tests, up to $jobs at once (TEST_JOBS), serial ones alone at the end"
pending=()
for i in "${order[@]}"; do [ "${serial[$i]}" = 1 ] || pending+=("$i"); done
while [ "${#pending[@]}" -gt 0 ]; do
	while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
	# the longest pending test whose lock (if any) no running test holds
	pick=-1
	for k in "${!pending[@]}"; do
		l=${lock[${pending[$k]}]}
		[ -n "$l" ] && [ -n "${held[$l]:-}" ] && continue
		pick=$k
		break
	done
	if [ "$pick" -lt 0 ]; then
		reap
		continue
	fi
	i=${pending[$pick]}
	unset "pending[$pick]"
	pending=("${pending[@]}")
	start "$i"
done
for i in "${order[@]}"; do
	[ "${serial[$i]}" = 1 ] || continue
	# a serial test runs alone: let every other one end first
	while [ "${#running[@]}" -gt 0 ]; do reap; done
	nserial=$((nserial + 1))
	start "$i"
	reap
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

# ---- the record of durations, for the next run's order ---------------------
{
	echo "# seconds test (tests/run.sh writes this; longest first; see its header)"
	declare -A all=()
	for n in "${!dur[@]}"; do all[$n]=${dur[$n]}; done
	for n in "${!took[@]}"; do all[$n]=${took[$n]}; done
	for n in "${!all[@]}"; do printf '%s %s\n' "${all[$n]}" "$n"; done | sort -k1,1gr -k2
} >"$logdir/durations.txt.new" && mv "$logdir/durations.txt.new" "$logdir/durations.txt"
rm -rf "$st"

wall=$(awk -v a="$t_begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
echo "# ${#names[@]} tests ($nserial serial) in $wall s with TEST_JOBS=$jobs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
