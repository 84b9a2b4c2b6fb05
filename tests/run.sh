#!/usr/bin/env bash
# Runs every test and ends with one summary line "N passed, N failed, N skipped".
#
# Unit tests: build/tests/* and build/tests/asan/* (ASan+UBSan builds of the
# same sources). Integration tests: tests/integration/t_*.sh and t_*.py. Every test
# program prints TAP-like lines, "ok - what" / "not ok - what" / "skip - what";
# each line counts once. A program that exits non-zero without printing
# "not ok" counts as one failure, so a crash can never pass silently.
#
#   tests/run.sh [PATTERN]    only tests whose file name contains PATTERN
set -u
cd "$(dirname "$0")/.." || exit 1
pat=${1:-}
passed=0 failed=0 skipped=0
logdir=build/test-logs
mkdir -p "$logdir"

run_one() {
	local name=$1; shift
	local log="$logdir/$(echo "$name" | tr '/' '_').log"
	local start=$SECONDS
	"$@" >"$log" 2>&1 </dev/null
	local rc=$?
	local p f s
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	s=$(grep -c '^skip - ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $rc" >>"$log"
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	printf '%-44s %4d ok %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - start))
	if [ "$f" -gt 0 ]; then
		grep -E '^not ok - |^#' "$log" | head -20 | sed 's/^/    /'
		echo "    (full log: $log)"
	fi
}

for t in build/tests/* build/tests/asan/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	case "$t" in *asan/*) n="unit-asan/${t##*/}" ;; *) n="unit/${t##*/}" ;; esac
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_one "$n" "$t"
done
for t in tests/integration/t_*.sh tests/integration/t_*.py; do
	[ -f "$t" ] || continue
	case "$t" in *"$pat"*) ;; *) continue ;; esac
	case "$t" in
	*.py) run_one "${t#tests/}" python3 "$t" ;;
	*) run_one "${t#tests/}" bash "$t" ;;
	esac
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
