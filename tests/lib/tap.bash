# tap.bash - the "ok - ..." / "not ok - ..." lines tests/run.sh counts, for
# bash tests: source it, then ok/nok/check; $failed counts the failures.
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
# check WHAT CMD...: ok if CMD succeeds
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }
