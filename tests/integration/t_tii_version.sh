#!/usr/bin/env bash
# libtii's one version number and its versioned symbols (docs/libtii.md,
# "Building and linking"; issue 38 item 4):
#   - VERSION, tii.h's API level, the library's file name, soname and
#     tii.pc say one number;
#   - every exported symbol carries the version node of the API level that
#     added it (objdump -T), the nodes TII_1.0 .. TII_1.MINOR chain in
#     order, and libtii/libtii.map and debian/libtii1.symbols agree symbol
#     by symbol with what the library exports;
#   - pkg-config --atleast-version=1.N tii succeeds for every level up to
#     the library's and fails above it;
#   - a program built against the unversioned libtii of 1.1.0 (its
#     references carry no version) still runs with the versioned one, all
#     symbols bound at start; one built now records the nodes it needs.
set -u
cd "$(dirname "$0")/../.." || exit 1
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
d=$(mktemp -d "${TMPDIR:-/tmp}/t_tii_version.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT

V=$(cat VERSION)
maj=$(sed -n 's/^#define TII_VERSION_MAJOR \([0-9]*\).*/\1/p' libtii/tii.h)
min=$(sed -n 's/^#define TII_VERSION_MINOR \([0-9]*\).*/\1/p' libtii/tii.h)
lib=build/lib/libtii.so.$V
[ "$V" = "$maj.$min.0" ] && ok "VERSION $V is tii.h's API level $maj.$min" ||
	nok "VERSION $V but tii.h says $maj.$min"
if [ -f "$lib" ] && objdump -p "$lib" | grep -q "SONAME *libtii.so.$maj$"; then
	ok "the library is libtii.so.$V, soname libtii.so.$maj"
else
	nok "no $lib with soname libtii.so.$maj"
fi
cl=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
[ "$cl" = "$V" ] && ok "debian/changelog's last entry is $V" || nok "debian/changelog is at '$cl', VERSION $V"
man_bad=$(grep -L "^\.TH .* \"topod $V\"" man/*.[0-9])
[ -z "$man_bad" ] && ok "every man page's header says topod $V" || nok "man pages of another version: $man_bad"

# what the library exports, each with its node
objdump -T "$lib" | awk '$NF ~ /^tii_/ && $4 != "*UND*" { print $NF "@" $(NF-1) }' | sort >"$d/exported"
n=$(wc -l <"$d/exported")
unv=$(grep -vc "@TII_$maj\.[0-9]*$" "$d/exported")
[ "$n" -gt 70 ] && [ "$unv" -eq 0 ] && ok "objdump -T: all $n tii_* symbols are versioned (TII_$maj.N)" ||
	{ nok "$unv of $n symbols without a TII_ node"; grep -v "@TII_" "$d/exported" | head -3 | sed 's/^/# /'; }
objdump -p "$lib" | sed -n '/^Version definitions:/,/^$/p' >"$d/defs"
chain=ok
for l in $(seq 0 "$min"); do
	grep -q " TII_$maj\.$l$" "$d/defs" || chain="TII_$maj.$l missing"
	[ "$l" -gt 0 ] && ! grep -A1 " TII_$maj\.$l$" "$d/defs" | grep -q "^[[:space:]]*TII_$maj\.$((l - 1))[[:space:]]*$" &&
		chain="TII_$maj.$l does not inherit TII_$maj.$((l - 1))"
done
grep -q " TII_$maj\.$((min + 1))$" "$d/defs" && chain="a node above the API level"
[ "$chain" = ok ] && ok "version nodes TII_$maj.0 .. TII_$maj.$min, each inheriting the one before" || nok "nodes: $chain"

# libtii.map and the Debian symbols file say the same, symbol by symbol
python3 - "$d" <<'PY' >"$d/map"
import re, sys
m = re.sub(r"/\*.*?\*/", "", open("libtii/libtii.map").read(), flags=re.S)
for node, body in re.findall(r"(TII_\d+\.\d+)\s*\{(.*?)\}", m, flags=re.S):
    for s in re.findall(r"([A-Za-z_0-9]+)\s*;", body.split("local:")[0].replace("global:", "")):
        print("%s@%s" % (s, node))
PY
sort -o "$d/map" "$d/map"
sed -n 's/^ \(tii_[a-z0-9_]*@TII_[0-9.]*\) [0-9.]*$/\1/p' debian/libtii1.symbols | sort >"$d/deb"
if cmp -s "$d/exported" "$d/map" && cmp -s "$d/exported" "$d/deb"; then
	ok "libtii/libtii.map and debian/libtii1.symbols list exactly the $n exported symbols, each in its node"
else
	nok "exported, libtii.map and libtii1.symbols differ"
	diff "$d/exported" "$d/map" | head -4 | sed 's/^/# map: /'
	diff "$d/exported" "$d/deb" | head -4 | sed 's/^/# deb: /'
fi
nodes_deb=$(grep -c "^ TII_$maj\.[0-9]*@TII_$maj\.[0-9]* " debian/libtii1.symbols)
[ "$nodes_deb" -eq $((min + 1)) ] && ok "debian/libtii1.symbols names every node" || nok "debian/libtii1.symbols names $nodes_deb nodes"

# pkg-config, from the build tree
export PKG_CONFIG_PATH=$PWD/build/lib/pkgconfig
mv=$(pkg-config --modversion tii 2>&1)
okl=0
for l in $(seq 0 "$min"); do pkg-config --atleast-version="$maj.$l" tii && okl=$((okl + 1)); done
if [ "$mv" = "$V" ] && [ "$okl" -eq $((min + 1)) ] && ! pkg-config --atleast-version="$maj.$((min + 1))" tii; then
	ok "pkg-config: tii $mv; --atleast-version=$maj.0 .. $maj.$min succeed, $maj.$((min + 1)) fails"
else
	nok "pkg-config: modversion '$mv', $okl of $((min + 1)) levels, or $maj.$((min + 1)) accepted"
fi

# An old program: built against an unversioned libtii.so.1 (as 1.1.0 was
# linked: the same objects, no version script), run with the new one.
mkdir -p "$d/old"
if cc -shared -pthread -Wl,-soname,libtii.so.$maj -o "$d/old/libtii.so.$maj" build/obj/pic/libtii/*.o &&
	ln -s "libtii.so.$maj" "$d/old/libtii.so" &&
	cc -std=c11 -Wall -Wextra -Werror -Ilibtii -Icommon -o "$d/oldprog" tests/integration/t_tii_version_old.c \
		-L"$d/old" -ltii 2>"$d/cc.err"; then
	if readelf -V "$d/oldprog" | grep -q "TII_"; then
		nok "the old program's references carry versions: not an old build"
	else
		ok "a program of API level 1.4 built against an unversioned libtii (no TII_ version needed)"
	fi
	out=$(LD_BIND_NOW=1 LD_LIBRARY_PATH=$PWD/build/lib "$d/oldprog" 2>&1)
	if [ "$out" = "old program: ok" ] && LD_LIBRARY_PATH=$PWD/build/lib ldd "$d/oldprog" | grep -q "$PWD/build/lib/libtii.so.$maj"; then
		ok "it runs with the versioned libtii.so.$V, every symbol bound at start: $out"
	else
		nok "the old program with the new library: $out"
	fi
	# built now: its references name the nodes
	if cc -std=c11 -Wall -Wextra -Werror -Ilibtii -Icommon -o "$d/newprog" tests/integration/t_tii_version_old.c \
		-Lbuild/lib -ltii && readelf -V "$d/newprog" | grep -q "Name: TII_$maj.4" &&
		readelf -V "$d/newprog" | grep -q "Name: TII_$maj.0" && [ "$(LD_LIBRARY_PATH=$PWD/build/lib "$d/newprog")" = "old program: ok" ]; then
		ok "built now, it records the nodes it uses (TII_$maj.0, TII_$maj.4) and runs"
	else
		nok "a program built now: $(readelf -V "$d/newprog" 2>&1 | grep -o 'TII_[0-9.]*' | sort -u | tr '\n' ' ')"
	fi
else
	nok "building the unversioned library or the old program"
	sed 's/^/# /' "$d/cc.err" | head -3
fi
[ "$failed" -eq 0 ]
