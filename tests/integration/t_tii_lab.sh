#!/usr/bin/env bash
# t_tii_lab.sh - libtii (through topoquery, which uses only tii.h) against
# topod serving real OpenSM routes on simulated fabrics:
#   ibsim fabric -> OpenSM + the osmtopo plugin -> topod -> topoquery
# For each fabric, checked against fabgen's description of it (--meta):
#   - info counts; depth (3 on a 3-level fat tree, 2 on a 2-level tree);
#   - clusters at the leaf level partition the hosts exactly as the leaf
#     switches do, and on the 3-level tree the level-1 clusters are the pods;
#   - the hop matrix of every host: 1 on a leaf, 3 within a pod / across a
#     2-level tree, 5 across pods; paths start and end at the right leaves;
#   - link sharing: none on a full-bisection fat tree; hosts share uplinks
#     on the 5:4 over-subscribed tree (seed section 6.1);
#   - slurm topology.conf: each leaf switch's hosts under one Nodes= line,
#     every host once, one tree; dot output structure;
#   - failover: a dead first server, the answer from topod.
# And every libtii call (build/tests/clients/tii_check's "every" scenario: each
# answer checked against the others) plus topoquery tree and slurm on a
# multi-rail fat tree routed with LMC 1 (two LIDs per port).
# Skips (exit 0) without ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
TQ=$ROOT/build/bin/topoquery
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
for f in "$TQ" "$ROOT/build/bin/topod" "$ROOT/build/lib/libosmtopo.so"; do
	[ -e "$f" ] || { nok "$f built (make all)"; exit 1; }
done

. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TOPOD_PID=
# lab_teardown calls this (EXIT/INT/TERM) before killing the lab's processes.
lab_user_cleanup() {
	if [ -n "$TOPOD_PID" ]; then
		kill -TERM "$TOPOD_PID" 2>/dev/null
		wait "$TOPOD_PID" 2>/dev/null
		TOPOD_PID=
	fi
}

# fabric LABEL EXPECT-DEPTH SHARING(none|some) FABGEN-ARGS...
fabric() {
	local label=$1 depth=$2 sharing=$3
	shift 3
	lab_init || { nok "$label: lab_init"; return; }
	local d=$LAB_DIR
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
	local S=127.0.0.1:$port
	python3 - "$label" "$TQ" "$S" "$d/f.json" "$depth" "$sharing" <<'EOF'
import json, re, socket, subprocess, sys

label, tq, S, meta, depth, sharing = sys.argv[1:]
depth = int(depth)
m = json.load(open(meta))
failed = 0


def check(c, what):
    global failed
    print(("ok - " if c else "not ok - ") + label + ": " + what, flush=True)
    failed += not c
    return c


def run(*args, server=S, stdin=None):
    r = subprocess.run([tq, "-s", server] + list(args), capture_output=True, text=True, input=stdin, timeout=120)
    if r.returncode:
        print("# topoquery %s: %s" % (" ".join(args)[:80], r.stderr.strip()))
    return r.returncode, r.stdout


def J(*args):
    rc, out = run("--json", *args)
    return json.loads(out) if rc == 0 else None


hosts = sorted(m["hosts"])
leaf = {h: m["hosts"][h][0]["switch"] for h in hosts}
sw = {s["node"]: s for s in m["switches"]}
guid = {n: int(s["guid"], 16) for n, s in sw.items()}
hf = "\n".join(hosts) + "\n"

info = J("info")
check(info and info["hosts"] == m["counts"]["hosts"] and info["switches"] == m["counts"]["switches"]
      and info["cas"] == m["counts"]["cas"], "info counts hosts %s switches %s" % (
          info and info["hosts"], info and info["switches"]))
d = J("depth")
check(d and d["depth"] == depth, "depth %s (want %d)" % (d and d["depth"], depth))

# leaf-level clusters partition the hosts like the leaf switches
rc, out = run("--json", "clusters", "-L", str(depth - 1), "-f", "-", stdin=hf)
c = json.loads(out) if rc == 0 else None
if check(c is not None, "clusters at the leaf level for %d hosts, one call" % len(hosts)):
    lv = c["levels"][0]
    ids = {h["host"]: h["cluster"] for h in lv["hosts"]}
    same = all((ids[a] == ids[b]) == (leaf[a] == leaf[b]) for a in hosts for b in hosts)
    check(same and lv["count"] == len(set(leaf.values())), "leaf clusters = leaf switches (%d)" % lv["count"])
    colors = sorted({h["color"] for h in lv["hosts"]})
    check(colors == list(range(lv["count"])), "colours are 0..%d" % (lv["count"] - 1))
if depth == 3:
    rc, out = run("--json", "clusters", "1", "-f", "-", stdin=hf)
    c = json.loads(out) if rc == 0 else None
    pod = {h: sw[leaf[h]]["coords"][0] for h in hosts}
    if check(c is not None, "clusters at level 1"):
        ids = {h["host"]: h["cluster"] for h in c["levels"][0]["hosts"]}
        check(all((ids[a] == ids[b]) == (pod[a] == pod[b]) for a in hosts for b in hosts)
              and c["levels"][0]["count"] == len(set(pod.values())), "level-1 clusters = pods (%d)" % len(set(pod.values())))

rc, out = run("--json", "matrix", "-f", "-", stdin=hf)
mat = json.loads(out) if rc == 0 else None
if check(mat is not None and mat["hosts"] == hosts, "hop matrix of all %d hosts" % len(hosts)):
    def want(a, b):
        if a == b:
            return 0
        if leaf[a] == leaf[b]:
            return 1
        if depth == 3 and sw[leaf[a]]["coords"][0] == sw[leaf[b]]["coords"][0]:
            return 3
        return 3 if depth == 2 else 5
    bad = [(a, b, mat["hops"][i][j]) for i, a in enumerate(hosts) for j, b in enumerate(hosts)
           if mat["hops"][i][j] != want(a, b)]
    check(not bad, "hop counts: 1 on a leaf, %s (%d wrong%s)" % (
        "3 in a pod, 5 across" if depth == 3 else "3 across", len(bad), ", e.g. %s" % (bad[:3],) if bad else ""))
    for a, b in ((hosts[0], hosts[1]), (hosts[0], hosts[-1]), (hosts[-1], hosts[len(hosts) // 2])):
        p = J("path", a, b)
        ok = p and p["hops"] == mat["hops"][hosts.index(a)][hosts.index(b)] == len(p["switches"]) \
            and int(p["switches"][0]["guid"], 16) == guid[leaf[a]] \
            and int(p["switches"][-1]["guid"], 16) == guid[leaf[b]] \
            and p["switches"][0]["name"] == leaf[a] and p["switches"][-1]["name"] == leaf[b]
        check(bool(ok), "path %s -> %s: %s hops, from %s to %s" % (a, b, p and p["hops"], leaf[a], leaf[b]))

# sharing: the hosts of two leaf switches
leaves = sorted(set(leaf.values()))
job = [h for h in hosts if leaf[h] in leaves[:2]]
sh = J("shared", *job)
if check(sh is not None, "shared for %d hosts on 2 leaves" % len(job)):
    if sharing == "none":
        check(sh["num_sharing"] == 0, "full bisection: no host shares a link (%d)" % sh["num_sharing"])
    else:
        check(sh["num_sharing"] > 0 and all(len(g["hosts"]) >= 2 for g in sh["groups"]) and
              set(sh["sharing"]) == {h for g in sh["groups"] for h in g["hosts"]},
              "over-subscribed: %d hosts share %d uplinks" % (sh["num_sharing"], len(sh["groups"])))
    check(abs(sh["avg_hosts_per_leaf"] - len(job) / 2) < 0.01 and sh["leaves"] == 2,
          "avg hosts per leaf %.2f" % sh["avg_hosts_per_leaf"])

# slurm: one Nodes= line per leaf switch with exactly its hosts
rc, conf = run("slurm")
if check(rc == 0, "slurm topology.conf"):
    def expand(e):
        out = []
        for w in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", e):
            mm = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", w)
            if not mm:
                out.append(w)
                continue
            for part in mm.group(2).split(","):
                lo, _, hi = part.partition("-")
                for v in range(int(lo), int(hi or lo) + 1):
                    out.extend(expand(mm.group(1) + str(v).zfill(len(lo)) + mm.group(3)))
        return out
    nodes = [set(expand(l.split("Nodes=")[1])) for l in conf.splitlines() if " Nodes=" in l]
    want = [{h for h in hosts if leaf[h] == l} for l in leaves]
    check(sorted(map(sorted, nodes)) == sorted(map(sorted, want)), "one Nodes= line per leaf switch, with its hosts")
    names = [l.split()[0].split("=")[1] for l in conf.splitlines() if l.startswith("SwitchName=")]
    kids = [k for l in conf.splitlines() if " Switches=" in l for k in l.split("Switches=")[1].split(",")]
    check(len([n for n in names if n not in kids]) == 1 and all(k in names for k in kids)
          and all(re.match(r"^[A-Za-z0-9._-]+$", n) for n in names), "one tree, valid switch names")
    check(max(len(l) for l in conf.splitlines()) < 1024, "lines under 1,024 bytes (old Slurm's limit)")
rc, dot = run("tree", "--format", "dot")
tree = J("tree")
check(rc == 0 and tree and dot.startswith("graph topology {") and
      len(set(re.findall(r'"(?:cluster_)?c([0-9]+)"', dot))) == len(tree["clusters"]),
      "tree --format dot: one box per cluster")

s = socket.socket()
s.bind(("127.0.0.1", 0))
dead = "127.0.0.1:%d" % s.getsockname()[1]
s.close()
rc, out = run("depth", server=dead + "," + S)
check(rc == 0 and out == "%d\n" % depth, "a dead first server: topod answers")
sys.exit(1 if failed else 0)
EOF
	[ $? -eq 0 ] || failed=$((failed + 1))
	lab_teardown
}

fabric "fat tree k=4, 3 levels" 3 none fattree --k 4 --levels 3
fabric "5:4 over-subscribed (stampede-small)" 2 some stampede-small

# every_call LABEL OSM-OPTION FABGEN-ARGS...: every libtii call, and
# topoquery tree/slurm, against topod serving OpenSM's routes.
every_call() {
	local label=$1 opt=$2
	shift 2
	lab_init || { nok "$label: lab_init"; return; }
	local d=$LAB_DIR
	if ! lab_fabgen "$@" || ! lab_bring_up "$d/f.net" ftree "root_guid_file $d/roots" "$opt"; then
		nok "$label: ibsim, topod and OpenSM with the plugin (logs in $d)"
		lab_teardown
		return
	fi
	TOPOD_PID=$LAB_TOPOD_PID
	local S=127.0.0.1:$LAB_TOPOD_PORT out
	out=$("$ROOT/build/tests/clients/tii_check" every "$S" 1 none)
	echo "$out" | sed "s/^ok - /ok - $label: /; s/^not ok - /not ok - $label: /"
	echo "$out" | grep -q "^not ok" && failed=$((failed + 1))
	echo "$out" | grep -q "^ok - every: tii_get_tree" || nok "$label: tii_check ran"
	if "$TQ" -s "$S" tree >"$d/tree.txt" && grep -q "^cluster " "$d/tree.txt"; then
		ok "$label: topoquery tree"
	else
		nok "$label: topoquery tree"
	fi
	if "$TQ" -s "$S" slurm >"$d/slurm.conf" && grep -q "^SwitchName=.* Nodes=" "$d/slurm.conf"; then
		ok "$label: topoquery slurm"
	else
		nok "$label: topoquery slurm"
	fi
	# the second rail and the second LID of each port answer like the first
	local h2 lid
	h2=$("$TQ" -s "$S" --json tree | python3 -c 'import json,sys; print(json.load(sys.stdin)["hosts"][1]["name"])')
	if [ -n "$h2" ] && "$TQ" -s "$S" hops "$h2/HCA-2" "$h2/HCA-1" >/dev/null 2>&1; then
		ok "$label: hops between the rails of $h2"
	else
		nok "$label: hops between the rails of $h2"
	fi
	lab_teardown
}
[ -x "$ROOT/build/tests/clients/tii_check" ] || { nok "build/tests/clients/tii_check built (make tests)"; exit 1; }
every_call "multi-rail fat tree k=4, LMC 1" "lmc 1" fattree --k 4 --levels 2 --rails 2
[ "$failed" -eq 0 ]
