#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_mpi.sh - a real MPI client of libtii: tests/mpi/tii_split.c, built with
# Debian's Open MPI (mpicc) against build/lib/libtii.so, splits
# MPI_COMM_WORLD by switch cluster as the seed's section 5.2.2 does, on
# simulated fabrics:
#   ibsim fabric -> OpenSM + the osmtopo plugin -> topod -> rank 0 of
#   `mpirun --oversubscribe -np 8` (libtii, one request per level) ->
#   MPI_Bcast -> MPI_Comm_split on every rank
#
# How ranks stand for hosts: all 8 ranks run on this machine, so each is told
# which simulated host it is. The main run gives mpirun a rank -> host map
# file (TII_HOSTMAP: line r names rank r's host, like a rankfile; every rank
# reads its own line); a second run sets TII_HOST per rank with Open MPI's
# MPMD syntax (`-np 1 -x TII_HOST=h0 ./tii_split : -np 1 -x TII_HOST=h1 ...`)
# and must print the same. The 8 hosts are spread unevenly over several leaf
# switches (2, 2, 1, 1, 2 per leaf on the fat tree) and shuffled, so ranks of
# one leaf are not neighbours in MPI_COMM_WORLD.
#
# Checked, per fabric:
#   - the program builds with mpicc -Wall -Wextra -Werror and really links
#     the shared libtii of this tree;
#   - rank 0's header: depth (3 / 2), generation = topoquery info's, 8 ranks;
#   - one line per rank and level; each rank stands for its mapped host;
#   - at every level: each rank's cluster ID, colour and cluster count equal
#     `topoquery clusters LEVEL` for the same hosts in rank order;
#   - each sub-communicator holds exactly the ranks of its colour, in world
#     rank order (size, subrank, members agree on every member);
#   - ground truth from fabgen's --meta: ranks share a leaf-level
#     sub-communicator iff their hosts hang off the same leaf switch, and a
#     pod-level one (3-level tree) iff their leaves are in the same pod;
#   - the MPMD TII_HOST run prints the same lines as the map-file run;
#   - the same checks with two ranks per host (8 ranks on 4 hosts), as in a
#     real job: a host's ranks always share their sub-communicators;
#   - an unknown host in the map: every rank exits non-zero (no hang), rank 0
#     says why; no rank process is left behind.
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
for f in "$TQ" "$ROOT/build/bin/topod" "$ROOT/build/lib/libosmtopo.so" "$ROOT/build/lib/libtii.so"; do
	[ -e "$f" ] || { nok "$f built (make all)"; exit 1; }
done

# Open MPI refuses to run as root unless told twice.
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TOPOD_PID=
MPI_PID=
# lab_teardown calls this (EXIT/INT/TERM) before killing the lab's processes.
lab_user_cleanup() {
	local p
	for p in "$MPI_PID" "$TOPOD_PID"; do
		[ -n "$p" ] || continue
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	MPI_PID=""
	TOPOD_PID=""
}

# The lab's watchdog also stops what is listed in $LAB_DIR/pids (if it still
# carries this lab's IBSIM_SOCKNAME) when this shell dies without its traps,
# e.g. by SIGKILL; the traps above cover every other way out.
watch() {
	echo "$1" >>"$LAB_DIR/pids"
}

# mpi OUT ERR MPIRUN-ARGS...: mpirun in the background (so a signal to this
# script reaches the cleanup), bounded by timeout, which passes TERM on.
mpi() {
	local out=$1 err=$2 rc
	shift 2
	timeout 90 mpirun "$@" >"$out" 2>"$err" </dev/null &
	MPI_PID=$!
	watch "$MPI_PID"
	wait "$MPI_PID"
	rc=$?
	MPI_PID=
	return $rc
}

# fabric LABEL EXPECT-DEPTH PICK FABGEN-ARGS...
#   PICK: leaf-index:count,... - which leaf switches (sorted by name) the 8
#   ranks' hosts come from, and how many hosts from each.
fabric() {
	local label=$1 depth=$2 pick=$3
	shift 3
	lab_init || { nok "$label: lab_init"; return; }
	local d=$LAB_DIR t0=$SECONDS
	if ! lab_fabgen "$@"; then
		nok "$label: fabgen $*"
		lab_teardown
		return
	fi

	# Built by `make tests` (mpicc -Werror against build/lib/libtii.so).
	cp "$ROOT/build/tests/mpi/tii_split" "$d/tii_split" 2>/dev/null
	if [ -x "$d/tii_split" ] && ldd "$d/tii_split" | grep -q "libtii.so.1 => $ROOT/build/lib/libtii.so.1"; then
		ok "$label: tii_split is built with mpicc -Werror and links build/lib/libtii.so"
	else
		nok "$label: build/tests/mpi/tii_split is built (make tests) and links build/lib/libtii.so"
		lab_teardown
		return
	fi

	if ! lab_bring_up "$d/f.net" ftree "root_guid_file $d/roots"; then
		nok "$label: ibsim, topod and OpenSM with the plugin (logs in $d)"
		lab_teardown
		return
	fi
	TOPOD_PID=$LAB_TOPOD_PID
	local port=$LAB_TOPOD_PORT
	export TII_SERVERS=127.0.0.1:$port
	# lab_bring_up returned once topod served the plugin's snapshot.
	local gen
	gen=$("$TQ" info 2>/dev/null | sed -n 's/^generation //p')
	if [ -z "$gen" ] || [ "$gen" = 0 ]; then
		nok "$label: topod has the fabric"
		lab_teardown
		return
	fi

	# The rank -> host map: comment lines do not count, line r is rank r.
	python3 - "$d/f.json" "$pick" >"$d/hosts.map" <<'EOF' || { nok "$label: pick hosts"; lab_teardown; return; }
import json, random, sys
m = json.load(open(sys.argv[1]))
leaf = {h: v[0]["switch"] for h, v in m["hosts"].items()}
leaves = sorted(set(leaf.values()))
hosts = []
for p in sys.argv[2].split(","):
    i, k = map(int, p.split(":"))
    hosts += sorted(h for h in leaf if leaf[h] == leaves[i])[:k]
random.Random(5).shuffle(hosts)   # ranks of one leaf are not neighbours
print("# rank -> simulated host for tii_split (TII_HOSTMAP); line r is rank r")
print("\n".join(hosts))
EOF
	local -a hosts
	mapfile -t hosts < <(grep -v '^#' "$d/hosts.map")
	local np=${#hosts[@]}

	local rc=0
	mpi "$d/map.out" "$d/map.err" --oversubscribe -np "$np" -x TII_SERVERS -x TII_HOSTMAP="$d/hosts.map" \
		"$d/tii_split" || rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$label: mpirun --oversubscribe -np $np (TII_HOSTMAP) exits 0"
	else
		nok "$label: mpirun -np $np (TII_HOSTMAP) exits $rc"
		sed 's/^/# /' "$d/map.err" | head -20
	fi

	# MPMD: one app context per rank, each with its own TII_HOST.
	local -a mpmd=()
	local r
	for ((r = 0; r < np; r++)); do
		[ "$r" -gt 0 ] && mpmd+=(:)
		mpmd+=(-np 1 -x TII_HOST="${hosts[$r]}" "$d/tii_split")
	done
	rc=0
	mpi "$d/mpmd.out" "$d/mpmd.err" --oversubscribe -x TII_SERVERS "${mpmd[@]}" || rc=$?
	if [ "$rc" -eq 0 ] && [ "$(grep '^tii_split ' "$d/mpmd.out" | sort)" = "$(grep '^tii_split ' "$d/map.out" | sort)" ]; then
		ok "$label: MPMD run with TII_HOST per rank prints the same split"
	else
		nok "$label: MPMD run with TII_HOST per rank (exit $rc) prints the same split"
		sed 's/^/# /' "$d/mpmd.err" | head -10
	fi

	# check.py LABEL MAP OUT: the split tii_split printed (OUT) for the ranks
	# of MAP, against topoquery and the fabric.
	cat >"$d/check.py" <<'EOF'
import json, subprocess, sys

label, mapf, outf, tq, meta, depth, gen = sys.argv[1:]
depth, gen = int(depth), int(gen)
m = json.load(open(meta))
failed = 0


def check(c, what):
    global failed
    print(("ok - " if c else "not ok - ") + label + ": " + what, flush=True)
    failed += not c
    return c


hosts = [l.strip() for l in open(mapf) if l.strip() and not l.startswith("#")]
n = len(hosts)
sw = {s["node"]: s for s in m["switches"]}
leaf = {h: m["hosts"][h][0]["switch"] for h in hosts}
# the truth at each level: the leaf switch, and on a 3-level tree the pod
truth = {depth - 1: leaf}
if depth == 3:
    truth[1] = {h: sw[leaf[h]]["coords"][0] for h in hosts}
want_levels = list(range(depth - 1, 0, -1))

head, lines = None, {}
for l in open(outf):
    if l.startswith("tii_split depth="):
        head = dict(kv.split("=", 1) for kv in l.split()[1:])
    elif l.startswith("tii_split rank="):
        f = dict(kv.split("=", 1) for kv in l.split()[1:])
        lines[(int(f["rank"]), int(f["level"]))] = f
check(head is not None and int(head["depth"]) == depth and int(head["ranks"]) == n
      and int(head["generation"]) == gen and int(head["levels"]) == len(want_levels),
      "rank 0: depth %s, %s ranks, %s levels, generation %s (topoquery: %d)" % (
          head and head["depth"], head and head["ranks"], head and head["levels"], head and head["generation"], gen))
check(sorted(lines) == sorted((r, lv) for r in range(n) for lv in want_levels),
      "one line per rank and level (%d lines for %d ranks, levels %s)" % (len(lines), n, want_levels))
check(all(f["host"] == hosts[r] for (r, _), f in lines.items()), "every rank stands for its mapped host")

for lv in want_levels:
    got = [lines.get((r, lv)) for r in range(n)]
    if not check(all(got), "level %d: all ranks reported" % lv):
        continue
    # topoquery, the same hosts in rank order: IDs, colours, count
    r = subprocess.run([tq, "--json", "clusters", str(lv)] + hosts, capture_output=True, text=True, timeout=60)
    q = json.loads(r.stdout)["levels"][0] if r.returncode == 0 else None
    if check(q is not None, "level %d: topoquery clusters %d for the %d hosts" % (lv, lv, n)):
        check([int(g["cluster"], 16) for g in got] == [int(h["cluster"], 16) for h in q["hosts"]]
              and [int(g["color"]) for g in got] == [h["color"] for h in q["hosts"]]
              and all(int(g["clusters"]) == q["count"] for g in got),
              "level %d: cluster IDs, colours and count (%d) = topoquery clusters" % (lv, q["count"]))
    # the communicators MPI built
    col = [int(g["color"]) for g in got]
    okc = True
    for rk, g in enumerate(got):
        mates = [x for x in range(n) if col[x] == col[rk]]
        mem = [int(x) for x in g["members"].split(",")]
        okc &= mem == mates and int(g["size"]) == len(mates) and int(g["subrank"]) == mates.index(rk)
    check(okc, "level %d: each sub-communicator holds the ranks of its colour, in world order (sizes %s)" % (
        lv, sorted(col.count(c) for c in set(col))))
    # the fabric itself
    t = truth.get(lv)
    if t is not None:
        what, whats = ("leaf switch", "leaf switches") if lv == depth - 1 else ("pod", "pods")
        # what MPI built: b is in a's sub-communicator iff they share one
        mem = [set(int(x) for x in g["members"].split(",")) for g in got]
        same = all((b in mem[a]) == (t[hosts[a]] == t[hosts[b]]) for a in range(n) for b in range(n))
        check(same and len({frozenset(x) for x in mem}) == len(set(t.values())),
              "level %d: ranks share a sub-communicator iff their hosts share a %s (fabgen: %d %s)" % (
                  lv, what, len(set(t.values())), whats))
sys.exit(1 if failed else 0)
EOF
	python3 "$d/check.py" "$label" "$d/hosts.map" "$d/map.out" "$TQ" "$d/f.json" "$depth" "$gen" ||
		failed=$((failed + 1))

	# Several ranks per host, as in any real job: rank r on host r mod 4.
	{
		echo "# two ranks per host"
		for ((r = 0; r < np; r++)); do echo "${hosts[$((r % 4))]}"; done
	} >"$d/shared.map"
	rc=0
	mpi "$d/shared.out" "$d/shared.err" --oversubscribe -np "$np" -x TII_SERVERS -x TII_HOSTMAP="$d/shared.map" \
		"$d/tii_split" || rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$label: mpirun -np $np, two ranks per host, exits 0"
		python3 "$d/check.py" "$label, 2 ranks per host" "$d/shared.map" "$d/shared.out" "$TQ" "$d/f.json" \
			"$depth" "$gen" || failed=$((failed + 1))
	else
		nok "$label: mpirun -np $np, two ranks per host, exits $rc"
		sed 's/^/# /' "$d/shared.err" | head -20
	fi

	# A host topod does not know: rank 0 says so, every rank stops.
	sed '5s/.*/nosuch-host-17/' "$d/hosts.map" >"$d/bad.map"
	rc=0
	local t1=$SECONDS
	mpi "$d/bad.out" "$d/bad.err" --oversubscribe -np "$np" -x TII_SERVERS -x TII_HOSTMAP="$d/bad.map" \
		"$d/tii_split" || rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "tii_split: clusters at level.*no such host.*nosuch-host-17" "$d/bad.err" &&
		! grep -q '^tii_split rank=' "$d/bad.out"; then
		ok "$label: an unknown host: every rank exits non-zero, rank 0 says why ($((SECONDS - t1)) s)"
	else
		nok "$label: an unknown host: mpirun exits $rc (124 = hung), rank 0 says why"
		sed 's/^/# /' "$d/bad.err" | head -10
	fi
	local e left=
	for e in /proc/[0-9]*/exe; do
		[ "$(readlink "$e" 2>/dev/null)" = "$d/tii_split" ] && left="$left ${e//[!0-9]/}"
	done
	if [ -n "$left" ]; then
		nok "$label: no tii_split process left (pids$left)"
	else
		ok "$label: no tii_split process left"
	fi
	unset TII_SERVERS
	echo "# $label: $((SECONDS - t0)) s"
	lab_teardown
}

fabric "fat tree k=4, 3 levels" 3 "0:2,1:2,2:1,4:1,7:2" fattree --k 4 --levels 3
fabric "5:4 over-subscribed (stampede-small)" 2 "0:3,1:1,5:4" stampede-small
[ "$failed" -eq 0 ]
