#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# t_profiler.sh - topoprof (build/lib/libtopoprof.so, LD_PRELOADed into
# unmodified MPI programs) under `mpirun --oversubscribe` against a real
# topod serving real OpenSM routes of a simulated fat tree:
#   ibsim (k=4, 3 levels) -> OpenSM + the osmtopo plugin -> topod
#   -> rank 0 of the job (libtii, at MPI_Finalize) -> PREFIX.{txt,json,svg}
# Ranks stand for simulated hosts through TII_HOSTMAP (as in t_mpi.sh).
#
# The programs (tests/mpi/prof_stencil.c, prof_alltoall.c) tally by hand
# what each rank sent and print it ("truth" lines). Checked:
#   - the report's point-to-point and collective totals (bytes, messages)
#     equal the programs' sums exactly; traffic sent between
#     MPI_Pcontrol(0) and (1) is not counted;
#   - the hop split equals the split computed from `topoquery matrix` (topod's
#     hop matrix) and the programs' per-pair truth, p2p and collective apart;
#   - the split by fabric level equals fabgen's ground truth (same host,
#     same leaf switch = level 2, same pod = level 1, else level 0);
#   - the most loaded links equal the loads computed from `topoquery path`
#     for every host pair (an independent route source);
#   - the SVG pictures render to PNG (rsvg-convert);
#   - a job whose topod is down, and one with a host topod does not know,
#     exit 0 with a report that says why it has no fabric part, totals intact;
#   - MPI_Pcontrol(2) writes a report of the traffic so far;
#   - a program that links libtii itself (tii_split) runs with the profiler
#     preloaded, its collectives counted;
#   - topoquery profile prints a report and compares two.
# Skips (exit 0) without mpirun, ibsim or opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
TQ=$ROOT/build/bin/topoquery
LIB=$ROOT/build/lib/libtopoprof.so
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for t in mpicc mpirun ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
for f in "$TQ" "$ROOT/build/bin/topod" "$ROOT/build/lib/libosmtopo.so" "$LIB" \
	"$ROOT/build/tests/mpi/prof_stencil" "$ROOT/build/tests/mpi/prof_alltoall"; do
	[ -e "$f" ] || { nok "$f built (make all tests)"; exit 1; }
done
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TOPOD_PID=
MPI_PID=
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

# mpi OUT ERR MPIRUN-ARGS...: bounded, in the background so signals reach the cleanup.
mpi() {
	local out=$1 err=$2 rc
	shift 2
	timeout 90 mpirun "$@" >"$out" 2>"$err" </dev/null &
	MPI_PID=$!
	echo "$MPI_PID" >>"$LAB_DIR/pids"
	wait "$MPI_PID"
	rc=$?
	MPI_PID=
	return $rc
}

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
if ! lab_fabgen fattree --k 4 --levels 3; then
	nok "fabgen"
	exit 1
fi
if ! lab_bring_up "$d/f.net" ftree "root_guid_file $d/roots"; then
	nok "ibsim, topod and OpenSM with the plugin (logs in $d)"
	exit 1
fi
TOPOD_PID=$LAB_TOPOD_PID
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT

# 8 hosts: 2, 2, 1, 1, 2 from leaves 0, 1, 2, 4, 7 (two pods and more), shuffled.
python3 - "$d/f.json" >"$d/hosts8" <<'EOF' || { nok "pick hosts"; exit 1; }
import json, random, sys
m = json.load(open(sys.argv[1]))
leaf = {h: v[0]["switch"] for h, v in m["hosts"].items()}
leaves = sorted(set(leaf.values()))
hosts = []
for i, k in ((0, 2), (1, 2), (2, 1), (4, 1), (7, 2)):
    hosts += sorted(h for h in leaf if leaf[h] == leaves[i])[:k]
random.Random(11).shuffle(hosts)
print("\n".join(hosts))
EOF
mapfile -t H <"$d/hosts8"
# map files: one host per rank, and two ranks per host (rank r on host r/2)
printf '%s\n' "# rank -> host" "${H[@]}" >"$d/one.map"
{ echo "# two ranks per host"; for r in 0 1 2 3 4 5 6 7; do echo "${H[$((r / 2))]}"; done; } >"$d/two.map"

# run LABEL PROGRAM MAP PREFIX [extra mpirun args]
run() {
	local label=$1 prog=$2 map=$3 prefix=$4 rc=0
	shift 4
	mpi "$prefix.out" "$prefix.err" --oversubscribe -np 8 -x TII_SERVERS="${SERVERS:-$TII_SERVERS}" -x TII_HOSTMAP="$map" \
		-x LD_PRELOAD="$LIB" -x TOPOPROF_OUT="$prefix" "$@" "$ROOT/build/tests/mpi/$prog" || rc=$?
	if [ "$rc" -eq 0 ] && [ "$(grep -c '^truth ' "$prefix.out")" -eq 8 ] && [ -s "$prefix.json" ]; then
		ok "$label: mpirun exits 0, 8 truth lines, a report"
	else
		nok "$label: mpirun exits $rc (124 = hung), 8 truth lines, a report in $prefix.json"
		sed 's/^/# /' "$prefix.err" | head -20
		return 1
	fi
}

# check.py LABEL PREFIX MAP FULL(1|0): the report against the truth.
cat >"$d/check.py" <<'EOF'
import collections, json, subprocess, sys

label, prefix, mapf, full, tq, meta = sys.argv[1:]
full = full == "1"
failed = 0


def check(c, what):
    global failed
    print(("ok - " if c else "not ok - ") + label + ": " + what, flush=True)
    failed += not c
    return c


hosts = [l.strip() for l in open(mapf) if l.strip() and not l.startswith("#")]
rep = json.load(open(prefix + ".json"))
truth = {"p2p": {}, "coll": {}}   # (src, dst) -> [bytes, msgs]
# Records, not lines: MPICH's Hydra may glue two ranks' lines together.
import re
for rec in re.findall(r"truth (rank=\d+ p2p=[0-9:,]* coll=[0-9:,]*)", open(prefix + ".out").read()):
    f = dict(kv.split("=", 1) for kv in rec.split())
    s = int(f["rank"])
    for k in ("p2p", "coll"):
        for e in filter(None, f.get(k, "").split(",")):
            w, b, m = map(int, e.split(":"))
            truth[k][(s, w)] = [b, m]
tot = {k: [sum(v[0] for v in truth[k].values()), sum(v[1] for v in truth[k].values())] for k in truth}
check([rep["p2p"]["bytes"], rep["p2p"]["messages"]] == tot["p2p"],
      "point-to-point totals %s = the program's %s" % ([rep["p2p"]["bytes"], rep["p2p"]["messages"]], tot["p2p"]))
check([rep["collective"]["bytes"], rep["collective"]["messages"]] == tot["coll"] and rep["collective"]["logical"],
      "collective (logical) totals %s = the program's %s" % (
          [rep["collective"]["bytes"], rep["collective"]["messages"]], tot["coll"]))
rh = [rep["hosts"][i] for i in rep["rank_host"]]
check(rh == hosts, "every rank is on its mapped host")

uniq = list(dict.fromkeys(hosts))
if full:
    r = subprocess.run([tq, "--json", "matrix"] + uniq, capture_output=True, text=True, timeout=60)
    mx = json.loads(r.stdout)
    hop = {(a, b): mx["hops"][i][j] for i, a in enumerate(mx["hosts"]) for j, b in enumerate(mx["hosts"])}
    check(rep["fabric"]["ok"] and rep["fabric"]["generation"] == mx["generation"],
          "fabric part from generation %s (topoquery: %s)" % (rep["fabric"]["generation"], mx["generation"]))
else:
    hop = None
    check(not rep["fabric"]["ok"] and rep["fabric"]["why"], "no fabric part, and why: %s" % rep["fabric"]["why"])


def cls(a, b):
    if hosts[a] == hosts[b]:
        return 0
    if hop is None:
        return -1
    return hop[(hosts[a], hosts[b])]


m = json.load(open(meta))
leaf = {h: m["hosts"][h][0]["switch"] for h in uniq if h in m["hosts"]}
sw = {s["node"]: s for s in m["switches"]}
pod = {h: sw[leaf[h]]["coords"][0] for h in leaf}


def level(a, b):
    ha, hb = hosts[a], hosts[b]
    if ha == hb:
        return -1
    if not full:
        return -2
    return 2 if leaf[ha] == leaf[hb] else 1 if pod[ha] == pod[hb] else 0


for k, key in (("p2p", "p2p"), ("coll", "collective")):
    want = collections.Counter()
    wantm = collections.Counter()
    wl, wlm = collections.Counter(), collections.Counter()
    for (s, w), (b, msgs) in truth[k].items():
        want[cls(s, w)] += b
        wantm[cls(s, w)] += msgs
        wl[level(s, w)] += b
        wlm[level(s, w)] += msgs
    got = {e["hops"]: (e["bytes"], e["messages"]) for e in rep[key]["by_hops"]}
    exp = {c: (want[c], wantm[c]) for c in want if want[c] or wantm[c]}
    check(got == exp, "%s split by hops %s = topod's hop matrix x the program's pairs %s" % (key, sorted(got.items()), sorted(exp.items())))
    gotl = {e["level"]: (e["bytes"], e["messages"]) for e in rep[key]["by_level"]}
    expl = {c: (wl[c], wlm[c]) for c in wl if wl[c] or wlm[c]}
    check(gotl == expl, "%s split by fabric level %s = fabgen's leaves and pods %s" % (key, sorted(gotl.items()), sorted(expl.items())))

if full:
    # link loads from `topoquery path` for every host pair that carried bytes
    pair = collections.Counter()
    for k in truth:
        for (s, w), (b, _) in truth[k].items():
            if hosts[s] != hosts[w]:
                pair[(hosts[s], hosts[w])] += b
    load = collections.Counter()
    for (a, b), by in pair.items():
        r = subprocess.run([tq, "--json", "path", a, b], capture_output=True, text=True, timeout=60)
        ends = [a] + [s["guid"] for s in json.loads(r.stdout)["switches"]] + [b]
        for x, y in zip(ends, ends[1:]):
            load[(x, y)] += by
    top = rep["links"]["top"]
    check(rep["links"]["ok"] and rep["links"]["loaded"] == len(load),
          "links: %s loaded links (topoquery path: %d)" % (rep["links"]["loaded"], len(load)))
    check(len(top) > 0 and all(load[(t["from"], t["to"])] == t["bytes"] for t in top)
          and [t["bytes"] for t in top] == sorted(load.values(), reverse=True)[:len(top)],
          "links: the %d most loaded links and their bytes = loads along topoquery path routes (top %s)" % (
              len(top), top[0]["bytes"] if top else None))
    check(all(sum(f["bytes"] for f in t["flows"]) <= t["bytes"] and t["flows"] for t in top),
          "links: each names the host flows behind it")
else:
    check(not rep["links"]["ok"], "no link part: %s" % rep["links"]["why"])
sys.exit(1 if failed else 0)
EOF

render() {   # render LABEL PREFIX: every SVG to PNG
	local label=$1 p=$2 s bad=
	if ! command -v rsvg-convert >/dev/null 2>&1; then
		echo "ok - $label: SVG rendering # SKIP rsvg-convert missing (librsvg2-bin)"
		return
	fi
	for s in hops heatmap links hosts; do
		rsvg-convert -o "$p-$s.png" "$p-$s.svg" 2>"$p-$s.rsvg.err" && [ -s "$p-$s.png" ] || bad="$bad $s"
	done
	[ -z "$bad" ] && ok "$label: hop histogram, heatmap, link loads and per-host histogram render to PNG" ||
		nok "$label: SVG does not render:$bad"
}

t0=$SECONDS
if run "stencil, 2 ranks per host" prof_stencil "$d/two.map" "$d/st"; then
	python3 "$d/check.py" "stencil" "$d/st" "$d/two.map" 1 "$TQ" "$d/f.json" || failed=$((failed + 1))
	render "stencil" "$d/st"
fi
if run "alltoall, 8 hosts" prof_alltoall "$d/one.map" "$d/a2a"; then
	python3 "$d/check.py" "alltoall" "$d/a2a" "$d/one.map" 1 "$TQ" "$d/f.json" || failed=$((failed + 1))
	render "alltoall" "$d/a2a"
	grep -q "^topoprof: report in $d/a2a.txt" "$d/a2a.err" && ok "alltoall: rank 0 names the report" ||
		nok "alltoall: rank 0 names the report on stderr"
	# MPI_Pcontrol(2) after the point-to-point phase: a report of just that
	python3 -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sys.exit(0 if a["p2p"] == b["p2p"] and a["collective"]["bytes"] == 0 and b["collective"]["bytes"] > 0 else 1)' \
		"$d/a2a.1.json" "$d/a2a.json" && ok "alltoall: MPI_Pcontrol(2) wrote a2a.1.* with the point-to-point traffic so far" ||
		nok "alltoall: MPI_Pcontrol(2) report a2a.1.json = the point-to-point part"
fi

# MPI_THREAD_MULTIPLE: 4 threads per rank send at once, each the first
# message on a fresh communicator (so they miss the profiler's translation
# cache together); every message counted, TOPOPROF_QUIET honoured.
if [ -x "$ROOT/build/tests/mpi/prof_threads" ]; then
	rc=0
	mpi "$d/thr.out" "$d/thr.err" --oversubscribe -np 4 -x LD_PRELOAD="$LIB" -x TOPOPROF_OUT="$d/thr" \
		-x TOPOPROF_QUIET=1 -x TII_SERVERS=127.0.0.1:1 "$ROOT/build/tests/mpi/prof_threads" || rc=$?
	if grep -q "^skip" "$d/thr.out"; then
		echo "skip - MPI_THREAD_MULTIPLE: $(grep '^skip' "$d/thr.out")"
	elif [ "$rc" -eq 0 ] && python3 - "$d/thr" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1] + ".json"))
tot = [0, 0]
for rec in re.findall(r"truth (rank=\d+ p2p=[0-9:,]* coll=[0-9:,]*)", open(sys.argv[1] + ".out").read()):
    f = dict(kv.split("=", 1) for kv in rec.split())
    for e in filter(None, f["p2p"].split(",")):
        w, b, m = map(int, e.split(":"))
        tot[0] += b
        tot[1] += m
ok = [rep["p2p"]["bytes"], rep["p2p"]["messages"]] == tot and tot[1] == 640
print("# report %s, truth %s" % ([rep["p2p"]["bytes"], rep["p2p"]["messages"]], tot))
sys.exit(0 if ok else 1)
PY
	then
		ok "MPI_THREAD_MULTIPLE: 640 messages from 4 threads per rank on fresh communicators, all counted"
	else
		nok "MPI_THREAD_MULTIPLE: exit $rc, totals differ"
	fi
	grep -q "topoprof: report in" "$d/thr.err" && nok "TOPOPROF_QUIET=1 still printed a report line" ||
		ok "TOPOPROF_QUIET=1: no report line, also when the report has no fabric part"
fi

# MPICH (mpiexec.mpich, Hydra's fork launcher): the MPICH build of the
# profiler gives the same report, checked the same way; the Open MPI build
# preloaded into an MPICH program stops at once and says which to use
# (before: every rank died with "Invalid communicator").
if command -v mpiexec.mpich >/dev/null && [ -x "$ROOT/build/tests/mpich/prof_alltoall" ]; then
	rc=0
	mpiexec() { timeout 90 mpiexec.mpich -launcher fork "$@" </dev/null; }
	mpiexec -n 8 -genv TII_SERVERS "$TII_SERVERS" -genv TII_HOSTMAP "$d/one.map" \
		-genv LD_PRELOAD "$ROOT/build/lib/mpich/libtopoprof.so" -genv TOPOPROF_OUT "$d/mpich" \
		"$ROOT/build/tests/mpich/prof_alltoall" >"$d/mpich.out" 2>"$d/mpich.err" || rc=$?
	# Hydra may glue two ranks' lines: count the records, not the lines.
	if [ "$rc" -eq 0 ] && [ "$(grep -o 'truth rank=' "$d/mpich.out" | wc -l)" -eq 8 ] && [ -s "$d/mpich.json" ]; then
		ok "MPICH: mpiexec.mpich with the MPICH build exits 0, 8 truth lines, a report"
		python3 "$d/check.py" "MPICH alltoall" "$d/mpich" "$d/one.map" 1 "$TQ" "$d/f.json" || failed=$((failed + 1))
	else
		nok "MPICH: mpiexec.mpich with the MPICH build: exit $rc"
		sed 's/^/# /' "$d/mpich.err" | head
	fi
	rc=0
	mpiexec -n 2 -genv LD_PRELOAD "$LIB" "$ROOT/build/tests/mpich/prof_alltoall" >"$d/wrong.out" 2>"$d/wrong.err" || rc=$?
	[ "$rc" -ne 0 ] && grep -q "built for Open MPI, but the program runs MPICH; preload the MPICH build" "$d/wrong.err" &&
		ok "MPICH: the Open MPI build preloaded into an MPICH program stops with a message naming the MPICH build" ||
		{ nok "MPICH: the Open MPI build under MPICH (exit $rc)"; sed 's/^/# /' "$d/wrong.err" | head -3; }
else
	nok "MPICH: mpiexec.mpich or build/tests/mpich missing (make deps installs mpich)"
fi

# A program that links libtii itself (tests/mpi/tii_split.c, which asks
# topod too): the preloaded profiler's own libtii is local to it, so both
# work; every rank calls MPI_Gather once and MPI_Allreduce twice.
if [ -x "$ROOT/build/tests/mpi/tii_split" ]; then
	rc=0
	mpi "$d/split.out" "$d/split.err" --oversubscribe -np 8 -x TII_SERVERS -x TII_HOSTMAP="$d/one.map" \
		-x LD_PRELOAD="$LIB" -x TOPOPROF_OUT="$d/split" "$ROOT/build/tests/mpi/tii_split" || rc=$?
	if [ "$rc" -eq 0 ] && [ "$(grep -c '^tii_split rank=' "$d/split.out")" -eq 16 ] &&
		python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["collective"]["calls"]; sys.exit(0 if c.get("gather")==8 and c.get("allreduce")==16 else 1)' "$d/split.json"; then
		ok "a program linking libtii itself runs with the profiler preloaded (8 gathers, 16 allreduces counted)"
	else
		nok "tii_split with the profiler preloaded: exit $rc, lines, calls"
		sed 's/^/# /' "$d/split.err" | head
	fi
fi

# A host topod does not know: partial report, a clear message, exit 0.
sed '4s/.*/nosuch-host-17/' "$d/one.map" >"$d/bad.map"
if run "unknown host" prof_alltoall "$d/bad.map" "$d/bad"; then
	python3 "$d/check.py" "unknown host" "$d/bad" "$d/bad.map" 0 "$TQ" "$d/f.json" || failed=$((failed + 1))
	grep -q "^topoprof: report in .*WITHOUT its fabric part: .*nosuch-host-17" "$d/bad.err" &&
		grep -q "^fabric: NONE - .*nosuch-host-17" "$d/bad.txt" &&
		ok "unknown host: stderr and the report name the unknown host" ||
		{ nok "unknown host: stderr and the report name the unknown host"; sed 's/^/# /' "$d/bad.err" | head; }
fi

# topod down: a port nobody listens on.
if SERVERS=127.0.0.1:1 run "topod down" prof_stencil "$d/two.map" "$d/down"; then
	python3 "$d/check.py" "topod down" "$d/down" "$d/two.map" 0 "$TQ" "$d/f.json" || failed=$((failed + 1))
	grep -q "WITHOUT its fabric part: .*127.0.0.1:1.*onnect" "$d/down.err" &&
		ok "topod down: rank 0 says topod could not be reached" ||
		{ nok "topod down: rank 0 says topod could not be reached"; sed 's/^/# /' "$d/down.err" | head; }
	render "topod down" "$d/down"
fi

# topoquery profile: print one report, compare two.
if "$TQ" profile "$d/a2a.json" >"$d/tq1.out" 2>&1 && grep -q "point-to-point" "$d/tq1.out"; then
	ok "topoquery profile REPORT prints it"
else
	nok "topoquery profile REPORT"; sed 's/^/# /' "$d/tq1.out" | head
fi
# the same program and placement with and without the fabric: equal totals
# and intra-host bytes, the rest moved from the hop classes to "unknown"
cat >"$d/cmp.py" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2])]
tot = [x for x in rows if x[:1] == ["total"]]
intra = [x for x in rows if x[:1] == ["intra-host"]]
ih = [e["bytes"] for e in r["p2p"]["by_hops"] if e["hops"] == 0][0]
p = r["p2p"]
ok = (len(tot) == 2 and tot[0] == ["total", str(p["bytes"]), str(p["messages"]), str(p["bytes"]), str(p["messages"]), "+0"]
      and intra[0][1] == str(ih) and intra[0][4] == str(ih) and intra[0][-1] == "+0")
sys.exit(0 if ok else 1)
EOF
if "$TQ" profile "$d/st.json" "$d/down.json" >"$d/tq2.out" 2>&1 && python3 "$d/cmp.py" "$d/st.json" "$d/tq2.out"; then
	ok "topoquery profile A B compares them (totals, intra-host bytes equal; B-A +0)"
else
	nok "topoquery profile A B"; sed 's/^/# /' "$d/tq2.out" | head
fi
"$TQ" profile "$d/nosuch.json" >/dev/null 2>"$d/tq3.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "nosuch.json" "$d/tq3.err" && ok "topoquery profile: a missing report is exit 1" ||
	nok "topoquery profile: a missing report is exit $rc"
echo "# $((SECONDS - t0)) s of MPI runs; reports in $d (LAB_KEEP=1 keeps them)"
unset TII_SERVERS
lab_teardown
[ "$failed" -eq 0 ]
