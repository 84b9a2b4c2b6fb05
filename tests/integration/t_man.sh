#!/usr/bin/env bash
# t_man.sh - the man pages render without a warning (man --warnings, as a
# packager's lintian would check), and every topoquery command has its own
# item (.TP) in topoquery(1)'s COMMANDS, so none renders inside another's.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
command -v man >/dev/null || { echo "skip - man is not installed"; exit 0; }
for m in man/*.[1-8]; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
	[ -z "$w" ] && ok "$m renders without warnings" || nok "$m: $(echo "$w" | head -3)"
done
# The commands topoquery dispatches (its table), each an item of COMMANDS:
# the line after a .TP names it.
cmds=$(grep -o '{ "[a-z-]*", cmd_' clients/topoquery/main.c | sed 's/{ "\([a-z-]*\)".*/\1/')
items=$(awk '/^\.SH COMMANDS/{c=1; next} /^\.SH/{c=0} c && prev==".TP" {print $2} {prev=$0}' man/topoquery.1 |
	tr -d '"')
missing=
for c in $cmds; do
	echo "$items" | grep -qx -- "$c" || missing="$missing $c"
done
[ -z "$missing" ] && ok "topoquery(1): each of the $(echo $cmds | wc -w) commands is an item of its own" ||
	nok "topoquery(1): commands without a .TP item of their own:$missing"
exit $fail
