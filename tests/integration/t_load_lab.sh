#!/usr/bin/env bash
# `load` on the real stack (ibsim -> OpenSM + osmtopo plugin -> topod), one
# lab per fabric kind: full, 5:4 over-subscribed and failed-link fat trees,
# a torus with dor, a random regular graph with dfsssp, multi-rail hosts.
# On each, tests/lib/loadcheck.py compares topod's link loads for several
# patterns (alltoall, ring, shifts, stencils, an explicit matrix) with a
# brute-force count over `path` replies, and the picture is rendered once.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
export LAB_QUIET=1
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

# one LABEL ENGINE ROOTS(yes|no) FABGEN-ARGS...
one() {
	local label=$1 engine=$2 roots=$3 conf=()
	shift 3
	lab_init || { nok "$label: lab_init"; return; }
	lab_fabgen "$@" || { nok "$label: fabgen $*"; return; }
	[ "$roots" = yes ] && conf+=("root_guid_file $LAB_DIR/roots")
	if ! lab_bring_up "$LAB_DIR/f.net" "$engine" "${conf[@]}"; then
		nok "$label: lab bring-up with $engine"
		return
	fi
	python3 tests/lib/loadcheck.py "$LAB_TOPOD_PORT" "$label" 7 || failed=$((failed + 1))
	if [ "$label" = "fat tree k=4" ]; then
		local png=${LOAD_PLOT_DIR:-$LAB_DIR}/load_k4.png svg=$LAB_DIR/load.svg
		local hosts
		hosts=$(exec 3<>"/dev/tcp/127.0.0.1/$LAB_TOPOD_PORT" && printf 'hosts\n' >&3 &&
			timeout 10 head -17 <&3 | tail -n +2 | awk '{print $1 "*2"}' | tr '\n' ' ')
		# gnuplot labels the x axis with the hosts: the first host's name must be there
		# shellcheck disable=SC2086
		if TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$ROOT/build/bin/topoquery" load alltoall $hosts \
			--plot "$svg" >"$LAB_DIR/load.txt" 2>"$LAB_DIR/load.err" &&
			rsvg-convert -o "$png" "$svg" && [ -s "$png" ] &&
			grep -qF ">${hosts%%\**}<" "$svg" &&
			grep -q "max_msgs=" "$LAB_DIR/load.txt"; then
			ok "$label: topoquery load --plot drew $png ($(stat -c %s "$png") bytes)"
		else
			nok "$label: topoquery load --plot: $(head -c 300 "$LAB_DIR/load.err") hosts=[$hosts] $(head -c 200 "$LAB_DIR/load.txt")"
		fi
	fi
	lab_teardown
}

one "fat tree k=4" ftree no fattree --k 4 --levels 3
one "5:4 over-subscribed" ftree no stampede-small
one "fat tree k=6, 3 failed links" ftree yes fattree --k 6 --levels 3 --fail 3 --seed 7
one "torus 4x4, dor" dor no torus2d --x 4 --y 4
one "random regular 16x4, dfsssp" dfsssp no rrg --switches 16 --degree 4 --seed 3
one "multi-rail fat tree k=4" ftree no fattree --k 4 --levels 3 --rails 2
exit $((failed != 0))
