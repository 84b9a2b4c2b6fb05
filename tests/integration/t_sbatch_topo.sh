#!/usr/bin/env bash
# t_sbatch_topo.sh - clients/slurm/sbatch-topo with stand-ins for sinfo,
# sbatch and topoquery (no Slurm needed; t_slurm_place.sh runs the real
# one): the idle nodes are the free list, --topo-dry-run prints the node
# list and submits nothing, a submission gets --nodelist and every other
# option unchanged, the prediction line names busiest cable and limit, and
# a topoquery failure submits without --nodelist; --topo-leaves=any is
# passed on and a wider pick's predicted time reported.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

mkdir "$d/bin"
cat >"$d/bin/sinfo" <<'SH'
#!/bin/sh
printf 'n03\nn01\nn02\nn04\nn01\n'
SH
cat >"$d/bin/sbatch" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$SBATCH_ARGS"
echo 4242
SH
cat >"$d/bin/topoquery" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$TQ_ARGS"
[ -n "${TQ_FAIL:-}" ] && { echo "no server" >&2; exit 3; }
cat <<EOT
picked 2
free 4
leaves 2
balanced 1
bottleneck_us 1835.010
limit_us 1835.008
first_fit_bottleneck_us 3670.016
limit at
time_us 1900.000
pick_time_us 1900.000
min_leaves 2
widened 0
wider_leaves ${TQ_WL:-0}
wider_time_us ${TQ_WT:--}
nodelist n[01,03]
EOT
SH
chmod +x "$d/bin/"*
export PATH="$d/bin:$PATH" TOPOQUERY=topoquery SBATCH_ARGS=$d/sbatch.args TQ_ARGS=$d/tq.args

out=$(sh clients/slurm/sbatch-topo --topo-dry-run -N 2 job.sh 2>"$d/err")
if [ "$out" = "n[01,03]" ] && [ ! -e "$d/sbatch.args" ] && [ "$(tr '\n' ' ' <"$d/tq.args")" = "pick 2 n01 n02 n03 n04 " ] &&
	grep -q "busiest cable 1835.010 us, injection limit 1835.008 us (at), first-fit 3670.016 us" "$d/err"; then
	ok "sbatch-topo --topo-dry-run: the node list of pick over the idle nodes, the prediction on stderr, nothing submitted"
else
	nok "sbatch-topo --topo-dry-run: out '$out', topoquery $(tr '\n' ' ' <"$d/tq.args" 2>/dev/null), $(cat "$d/err")"
fi
jid=$(sh clients/slurm/sbatch-topo -N2 --parsable -p batch job.sh a1 2>/dev/null)
if [ "$jid" = 4242 ] && [ "$(tr '\n' ' ' <"$d/sbatch.args")" = "--nodelist=n[01,03] -N2 --parsable -p batch job.sh a1 " ]; then
	ok "sbatch-topo: sbatch gets --nodelist and the options unchanged"
else
	nok "sbatch-topo: sbatch got $(tr '\n' ' ' <"$d/sbatch.args" 2>/dev/null) ($jid)"
fi
rm -f "$d/sbatch.args"
jid=$(TQ_FAIL=1 sh clients/slurm/sbatch-topo -N 2 job.sh 2>"$d/err")
if [ "$jid" = 4242 ] && [ "$(tr '\n' ' ' <"$d/sbatch.args")" = "-N 2 job.sh " ] && grep -q "without --nodelist" "$d/err"; then
	ok "sbatch-topo: topod unreachable: submitted without --nodelist, with a warning"
else
	nok "sbatch-topo with topoquery failing: $(tr '\n' ' ' <"$d/sbatch.args" 2>/dev/null) $(cat "$d/err")"
fi
rm -f "$d/sbatch.args"
if TQ_FAIL=1 sh clients/slurm/sbatch-topo --topo-dry-run -N 2 job.sh >/dev/null 2>&1 || [ -e "$d/sbatch.args" ]; then
	nok "sbatch-topo --topo-dry-run with topoquery failing exits 0"
else
	ok "sbatch-topo --topo-dry-run with topoquery failing: non-zero exit, nothing submitted"
fi
# the rule on leaves: --topo-leaves=any reaches topoquery as leaves=any; the
# default's wider pick, when topod states one, is on stderr
out=$(TQ_WL=4 TQ_WT=1500.000 sh clients/slurm/sbatch-topo --topo-dry-run --topo-leaves=any -N 2 job.sh 2>"$d/err")
if [ "$out" = "n[01,03]" ] && [ "$(tr '\n' ' ' <"$d/tq.args")" = "pick leaves=any 2 n01 n02 n03 n04 " ] &&
	grep -q "on 4 leaves the all-to-all is predicted 1500.000 us against 1900.000 us" "$d/err"; then
	ok "sbatch-topo --topo-leaves=any: pick leaves=any, and the wider pick's predicted time on stderr"
else
	nok "sbatch-topo --topo-leaves=any: out '$out', topoquery $(tr '\n' ' ' <"$d/tq.args" 2>/dev/null), $(cat "$d/err")"
fi
sh clients/slurm/sbatch-topo --topo-dry-run -N 2 job.sh >/dev/null 2>"$d/err"
if [ "$(tr '\n' ' ' <"$d/tq.args")" = "pick 2 n01 n02 n03 n04 " ] && ! grep -q "leaves the all-to-all" "$d/err" &&
	! sh clients/slurm/sbatch-topo --topo-leaves=some -N 2 job.sh 2>/dev/null; then
	ok "sbatch-topo: no leaves= by default, no wider line when none is stated, --topo-leaves=some refused"
else
	nok "sbatch-topo default: topoquery $(tr '\n' ' ' <"$d/tq.args" 2>/dev/null), $(cat "$d/err")"
fi
exit $((failed != 0))
