#!/usr/bin/env bash
# prof_report_lab.sh [K] [RANKS] [PPH] - topoprof's end-of-job report for a
# large job against a real topod: a simulated k-ary 3-level fat tree (ibsim +
# OpenSM ftree + the osmtopo plugin + topod, tests/lab), then
# build/bench/prof_report RANKS PPH with the fabric's first RANKS/PPH hosts,
# so the fabric part (hop matrix, tree, path matrix -> link loads) comes
# from topod. Prints prof_report's timing line. Defaults: K=8 (128 hosts),
# 1,024 ranks, 8 per host.
set -u
cd "$(dirname "$0")/.." || exit 1
K=${1:-8}
N=${2:-1024}
PPH=${3:-8}
. tests/lab/lab.sh
export LAB_QUIET=1
lab_init || exit 1
lab_fabgen fattree --k "$K" --levels 3 || { echo "fabgen failed" >&2; exit 1; }
lab_bring_up "$LAB_DIR/f.net" ftree "root_guid_file $LAB_DIR/roots" || { echo "lab failed" >&2; exit 1; }
python3 -c 'import json,sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["hosts"])))' "$LAB_DIR/f.json" >"$LAB_DIR/hosts"
echo "# fat tree k=$K: $(wc -l <"$LAB_DIR/hosts") hosts; $N ranks, $PPH per host"
for i in 1 2 3; do
	TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT build/bench/prof_report "$N" "$PPH" "$LAB_DIR/rep" "$LAB_DIR/hosts"
done
sed -n '1,3p;/most loaded/,/^$/p' "$LAB_DIR/rep.txt" | head -8
lab_teardown
