#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_devpath_lab.sh - the MPI developer's path runs as written (issue 36):
# the blocks of docs/collectives.md ("Trying it on one machine") and
# docs/libtii.md ("From the build tree") marked `<!-- devpath:NAME -->`,
# taken from the docs and run by bash exactly as they stand, against a lab
# started by the docs' own block (`make lab`, default fabric):
#   - lab:       make lab, in the background as in a first terminal;
#   - recipe:    build bcast.c, run it under mpirun with libtopocoll: the
#                program's line "correct", and the library's lines
#                (leaves and delays from topod, the bcast's choice) are
#                the documented output (devpath:output), line for line;
#   - mpich:     the same under MPICH: "correct" and the documented 64 KiB choice;
#   - pkgconfig: hops.c built with the build tree's tii-uninstalled.pc
#                three ways; all three answer from the lab, hops links the
#                tree's libtii.so.1 (rpath), hops-static and hops-a have
#                libtii.a inside (nm: tii_open defined) and need no
#                libtii.so (readelf: no such NEEDED);
# and, beside the docs, each MPI's libtopocoll (and libtopocollprof)
# preloaded into the other MPI's program stops it with exit status != 0
# and exactly one line naming the right build by its path, the format
# docs/collectives.md shows. Then make lab-stop, and nothing of the lab
# left. A block that fails, or whose outcome differs, fails the test.
#
# Run as root here: Open MPI's mpirun then needs OMPI_ALLOW_RUN_AS_ROOT
# (the environment, not the commands: a user's laptop needs neither).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
T=$(mktemp -d)
export LAB_PIDFILE=$T/lab.pid TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TII_SERVERS TII_HOST TII_HOSTMAP PKG_CONFIG_PATH
fail=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
note() { sed 's/^/# /' | head -"${1:-8}"; }

MK= LAB_PIDS=
cleanup() { # everything this test started, by PID, also when it failed
	local p
	[ -f "$LAB_PIDFILE" ] && make -s lab-stop >/dev/null 2>&1
	for p in $LAB_PIDS $MK; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in $LAB_PIDS $MK; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

for t in mpicc mpirun mpicc.mpich mpiexec.mpich pkg-config cc nm readelf ldd; do
	command -v "$t" >/dev/null || { nok "$t is not installed (make deps)"; exit 1; }
done
for f in build/lib/libtopocoll.so build/lib/mpich/libtopocoll.so build/lib/pkgconfig/tii-uninstalled.pc build/bin/topod; do
	[ -e "$f" ] || { nok "$f: run make first"; exit 1; }
done

# block FILE NAME: the fenced block after the line <!-- devpath:NAME -->
block() {
	awk -v tag="<!-- devpath:$2 -->" '
		$0 == tag { m = 1; next }
		m == 1 && /^```/ { m = 2; next }
		m == 2 && /^```/ { exit }
		m == 2 { print }' "$1"
}
for b in docs/collectives.md:lab docs/collectives.md:recipe docs/collectives.md:output docs/collectives.md:mpich \
	docs/libtii.md:pkgconfig; do
	block "${b%%:*}" "${b#*:}" >"$T/${b#*:}.sh"
	[ -s "$T/${b#*:}.sh" ] && ok "${b%%:*} has the block devpath:${b#*:} ($(wc -l <"$T/${b#*:}.sh") lines)" ||
		{ nok "${b%%:*}: no block marked <!-- devpath:${b#*:} -->"; exit 1; }
done

# ---- the first terminal: make lab, as the docs write it ----
bash "$T/lab.sh" >"$T/lab.out" 2>&1 </dev/null &
MK=$!
for _ in $(seq 900); do
	grep -q '^Stop it' "$T/lab.out" 2>/dev/null && break
	kill -0 "$MK" 2>/dev/null || break
	sleep 0.2
done
if ! grep -q '^Stop it' "$T/lab.out"; then
	nok "the lab block ($(cat "$T/lab.sh")) did not bring a lab up"
	tail -5 "$T/lab.out" | note
	exit 1
fi
read -r kpid ldir _ <"$LAB_PIDFILE"
LAB_PIDS="$kpid $(cat "$ldir/pids" 2>/dev/null)"
ok "$(cat "$T/lab.sh"): $(grep -m1 '^lab ready' "$T/lab.out")"

# ---- the second terminal: the recipe, then the MPICH block in the same shell ----
{
	cat "$T/recipe.sh"
	echo "echo \"\$PWD\" >'$T/work.dir'"
	echo "exec >'$T/mpich.out' 2>'$T/mpich.err'"
	cat "$T/mpich.sh"
} >"$T/session.sh"
timeout 600 bash "$T/session.sh" >"$T/recipe.out" 2>"$T/recipe.err" </dev/null
rc=$?
W=$(cat "$T/work.dir" 2>/dev/null)

# The program's own line, from rank 0.
grep -qx 'bcast of 8 bytes on 4 ranks: correct' "$T/recipe.out" &&
	grep -qx 'bcast of 65536 bytes on 4 ranks: correct' "$T/recipe.out" &&
	ok "recipe: the program under libtopocoll says: $(tr '\n' ';' <"$T/recipe.out")" ||
	{ nok "recipe: no 'bcast of 8|65536 bytes on 4 ranks: correct' (session exit $rc)"; cat "$T/recipe.out" "$T/recipe.err" | note 15; }
# The library's lines: where the leaves came from, what the bcast ran.
grep -q "^topocoll: leaf switches known from topod; delays: topod's routes and rates (4 hosts)$" "$T/recipe.err" &&
	ok "recipe: libtopocoll learnt the leaves and delays from the lab's topod" ||
	{ nok "recipe: no 'leaf switches known from topod' line"; note <"$T/recipe.err"; }
for b in 8 65536; do
	choice=$(grep "^topocoll: bcast on a communicator of 4 ranks (2 leaves): .*: $b bytes: predicted " "$T/recipe.err")
	[ "$(echo "$choice" | grep -c .)" = 1 ] && ok "recipe: its choice at $b bytes: ${choice#topocoll: }" ||
		nok "recipe: not one bcast choice line for $b bytes: '$choice'"
done
# The documented output, line for line (the docs show stdout and stderr as a terminal would).
sort "$T/output.sh" >"$T/doc.lines"
grep -h -e '^topocoll: ' -e '^bcast of ' "$T/recipe.err" "$T/recipe.out" | sort >"$T/run.lines"
if [ -s "$T/run.lines" ] && cmp -s "$T/doc.lines" "$T/run.lines"; then
	ok "recipe: its output is the documented one ($(wc -l <"$T/doc.lines") lines)"
else
	nok "recipe: its output differs from docs/collectives.md's (< docs, > run)"
	diff "$T/doc.lines" "$T/run.lines" | note 10
fi
grep -v -e '^topocoll: ' "$T/recipe.err" | grep -q . &&
	{ nok "recipe: other lines on stderr"; grep -v '^topocoll: ' "$T/recipe.err" | note; }

# The MPICH block.
grep -qx 'bcast of 8 bytes on 4 ranks: correct' "$T/mpich.out" &&
	grep -qx 'bcast of 65536 bytes on 4 ranks: correct' "$T/mpich.out" &&
	grep -q "^topocoll: bcast on a communicator of 4 ranks (2 leaves): a chain in the fabric's order, 16384-byte segments synchronous: 65536 bytes: predicted 34.2 us the MPI's own, 29.6 us .* (1.15x)$" "$T/mpich.err" &&
	ok "mpich: correct, 64 KiB by the chain against MPICH's own as documented: $(grep '^topocoll: bcast' "$T/mpich.err" | tail -1)" ||
	{ nok "mpich: the MPICH block did not run as documented"; cat "$T/mpich.out" "$T/mpich.err" | note 12; }

# ---- the wrong build: one line naming the right one, then exit != 0 ----
# wrong LABEL EXPECTED-LINE COMMAND...: run it in the recipe's folder.
wrong() {
	local label=$1 want=$2 rc=0
	shift 2
	(cd "$W" && timeout 120 "$@") >"$T/wrong.out" 2>"$T/wrong.err" </dev/null || rc=$?
	local lines
	lines=$(grep -c "is built for" "$T/wrong.err")
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$lines" = 1 ] && grep -qxF "$want" "$T/wrong.err" &&
		! grep -q '^bcast of' "$T/wrong.out"; then
		ok "$label: exit $rc, one line: $want"
	else
		nok "$label: exit $rc, $lines lines; wanted: $want"
		note <"$T/wrong.err"
	fi
}
if [ -n "$W" ] && [ -x "$W/bcast" ] && [ -x "$W/bcast.mpich" ]; then
	L=$ROOT/build/lib
	wrong "MPICH's libtopocoll under Open MPI" \
		"topocoll: $L/mpich/libtopocoll.so is built for MPICH, but the program runs Open MPI; preload the Open MPI build instead: $L/libtopocoll.so (docs/collectives.md)" \
		mpirun --oversubscribe -np 4 -x LD_PRELOAD="$L/mpich/libtopocoll.so" ./bcast
	wrong "Open MPI's libtopocoll under MPICH" \
		"topocoll: $L/libtopocoll.so is built for Open MPI, but the program runs MPICH; preload the MPICH build instead: $L/mpich/libtopocoll.so (docs/collectives.md)" \
		mpiexec.mpich -n 4 -genv LD_PRELOAD "$L/libtopocoll.so" ./bcast.mpich
	wrong "Open MPI's libtopocoll from openmpi/ under MPICH" \
		"topocoll: $L/openmpi/libtopocoll.so is built for Open MPI, but the program runs MPICH; preload the MPICH build instead: $L/mpich/libtopocoll.so (docs/collectives.md)" \
		mpiexec.mpich -n 2 -genv LD_PRELOAD "$L/openmpi/libtopocoll.so" ./bcast.mpich
	wrong "MPICH's libtopocollprof under Open MPI" \
		"topoprof: $L/mpich/libtopocollprof.so is built for MPICH, but the program runs Open MPI; preload the Open MPI build instead: $L/libtopocollprof.so (docs/profiler.md)" \
		mpirun --oversubscribe -np 2 -x LD_PRELOAD="$L/mpich/libtopocollprof.so" ./bcast
	# the documented line is this format, with the docs' example path
	doc=$(grep -m1 '^topocoll: .* is built for MPICH' docs/collectives.md)
	d=${doc#topocoll: }
	d=${d%%/build/lib/mpich/libtopocoll.so*}
	[ -n "$doc" ] && [ "${doc//$d/$ROOT}" = "topocoll: $L/mpich/libtopocoll.so is built for MPICH, but the program runs Open MPI; preload the Open MPI build instead: $L/libtopocoll.so (docs/collectives.md)" ] &&
		ok "docs/collectives.md shows the line as the library prints it" || nok "docs/collectives.md's line: '$doc'"
	# Without TII_HOSTMAP the ranks are this machine: the reason says what to set.
	(eval "$(make -s lab-env)" && cd "$W" && timeout 120 mpirun --oversubscribe -np 2 -x TII_SERVERS \
		-x TOPOCOLL_VERBOSE=1 -x LD_PRELOAD="$L/libtopocoll.so" ./bcast) >"$T/nomap.out" 2>"$T/nomap.err" </dev/null
	me=$(hostname -s)
	grep -qxF "$(grep -m1 "^topocoll: topod: no such host" docs/collectives.md | sed "s/'laptop'/'$me'/")" "$T/nomap.err" &&
		grep -qx 'bcast of 65536 bytes on 2 ranks: correct' "$T/nomap.out" &&
		ok "without TII_HOSTMAP: the MPI's own collectives, and $(grep -m1 '^topocoll:' "$T/nomap.err")" ||
		{ nok "without TII_HOSTMAP: no hint of TII_HOST/TII_HOSTMAP"; cat "$T/nomap.out" "$T/nomap.err" | note; }
else
	nok "the recipe's folder '$W' has no bcast and bcast.mpich: the wrong builds not tried"
fi

# ---- libtii.md: hops.c against the build tree's tii-uninstalled.pc ----
flags=$(PKG_CONFIG_PATH=build/lib/pkgconfig pkg-config --cflags --libs tii 2>&1)
case " $flags " in
*" -I$ROOT/libtii "*"-I$ROOT/common "*"-L$ROOT/build/lib "*"-ltii "*) ok "PKG_CONFIG_PATH=build/lib/pkgconfig pkg-config --cflags --libs tii: $flags" ;;
*) nok "pkg-config from the build tree: $flags" ;;
esac
timeout 300 bash "$T/pkgconfig.sh" >"$T/pc.out" 2>"$T/pc.err" </dev/null
rc=$?
P=$(ls -d "$TMPDIR"/tmp.* 2>/dev/null | while read -r d; do [ -e "$d/hops.c" ] && echo "$d"; done | head -1)
n=$(grep -c '^c401-101 -> c417-101: 5 switches (generation [0-9]*)$' "$T/pc.out")
g=$(grep -c '^generation [0-9]* (ftree, 128 hosts)$' "$T/pc.out")
[ "$rc" = 0 ] && [ "$n" = 3 ] && [ "$g" = 3 ] && ok "libtii.md's block: hops, hops-static and hops-a each answer from the lab" ||
	{ nok "libtii.md's block: exit $rc, $n hop lines, $g generation lines"; cat "$T/pc.out" "$T/pc.err" | note 15; }
grep -v -e "getaddrinfo" -e "^/usr/bin/ld: .*in function" "$T/pc.err" | grep -q . &&
	{ nok "libtii.md's block: unexpected stderr"; note <"$T/pc.err"; }
if [ -n "$P" ]; then
	grep -q "^	libtii.so.1 => $ROOT/build/lib/libtii.so.1 " "$T/pc.out" &&
		ok "its ldd: hops runs the tree's build/lib/libtii.so.1" || { nok "its ldd: hops is not linked to the tree's libtii"; note <"$T/pc.out"; }
	readelf -d "$P/hops" | grep -q "RUNPATH\|RPATH" && ok "hops has the rpath to build/lib" || nok "hops has no rpath"
	for b in hops-static hops-a; do
		need=$(readelf -d "$P/$b" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
		case " $need " in
		*libtii*) nok "$b needs libtii.so: $need" ;;
		*) nm "$P/$b" | grep -q ' T tii_open$' && ok "$b: libtii.a inside (nm: T tii_open), needs no libtii.so (NEEDED: ${need:-none})" ||
			nok "$b: no tii_open defined inside" ;;
		esac
	done
	readelf -d "$P/hops-static" 2>/dev/null | grep -q NEEDED && nok "hops-static is dynamic" ||
		ok "hops-static: no dynamic dependency at all"
else
	nok "libtii.md's block left no folder with hops.c"
fi

# ---- the lab stops, nothing of it left ----
out=$(make -s lab-stop 2>&1) && case $out in "lab "*" stopped") true ;; *) false ;; esac &&
	ok "make lab-stop: $out" || nok "make lab-stop: $out"
for _ in $(seq 100); do kill -0 "$MK" 2>/dev/null || break; sleep 0.1; done
left=
for p in $LAB_PIDS; do
	[ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && left="$left $p"
done
[ -z "$left" ] && [ ! -e "$ldir" ] && ok "nothing of the lab is left ($(echo $LAB_PIDS | wc -w) PIDs, its folder)" ||
	nok "left: processes$left, folder $([ -e "$ldir" ] && echo "$ldir")"
exit $fail
