#!/usr/bin/env bash
# t_help.sh - help that helps: every program answers -h/--help and -V with
# exit 0; topoquery has help per command (COMMAND --help, help COMMAND);
# unknown commands and topod.conf keys get a "did you mean"; a mistake in
# topod's options names itself without burying it under the whole usage.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
V=$(cat VERSION)

for p in topod topoquery topo-snap topo-collect topo-routeopt; do
	for h in -h --help; do
		out=$(build/bin/$p $h 2>&1); rc=$?
		[ $rc -eq 0 ] && [ "${out#*usage}" != "$out" ] && ok "$p $h: usage, exit 0" || nok "$p $h: exit $rc"
	done
	out=$(build/bin/$p -V 2>&1); rc=$?
	[ $rc -eq 0 ] && [ -n "$out" ] && ok "$p -V: $out" || nok "$p -V: exit $rc ($out)"
done
for p in topod topo-snap topo-collect topoquery topo-routeopt; do
	out=$(build/bin/$p -V); [ "${out%% (*}" = "$p $V" ] && ok "$p -V says $V" || nok "$p -V: '$out', VERSION $V"
done

Q=build/bin/topoquery
out=$($Q hops --help); rc=$?
n=$(echo "$out" | wc -l)
[ $rc -eq 0 ] && [ "$n" -le 8 ] && echo "$out" | grep -q '^  hops A B' && ok "topoquery hops --help: its own $n lines" ||
	nok "topoquery hops --help: exit $rc, $n lines"
[ "$($Q help hops)" = "$out" ] && ok "topoquery help hops says the same" || nok "topoquery help hops differs"
$Q help schedule | grep -q 'tacs1' && ok "topoquery help schedule: continuation lines included" || nok "help schedule"
$Q help >"$T/h" && cmp -s "$T/h" <($Q --help) && ok "topoquery help: the whole usage, exit 0" || nok "topoquery help"
missing=
for c in $(grep -o '{ "[a-z-]*", cmd_' clients/topoquery/main.c | sed 's/{ "\([a-z-]*\)".*/\1/'); do
	$Q help "$c" | grep -q "^  $c[ []" || missing="$missing $c"
done
[ -z "$missing" ] && ok "topoquery help COMMAND finds each command's lines" || nok "no help lines for:$missing"
err=$($Q hosp a b 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "did you mean 'hops'" && ok "topoquery hosp: exit 2, $(echo "$err" | head -1)" ||
	nok "topoquery hosp: exit $rc, $err"
err=$($Q help nosuchthing 2>&1); rc=$?
[ $rc -eq 2 ] && ! echo "$err" | grep -q "did you mean" && ok "topoquery help nosuchthing: exit 2, no wild guess" ||
	nok "help nosuchthing: exit $rc, $err"

printf 'histroy = 5\n' >"$T/topod.conf"
err=$(build/bin/topod -c "$T/topod.conf" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "unknown key 'histroy' (did you mean 'history'?)" &&
	[ "$(echo "$err" | wc -l)" -le 2 ] && ok "topod.conf typo: exit 2, named with a suggestion, no usage dump" ||
	nok "topod.conf typo: exit $rc, $(echo "$err" | head -3)"
exit $fail
