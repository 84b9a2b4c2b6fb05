#!/usr/bin/env bash
# t_place.sh - order, pick and map (issue 10) on the real stack, on every
# kind of lab fabric:
#   ibsim fabric -> OpenSM + the osmtopo plugin -> topod
# then tests/lib/placecheck.py checks the three commands against topod's
# own clusters/shared/hopsmatrix answers and a brute-force search for
# sharing-free host sets, plus the errors (unknown host, repeats, too few
# slots or hosts, a second rail). Fabrics: a fat tree, the 5:4
# over-subscribed tree, a fat tree with failed links, a multi-rail fat tree,
# a torus (dor) and a random graph (dfsssp): not every fabric is a tree.
# Skips (exit 0) without ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
failed=0
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

# one LABEL ENGINE ROOTS(yes|no) RAILS(yes|no) FABGEN-ARGS...
one() {
	local label=$1 engine=$2 roots=$3 rails=$4 conf=()
	shift 4
	lab_init || { nok "$label: lab_init"; return; }
	lab_fabgen "$@" || { nok "$label: fabgen $*"; return; }
	[ "$roots" = yes ] && conf+=("root_guid_file $LAB_DIR/roots")
	if ! lab_bring_up "$LAB_DIR/f.net" "$engine" "${conf[@]}"; then
		nok "$label: ibsim + OpenSM + topod"
		return
	fi
	local extra=()
	[ "$rails" = yes ] && extra=(--rails)
	python3 tests/lib/placecheck.py --port "$LAB_TOPOD_PORT" --label "$label" "${extra[@]}" || failed=$((failed + 1))
	[ "$label" = "fat tree k=4" ] && topoquery_formats
	lab_teardown
}

# topoquery's side, once: --json parses and agrees with the text forms; the
# host-file formats have the documented shapes.
topoquery_formats() {
	local TQ=$ROOT/build/bin/topoquery S=127.0.0.1:$LAB_TOPOD_PORT d=$LAB_DIR
	mapfile -t all < <(python3 -c 'import json, sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["hosts"])))' "$d/f.json")
	"$TQ" -s "$S" --json order "${all[@]}" >"$d/o.json" && "$TQ" -s "$S" order "${all[@]}" >"$d/o.txt" &&
		"$TQ" -s "$S" --json pick 5 "${all[@]}" >"$d/p.json" && "$TQ" -s "$S" pick 5 --format list "${all[@]}" >"$d/p.txt" &&
		"$TQ" -s "$S" --json map stencil:4x2 "${all[0]}*4" "${all[5]}*4" >"$d/m.json" &&
		"$TQ" -s "$S" map stencil:4x2 --format rankfile "${all[0]}*4" "${all[5]}*4" >"$d/m.rank" &&
		"$TQ" -s "$S" order --format openmpi --slots 3 "${all[@]}" >"$d/o.ompi" &&
		"$TQ" -s "$S" order --format mpich --slots 3 "${all[@]}" >"$d/o.mpich" &&
		"$TQ" -s "$S" order --format slurm --slots 3 "${all[@]}" >"$d/o.slurm" &&
		python3 -c '
# the 4x2 stencil as a METIS file (1-based neighbours, both ends listed)
X, Y = 4, 2
print(X * Y, (X - 1) * Y + X * (Y - 1))
for v in range(X * Y):
    x, y = v % X, v // X
    n = [u for (a, b) in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)) if 0 <= a < X and 0 <= b < Y for u in [a + X * b]]
    print(" ".join(str(u + 1) for u in n))' >"$d/g.metis" &&
		"$TQ" -s "$S" --json map "$d/g.metis" "${all[0]}*4" "${all[5]}*4" >"$d/mg.json" &&
		python3 - "$d" <<'GEN' &&
# The same stencil with every kind of weight the formats have, all 1 (so the
# map must not change): a Scotch .grf with labels (numbered backwards, so
# neighbours must be found by label), vertex and edge weights (flags 111;
# the edge weight comes before its neighbour); a METIS file with two vertex
# weights per vertex (fmt 011, ncon 2) and edge weights after each
# neighbour; and a weighted .grf cut short.
import sys
d, X, Y = sys.argv[1], 4, 2
nb = lambda v: [a + X * b for (a, b) in ((v % X + 1, v // X), (v % X - 1, v // X), (v % X, v // X + 1), (v % X, v // X - 1))
               if 0 <= a < X and 0 <= b < Y]
lab = lambda v: 1000 - v
arcs = sum(len(nb(v)) for v in range(X * Y))
with open(d + "/g.grf", "w") as f:
    f.write("0\n%d %d\n0 111\n" % (X * Y, arcs))
    for v in range(X * Y):
        f.write("%d 1 %d %s\n" % (lab(v), len(nb(v)), " ".join("1 %d" % lab(u) for u in nb(v))))
with open(d + "/g2.metis", "w") as f:
    f.write("%% weighted METIS\n%d %d 011 2\n" % (X * Y, arcs // 2))
    for v in range(X * Y):
        f.write("1 3 %s\n" % " ".join("%d 1" % (u + 1) for u in nb(v)))
with open(d + "/bad.grf", "w") as f:
    f.write("0\n8 22\n0 010\n2 1 1\n")
GEN
		"$TQ" -s "$S" --json map "$d/g.grf" "${all[0]}*4" "${all[5]}*4" >"$d/mgrf.json" &&
		"$TQ" -s "$S" --json map "$d/g2.metis" "${all[0]}*4" "${all[5]}*4" >"$d/mg2.json"
	local rc=$?
	"$TQ" -s "$S" map "$d/bad.grf" "${all[0]}*4" "${all[5]}*4" >/dev/null 2>"$d/bad.err"
	local badrc=$?
	if [ "$badrc" -eq 1 ] && grep -q "not a METIS or Scotch graph" "$d/bad.err"; then
		echo "ok - a weighted .grf cut short: exit 1 and a message, no crash"
	else
		echo "not ok - a weighted .grf cut short: exit $badrc ($(head -c 200 "$d/bad.err"))"
		failed=$((failed + 1))
	fi
	if [ "$rc" -eq 0 ] && python3 - "$d" <<'PY'; then
import json, re, sys
d = sys.argv[1]
o = json.load(open(d + "/o.json"))
assert o["hosts"] == open(d + "/o.txt").read().split(), "order json != text"
p = json.load(open(d + "/p.json"))
assert p["hosts"] == open(d + "/p.txt").read().split() and p["picked"] == 5 and p["sharing_free"] is True
m = json.load(open(d + "/m.json"))
assert m["ranks"] == 8 and len(m["rank_host"]) == 8 and m["time_s"] <= m["block_time_s"] and m["bytes"] == 1 << 20
rk = open(d + "/m.rank").read().split("\n")[:-1]
assert all(re.fullmatch(r"rank \d+=\S+ slot=\d", l) for l in rk) and len(rk) == 8
assert [l.split("=")[1].split()[0] for l in rk] == m["rank_host"]
mg = json.load(open(d + "/mg.json"))
assert mg["rank_host"] == m["rank_host"] and mg["hop_bytes"] == m["hop_bytes"], "METIS file != stencil"
for name in ("mgrf", "mg2"):
    w = json.load(open(d + "/" + name + ".json"))
    assert w["rank_host"] == m["rank_host"] and w["hop_bytes"] == m["hop_bytes"], name + " (weighted) != stencil"
assert open(d + "/o.ompi").read().split("\n")[:-1] == [h + " slots=3" for h in o["hosts"]]
assert open(d + "/o.mpich").read().split("\n")[:-1] == [h + ":3" for h in o["hosts"]]
assert open(d + "/o.slurm").read().split() == [h for h in o["hosts"] for _ in range(3)]
PY
		echo "ok - topoquery order/pick/map: --json agrees with text; openmpi, mpich, slurm, rankfile formats; METIS and Scotch files, weighted and labelled, map as the same stencil"
	else
		echo "not ok - topoquery order/pick/map formats (exit $rc)"
		failed=$((failed + 1))
	fi
}

one "fat tree k=4" ftree no no fattree --k 4 --levels 3
one "5:4 over-subscribed" ftree no no stampede-small
one "fat tree k=6, 3 failed links" ftree yes no fattree --k 6 --levels 3 --fail 3 --seed 7
one "multi-rail fat tree k=4" ftree no yes fattree --k 4 --levels 3 --rails 2
one "2D torus 4x4, dor" dor no no torus2d --x 4 --y 4
one "random regular 16x4, dfsssp" dfsssp no no rrg --switches 16 --degree 4 --seed 3
exit $((failed != 0))
