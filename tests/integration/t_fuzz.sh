#!/usr/bin/env bash
# libFuzzer on the parsers that take bytes from anyone: the snapshot and
# delta decoders (ingest socket, state file, history) and the request
# splitter (query port), with ASan and UBSan, FUZZ_SECONDS each (default 20). Seeds: the
# real 2-switch capture and a few requests. A crash, leak or sanitizer
# report fails the test and leaves the input in the log directory.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/t_fuzz.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
secs=${FUZZ_SECONDS:-20}
if ! command -v clang >/dev/null; then
	echo "not ok - clang is missing (make deps installs it)"
	exit 1
fi
fails=0
run() { # NAME: build/fuzz/NAME, built by `make tests`
	local name=$1 bin=$ROOT/build/fuzz/$1
	if [ ! -x "$bin" ]; then
		echo "not ok - $name is built (make tests builds build/fuzz/$name with clang -fsanitize=fuzzer)"
		fails=$((fails + 1))
		return
	fi
	mkdir -p "$T/$name.corpus"
	cp "$T"/seed.$name.* "$T/$name.corpus/" 2>/dev/null
	if (cd "$T" && "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 \
		"$name.corpus" >"$name.log" 2>&1); then
		local execs
		execs=$(grep -o 'Done [0-9]* runs' "$T/$name.log" | tail -1)
		echo "ok - $name: ${execs:-no summary} in ${secs} s, no crash, leak or sanitizer report"
	else
		echo "not ok - $name found a failing input"
		grep -E 'ERROR|SUMMARY|Test unit written' "$T/$name.log" | head -5 | sed 's/^/# /'
		mkdir -p build/test-logs
		cp "$T"/crash-* "$T"/leak-* build/test-logs/ 2>/dev/null
		fails=$((fails + 1))
	fi
}
# Seeds: a real snapshot, and request lines.
"$ROOT/build/bin/topo-snap" from-text tests/fixtures/2sw4hca.topo tests/fixtures/2sw4hca.lfts "$T/seed.fuzz_snapshot.1"
printf 'hops Hca1 Hca2' >"$T/seed.fuzz_proto.1"
printf 'query lid:2:lid:6\r' >"$T/seed.fuzz_proto.2"
printf 'hopsmatrix a b\tc  d' >"$T/seed.fuzz_proto.3"
run fuzz_snapshot
run fuzz_delta
run fuzz_proto
[ "$fails" -eq 0 ]
