#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_install.sh - `make install` into a temporary DESTDIR, then
# docs/admin-guide.md followed as a new administrator would, with only
# the installed files:
#   - every file is where the guide's "What goes where" table says, and
#     every installed file is in that table;
#   - the man pages render without warnings (man --warnings, groff -ww),
#     and man finds them by name under the installed MANPATH;
#   - the installed unit passes systemd-analyze verify (if available) and
#     starts topod the way this test does;
#   - the example topod.conf (paths moved into a temp dir) and the
#     opensm.conf lines agree on the ingest socket;
#   - on a simulated k=4 3-level fat tree: the installed topod, started with
#     the unit's ExecStart, and OpenSM loading the installed plugin
#     (LD_LIBRARY_PATH = the DESTDIR libdir, since DESTDIR is not on the
#     loader's path); the installed topoquery's info shows the generation the
#     plugin logged, and its hops equal ibtracert's switch count (and its
#     path ibtracert's switches) for pairs on one leaf, one pod and across
#     pods, with GUIDs from topod's resolve as the guide shows;
#   - the guide's example programs (docs/libtii.md, as installed) build with
#     cc/mpicc $(pkg-config --cflags --libs tii) against the DESTDIR
#     (PKG_CONFIG_SYSROOT_DIR) and answer correctly; the MPI one splits
#     ranks by leaf switch and by pod.
# Prints "ok - " / "not ok - " / "skip - " lines; cleans up on any exit.
# T_INSTALL_MAKEFILE=FILE runs `make -f FILE install` (to try a Makefile
# change before it lands).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
MAKEFILE=${T_INSTALL_MAKEFILE:-Makefile}
PREFIX=/usr/local
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "skip - $*"; }
check() { # CONDITION-STATUS WHAT
	if [ "$1" -eq 0 ]; then ok "$2"; else nok "$2"; fi
}

for t in make cc pkg-config man groff; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
MA=$(cc -print-multiarch 2>/dev/null)
[ -n "$MA" ] || MA=x86_64-linux-gnu

TMP=$(mktemp -d /tmp/t_install.XXXXXX) || exit 1
D=$TMP/destdir
TOPOD_PID=
cleanup() {
	if [ -n "$TOPOD_PID" ]; then
		kill -TERM "$TOPOD_PID" 2>/dev/null
		wait "$TOPOD_PID" 2>/dev/null
		TOPOD_PID=
	fi
	rm -rf "$TMP"
}
trap 'cleanup' EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

# ---- install ------------------------------------------------------------------
if ! make -s -f "$MAKEFILE" install DESTDIR="$D" PREFIX="$PREFIX" >"$TMP/make.log" 2>&1; then
	nok "make install DESTDIR=\$tmp PREFIX=$PREFIX"
	sed 's/^/# /' "$TMP/make.log" | tail -20
	exit 1
fi
ok "make install DESTDIR=\$tmp PREFIX=$PREFIX"
LIB=$D$PREFIX/lib/$MA
GUIDE=$D$PREFIX/share/doc/topod/admin-guide.md
LIBTII_MD=$D$PREFIX/share/doc/topod/libtii.md
[ -f "$GUIDE" ] || { nok "the admin guide is installed ($PREFIX/share/doc/topod/admin-guide.md)"; exit 1; }

# The guide's table of installed files, as the guide states it.
# (its first table: the one after it lists run-time paths)
awk '/^### What goes where/ { f = 1; next } f && /^\|/ { t = 1 } f && t && !/^\|/ { exit }
	f && /^\| `\// { print }' "$GUIDE" |
	sed -E 's/^\| `([^`]*)`.*/\1/; s/x86_64-linux-gnu/'"$MA"'/' | sort -u >"$TMP/guide.list"
(cd "$D" && find . \( -type f -o -type l \) | sed 's/^\.//' | sort -u) >"$TMP/installed.list"
n=$(wc -l <"$TMP/guide.list")
missing=$(comm -23 "$TMP/guide.list" "$TMP/installed.list")
extra=$(comm -13 "$TMP/guide.list" "$TMP/installed.list")
[ "$n" -ge 20 ] && [ -z "$missing" ]
check $? "all $n files of the guide's table are installed${missing:+ (missing: $(echo $missing))}"
[ -z "$extra" ]
check $? "every installed file is in the guide's table${extra:+ (not listed: $(echo $extra))}"
bad=
for f in sbin/topod sbin/topo-collect bin/topoquery bin/topo-snap; do
	[ -x "$D$PREFIX/$f" ] || bad="$bad $f"
done
[ -z "$bad" ]
check $? "programs are executable${bad:+ (not:$bad)}"
[ "$(readlink "$LIB/libtii.so")" = libtii.so.1 ] && [ "$(readlink "$LIB/libtii.so.1")" = "libtii.so.$(cat VERSION)" ]
check $? "libtii.so -> libtii.so.1 -> libtii.so.$(cat VERSION)"

# ---- man pages ------------------------------------------------------------------
MANROOT=$D$PREFIX/share/man
for page in topod.8 topod.conf.5 topoquery.1 tii.3 topo-collect.8 topo-snap.1 topoprof.7 topocoll.7; do
	f=$MANROOT/man${page##*.}/$page
	if [ ! -f "$f" ]; then
		nok "man page $page installed"
		continue
	fi
	w1=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	w2=$(groff -man -ww -z "$f" 2>&1)
	lines=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$f" 2>/dev/null | wc -l)
	[ -z "$w1$w2" ] && [ "$lines" -gt 20 ]
	check $? "man -l $page renders ($lines lines) without warnings${w1:+ (man: $w1)}${w2:+ (groff: $w2)}"
	name=${page%.*} sect=${page##*.}
	found=$(MANPATH=$MANROOT man -w "$sect" "$name" 2>/dev/null)
	[ "$found" = "$f" ]
	check $? "MANPATH=\$prefix/share/man man -w $sect $name finds the installed page"
done

# ---- the unit, the config, the opensm.conf lines -------------------------------------------
UNIT=$D$PREFIX/lib/systemd/system/topod.service
CONF=$D/etc/topod/topod.conf
SNIPPET=$D$PREFIX/share/doc/topod/examples/opensm-osmtopo.conf
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT" 2>/dev/null)
case "$EXEC" in
"$PREFIX/sbin/topod "*"--foreground"*"--config /etc/topod/topod.conf"*) ok "unit: ExecStart=$EXEC" ;;
*) nok "unit: ExecStart runs $PREFIX/sbin/topod --foreground --config /etc/topod/topod.conf (got '$EXEC')" ;;
esac
grep -qx 'Type=notify' "$UNIT" && grep -qx 'Restart=on-failure' "$UNIT" &&
	grep -qx 'RuntimeDirectory=topod' "$UNIT" && grep -qx 'StateDirectory=topod' "$UNIT"
check $? "unit: Type=notify, Restart=on-failure, RuntimeDirectory=topod, StateDirectory=topod"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify wants the ExecStart binary and the Documentation= pages to
	# exist on this system: point both into DESTDIR.
	mkdir -p "$TMP/unit"
	sed "s|^ExecStart=$PREFIX/|ExecStart=$D$PREFIX/|" "$UNIT" >"$TMP/unit/topod.service"
	out=$(MANPATH=$MANROOT systemd-analyze verify "$TMP/unit/topod.service" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && [ -z "$out" ]
	check $? "systemd-analyze verify topod.service: no error, no warning${out:+ ($(echo $out | cut -c1-300))}"
else
	skip "systemd-analyze not installed"
fi
ingest=$(sed -n 's/^ingest *= *unix://p' "$CONF" | head -1)
sink=$(sed -n 's/^event_plugin_options .*sink=unix:\([^ ]*\).*/\1/p' "$SNIPPET")
[ -n "$ingest" ] && [ "$ingest" = "$sink" ] && grep -qx 'event_plugin_name osmtopo' "$SNIPPET"
check $? "topod.conf's ingest ($ingest) is the sink of the opensm.conf lines ($sink)"

# ---- libtii through pkg-config -----------------------------------------------------------
# PKG_CONFIG_LIBDIR: only the DESTDIR's tii.pc, never one installed for real.
pc() { PKG_CONFIG_LIBDIR=$LIB/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D pkg-config "$@"; }
flags=$(pc --cflags --libs tii 2>&1)
case " $flags " in
*" -I$D$PREFIX/include "*"-L$LIB "*"-ltii "*) ok "pkg-config --cflags --libs tii: $flags" ;;
*) nok "pkg-config --cflags --libs tii gives DESTDIR's -I and -L (got: $flags)" ;;
esac
# A code block of the installed libtii.md whose first line starts with $2.
extract() {
	awk -v want="$2" '
		/^```c$/ { inb = 1; first = 1; buf = ""; next }
		inb && /^```$/ { if (keep) printf "%s", buf; inb = 0; keep = 0; next }
		inb { if (first) { keep = index($0, want) == 1; first = 0 } buf = buf $0 "\n" }
	' "$1"
}
extract "$LIBTII_MD" "/* hops.c" >"$TMP/hops.c"
if [ -s "$TMP/hops.c" ] &&
	cc -Wall -Wextra -Werror -o "$TMP/hops" "$TMP/hops.c" $(pc --cflags --libs tii) 2>"$TMP/cc.log"; then
	ok "libtii.md's hops.c builds: cc -Wall -Wextra -Werror hops.c \$(pkg-config --cflags --libs tii)"
	LD_LIBRARY_PATH=$LIB ldd "$TMP/hops" | grep -q "libtii.so.1 => $LIB/libtii.so.1"
	check $? "hops links the installed libtii.so.1"
else
	nok "libtii.md's hops.c builds with pkg-config's flags"
	sed 's/^/# /' "$TMP/cc.log" | head -10
fi

# ---- the lab: OpenSM with the installed plugin, the installed topod ------------------------
for t in ibsim opensm ibtracert python3 nc; do
	command -v "$t" >/dev/null 2>&1 || {
		skip "$t not installed: no lab part (make deps)"
		[ "$failed" -eq 0 ]
		exit
	}
done
. tests/lab/lab.sh
export LAB_QUIET=1
lab_user_cleanup() { cleanup; }  # lab_init replaces our EXIT/INT/TERM traps
lab_init || { nok "lab_init"; exit 1; }
L=$LAB_DIR
python3 tests/lab/fabgen.py fattree --k 4 --levels 3 -o "$L/f.net" --meta "$L/f.json" \
	--root-guid-file "$L/roots" >/dev/null 2>&1 || { nok "fabgen fattree --k 4 --levels 3"; exit 1; }
lab_start_ibsim "$L/f.net" || { nok "ibsim"; exit 1; }

# topod.conf with the paths of a temp dir, as an administrator would adapt it.
mkdir -p "$L/run" "$L/state"
sed -e "s|/run/topod/|$L/run/|g" -e "s|/var/lib/topod|$L/state|g" \
	-e 's|^listen *=.*|listen = 127.0.0.1:0|' "$CONF" >"$L/topod.conf"
# The unit's command line, with the installed binary and that config.
read -r -a cmd <<<"$EXEC"
cmd[0]=$D${cmd[0]}
cmd=("${cmd[@]/\/etc\/topod\/topod.conf/$L/topod.conf}")
"${cmd[@]}" >"$L/topod.out" 2>"$L/topod.log" &
TOPOD_PID=$!
lab__own "$TOPOD_PID"
port=
for _ in $(seq 100); do
	port=$(sed -n 's/^ready port=//p' "$L/topod.out")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ]
check $? "installed topod starts as the unit starts it (${cmd[*]/#$D/\$DESTDIR})"
[ -n "$port" ] || { sed 's/^/# /' "$L/topod.log"; exit 1; }
[ -S "$L/run/ingest.sock" ] && [ "$(stat -c %a "$L/run/ingest.sock")" = 660 ] &&
	[ -S "$L/run/admin.sock" ] && [ "$(stat -c %a "$L/run/admin.sock")" = 600 ]
check $? "ingest socket 0660 and admin socket 0600 where topod.conf puts them"

TQ=$D$PREFIX/bin/topoquery
S=127.0.0.1:$port
"$TQ" -s "$S" info >/dev/null 2>"$L/noinfo.err"
irc=$?
"$TQ" -s "$S" hops c401-101 c401-102 >/dev/null 2>"$L/nofabric.err"
rc=$?
[ $irc -eq 4 ] && grep -q 'no fabric yet' "$L/noinfo.err" && [ $rc -eq 4 ] && grep -q 'no fabric yet' "$L/nofabric.err"
check $? "before OpenSM: info and hops say no fabric yet (exit 4: no server can answer yet; info $irc, hops $rc)"

# OpenSM with the installed opensm.conf lines and plugin.
mapfile -t osm_lines < <(grep -v '^[[:space:]]*#' "$SNIPPET" | grep . | sed "s|/run/topod/|$L/run/|g")
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! lab_start_opensm ftree "root_guid_file $L/roots" "${osm_lines[@]}"; then
	nok "OpenSM starts with: ${osm_lines[*]}"
	exit 1
fi
ok "OpenSM runs with: ${osm_lines[*]}"
lab_osm_check_engine ftree
check $? "OpenSM routed with ftree"
grep -q " $LIB/libosmtopo.so\$" "/proc/$LAB_OSM_PID/maps" 2>/dev/null
check $? "OpenSM loaded the installed plugin (\$DESTDIR$PREFIX/lib/$MA/libosmtopo.so)"
lab_wait_osm_log 'osmtopo: generation [0-9]+' 30 >/dev/null 2>&1
gen=$(grep -a -o 'osmtopo: generation [0-9]*' "$LAB_OSM_LOG" | tail -1 | awk '{print $3}')
[ -n "$gen" ]
check $? "the plugin logged a snapshot (generation ${gen:-none})"

# topoquery info shows that generation (the plugin may have routed again
# meanwhile: compare with its latest line each time).
info=
for _ in $(seq 150); do
	gen=$(grep -a -o 'osmtopo: generation [0-9]*' "$LAB_OSM_LOG" | tail -1 | awk '{print $3}')
	info=$("$TQ" -s "$S" info 2>/dev/null)
	[ -n "$gen" ] && [ "$(sed -n 's/^generation //p' <<<"$info")" = "$gen" ] && break
	sleep 0.1
done
v() { sed -n "s/^$1 //p" <<<"$info"; }
[ -n "$gen" ] && [ "$(v generation)" = "$gen" ]
check $? "topoquery info: generation $(v generation) = the plugin's $gen"
[ "$(v hosts)" = 16 ] && [ "$(v switches)" = 20 ] && [ "$(v cas)" = 16 ] && [ "$(v depth)" = 3 ] &&
	[ "$(v engine)" = ftree ] && [ "$(v source)" = "ingest unix" ]
check $? "topoquery info: 16 hosts, 20 switches, depth 3, ftree, from ingest unix"
grep -q "serving generation $gen from ingest unix" "$L/topod.log"
check $? "topod logged: serving generation $gen from ingest unix"
[ -s "$L/state/fabric.snap" ]
check $? "the snapshot is saved in state-dir/fabric.snap"

# hops against ibtracert, GUIDs from topod's resolve (the guide's recipe).
resolve() { printf 'resolve %s\n' "$1" | nc -q 1 127.0.0.1 "$port" | sed -n 's/.* guid=\(0x[0-9a-f]*\) .*/\1/p'; }
meta_guid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][sys.argv[2]][0]["port_guid"])' "$L/f.json" "$1"; }
# pair, hops on a k=4 3-level fat tree (racks c401+c402 form a pod)
for pair in "c401-101 c401-102 1" "c401-101 c402-102 3" "c401-101 c403-101 5" "c408-102 c401-101 5"; do
	set -- $pair
	a=$1 b=$2 want=$3
	ga=$(resolve "$a") gb=$(resolve "$b")
	if [ -z "$ga" ] || [ "$ga" != "$(meta_guid "$a")" ] || [ "$gb" != "$(meta_guid "$b")" ]; then
		nok "resolve $a / $b gives their port GUIDs ($ga $gb)"
		continue
	fi
	mine=$("$TQ" -s "$S" hops "$a" "$b" 2>&1)
	trace=$(lab_umad ibtracert -G "$ga" "$gb" 2>/dev/null)
	theirs=$(grep -c -- '-> switch port' <<<"$trace")
	[ "$mine" = "$theirs" ] && [ "$mine" = "$want" ]
	check $? "topoquery hops $a $b = $mine, ibtracert -G: $theirs switches (want $want)"
	p1=$("$TQ" -s "$S" path "$a" "$b" 2>/dev/null | awk 'NR > 1 { print $1 }' | tr '\n' ' ')
	p2=$(grep -o -- '-> switch port {0x[0-9a-f]*}' <<<"$trace" | grep -o '0x[0-9a-f]*' | tr '\n' ' ')
	[ -n "$p1" ] && [ "$p1" = "$p2" ]
	check $? "topoquery path $a $b: the switches ibtracert reads, in order"
done

# The guide's first program against this topod.
if [ -x "$TMP/hops" ]; then
	out=$(TII_SERVERS=$S LD_LIBRARY_PATH=$LIB "$TMP/hops" c401-101 c403-101 2>&1)
	rc=$?
	[ $rc -eq 0 ] && grep -q "^generation $gen (ftree, 16 hosts)" <<<"$out" &&
		grep -q "^c401-101 -> c403-101: 5 switches (generation $gen)" <<<"$out"
	check $? "hops.c: generation $gen, 5 switches${out:+ ($(echo $out))}"
	out=$(TII_SERVERS=$S LD_LIBRARY_PATH=$LIB "$TMP/hops" c401-101 nosuchhost 2>&1)
	rc=$?
	[ $rc -eq 1 ] && grep -q "no such host" <<<"$out"
	check $? "hops.c: an unknown host is exit 1, \"$out\""
fi

# The MPI example: ranks claim hosts; colours must follow leaf switches,
# then pods.
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
	extract "$LIBTII_MD" "/* leafsplit.c" >"$TMP/leafsplit.c"
	if [ -s "$TMP/leafsplit.c" ] && mpicc -Wall -Wextra -Werror -o "$TMP/leafsplit" "$TMP/leafsplit.c" \
		$(pc --cflags --libs tii) 2>"$TMP/mpicc.log"; then
		ok "libtii.md's leafsplit.c builds with mpicc \$(pkg-config --cflags --libs tii)"
		printf '%s\n' c401-101 c401-102 c402-101 c402-102 c403-101 c405-101 c407-101 c407-102 >"$TMP/hosts"
		for level in -1 -2; do
			out=$(cd "$TMP" && TII_SERVERS=$S timeout 120 mpirun --allow-run-as-root --oversubscribe -np 8 \
				-x TII_SERVERS -x LD_LIBRARY_PATH=$LIB \
				sh -c 'LEAFSPLIT_HOST=$(sed -n "$((OMPI_COMM_WORLD_RANK + 1))p" hosts) exec ./leafsplit '"$level" 2>&1)
			OUT=$out python3 - "$level" "$gen" "$L/f.json" <<'EOF'
import json, os, re, sys
level, gen, meta = int(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
out = os.environ["OUT"]
rows = re.findall(r"rank (\d+) host (\S+) level (\d+) color (\d+) of (\d+): rank (\d+) of (\d+)"
                  r" in its communicator \(generation (\d+)\)", out)
leaf = {h: meta["hosts"][h][0]["switch"] for h in meta["hosts"]}
pod = {h: [s for s in meta["switches"] if s["node"] == leaf[h]][0]["coords"][0] for h in leaf}
group = leaf if level == -1 else pod
want_level = 2 if level == -1 else 1
ok = len(rows) == 8
for rank, host, lvl, color, n, sub, subn, g in rows:
    same_color = sorted(x[1] for x in rows if x[3] == color)
    same_group = sorted(x[1] for x in rows if group[x[1]] == group[host])
    ok = ok and int(lvl) == want_level and g == gen and same_color == same_group \
        and int(subn) == len(same_group) and int(n) == len({group[x[1]] for x in rows})
print("%s - mpirun -np 8 leafsplit %d: colours = %s (level %d), communicator sizes match%s" % (
    "ok" if ok else "not ok", level, "leaf switches" if level == -1 else "pods", want_level,
    "" if ok else " (got: %s)" % out.strip().replace("\n", " | ")[:600]))
sys.exit(0 if ok else 1)
EOF
			[ $? -eq 0 ] || failed=$((failed + 1))
		done
	else
		nok "libtii.md's leafsplit.c builds with mpicc"
		sed 's/^/# /' "$TMP/mpicc.log" | head -10
	fi
else
	skip "mpicc/mpirun not installed: the MPI example is not run"
fi

# SIGTERM stops the installed topod cleanly (systemd's stop) and removes its sockets.
kill -TERM "$TOPOD_PID"
wait "$TOPOD_PID"
rc=$?
TOPOD_PID=
[ $rc -eq 0 ] && [ ! -e "$L/run/ingest.sock" ] && [ ! -e "$L/run/admin.sock" ]
check $? "SIGTERM: topod exits 0 and removes its sockets (status $rc)"

[ "$failed" -eq 0 ]
