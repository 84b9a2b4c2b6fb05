#!/usr/bin/env bash
# t_build_deps.sh - a unit test that #includes a .c (to reach its static
# functions) is rebuilt when that .c changes: the compiler's -MMD files of
# the test binaries are read by make, not only those of the objects.
# `make -n -W FILE` asks what would be rebuilt were FILE new, touching nothing.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
n=0
for src in tests/unit/*.c; do
	t=$(basename "$src" .c)
	for inc in $(sed -n 's/^#include "\(.*\.c\)".*/\1/p' "$src"); do
		n=$((n + 1))
		# the name the compiler wrote into the .d: relative to the includer
		dep="tests/unit/$inc"
		[ -f "$dep" ] || { nok "$src includes $inc, not found"; continue; }
		out=$(make -n -W "$dep" "build/tests/$t" "build/tests/asan/$t" 2>&1)
		plain=$(echo "$out" | grep -c -- "-o build/tests/$t ")
		san=$(echo "$out" | grep -c -- "-o build/tests/asan/$t ")
		[ "$plain" -ge 1 ] && [ "$san" -ge 1 ] &&
			ok "$t is rebuilt (plain and ASan) when $inc changes" ||
			nok "$t not rebuilt when $inc changes (plain $plain, asan $san): make does not read build/tests/*.d"
	done
done
# and an ordinary dependency: a header a test includes
out=$(make -n -W tests/unit/tap.h build/tests/test_hostlist 2>&1)
echo "$out" | grep -q -- "-o build/tests/test_hostlist " && ok "test_hostlist is rebuilt when tap.h changes" ||
	nok "test_hostlist not rebuilt when tap.h changes"
[ "$n" -ge 1 ] && ok "$n unit test(s) include a .c" || nok "no unit test includes a .c: this test checks nothing"
exit $fail
