#!/usr/bin/env bash
# t_slurm.sh - a real Slurm reads what `topoquery slurm` writes:
#   ibsim fabric -> OpenSM + the osmtopo plugin -> topod ->
#   topoquery slurm -o topology.conf -> slurmctld (topology/tree) ->
#   scontrol show topology
# slurmctld and munged are private: loopback ports, a temp dir, our own munge
# key and socket (tests/slurm/slurm.conf.in; no slurmd runs, every simulated
# host is a NodeName at 127.0.0.1).
#
# Checked, per fabric (fat tree k=4 3-level, stampede-small):
#   - topoquery slurm -o writes topology.conf;
#   - slurmctld starts with it and logs no topology error (an unknown node or
#     switch, a bad line) and no fatal; it knows every simulated host;
#   - `scontrol show topology` lists exactly the switches of topology.conf,
#     each with the same child switches, its nodes (hostlists expanded by
#     `scontrol show hostnames`, Slurm's own parser) = those of topology.conf
#     for a leaf and the union below it for an upper switch, and Slurm's
#     Level (0 = leaf) = height in the tree = depth-1 - topod's level (the
#     cluster of that name in `topoquery --json tree`);
#   - ground truth from fabgen's --meta: the leaf switches' node sets are the
#     fabric's leaf switches' host sets, every host under one leaf; on the
#     3-level tree the level-1 switches' node sets are the pods.
# Skips (exit 0) without slurmctld/scontrol/munged or ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
TQ=$ROOT/build/bin/topoquery
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for t in slurmctld scontrol munged ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
for f in "$TQ" "$ROOT/build/bin/topod" "$ROOT/build/lib/libosmtopo.so"; do
	[ -e "$f" ] || { nok "$f built (make all)"; exit 1; }
done

. tests/lab/lab.sh
. tests/lib/slurm.bash
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TOPOD_PID=
MUNGED_PID=
CTLD_PID=

# stop PID SECS: TERM, then KILL if it is still there after SECS.
stop() {
	local p=$1 i
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	return 0
}
# lab_teardown calls this (EXIT/INT/TERM) before killing the lab's processes.
# slurmctld saves its state on TERM, which takes a moment.
lab_user_cleanup() {
	stop "$CTLD_PID" 10
	stop "$MUNGED_PID" 5
	stop "$TOPOD_PID" 5
	CTLD_PID=""
	MUNGED_PID=""
	TOPOD_PID=""
}

# The lab's watchdog also stops what is listed in $LAB_DIR/pids (if it still
# carries this lab's IBSIM_SOCKNAME) when this shell dies without its traps,
# e.g. by SIGKILL; the traps above cover every other way out.
watch() {
	echo "$1" >>"$LAB_DIR/pids"
}

# start_slurm DIR: munged + slurmctld for DIR/etc/slurm.conf; 0 when
# `scontrol ping` says UP.
start_slurm() {
	local d=$1 i
	mkdir -p "$d/munge" "$d/state" "$d/spool" || return 1
	# munged refuses a socket whose directories others cannot traverse.
	chmod 711 "$d" && chmod 755 "$d/munge" || return 1
	if command -v mungekey >/dev/null 2>&1; then
		mungekey -c -k "$d/munge/key" >/dev/null 2>&1 || return 1
	else
		dd if=/dev/urandom of="$d/munge/key" bs=1024 count=1 2>/dev/null || return 1
		chmod 600 "$d/munge/key"
	fi
	munged -F --socket="$d/munge/sock" --key-file="$d/munge/key" --pid-file="$d/munge/pid" \
		--log-file="$d/munge/log" --seed-file="$d/munge/seed" >"$d/munged.out" 2>&1 </dev/null &
	MUNGED_PID=$!
	watch "$MUNGED_PID"
	for ((i = 0; i < 50; i++)); do
		[ -S "$d/munge/sock" ] && break
		kill -0 "$MUNGED_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -S "$d/munge/sock" ]; then
		echo "# munged did not start:"
		sed 's/^/#   /' "$d/munged.out" | tail -5
		return 1
	fi
	local nodes
	nodes=$(python3 -c 'import json, sys
for h in sorted(json.load(open(sys.argv[1]))["hosts"]):
    print("NodeName=%s NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN" % h)' "$d/f.json") || return 1
	printf '%s\n' "$nodes" >"$d/nodes.conf"
	export SLURM_CONF=$d/etc/slurm.conf
	slurm_ctld_start "$d" slurm_conf
}

# slurm_conf CTLD-PORT SLURMD-PORT: $SLURM_CONF for the nodes in $d/nodes.conf.
slurm_conf() {
	sed -e "s|@DIR@|$d|g" -e "s|@USER@|$(id -un)|" -e "s|@MUNGE_SOCKET@|$d/munge/sock|" \
		-e "s|@CTLD_PORT@|$1|" -e "s|@SLURMD_PORT@|$2|" \
		-e "/^@NODES@\$/{r $d/nodes.conf" -e 'd}' \
		"$ROOT/tests/slurm/slurm.conf.in" >"$SLURM_CONF"
}

# fabric LABEL EXPECT-DEPTH FABGEN-ARGS...
fabric() {
	local label=$1 depth=$2
	shift 2
	lab_init || { nok "$label: lab_init"; return; }
	local d=$LAB_DIR t0=$SECONDS
	mkdir -p "$d/etc"
	if ! lab_fabgen "$@"; then
		nok "$label: fabgen $*"
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
	# lab_bring_up returned once topod served the plugin's snapshot.
	local S=127.0.0.1:$port gen
	gen=$("$TQ" -s "$S" info 2>/dev/null | sed -n 's/^generation //p')
	if [ -z "$gen" ] || [ "$gen" = 0 ]; then
		nok "$label: topod has the fabric"
		lab_teardown
		return
	fi

	# Slurm reads topology.conf from slurm.conf's directory.
	if "$TQ" -s "$S" slurm -o "$d/etc/topology.conf" 2>"$d/tq.err" && [ -s "$d/etc/topology.conf" ]; then
		ok "$label: topoquery slurm -o topology.conf ($(grep -c '^SwitchName=' "$d/etc/topology.conf") switches)"
	else
		nok "$label: topoquery slurm -o topology.conf: $(cat "$d/tq.err")"
		lab_teardown
		return
	fi

	local t1=$SECONDS
	if start_slurm "$d"; then
		ok "$label: munged + slurmctld (topology/tree) up on loopback ($((SECONDS - t1)) s)"
	else
		nok "$label: munged + slurmctld (topology/tree) up on loopback"
		lab_teardown
		return
	fi
	# Slurm logs topology.conf problems as errors and carries on (an unknown
	# node) or dies (an unknown switch): either is a bad file.
	local bad
	bad=$(grep -hE 'fatal|error: .*(_find_node_record|[Ss]witch|[Tt]opolog|topology\.conf|Parse)' \
		"$d/slurmctld.out" "$d/slurmctld.log" 2>/dev/null)
	if [ -z "$bad" ]; then
		ok "$label: slurmctld logs no topology error"
	else
		nok "$label: slurmctld logs no topology error"
		printf '%s\n' "$bad" | head -5 | sed 's/^/# /'
	fi
	local nn
	scontrol -o show nodes 2>/dev/null | sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' >"$d/slurm.nodes"
	nn=$(wc -l <"$d/slurm.nodes")
	if [ "$nn" = "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$d/f.json")" ]; then
		ok "$label: slurmctld knows all $nn simulated hosts"
	else
		nok "$label: slurmctld knows all simulated hosts ($nn)"
	fi
	if scontrol show topology >"$d/scontrol.topology" 2>"$d/scontrol.err" && [ -s "$d/scontrol.topology" ]; then
		ok "$label: scontrol show topology"
	else
		nok "$label: scontrol show topology: $(head -3 "$d/scontrol.err")"
		lab_teardown
		return
	fi

	"$TQ" -s "$S" --json tree >"$d/tree.json" 2>/dev/null || nok "$label: topoquery --json tree"
	python3 - "$label" "$d/f.json" "$d/etc/topology.conf" "$d/scontrol.topology" "$depth" "$d/slurm.nodes" \
		"$d/tree.json" <<'EOF' || failed=$((failed + 1))
import json, re, subprocess, sys

label, meta, confp, showp, depth, nodesp, treep = sys.argv[1:]
depth = int(depth)
m = json.load(open(meta))
failed = 0


def check(c, what):
    global failed
    print(("ok - " if c else "not ok - ") + label + ": " + what, flush=True)
    failed += not c
    return c


cache = {}


def expand(expr):
    """Slurm's own reading of a hostlist expression."""
    if expr not in cache:
        r = subprocess.run(["scontrol", "show", "hostnames", expr], capture_output=True, text=True, timeout=30)
        if r.returncode:
            print("# scontrol show hostnames %s: %s" % (expr, r.stderr.strip()))
            cache[expr] = None
        else:
            cache[expr] = frozenset(r.stdout.split())
    return cache[expr]


def parse(path):
    """SwitchName=X [Level=N] [LinkSpeed=N] [Nodes=...] [Switches=a,b] lines."""
    sws = {}
    for line in open(path):
        line = line.strip()
        if not line.startswith("SwitchName="):
            continue
        kv = dict(w.split("=", 1) for w in line.split())
        sws[kv["SwitchName"]] = {
            "level": int(kv["Level"]) if "Level" in kv else None,
            "nodes": expand(kv["Nodes"]) if kv.get("Nodes") else frozenset(),
            "switches": frozenset(kv["Switches"].split(",")) if kv.get("Switches") else frozenset(),
        }
    return sws


conf, show = parse(confp), parse(showp)
check(len(conf) > 0 and set(conf) == set(show), "scontrol shows the %d switches of topology.conf (%d)" % (len(conf), len(show)))
common = sorted(set(conf) & set(show))
check(all(conf[s]["switches"] == show[s]["switches"] for s in common), "every switch has the same child switches")

# what each switch covers, from topology.conf alone
memo = {}


def below(s):
    if s not in memo:
        memo[s] = conf[s]["nodes"].union(*[below(c) for c in conf[s]["switches"] if c in conf])
    return memo[s]


def height(s):
    return 1 + max(height(c) for c in conf[s]["switches"]) if conf[s]["switches"] else 0


# A leaf's Nodes= in scontrol echoes topology.conf's text; an upper switch's
# comes from the node bitmaps Slurm built, so it shows what Slurm understood.
known = set(open(nodesp).read().split())
named = set().union(*[show[s]["nodes"] for s in show])
check(named <= known, "every node in scontrol's topology is a configured node%s" % (
    " - unknown: %s" % sorted(named - known)[:3] if named - known else ""))
bad = [s for s in common if show[s]["nodes"] != below(s)]
check(not bad, "each switch's nodes in scontrol = topology.conf's (the union below it for an upper switch)%s" % (
    " - differ: %s" % bad[:3] if bad else ""))
bad = [s for s in common if show[s]["level"] != height(s)]
check(not bad, "Slurm's Level = height in the tree (leaves 0)%s" % (" - differ: %s" % bad[:3] if bad else ""))
try:
    tree = json.load(open(treep))
except ValueError:
    tree = {"clusters": []}
lvl = {c["name"]: c["level"] for c in tree["clusters"] if c.get("name") in conf}
check(len(lvl) == len(conf) and all(show[s]["level"] == depth - 1 - lvl[s] for s in common),
      "Slurm's Level = %d - topod's level (the cluster of that name in the tree)" % (depth - 1))
check(all(re.match(r"^ibsw-", s) for s in conf), "every switch is named after a fabric switch (ibsw-*)")

# the fabric itself
hosts = set(m["hosts"])
leaf = {h: m["hosts"][h][0]["switch"] for h in hosts}
want = sorted(sorted(h for h in hosts if leaf[h] == l) for l in set(leaf.values()))
leaves = [s for s in common if show[s]["level"] == 0]
got = sorted(sorted(show[s]["nodes"]) for s in leaves)
check(got == want, "the %d leaf switches' nodes are the fabric's %d leaf switches' hosts" % (len(got), len(want)))
allnodes = [h for s in leaves for h in show[s]["nodes"]]
check(len(allnodes) == len(set(allnodes)) == len(hosts) and set(allnodes) == hosts,
      "every one of the %d hosts under exactly one leaf switch" % len(hosts))
roots = [s for s in common if not any(s in conf[p]["switches"] for p in conf)]
check(len(roots) == 1 and show[roots[0]]["nodes"] == hosts, "one root switch covering every host")
if depth == 3:
    sw = {s["node"]: s for s in m["switches"]}
    pods = sorted(sorted(h for h in hosts if sw[leaf[h]]["coords"][0] == p)
                  for p in {sw[leaf[h]]["coords"][0] for h in hosts})
    got = sorted(sorted(show[s]["nodes"]) for s in common if show[s]["level"] == 1)
    check(got == pods, "the %d level-1 switches' nodes are the fabric's %d pods" % (len(got), len(pods)))
sys.exit(1 if failed else 0)
EOF
	unset SLURM_CONF
	echo "# $label: $((SECONDS - t0)) s"
	lab_teardown
}

fabric "fat tree k=4, 3 levels" 3 fattree --k 4 --levels 3
fabric "5:4 over-subscribed (stampede-small)" 2 stampede-small
[ "$failed" -eq 0 ]
