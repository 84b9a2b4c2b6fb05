#!/usr/bin/env python3
"""`schedule` end to end on a real topod: a k=8 fat tree snapshot (bench_build's
analytic d-mod-k LFTs, 128 hosts) delivered with topo-snap, then

- the protocol reply: header fields, one STEP line per step, every ordered
  pair of distinct ranks exactly once (checked here, independently of the C
  checker), one send and one receive per rank per step unless multi=1;
- the per-step figures equal a brute-force count over `path` routes;
- OPT: TREE/LEVEL lines, NOTAPPLICABLE on an uneven job; kPrefix needs k | P;
- bad requests: unknown algorithm, bad option, too many ranks, unknown host;
- topoquery schedule (libtii): the same figures as the protocol, and
  --plot FILE.svg renders (rsvg-convert to PNG, non-trivial picture).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import ROOT, Topod, check, done, note, send_snapshot  # noqa: E402

BIN = os.path.join(ROOT, "build", "bin")
d = tt.tmpdir("t_schedule-")
snap = os.path.join(d, "k8.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "8", "128", snap], check=True,
               capture_output=True)
t = Topod(d=d)
rc, out = send_snapshot("sink=unix:" + t.ingest, snap)
check(rc == 0 and t.wait_generation(1), "k=8 snapshot delivered (%s)" % out)

def ask_all(line):
    with t.conn() as c:
        c.send((line + "\n").encode())
        head = c.readline()
        if not head.startswith("OK "):
            return head, []
        n = int(tt.parse_kv(head[3:])["lines"])
        return head, [c.readline() for _ in range(n)]


def parse(head, lines):
    kv = tt.parse_kv(head[3:])
    steps = [l.split() for l in lines if l.startswith("STEP ")]
    return kv, steps


def complete(kv, steps, P):
    seen, ok, multi = set(), True, False
    for st in steps:
        flows = [w for w in st[6:] if ":" in w]
        if len(flows) != int(st[2]):
            ok = False
        srcs, dsts = [], []
        for f in flows:
            a, b = map(int, f.split(":")[:2])
            if a == b or (a, b) in seen or not (0 <= a < P and 0 <= b < P):
                ok = False
            seen.add((a, b))
            srcs.append(a)
            dsts.append(b)
        if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
            multi = True
    return ok and len(seen) == P * (P - 1), multi


hosts = sorted(l.split()[0] for l in ask_all("hosts")[1])
note("%d hosts, e.g. %s" % (len(hosts), hosts[:3]))

# Uneven job: 6 hosts over 3 leaves, 1..4 ranks, interleaved.
job = [hosts[0]] * 3 + [hosts[1]] * 2 + [hosts[5], hosts[0], hosts[9]] + [hosts[20]] * 4 + [hosts[64]] * 2 + [hosts[65]]
spec = " ".join(job)
P = len(job)
# fallback=0: the algorithm as asked (these checks are about its mechanics;
# the advice is checked below).
for algo in ("xor", "tacs1", "tacs2"):
    head, lines = ask_all("schedule %s fallback=0 %s" % (algo, spec))
    if not check(head.startswith("OK "), "%s on %d uneven ranks: %s" % (algo, P, head.strip()[:100])):
        continue
    kv, steps = parse(head, lines)
    ok, multi = complete(kv, steps, P)
    check(ok, "%s: every ordered pair exactly once (%d steps)" % (algo, len(steps)))
    check(int(kv["multi"]) == int(multi), "%s: multi=%s is what the flows show" % (algo, kv["multi"]))
    check(kv["gen"] == "1" and int(kv["steps"]) == len(steps) and kv["requested"] == algo,
          "%s: gen, steps, requested in the header" % algo)

# Figures against a brute-force count over pathmatrix routes (first cable + switch ports).
uniq = sorted(set(job))
route = [(a, b) for a in uniq for b in uniq if a != b]
head, lines = ask_all("schedule tacs1 fallback=0 " + spec)
kv, steps = parse(head, lines)
path_links = {}
for (a, b) in route:
    with t.conn() as c:
        c.send(("path %s %s\n" % (a, b)).encode())
        h = c.readline()
        n = int(tt.parse_kv(h[3:])["lines"])
        hl = [c.readline().split() for _ in range(n)]
    links = [(a, "cable")]
    for w in hl:
        links.append((w[0], [x for x in w if x.startswith("out=")][0]))
    path_links[(a, b)] = links
bad = 0
for st in steps:
    load, pairs = {}, {}
    for f in (w for w in st[6:] if ":" in w):
        x, y = map(int, f.split(":"))
        if job[x] == job[y]:
            continue
        for l in path_links[(job[x], job[y])]:
            load[l] = load.get(l, 0) + 1
            pairs.setdefault(l, set()).add((job[x], job[y]))
    mx = max(load.values()) if load else 0
    conf = sum(1 for v in pairs.values() if len(v) > 1)
    if (mx, conf) != (int(st[3]), int(st[4])):
        bad += 1
        if bad == 1:
            note("step %s: brute max %d conflicts %d, topod %s %s; path sample %s" % (st[1], mx, conf, st[3], st[4], hl[:2]))
check(bad == 0, "tacs1: per-step max load and conflicts (links of two host pairs) equal a brute-force count over `path` routes")

# OPT: homogeneous job = 2 leaves x 4 hosts x 2 ranks in one pod.
opt_job = " ".join("%s*2" % h for h in hosts[0:8])
head, lines = ask_all("schedule opt fallback=0 " + opt_job)
check(head.startswith("OK ") and "algo=opt" in head, "opt on 2 leaves x 4 hosts x 2 ranks: " + head.strip()[:90])
if head.startswith("OK "):
    kv, steps = parse(head, lines)
    check(lines[0].startswith("TREE routes=tree M=2,4,2,1"), "opt: the job's tree " + lines[0].strip())
    check(complete(kv, steps, 16)[0], "opt: a complete exchange")
head, _ = ask_all("schedule opt %s*2 %s" % (hosts[0], hosts[1]))
check(head.startswith("ERR NOTAPPLICABLE"), "opt on 2+1 ranks: " + head.strip()[:100])
head, _ = ask_all("schedule allgather k=4 " + " ".join(hosts[:6]))
check(head.startswith("ERR NOTAPPLICABLE"), "allgather k=4 on 6 ranks: " + head.strip()[:100])
head, lines = ask_all("schedule allgather k=4 " + " ".join(hosts[:8]))
check(head.startswith("OK ") and all(len(w.split(":")) == 3 for l in lines for w in l.split()[6:]),
      "allgather k=4 on 8 ranks: flows carry their block")

# Advice (docs/cost-model.md): every answer carries its predicted time,
# XOR's and the bound; never an answer predicted slower than XOR; the
# fallback says why, and fallback=0 shows the algorithm it replaced.
def us(v):
    return None if v == "-" else float(v)
bad = []
for name, js in (("uneven", spec), ("opt job", opt_job)):
    for algo in ("xor", "tacs1", "tacs2", "opt"):
        head, lines = ask_all("schedule %s %s" % (algo, js))
        asis, alines = ask_all("schedule %s fallback=0 %s" % (algo, js))
        if head.startswith("ERR NOTAPPLICABLE"):
            # OPT refused: not applicable at all, or (with advice) its steps break their bound
            if "breaks its bound" in head:
                ka, _ = parse(asis, alines)
                L = int(ka["levels"])
                bounds = [int(tt.parse_kv(l[6:])["bound"]) for l in alines[1:1 + L]]
                worst = [max(int(x) for x in st.split()[6][1:].split(",")[l] for st in alines[1 + L:] if " L" in st)
                         for l in range(L)] if L else []
                if not any(w > b for w, b in zip(worst, bounds)):
                    bad.append("%s %s refused though within its bound %s %s" % (name, algo, worst, bounds))
            continue
        if not head.startswith("OK "):
            bad.append("%s %s: %s" % (name, algo, head.strip()[:80]))
            continue
        kv = tt.parse_kv(head[3:])
        tm, x, lb = us(kv["time_us"]), us(kv["xor_time_us"]), us(kv["bound_us"])
        if None in (tm, x, lb) or kv["bytes"] != str(1 << 20):
            bad.append("%s %s: times %s %s %s" % (name, algo, tm, x, lb))
            continue
        if tm > x * (1 + 1e-6) + 0.001 or lb > tm * (1 + 1e-6) + 0.001:   # the reply has 3 decimals
            bad.append("%s %s: bound %.1f <= time %.1f <= xor %.1f fails" % (name, algo, lb, tm, x))
        ka = tt.parse_kv(asis[3:]) if asis.startswith("OK ") else {}
        if kv["reason"] == "slower":
            # advice_keeps: replaced when even the most favourable measured
            # error (worst factor 1.23, XOR down to 0.81) may leave it below 0.98x XOR
            if kv["algo"] != "xor" or kv["fallback"] != "xor" or not ka or \
                    us(ka["time_us"]) * 1.23 < max(lb, 0.81 * x) / 0.98 - 0.001:
                bad.append("%s %s: fell back but %s" % (name, algo, asis.strip()[:80]))
        elif kv["algo"] == algo and ka and ka.get("time_us") != kv["time_us"]:
            bad.append("%s %s: advice and fallback=0 disagree" % (name, algo))
check(not bad, "advice: every answer within bound <= time <= XOR's time, fallbacks say why: %s" % bad[:3])
h1, _ = ask_all("schedule tacs1 fallback=0 bytes=1024 " + spec)
h2, _ = ask_all("schedule tacs1 fallback=0 bytes=1048576 " + spec)
t1, t2 = float(tt.parse_kv(h1[3:])["time_us"]), float(tt.parse_kv(h2[3:])["time_us"])
check(0 < t1 < t2 < 1024 * t1, "bytes=: 1 KiB blocks %.2f us, 1 MiB %.1f us (latency weighs on small blocks)" % (t1, t2))

for req, code in (("schedule bogus h", "ERR USAGE"), ("schedule xor conflicts=x %s %s" % (hosts[0], hosts[1]), "ERR USAGE"),
                  ("schedule xor bytes=0 %s %s" % (hosts[0], hosts[1]), "ERR USAGE"), ("schedule xor fallback=2 %s %s" % (hosts[0], hosts[1]), "ERR USAGE"),
                  ("schedule xor %s*5000" % hosts[0], "ERR TOOMANY"), ("schedule xor nosuchhost %s" % hosts[0], "ERR NOTFOUND"),
                  ("schedule xor flows=0 %s*4097" % hosts[0], "ERR TOOMANY"), ("schedule xor %s*20000" % hosts[0], "ERR USAGE"), ("schedule xor %s" % hosts[0], "ERR USAGE")):
    head, _ = ask_all(req)
    check(head.startswith(code), "%s -> %s (%s)" % (req[:50], code, head.strip()[:80]))
head, lines = ask_all("schedule xor flows=0 %s*4096" % hosts[0])
check(head.startswith("OK ") and len(lines) == 4095 and len(lines[0].split()) == 6,
      "flows=0: figures only, 4,096 ranks")

# topoquery (libtii) and the plot.
env = dict(os.environ, TII_SERVERS="127.0.0.1:%d" % t.port)
r = subprocess.run([os.path.join(BIN, "topoquery"), "schedule", "tacs1", "fallback=0"] + job, capture_output=True,
                   text=True, env=env)
tq_steps = [l.split()[1:] for l in r.stdout.splitlines() if l.startswith("step ")]
head, lines = ask_all("schedule tacs1 fallback=0 " + spec)
kv, steps = parse(head, lines)
check(r.returncode == 0 and tq_steps == [s[1:6] for s in steps], "topoquery schedule tacs1: the protocol's figures")
tqkv = dict(l.split(" ", 1) for l in r.stdout.splitlines() if l.split(" ")[0] in ("time_us", "xor_time_us", "bound_us"))
kv = tt.parse_kv(head[3:])
check(tqkv == {k: kv[k] for k in ("time_us", "xor_time_us", "bound_us")},
      "topoquery schedule (libtii): the protocol's predicted times %s" % tqkv)
svg = os.path.join(d, "conf.svg")
png = os.path.join(d, "conf.png")
big = ["%s*4" % h for h in hosts[0:64:2]]
r = subprocess.run([os.path.join(BIN, "topoquery"), "--plot", svg, "schedule", "tacs1"] + big, capture_output=True,
                   text=True, env=env)
check(r.returncode == 0 and os.path.getsize(svg) > 2000, "topoquery --plot writes an SVG (%s)" % r.stderr.strip()[:80])
rr = subprocess.run(["rsvg-convert", "-o", png, svg], capture_output=True)
check(rr.returncode == 0 and os.path.getsize(png) > 5000, "the SVG renders to PNG (%s)" % png)
if os.environ.get("KEEP_PLOT"):
    import shutil
    shutil.copy(png, os.environ["KEEP_PLOT"])
t.stop()
done()
