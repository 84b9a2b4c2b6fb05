#!/usr/bin/env bash
# t_versions.sh - one version everywhere (VERSION): every program's -V, every
# man page's header, the pkg-config file; and a private PREFIX stays private.
set -u
cd "$(dirname "$0")/../.." || exit 1
V=$(cat VERSION)
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }

for p in "build/bin/topod --version" "build/bin/topo-snap -V" "build/bin/topo-snap --version"; do
	out=$($p 2>&1); rc=$?
	case "$out" in
	*" $V") [ $rc -eq 0 ] && ok "$p: $out" || nok "$p exits $rc" ;;
	*) nok "$p prints '$out', not ... $V" ;;
	esac
done
out=$(build/bin/topo-snap --help 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ "${out#usage: }" != "$out" ] && ok "topo-snap --help: usage on stdout, exit 0" \
	|| nok "topo-snap --help: exit $rc, stdout '${out:0:40}'"
build/bin/topo-snap >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "topo-snap without arguments: exit 2 (usage)" || nok "topo-snap without arguments exits $rc"

bad=$(for m in man/*.[1-8]; do head -1 "$m" | grep -q "\"topod $V\"" || echo "$m: $(head -1 "$m")"; done)
[ -z "$bad" ] && ok "every man page says topod $V" || nok "man pages with another version: $bad"

# A private PREFIX: nothing outside it (no /etc/topod, no ldconfig).
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
before=$(stat -c %Y /etc/ld.so.cache 2>/dev/null || echo none)
etc_before=$(ls -d /etc/topod 2>/dev/null)
if make -s install PREFIX="$T/p" >"$T/log" 2>&1; then
	[ -f "$T/p/etc/topod/topod.conf" ] && ok "make install PREFIX=DIR puts topod.conf in DIR/etc/topod" \
		|| nok "make install PREFIX=DIR: no DIR/etc/topod/topod.conf"
	after=$(stat -c %Y /etc/ld.so.cache 2>/dev/null || echo none)
	[ "$before" = "$after" ] && ok "make install PREFIX=DIR leaves ld.so.cache alone" \
		|| nok "make install PREFIX=DIR ran ldconfig"
	[ "$(ls -d /etc/topod 2>/dev/null)" = "$etc_before" ] && ok "make install PREFIX=DIR creates no /etc/topod" \
		|| nok "make install PREFIX=DIR created /etc/topod"
	grep -q "example.invalid" "$T"/p/lib/*/pkgconfig/tii.pc && nok "tii.pc has a placeholder URL" \
		|| ok "tii.pc has no placeholder URL"
	grep -q "^Version: $V$" "$T"/p/lib/*/pkgconfig/tii.pc && ok "tii.pc: Version $V" || nok "tii.pc version"
else
	nok "make install PREFIX=$T/p failed: $(tail -3 "$T/log")"
fi
exit $fail
