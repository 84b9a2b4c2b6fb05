#!/usr/bin/env bash
# libFuzzer on every parser of untrusted bytes (tests/fuzz/README.md lists
# the harnesses and what each covers), under ASan and UBSan with no
# suppression. Per harness: first every past crash (tests/fuzz/regress/NAME),
# each run once; then the harness fuzzes from its corpus
# (tests/fuzz/corpus/NAME, copied: the checked-in one never grows) for its
# share of the time budget and says how many inputs it ran.
#
# Time: FUZZ_BUDGET seconds of wall time for the whole test (default 110,
# so that make check's fuzzing stays under two minutes on 2 cores). Each
# harness fuzzes for its share of what is left when it starts, less what
# starting, loading the seeds and the leak check take (about 3 s, measured:
# ASan's start and fuzz_topoquery's slow seeds), so a slow harness is paid
# for by the ones after it and the total holds. A longer run is opt-in:
# FUZZ_BUDGET=3600 (an hour in all), or FUZZ_SECONDS=N for N s of fuzzing
# per harness whatever the total. FUZZ_ONLY="fuzz_tii fuzz_text" runs those
# only. Nothing runs in the background. Only a slow input can carry the
# test past its budget, by at most -timeout (30 s): slower, it fails the
# test as a hang.
#
# A crash, a leak, a sanitizer report or a broken invariant of the harness
# fails the test; the input is kept in build/test-logs/ (run the harness on
# it to see the report, then add it to tests/fuzz/regress/NAME/).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/t_fuzz.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
ALL="fuzz_proto fuzz_query fuzz_server fuzz_snapshot fuzz_delta fuzz_text fuzz_namemap fuzz_conf fuzz_tii
     fuzz_topoquery fuzz_coll_sched fuzz_coll_topo"
names=${FUZZ_ONLY:-$ALL}
n=0
for name in $names; do n=$((n + 1)); done
budget=${FUZZ_BUDGET:-110}
case $budget${FUZZ_SECONDS:-} in *[!0-9]*)
	echo "not ok - FUZZ_BUDGET and FUZZ_SECONDS are whole seconds"
	exit 1 ;;
esac
start=$SECONDS deadline=$((SECONDS + budget)) left=$n
OVERHEAD=3
# The fuzzing time of the next harness: FUZZ_SECONDS, or an even share of
# the time left before the deadline, less its start-up; at least 1 s.
share() {
	local s=${FUZZ_SECONDS:-$(((deadline - SECONDS) / left - OVERHEAD))}
	[ "$s" -ge 1 ] || s=1
	echo "$s"
}
if ! command -v clang >/dev/null; then
	echo "not ok - clang is missing (make deps installs it)"
	exit 1
fi

# No sanitizer report may be silenced: no suppression file in the tree, no
# suppressions= in any test's sanitizer options.
supp=$(git ls-files 2>/dev/null | grep -Ei 'supp(ression)?s?(\.txt)?$|ubsan|lsan|asan.*\.(txt|supp)$' | grep -v '^tests/fuzz/' || true)
opts=$(git grep -nE '(UBSAN|ASAN|LSAN)_OPTIONS=[^ ]*suppressions' -- tests Makefile 2>/dev/null || true)
if [ -z "$supp$opts" ]; then
	echo "ok - no sanitizer suppression file or suppressions= option in the tree"
else
	echo "not ok - sanitizer suppressions found: $supp $opts"
fi

fails=0 total=0
# Options per harness: the largest input worth trying, and what a run may
# take before libFuzzer calls it a hang (fuzz_server waits up to 3 s for
# a reply; a heavy analysis of the query harness can take seconds).
opts_of() {
	case $1 in
	fuzz_snapshot | fuzz_delta | fuzz_server) echo "-max_len=65536 -timeout=30" ;;
	fuzz_query | fuzz_tii | fuzz_topoquery) echo "-max_len=16384 -timeout=30" ;;
	*) echo "-max_len=8192 -timeout=30" ;;
	esac
}

run() { # NAME: build/fuzz/NAME, built by `make tests`
	local name=$1 bin=$ROOT/build/fuzz/$1 o
	o=$(opts_of "$name")
	if [ ! -x "$bin" ]; then
		echo "not ok - $name is built (make tests builds build/fuzz/$name with clang -fsanitize=fuzzer)"
		fails=$((fails + 1))
		return
	fi
	local reg=(tests/fuzz/regress/"$name"/*) nreg=0
	[ -e "${reg[0]}" ] && nreg=${#reg[@]}
	if [ "$nreg" -gt 0 ]; then
		# shellcheck disable=SC2086
		if (cd "$T" && "$bin" $o -close_fd_mask=3 -rss_limit_mb=2048 "${reg[@]/#/$ROOT/}" >"$name.reg.log" 2>&1); then
			echo "ok - $name: $nreg past crash inputs (tests/fuzz/regress/$name) run clean"
		else
			echo "not ok - $name: a past crash input fails again"
			grep -E 'ERROR|SUMMARY|runtime error|Running:' "$T/$name.reg.log" | tail -6 | sed 's/^/# /'
			fails=$((fails + 1))
		fi
	fi
	local per
	per=$(share)
	mkdir -p "$T/$name.corpus"
	cp tests/fuzz/corpus/"$name"/* "$T/$name.corpus/" 2>/dev/null
	local nseed
	nseed=$(find "$T/$name.corpus" -type f | wc -l)
	# shellcheck disable=SC2086
	if (cd "$T" && "$bin" $o -max_total_time="$per" -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
		-artifact_prefix="$T/$name-" "$name.corpus" >"$name.log" 2>&1); then
		local execs rate
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T/$name.log" | tail -1)
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$T/$name.log" | tail -1)
		total=$((total + ${execs:-0}))
		echo "ok - $name: ${execs:-?} executions in $per s (${rate:-?}/s) from $nseed seeds; no crash, leak or sanitizer report"
	else
		echo "not ok - $name found a failing input"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written|deadly signal' "$T/$name.log" | head -6 | sed 's/^/# /'
		mkdir -p build/test-logs
		for f in "$T/$name"-crash-* "$T/$name"-leak-* "$T/$name"-timeout-* "$T/$name"-oom-*; do
			[ -e "$f" ] && cp "$f" build/test-logs/ && echo "# kept: build/test-logs/${f##*/} (build/fuzz/$name FILE reproduces it)"
		done
		fails=$((fails + 1))
	fi
}

for name in $names; do
	run "$name"
	left=$((left - 1))
done
echo "# $total executions over $n harnesses in $((SECONDS - start)) s of wall time ($([ -n "${FUZZ_SECONDS:-}" ] && echo "FUZZ_SECONDS=$FUZZ_SECONDS each" || echo "budget $budget s"))"
[ "$fails" -eq 0 ]
