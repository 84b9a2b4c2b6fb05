#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_mpi_place.sh - rank reordering in a real MPI program (issue 10):
#   ibsim fat tree -> OpenSM + the osmtopo plugin -> topod -> rank 0 of
#   `mpirun --oversubscribe -np 32 tii_stencil 4 4 2` calls
#   tii_reorder_ranks (the graph as MPI_Dist_graph_create takes it) and
#   tii_get_hop_matrix; every rank runs real halo exchanges in
#   MPI_COMM_WORLD's order and in the reordered communicator.
# The 32 ranks stand for 8 simulated hosts, 4 ranks each, one host per leaf
# switch (every other host of `topoquery order`), world ranks laid out host
# by host as mpirun's default by-slot placement does (TII_HOSTMAP).
# Checked:
#   - tii_stencil is built with mpicc -Werror and links build/lib/libtii.so;
#   - mpirun exits 0; every received halo value equals its closed form
#     (bad=0, in both orders) and the new ranks are a permutation;
#   - the hop-bytes of the real exchanges (bytes sent x hops between the two
#     ranks' hosts) went down after reordering (unchanged where map answered
#     block: nothing was predicted faster), and equal topod's own
#     figures: reordered = map_hop_bytes x bytes per pair and sweep, world =
#     block_hop_bytes x the same;
#   - with two ranks per host on the same hosts (16 ranks, 4x2x2) the same.
# Skips (exit 0) without mpicc/mpirun or ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
TQ=$ROOT/build/bin/topoquery
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
for t in mpicc mpirun ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
cp "$ROOT/build/tests/mpi/tii_stencil" "$d/" 2>/dev/null
if [ -x "$d/tii_stencil" ] && ldd "$d/tii_stencil" | grep -q "libtii.so.1 => $ROOT/build/lib/libtii.so.1"; then
	ok "tii_stencil is built with mpicc -Werror and links build/lib/libtii.so"
else
	nok "build/tests/mpi/tii_stencil is built (make tests)"
	exit 1
fi
lab_fabgen fattree --k 4 --levels 3 || { nok "fabgen"; exit 1; }
lab_bring_up "$d/f.net" ftree "root_guid_file $d/roots" || { nok "ibsim, OpenSM, topod (logs in $d)"; exit 1; }
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT
mapfile -t all < <(printf 'hosts\n' | nc -q 2 127.0.0.1 "$LAB_TOPOD_PORT" | sed -n '2,$p' | awk '{print $1}')
mapfile -t ord < <("$TQ" order "${all[@]}")
[ "${#ord[@]}" -eq 16 ] || { nok "topoquery order lists the 16 hosts (got ${#ord[@]})"; exit 1; }
hosts=()
for ((i = 0; i < 16; i += 2)); do hosts+=("${ord[$i]}"); done

# run PER_HOST X Y Z: the stencil on the 8 hosts, PER_HOST ranks each
run() {
	local per=$1 X=$2 Y=$3 Z=$4 np=$(($2 * $3 * $4)) iters=3 h i
	: >"$d/hm.$per"
	for h in "${hosts[@]}"; do for ((i = 0; i < per; i++)); do echo "$h" >>"$d/hm.$per"; done; done
	local rc=0
	timeout 120 mpirun --oversubscribe -np "$np" -x TII_SERVERS -x TII_HOSTMAP="$d/hm.$per" \
		"$d/tii_stencil" "$X" "$Y" "$Z" "$iters" >"$d/out.$per" 2>"$d/err.$per" </dev/null &
	local pid=$!
	echo "$pid" >>"$d/pids"
	wait "$pid" || rc=$?
	local tag="$np ranks, $per per host"
	if [ "$rc" -ne 0 ]; then
		nok "$tag: mpirun exits $rc"
		sed 's/^/# /' "$d/err.$per" | head -10
		return
	fi
	ok "$tag: mpirun --oversubscribe exits 0"
	sed 's/^/# /' "$d/out.$per"
	python3 - "$d/out.$per" "$tag" "$iters" <<'PY' || failed=$((failed + 1))
import re, sys
out, tag, iters = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
kv = lambda l: dict(w.split("=", 1) for w in l.split() if "=" in w)
head = kv(re.search(r"^tii_stencil .*$", out, re.M).group(0))
w = kv(re.search(r"^order=world .*$", out, re.M).group(0))
r = kv(re.search(r"^order=reordered .*$", out, re.M).group(0))
bad = 0
def check(c, what):
    global bad
    print(("ok - " if c else "not ok - ") + tag + ": " + what)
    bad += not c
unit = 512 * 8 * iters   # bytes per neighbour pair, direction and sweep
check(w["bad"] == "0" and r["bad"] == "0" and int(w["checked"]) > 0 and int(r["checked"]) > 0,
      f"every halo value received is right in both orders ({w['checked']} + {r['checked']} checked)")
check(head["permutation"] == "1", "tii_reorder_ranks gave a permutation")
# map answers block when nothing is predicted faster (its time, not its
# hop-bytes, decides): then the ranks keep their order
if head["method"] == "block":
    check(int(r["hop_bytes"]) == int(w["hop_bytes"]),
          f"map answered block (nothing predicted faster): the real exchanges' hop-bytes stay {w['hop_bytes']}")
else:
    check(int(r["hop_bytes"]) < int(w["hop_bytes"]),
          f"the real exchanges' hop-bytes went down: {w['hop_bytes']} -> {r['hop_bytes']} (method {head['method']})")
check(int(r["hop_bytes"]) == int(head["map_hop_bytes"]) * unit and int(w["hop_bytes"]) == int(head["block_hop_bytes"]) * unit,
      "they equal topod's map_hop_bytes and block_hop_bytes x bytes per pair")
sys.exit(1 if bad else 0)
PY
}
run 4 4 4 2
run 2 4 2 2
exit $((failed != 0))
