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
	lab_teardown
}

one "fat tree k=4" ftree no no fattree --k 4 --levels 3
one "5:4 over-subscribed" ftree no no stampede-small
one "fat tree k=6, 3 failed links" ftree yes no fattree --k 6 --levels 3 --fail 3 --seed 7
one "multi-rail fat tree k=4" ftree no yes fattree --k 4 --levels 3 --rails 2
one "2D torus 4x4, dor" dor no no torus2d --x 4 --y 4
one "random regular 16x4, dfsssp" dfsssp no no rrg --switches 16 --degree 4 --seed 3
exit $((failed != 0))
