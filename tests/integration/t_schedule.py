#!/usr/bin/env python3
"""`schedule` end to end on a real topod: a k=8 fat tree snapshot (bench_build's
analytic d-mod-k LFTs, 128 hosts) delivered with topo-snap, then

- the protocol reply: header fields, one STEP line per step, every ordered
  pair of distinct ranks exactly once (checked here, independently of the C
  checker), one send and one receive per rank per step unless multi=1;
- the per-step figures equal a brute-force count over `path` routes;
- OPT: TREE/TIER lines, NOTAPPLICABLE on an uneven job; kPrefix needs k | P;
- the allgathers: correct, judged against the ring in rank order (never an
  answer predicted slower), agbest's choice, the ring in the fabric's order
  and kShift on the whole tree contention-free;
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

# The allgathers (kPrefix, kShift, the ring in the fabric's order, the MPIs'
# ring in rank order, agbest) on contiguous, holed, cyclic, prime and uneven
# jobs: correct allgathers (checked here: every rank gets every other rank's
# block exactly once, from a rank that held it before the step); with
# fallback=1 never an answer predicted slower than the ring in rank order
# (ring_time_us), a variant predicted slower answered by the ring with
# fallback=ring reason=slower; agbest the fastest offered; the ring in the
# fabric's order at most one flow per cable per step (d-mod-k).
def ag_complete(steps, P):
    has = [{r} for r in range(P)]
    for st in steps:
        nxt = [set(h) for h in has]
        snd, rcv = set(), set()
        for f in (w for w in st[6:] if ":" in w):
            a, b, o = map(int, f.split(":"))
            if a in snd or b in rcv or o not in has[a] or o in nxt[b] or a == b:
                return False
            snd.add(a)
            rcv.add(b)
            nxt[b].add(o)
        has = nxt
    return len(steps) == P - 1 and all(len(h) == P for h in has)


def variants(kv):
    if kv["variants"] == "none":
        return {}
    return {n: (st, us(t)) for n, st, t in (v.split(":") for v in kv["variants"].split(","))}


def us(v):
    return None if v == "-" else float(v)


ag_jobs = {"contiguous 16": hosts[0:16], "holes": hosts[0:48:3], "prime 13": hosts[0:13],
           "cyclic 32": [hosts[l * 4 + j] for j in range(4) for l in range(8)],
           "cyclic 12 (3 pods)": [hosts[l * 16 + j] for j in range(4) for l in range(3)],
           "uneven": job, "3 ranks": hosts[0:3], "2 ranks": hosts[5:7]}
bad, ring_over, answers, ag_runs = [], [], set(), 0
for name, jb in ag_jobs.items():
    P = len(jb)
    for algo in ("allgather", "kshift", "agring", "ring", "agbest"):
        for fb in (1, 0):
            head, lines = ask_all("schedule %s fallback=%d %s" % (algo, fb, " ".join(jb)))
            if head.startswith("ERR NOTAPPLICABLE") and algo == "allgather" and P % 2:
                continue
            if not head.startswith("OK "):
                bad.append("%s %s: %s" % (name, algo, head.strip()[:80]))
                continue
            ag_runs += 1
            kv, steps = parse(head, lines)
            var = variants(kv)
            tm, ring = us(kv["time_us"]), us(kv["ring_time_us"])
            answers.add(kv["algo"])
            if not ag_complete(steps, P):
                bad.append("%s %s fallback=%d: not a correct allgather" % (name, algo, fb))
            if kv["xor_time_us"] != "-" or us(kv["bound_us"]) > tm + 0.001:
                bad.append("%s %s: xor_time_us %s, bound %s > time %s" % (name, algo, kv["xor_time_us"],
                                                                     kv["bound_us"], tm))
            if kv["algo"] == "agring" and max(int(st[3]) for st in steps) > 1:
                ring_over.append(name)
            if fb:
                if tm > ring + 0.001:
                    bad.append("%s %s: answer %s predicted %.1f us > ring %.1f" % (name, algo, kv["algo"], tm, ring))
                slower = [n for n, (st, t) in var.items() if st == "slower"]
                if any(t is not None and t <= ring for n, (st, t) in var.items() if st == "slower") or \
                        any(t is not None and t > ring + 0.001 for n, (st, t) in var.items() if st == "offered"):
                    bad.append("%s %s: variants judged wrong %s (ring %.1f)" % (name, algo, kv["variants"], ring))
                # kPrefix's fallback is the ring spelled as kPrefix with k=1
                # (ag_complete checked its steps), which libtii 1.4 reads: it
                # knows no algo=ring
                want = "allgather" if algo == "allgather" else "ring"
                if kv["reason"] == "slower" and (kv["algo"] != want or kv["fallback"] != "ring" or
                                                 (algo != "agbest" and slower != [algo])):
                    bad.append("%s %s: fell back without cause %s" % (name, algo, head.strip()[:120]))
                if algo == "agbest":
                    offered = {n: t for n, (st, t) in var.items() if st == "offered"}
                    if (offered and (kv["algo"] not in offered or tm > min(offered.values()) + 0.001)) or \
                            (not offered and kv["algo"] != "ring") or len(var) != 3:
                        bad.append("%s agbest: answered %s of %s" % (name, kv["algo"], kv["variants"]))
            elif algo not in ("agbest", "ring") and (kv["algo"] != algo or var[algo][1] != tm):
                bad.append("%s %s fallback=0: answered %s" % (name, algo, kv["algo"]))
check(not bad, "allgathers (%d replies): correct allgathers, never answered slower than the ring in rank order, "
      "fallbacks and agbest's choice as their variants say: %s" % (ag_runs, bad[:3]))
check(not ring_over, "the ring in the fabric's order: at most 1 flow per cable per step: %s" % ring_over)
check("ring" in answers and answers & {"agring", "kshift"},
      "some jobs answered by the ring, some by a variant (%s)" % sorted(answers))
head, lines = ask_all("schedule kshift fallback=0 " + " ".join(hosts))
kv, steps = parse(head, lines) if head.startswith("OK ") else ({}, [])
check(steps and max(int(st[3]) for st in steps) == 1 and ag_complete(steps, 128),
      "kShift k=8 on all 128 hosts of the d-mod-k tree: contention-free, every step at most 1 flow per cable")
head, lines = ask_all("schedule agring fallback=0 " + " ".join(reversed(hosts)))
kv, steps = parse(head, lines) if head.startswith("OK ") else ({}, [])
check(steps and steps[0][6].split(":")[0] == "127" and max(int(st[3]) for st in steps) == 1,
      "agring: ranks given in reverse, the ring still follows the fabric (rank 127 = the first host first)")

# Advice (docs/cost-model.md): every answer carries its predicted time,
# XOR's and the bound; never an answer predicted slower than XOR; the
# fallback says why, and fallback=0 shows the algorithm it replaced.
bad = []
for name, js in (("uneven", spec), ("opt job", opt_job)):
    for algo in ("xor", "tacs1", "tacs2", "opt"):
        head, lines = ask_all("schedule %s %s" % (algo, js))
        asis, alines = ask_all("schedule %s fallback=0 %s" % (algo, js))
        if head.startswith("ERR NOTAPPLICABLE"):
            # OPT refused: not applicable at all, or (with advice) its steps break their bound
            if "breaks its bound" in head:
                ka, _ = parse(asis, alines)
                L = int(ka["tiers"])
                bounds = [int(tt.parse_kv(l[6:])["bound"]) for l in alines[1:1 + L]]
                worst = [max(int(x) for x in st.split()[6][1:].split(",")[l] for st in alines[1 + L:] if " T" in st)
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
