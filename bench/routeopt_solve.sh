#!/usr/bin/env bash
# routeopt_solve.sh [OUT.tsv] - topo-routeopt's solve time per all-to-all
# phase on the seed's XGFTs of 128, 512 and 1,024 leaf nodes (seed 001,
# Table I), relaxed (default formulation) and --strong, for a sample of
# phases spread over the exchange.  No lab: the fabric is built from
# --xgft, so this measures the formulation and GLPK only.
#
#   one row per solve:  leaves xgft pattern formulation phase solve_ms wall_ms maxload proven rows cols
#   then per (size, pattern, formulation): mean / min / max solve_ms over the sample
#
# Environment: ROUTEOPT_SIZES ("128 512 1024"), ROUTEOPT_PATTERNS
# ("alltoall alltoall:xor"), ROUTEOPT_PHASES (phases per size, 5: N*j/6 for
# j = 1..5, so neither the trivial first phase nor only one corner of the
# exchange), ROUTEOPT_TIME_LIMIT (seconds per solve, 300).  Run it niced on a
# shared machine: nice -n 5 bench/routeopt_solve.sh.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RO=$ROOT/build/bin/topo-routeopt
[ -x "$RO" ] || { echo "build first: make -j2" >&2; exit 1; }
OUT=${1:-/dev/null}
SIZES=${ROUTEOPT_SIZES:-"128 512 1024"}
PATTERNS=${ROUTEOPT_PATTERNS:-"alltoall alltoall:xor"}
NPH=${ROUTEOPT_PHASES:-5}
TL=${ROUTEOPT_TIME_LIMIT:-300}

shape() {	# seed 001, Table I
	case $1 in
	16) echo "2;8,2;1,4" ;;
	32) echo "3;4,4,2;1,4,2" ;;
	64) echo "3;8,4,2;1,8,2" ;;
	128) echo "3;8,8,2;1,8,4" ;;
	256) echo "4;8,4,4,2;1,8,4,2" ;;
	512) echo "4;8,8,4,2;1,8,8,2" ;;
	1024) echo "4;16,8,4,2;1,16,8,2" ;;
	2048) echo "5;8,8,4,4,2;1,8,8,4,2" ;;
	4096) echo "5;8,8,8,4,2;1,8,8,8,2" ;;
	*) return 1 ;;
	esac
}

now_ms() { date +%s%3N; }

rows=$(mktemp) || exit 1
trap 'rm -f "$rows"' EXIT
printf 'leaves\txgft\tpattern\tformulation\tphase\tsolve_ms\twall_ms\tmaxload\tproven\trows\tcols\n' >"$rows"
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# GLPK $(sed -n 's/^#define GLP_MAJOR_VERSION *//p' /usr/include/glpk.h).$(sed -n 's/^#define GLP_MINOR_VERSION *//p' /usr/include/glpk.h), time limit ${TL} s per solve"
status=0
for n in $SIZES; do
	x=$(shape "$n") || { echo "no seed shape for $n leaves" >&2; exit 1; }
	for pat in $PATTERNS; do
		for form in relaxed strong; do
			flag=
			[ "$form" = strong ] && flag=--strong
			for ((j = 1; j <= NPH; j++)); do
				k=$((n * j / (NPH + 1)))
				t0=$(now_ms)
				line=$("$RO" solve --xgft "$x" --pattern "$pat" --phase "$k" --time-limit "$TL" $flag 2>&1 | grep -E '^phase|time limit|error|infeasible')
				t1=$(now_ms)
				v=$(echo "$line" | sed -n 's/^phase [0-9]* flows [0-9]* maxload \([0-9]*\) proven \([a-z]*\) solve_ms \([0-9.]*\) ilps [0-9]* rows \([0-9]*\) cols \([0-9]*\).*/\3 \1 \2 \4 \5/p')
				if [ -z "$v" ]; then
					# a time limit or an error: recorded as such, not as a time
					echo "XGFT($x) $pat $form phase $k: $line" >&2
					printf '%s\t%s\t%s\t%s\t%s\tfail\t%s\t-\t-\t-\t-\n' "$n" "$x" "$pat" "$form" "$k" "$((t1 - t0))" >>"$rows"
					status=1
					continue
				fi
				read -r ms ml pr r c <<<"$v"
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$x" "$pat" "$form" "$k" "$ms" "$((t1 - t0))" "$ml" "$pr" "$r" "$c" >>"$rows"
			done
		done
	done
done
column -t -s $'\t' "$rows"
echo
echo "# solve time per phase (ms): mean, min, max over the sampled phases"
awk -F'\t' 'NR > 1 && $6 != "fail" {
	key = $1 "\t" $2 "\t" $3 "\t" $4
	if (!(key in n)) { order[++no] = key; mn[key] = $6; mx[key] = $6 }
	n[key]++; s[key] += $6
	if ($6 < mn[key]) mn[key] = $6
	if ($6 > mx[key]) mx[key] = $6
}
END {
	printf "leaves\txgft\tpattern\tformulation\tphases\tmean_ms\tmin_ms\tmax_ms\n"
	for (i = 1; i <= no; i++) {
		k = order[i]
		printf "%s\t%d\t%.0f\t%.0f\t%.0f\n", k, n[k], s[k] / n[k], mn[k], mx[k]
	}
}' "$rows" | column -t -s $'\t'
cp "$rows" "$OUT" 2>/dev/null
exit $status
