#!/usr/bin/env bash
# routeopt_compare.sh [OUTDIR] - maximum link load of several patterns under
# OpenSM's ftree, updn, minhop and dfsssp versus topo-routeopt's optimised
# routes, on small simulated XGFTs (tests/lab: ibsim + OpenSM + the osmtopo
# plugin + topod), as a TSV table and a grouped bar chart.
#
#   OUTDIR/routeopt_compare.tsv   fabric hosts pattern ftree updn minhop dfsssp optimised proven
#   OUTDIR/routeopt_compare.png   one panel per fabric (gnuplot)
# Default OUTDIR: docs/img.  ROUTEOPT_FABRICS overrides the fabrics
# ("h;m1,..;w1,.." separated by spaces).
#
# Each engine routes once (OpenSM run-once); its tables are what the plugin
# delivered (the spool's fabric.snap), evaluated by `topo-routeopt eval`.
# The optimised column is `topo-routeopt solve` on the same fabric: its max
# load is counted on the LFTs it would write (lft_load), not taken from the
# ILP's bound, so the two columns are measured the same way.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=${1:-$ROOT/docs/img}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RO=$ROOT/build/bin/topo-routeopt
[ -x "$RO" ] || { echo "build first: make -j2" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 1; }
FABRICS=${ROUTEOPT_FABRICS:-"3;4,2,2;1,2,2 2;8,4;1,4 3;4,4,4;1,4,4"}
ENGINES="ftree updn minhop dfsssp"

# The patterns for N hosts (N a power of two, as bitrev and xor need):
# linear-shift and XOR all-to-all phases (shift:K, xor:K are phase K of
# alltoall and alltoall:xor), bit reversal, a 2-D stencil, random permutations.
patterns() {
	local n=$1 x=1 y
	while [ $((x * x * 4)) -le "$n" ]; do x=$((x * 2)); done   # x*y = n, x <= y
	y=$((n / x))
	echo "shift:1 shift:3 shift:$((n / 2)) shift:$((n - 3)) xor:3 xor:$((n / 2)) xor:$((n - 1))" \
		"bitrev stencil2d:$x,$y:periodic random:1 random:2 random:3"
}

lab_init || exit 1
d=$LAB_DIR
lab_start_topod || { echo "topod did not start" >&2; exit 1; }
tsv=$OUT/routeopt_compare.tsv
tmp=$d/compare.tsv
printf 'fabric\thosts\tpattern\tftree\tupdn\tminhop\tdfsssp\toptimised\tproven\n' >"$tmp"
status=0
fi_=0
for spec in $FABRICS; do
	fi_=$((fi_ + 1))
	IFS=';' read -r h m w <<<"$spec"
	if ! lab_fabgen xgft --h "$h" --m "$m" --w "$w" || ! lab_start_ibsim "$d/f.net"; then
		echo "lab for XGFT($spec) failed: $(cat "$d/fabgen.err")" >&2
		exit 1
	fi
	declare -A snap=()
	for eng in $ENGINES; do
		sp=$d/spool.$fi_.$eng
		mkdir -p "$sp"
		if ! lab_run_opensm "$eng" "event_plugin_name osmtopo" \
			"event_plugin_options sink=unix:$d/ingest.sock spool=$sp" >/dev/null 2>&1 ||
			! lab_osm_check_engine "$eng" >/dev/null 2>&1; then
			# an engine that fell back (or failed) is left out, not counted as another's tables
			echo "XGFT($spec): OpenSM -R $eng did not route with $eng (log $LAB_OSM_LOG); column '-'" >&2
			status=1
			continue
		fi
		for _ in $(seq 50); do [ -s "$sp/fabric.snap" ] && break; sleep 0.1; done
		[ -s "$sp/fabric.snap" ] && snap[$eng]=$sp/fabric.snap
	done
	lab_stop_ibsim
	any=
	for eng in $ENGINES; do any=${any:-${snap[$eng]:-}}; done
	[ -n "$any" ] || { echo "XGFT($spec): no engine routed" >&2; exit 1; }
	fab=$("$RO" describe --snapshot "$any" | sed -n 's/^fabric \(XGFT([^)]*)\) hosts \([0-9]*\).*/\1\t\2/p')
	n=${fab#*$'\t'}
	echo "# $fab" | tr '\t' ' ' >&2
	for p in $(patterns "$n"); do
		row="$fab\t$p"
		for eng in $ENGINES; do
			l=-
			[ -n "${snap[$eng]:-}" ] &&
				l=$("$RO" eval --snapshot "${snap[$eng]}" --pattern "$p" | sed -n 's/^phase 1 .* maxload \([0-9]*\).*/\1/p')
			row="$row\t${l:--}"
		done
		o=$("$RO" solve --snapshot "$any" --pattern "$p" --time-limit 60 |
			sed -n 's/^phase 1 .* maxload \([0-9]*\) proven \([a-z]*\).*/\1\t\2/p')
		[ -n "$o" ] || { echo "XGFT($spec) $p: solve failed" >&2; o="-\t-"; status=1; }
		printf "$row\t$o\n" >>"$tmp"
	done
	unset snap
done
cp "$tmp" "$tsv"
column -t -s $'\t' "$tsv"

# One panel per fabric: clustered bars, one cluster per pattern.
fabs=$(cut -f1 "$tsv" | sed 1d | uniq)
nf=$(echo "$fabs" | wc -l)
term="pngcairo size 1200,$((380 * nf + 40)) font 'DejaVu Sans,11'"
gnuplot -e 'set terminal pngcairo' 2>/dev/null || term="png size 1200,$((380 * nf + 40))"
{
	echo "set terminal $term"
	echo "set output '$OUT/routeopt_compare.png'"
	echo "set datafile separator '\t'"
	echo "set datafile missing '-'"
	echo "set style data histograms"
	echo "set style histogram clustered gap 1"
	echo "set style fill solid 0.85 border -1"
	echo "set boxwidth 0.9"
	echo "set key outside right top vertical"
	echo "set ylabel 'max link load (flows on the busiest link)'"
	echo "set yrange [0:*]"; echo "set offsets 0, 0, 0.5, 0"
	echo "set ytics 1"
	echo "set grid ytics"
	echo "set xtics rotate by -30 nomirror"
	echo "set multiplot layout $nf,1 title 'Maximum link load per pattern: OpenSM engines vs topo-routeopt (lab, ibsim)'"
	i=0
	while IFS= read -r f; do
		i=$((i + 1))
		grep -F "$f"$'\t' "$tsv" >"$d/panel.$i.tsv"
		n=$(head -1 "$d/panel.$i.tsv" | cut -f2)
		echo "set title '$f, $n hosts'"
		echo "plot '$d/panel.$i.tsv' using 4:xtic(3) title 'ftree' lc rgb '#4e79a7', \\"
		echo "  '' using 5 title 'updn' lc rgb '#f28e2b', \\"
		echo "  '' using 6 title 'minhop' lc rgb '#76b7b2', \\"
		echo "  '' using 7 title 'dfsssp' lc rgb '#e15759', \\"
		echo "  '' using 8 title 'optimised' lc rgb '#59a14f'"
	done <<<"$fabs"
	echo "unset multiplot"
} >"$d/plot.gp"
gnuplot "$d/plot.gp" || { echo "gnuplot failed ($d/plot.gp)" >&2; exit 1; }
echo "wrote $tsv and $OUT/routeopt_compare.png" >&2
exit $status
