#!/usr/bin/env bash
# t_pictures.sh - topoquery's pictures at 128 hosts (k=8 fat tree) and
# 3,456 hosts (k=24), served by a real topod from bench_build's snapshots
# (no lab): tree -o, load --plot and schedule --plot render to SVG and PNG
# with graphviz / gnuplot exiting 0 and printing nothing (no warnings),
# within the stated bound (2,000 pt either side: SVG width/height; PNG at
# graphviz's 96 dpi 2,667 px), hosts in hierarchy order, and a missing
# tool named (exit 5, never a shell's "status 32512").
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.bash
Q=$PWD/build/bin/topoquery
for tool in dot gnuplot; do
	if ! command -v $tool >/dev/null; then
		echo "skip - pictures: $tool missing (graphviz, gnuplot)"
		exit 0
	fi
done
[ -x build/bench/bench_build ] || make -s build/bench/bench_build >/dev/null 2>&1 || { nok "bench_build"; exit 1; }
d=$(mktemp -d /tmp/t_pictures.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT

# start_topod K: a topod serving the k-ary fat tree; sets $port
start_topod() {
	build/bench/bench_build "$1" 64 "$d/k$1.snap" >/dev/null || return 1
	build/bin/topod -f -l 127.0.0.1:0 --load "$d/k$1.snap" >"$d/k$1.out" 2>"$d/k$1.log" &
	pids+=($!)
	for _ in $(seq 100); do
		port=$(sed -n 's/^ready port=//p' "$d/k$1.out")
		[ -n "$port" ] && return 0
		sleep 0.1
	done
	return 1
}

# size FILE: "W H" in points (SVG, units pt/px/none) or pixels (PNG header)
size() {
	case $1 in
	*.svg) python3 - "$1" <<'EOF' ;;
import re, sys
s = open(sys.argv[1]).read(4000)
m = re.search(r'<svg[^>]*?width="([0-9.]+)[a-z]*"[^>]*?height="([0-9.]+)[a-z]*"', s, re.S)
print("%d %d" % (float(m.group(1)), float(m.group(2))) if m else "0 0")
EOF
	*.png) python3 - "$1" <<'EOF' ;;
import struct, sys
h = open(sys.argv[1], "rb").read(24)
print("%d %d" % struct.unpack(">II", h[16:24]) if h[:8] == b"\x89PNG\r\n\x1a\n" else "0 0")
EOF
	esac
}

within() {   # FILE: both sides within the bound, neither empty
	local w h max=2000
	read -r w h < <(size "$1")
	case $1 in *.png) max=2667 ;; esac
	[ "$w" -gt 100 ] && [ "$h" -gt 100 ] && [ "$w" -le $max ] && [ "$h" -le $max ]
}

# in_order FILE: the first host (hNNNN, or a range's first) of each text
# element of the picture never goes down, and there are several
in_order() {
	python3 - "$1" <<'EOF'
import re, sys
s = open(sys.argv[1]).read()
order = []
for t in re.finditer(r'<text[^>]*>(.*?)</text>', s, re.S):
    m = re.search(r'h\[?(\d{4})', t.group(1))
    if m:
        order.append(int(m.group(1)))
sys.exit(0 if len(order) >= 8 and order == sorted(order) else 1)
EOF
}

# draw NAME CMD...: runs topoquery, wants exit 0 and nothing on stderr
draw() {
	local name=$1; shift
	if "$Q" -s "127.0.0.1:$port" "$@" >"$d/out" 2>"$d/err" && [ ! -s "$d/err" ]; then
		return 0
	fi
	echo "# $name: $(head -c 600 "$d/err")"
	return 1
}

for k in 8 24; do
	if ! start_topod $k; then
		nok "k=$k: topod serves the fat tree"
		continue
	fi
	n=$((k * k * k / 4))
	last=$(printf 'h%04d' $((n - 1)))
	ranks='h[0000-0127]'   # schedules: whole leaves (OPT wants a homogeneous job)
	[ $k = 24 ] && ranks='h[0000-0143]'
	for ext in svg png; do
		f=$d/tree$k.$ext
		check "k=$k ($n hosts): tree -o tree.$ext renders, graphviz silent" draw tree tree -o "$f"
		check "k=$k: tree.$ext within 2,000 pt ($(size "$f"))" within "$f"
		f=$d/load$k.$ext
		check "k=$k: load --plot load.$ext (alltoall on $n hosts) renders, gnuplot silent" \
			draw load load --plot "$f" alltoall "h[0000-${last#h}]"
		check "k=$k: load.$ext within 2,000 pt ($(size "$f"))" within "$f"
		f=$d/sched$k.$ext
		check "k=$k: schedule --plot sched.$ext ($ranks) renders, gnuplot silent" \
			draw schedule schedule --plot "$f" tacs1 "$ranks"
		check "k=$k: sched.$ext within 2,000 pt" within "$f"
	done
	check "k=$k: tree picture names hosts in hierarchy order" in_order "$d/tree$k.svg"
	check "k=$k: load picture labels hosts in hierarchy order" in_order "$d/load$k.svg"
	# the DOT text on its own through graphviz: no warnings either
	"$Q" -s "127.0.0.1:$port" tree --format dot >"$d/t.dot" 2>"$d/err"
	dot -Tsvg -o "$d/t2.svg" "$d/t.dot" 2>>"$d/err"
	check "k=$k: tree --format dot | dot -Tsvg: exit 0, no warnings" test $? -eq 0 -a ! -s "$d/err"
	check "k=$k: tree --format dot draws each leaf once, as a box" \
		test "$(grep -c 'fillcolor="#fff3c4"\|bgcolor="#fff3c4"' "$d/t.dot")" -eq $((k * k / 2 + 1))   # + the legend's
	if [ $k = 24 ]; then
		check "k=24: hosts collapse into ranges per leaf (h[0000-0011])" grep -q 'h\[0000-0011\]' "$d/t.dot"
		check "k=24: no host drawn alone (ranges only)" \
			test "$(grep -c '^	"h[0-9]' "$d/t.dot")" -eq 0
	else
		check "k=8: 4 hosts a leaf are drawn one by one" test "$(grep -c '^	"h[0-9]' "$d/t.dot")" -eq $n
	fi
	# what is not a picture, and a missing tool
	"$Q" -s "127.0.0.1:$port" tree -o "$d/x.jpg" 2>"$d/err"
	check "k=$k: tree -o x.jpg is a usage error (exit 2)" test $? -eq 2
	PATH=/nonexistent "$Q" -s "127.0.0.1:$port" tree -o "$d/x.png" 2>"$d/err"
	rc=$?
	check "k=$k: tree -o without graphviz: exit 5, names dot ($(cat "$d/err"))" \
		test $rc -eq 5 -a "$(grep -c "'dot' is not on PATH" "$d/err")" -eq 1
	PATH=/nonexistent "$Q" -s "127.0.0.1:$port" schedule --plot "$d/x.svg" xor 'h[0000-0015]' >/dev/null 2>"$d/err"
	rc=$?
	check "k=$k: schedule --plot without gnuplot: exit 5, names gnuplot, no 'status 32512'" \
		test $rc -eq 5 -a "$(grep -c "'gnuplot' is not on PATH" "$d/err")" -eq 1 -a "$(grep -c 32512 "$d/err")" -eq 0
	PATH=/nonexistent "$Q" -s "127.0.0.1:$port" load --plot "$d/x.png" alltoall 'h[0000-0015]' >/dev/null 2>"$d/err"
	check "k=$k: load --plot without gnuplot: exit 5" test $? -eq 5
	# keep the pictures for docs/img when asked
	if [ -n "${PICTURES_KEEP:-}" ]; then
		mkdir -p "$PICTURES_KEEP" && cp "$d"/*.png "$PICTURES_KEEP"/
	fi
done
exit $((failed > 0))
