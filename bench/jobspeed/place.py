#!/usr/bin/env python3
"""place.py - map and pick in SMPI (docs/performance.md "Map and pick in
SMPI"): topod's rank mapping against block placement, and its node pick
against first-fit and random picks from the same free list, simulated on the
LFT routes OpenSM really programmed (the lab fabrics of run.py).

  python3 bench/jobspeed/place.py RESULTS_DIR [--fabrics A,B] [--sizes 16,64]
          [--bytes 1048576] [--free 2] [--randoms 3] [--leaves any]

map: for each fabric, size N and shape (run.py's shapes, hosts in hostname
order as a scheduler lists them) and pattern (a periodic 2-D halo exchange,
a ring, an all-to-all, each phase posted at once, BYTES each way per pair):
`map [bytes=B] GRAPH HOSTS` -> rank -> host; run the pattern with that
placement and with block placement (rank r on the r-th listed host), and
compare SMPI's times with topod's predictions (time_us, block_time_us).

pick: a free list of FREE x N hosts (or, with --free-frac, a fraction of
all hosts) drawn at random (seeded), N wanted:
`pick N FREE...` against the first N free hosts (first-fit, hostname order)
and RANDOMS random N-subsets; for each pick the all-to-all posted at once
and the pairwise XOR exchange, SMPI's times beside topod's prediction
(`load alltoall` time_us); the pick's predicted busiest cable against the
injection limit (bottleneck_us / limit_us, protocol.md `pick`) in the answer
column.

Output: a table on stdout, RESULTS_DIR/place.csv and place.md. Ratios are
speed-ups, T(baseline) / T(topod's answer): > 1 means topod's is faster.
"""
import argparse
import csv
import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as js  # noqa: E402  (the lab, topod, SMPI helpers of the schedule benchmark)

PATTERNS = ["halo", "ring", "alltoall"]

# Route-balanced picks' fabrics, beside run.py's: leaves with more uplinks
# than the default trees, where which hosts of a leaf are taken decides the upper
# switches the job's traffic comes down through.
js.FABRICS.setdefault("ft2-wide", dict(
    desc="2-level fat tree XGFT(2;20,8;1,16), 160 hosts, 1.25:1", routing="ftree",
    gen=["xgft", "--h", "2", "--m", "20,8", "--w", "1,16"]))
js.FABRICS.setdefault("ft2-wide-updn", dict(
    desc="ft2-wide under updn", routing="updn", roots=True, gen=["xgft", "--h", "2", "--m", "20,8", "--w", "1,16"]))
js.FABRICS.setdefault("ft3-wide", dict(
    desc="3-level fat tree XGFT(3;8,6,4;1,4,6), 192 hosts, 2:1 at level 1",
    routing="ftree", gen=["xgft", "--h", "3", "--m", "8,6,4", "--w", "1,4,6"]))


def grid(n):
    """X x Y with X*Y = n, as square as possible."""
    x = int(n ** 0.5)
    while n % x:
        x -= 1
    return n // x, x


def pattern_pairs(pattern, n):
    """Directed (src, dst) flows of one phase, and the map request's GRAPH
    words (a csr graph lists each undirected edge from both ends: weight 2
    = BYTES each way, as map's bytes= means)."""
    if pattern == "halo":
        X, Y = grid(n)
        nb = {r: set() for r in range(n)}
        for r in range(n):
            x, y = r % X, r // X
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                if (dx and X < 2) or (dy and Y < 2):
                    continue
                q = (x + dx) % X + X * ((y + dy) % Y)
                if q != r:
                    nb[r].add(q)
        graph = ["stencil:%dx%d:periodic" % (X, Y)]
    elif pattern == "ring":
        nb = {r: {(r + 1) % n, (r - 1) % n} - {r} for r in range(n)}
        graph = None
    else:
        nb = {r: set(range(n)) - {r} for r in range(n)}
        graph = None
    pairs = [(r, q) for r in range(n) for q in sorted(nb[r])]
    if graph is None:
        graph = ["csr:%d" % n]
    adj = [",".join(str(q) for q in sorted(nb[r])) or "-" for r in range(n)]
    return pairs, graph, adj


def run_pattern(cfg, exe, platform, hosts_of_rank, pairs, nbytes, work, tag, timeout):
    hostfile = os.path.join(work, "hosts-%s" % tag)
    with open(hostfile, "w") as f:
        f.write("\n".join(hosts_of_rank) + "\n")
    sched = os.path.join(work, "phase-%s.txt" % tag)
    with open(sched, "w") as f:
        f.write(" ".join("%d:%d" % p for p in pairs) + "\n")
    with open(os.path.join(work, "smpi-%s.log" % tag), "w") as logf:
        # a2a's buffers hold a block per rank: at 256 ranks SMPI's default
        # 1 MiB fold blocks exceed vm.max_map_count (js.shared_block_cfg)
        t, _ = js.smpirun(cfg + js.shared_block_cfg(nbytes * len(hosts_of_rank)), platform, hostfile,
                          len(hosts_of_rank), [exe, str(nbytes), "sched", sched], logf, timeout)
    return t


def kv(head, key):
    m = re.search(r"\b%s=(\S+)" % key, head)
    return m.group(1) if m else None


def us(v):
    return float(v) * 1e-6 if v not in (None, "-") else None


def platform_for(port, hosts, path):
    with open(path, "w") as f:
        # a job's export takes at most 256 hosts; a larger free list takes
        # the whole fabric's (the same routes and rates)
        sel = ["--all"] if len(set(hosts)) > 256 else sorted(set(hosts))
        r = subprocess.run([js.TOPOQUERY, "-s", "127.0.0.1:%d" % port, "simgrid"] + sel, stdout=f,
                           stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RuntimeError("topoquery simgrid: " + r.stderr.strip())


def map_job(args, cfg, exe, lab, fab, shape, hosts, work):
    os.makedirs(work, exist_ok=True)
    platform = os.path.join(work, "platform.xml")
    platform_for(lab.port, hosts, platform)
    rows = []
    t = js.Topod(lab.port)
    try:
        for pat in PATTERNS:
            n = len(hosts)
            pairs, graph, adj = pattern_pairs(pat, n)
            words = ["map", "bytes=%d" % args.bytes] + graph + hosts
            if graph[0].startswith("csr:"):
                words += ["--"] + adj
            head, lines = t.ask(" ".join(words))
            if not head.startswith("OK"):
                rows.append(dict(kind="map", fabric=fab, shape=shape, hosts=n, pattern=pat, note=head[:80]))
                continue
            placed = [l.split()[1] for l in lines]
            tm = run_pattern(cfg, exe, platform, placed, pairs, args.bytes, work, "map-" + pat, args.timeout)
            tb = run_pattern(cfg, exe, platform, hosts, pairs, args.bytes, work, "block-" + pat, args.timeout)
            rows.append(dict(kind="map", fabric=fab, shape=shape, hosts=n, pattern=pat, method=kv(head, "method"),
                             reason=kv(head, "reason"), t_answer=tm, t_base=tb, p_answer=us(kv(head, "time_us")),
                             p_base=us(kv(head, "block_time_us"))))
            js.log("    map %-8s %-6s ours %s block %s" % (pat, kv(head, "method"), fmt_ms(tm), fmt_ms(tb)))
    finally:
        t.close()
    return rows


def predicted(t, hosts, nbytes):
    head, _ = t.ask("load bytes=%d links=none alltoall %s" % (nbytes, " ".join(hosts)))
    return us(kv(head, "time_us")) if head.startswith("OK") else None


def free_list(seed, n, allh, free=2, frac=None):
    """A busy machine's free list for an N-host job: FREE x N hosts, or a
    fraction FRAC of all, drawn at random (seeded), in hostname order.
    Returns (rnd, free): rnd, the generator, then draws the random picks."""
    rnd = random.Random(seed * 1000 + n + (int(frac * 100) if frac else 0))
    nfree = min(len(allh), int(round(frac * len(allh))) if frac else free * n)
    return rnd, sorted(rnd.sample(allh, nfree))


def pick_sets(t, rnd, n, free, randoms, leaves=""):
    """topod's `pick N FREE...` (pick's leaves= option if given), first-fit
    (the first N free hosts in hostname order) and RANDOMS random N-subsets
    of the free list: (topod's reply line, {name: hosts in hostname order}),
    or (the reply, None) when topod refuses."""
    opt = "leaves=%s " % leaves if leaves else ""
    head, lines = t.ask("pick %s%d %s" % (opt, n, " ".join(free)))
    if not head.startswith("OK"):
        return head, None
    picks = {"pick": sorted(lines), "first-fit": free[:n]}
    for k in range(randoms):
        picks["random%d" % k] = sorted(rnd.sample(free, n))
    return head, picks


def pick_job(args, cfg, exe, lab, fab, n, allh, work, frac=None):
    os.makedirs(work, exist_ok=True)
    rnd, free = free_list(args.seed, n, allh, args.free, frac)
    nfree = len(free)
    platform = os.path.join(work, "platform.xml")
    platform_for(lab.port, free, platform)
    t = js.Topod(lab.port)
    try:
        head, picks = pick_sets(t, rnd, n, free, args.randoms, args.leaves)
        if picks is None:
            return [dict(kind="pick", fabric=fab, shape="free%d" % nfree, hosts=n, note=head[:80])]
        pred = {k: predicted(t, h, args.bytes) for k, h in picks.items()}
    finally:
        t.close()
    alltoall = [(r, q) for r in range(n) for q in range(n) if r != q]
    times = {}
    for k, h in picks.items():
        times[k] = run_pattern(cfg, exe, platform, h, alltoall, args.bytes, work, "pick-" + k, args.timeout)
        js.log("    pick %-10s %s (predicted %s)" % (k, fmt_ms(times[k]), fmt_ms(pred[k])))
    rows = []
    rand = [times[k] for k in picks if k.startswith("random") and times[k]]
    # the answer's busiest cable against the injection limit
    bott, lim, ffb = us(kv(head, "bottleneck_us")), us(kv(head, "limit_us")), us(kv(head, "first_fit_bottleneck_us"))
    note = kv(head, "reason") or ""
    if bott and lim:
        note = "%s; busiest %.2fx limit (%s)%s" % (note, bott / lim, kv(head, "limit"),
                                                 ", first-fit %.2fx" % (ffb / lim) if ffb else "")
    if kv(head, "balanced") == "1":
        note += ", balanced"
    if kv(head, "widened") == "1":
        note += ", widened to %s leaves (min %s)" % (kv(head, "leaves"), kv(head, "min_leaves"))
    elif kv(head, "wider_time_us") not in (None, "-"):
        note += ", wider on %s leaves predicted %.3f ms" % (kv(head, "wider_leaves"),
                                                             float(kv(head, "wider_time_us")) / 1e3)
    for base in ["first-fit"] + (["random-mean"] if rand else []):
        tb = times[base] if base == "first-fit" else sum(rand) / len(rand)
        pb = pred[base] if base == "first-fit" else None
        rows.append(dict(kind="pick", fabric=fab, shape="free%d" % nfree, hosts=n, pattern="alltoall vs " + base,
                         method=kv(head, "method") or "pick", reason=note,
                         t_answer=times["pick"], t_base=tb, p_answer=pred["pick"], p_base=pb,
                         bottleneck=bott, limit=lim))
    return rows


def fmt_ms(x):
    return "%.3f ms" % (x * 1e3) if x else "-"


def ratio(a, b):
    return b / a if a and b else None


def table(rows):
    out = ["| kind | fabric | shape | hosts | pattern | answer | SMPI ms | baseline SMPI ms | speed-up | "
           "predicted / SMPI (answer) | predicted / SMPI (baseline) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("note"):
            out.append("| %s | %s | %s | %d | %s | %s | | | | | |" % (r["kind"], r["fabric"], r["shape"], r["hosts"],
                                                                   r.get("pattern", ""), r["note"]))
            continue
        sp = ratio(r["t_answer"], r["t_base"])
        pa = r["p_answer"] / r["t_answer"] if r["p_answer"] and r["t_answer"] else None
        pb = r["p_base"] / r["t_base"] if r["p_base"] and r["t_base"] else None
        out.append("| %s | %s | %s | %d | %s | %s%s | %s | %s | %s | %s | %s |" % (
            r["kind"], r["fabric"], r["shape"], r["hosts"], r["pattern"], r["method"],
            " (%s)" % r["reason"] if r.get("reason") else "", fmt_ms(r["t_answer"]).replace(" ms", ""),
            fmt_ms(r["t_base"]).replace(" ms", ""), "%.2fx" % sp if sp else "-", "%.2f" % pa if pa else "-",
            "%.2f" % pb if pb else "-"))
    return "\n".join(out)


def summary(rows):
    done = [r for r in rows if not r.get("note") and r["t_answer"] and r["t_base"]]
    sp = [r["t_base"] / r["t_answer"] for r in done]
    slow = [r for r in done if r["t_base"] / r["t_answer"] < 0.98]
    pe = [r["p_answer"] / r["t_answer"] for r in done if r["p_answer"]]
    return ("%d answers: speed-up over the baseline %.2f-%.2fx (median %.2f); %d below 0.98x; "
            "prediction / SMPI %.2f-%.2f, %d of %d within 15%%" % (
                len(done), min(sp), max(sp), sorted(sp)[len(sp) // 2], len(slow), min(pe), max(pe),
                sum(1 for p in pe if abs(p - 1) <= 0.15), len(pe))) if done and pe else "no answers"


def pick_summary(rows):
    """Route-balanced picks' figures (docs/performance.md): geometric mean
    speed-up of pick per baseline, the fewest, and how close the predicted
    busiest cable sits to the limit."""
    out = []
    for base in ("first-fit", "random-mean"):
        sp = [r["t_base"] / r["t_answer"] for r in rows if r["kind"] == "pick" and not r.get("note") and
              r["t_answer"] and r["t_base"] and r["pattern"].endswith(base)]
        if sp:
            gm = 1.0
            for x in sp:
                gm *= x
            out.append("pick vs %s: %d jobs, geometric mean %.2fx, %.2f-%.2fx, %d below 0.98x" % (
                base, len(sp), gm ** (1 / len(sp)), min(sp), max(sp), sum(1 for x in sp if x < 0.98)))
    bl = [r["bottleneck"] / r["limit"] for r in rows if r["kind"] == "pick" and r.get("bottleneck") and
          r.get("limit") and r["pattern"].endswith("first-fit")]
    if bl:
        out.append("pick's predicted busiest cable / injection limit: %.2f-%.2f, %d of %d within 1.1x" % (
            min(bl), max(bl), sum(1 for x in bl if x <= 1.1), len(bl)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results")
    ap.add_argument("--fabrics", default=",".join(js.DEFAULT_FABRICS))
    ap.add_argument("--sizes", default="16,64")
    ap.add_argument("--shapes", default="contiguous,fragmented,uneven")
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--free", type=int, default=2, help="free list = FREE x N hosts (default 2)")
    ap.add_argument("--randoms", type=int, default=3, help="random picks per job (default 3)")
    ap.add_argument("--free-frac", default="",
                    help="free lists as fractions of all hosts, e.g. 0.25,0.5,1 (replaces --free)")
    ap.add_argument("--kinds", default="map,pick", help="map, pick or both (default map,pick)")
    ap.add_argument("--leaves", default="", choices=["", "fewest", "any", "auto"],
                    help="pick's leaves= option (default: none sent, i.e. topod's default, auto)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900)
    args = ap.parse_args()

    def on_term(sig, frame):
        if js.CHILD:
            try:
                os.killpg(js.CHILD.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    os.makedirs(args.results, exist_ok=True)
    exe = js.build_a2a(args.results)
    cfg = js.smpi_cfg()
    rows, t0 = [], time.monotonic()
    for fab in args.fabrics.split(","):
        spec = js.FABRICS[fab]
        js.log("%s: %s" % (fab, spec["desc"]))
        with js.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            leaves = js.leaves_of(lab.meta)
            allh = [h for lf in leaves for h in lf]
            for n in [int(s) for s in args.sizes.split(",")]:
                for shape in args.shapes.split(",") if "map" in args.kinds else []:
                    hosts = js.shape_hosts(shape, n, leaves, args.seed)
                    if hosts:
                        js.log("  map %s %d" % (shape, n))
                        rows += map_job(args, cfg, exe, lab, fab, shape, hosts,
                                        os.path.join(args.results, "runs", fab, "map-%s-%d" % (shape, n)))
                if "pick" not in args.kinds:
                    continue
                for frac in [float(x) for x in args.free_frac.split(",") if x] or [None]:
                    nfree = int(round(frac * len(allh))) if frac else n * args.free
                    if n >= nfree or nfree > len(allh):
                        continue
                    js.log("  pick %d of %d" % (n, nfree))
                    rows += pick_job(args, cfg, exe, lab, fab, n, allh,
                                     os.path.join(args.results, "runs", fab, "pick-%d-%d" % (n, nfree)), frac)
    with open(os.path.join(args.results, "place.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["kind", "fabric", "shape", "hosts", "pattern", "method", "reason",
                                          "t_answer", "t_base", "p_answer", "p_base", "note", "bottleneck",
                                          "limit"])
        w.writeheader()
        for r in rows:
            w.writerow(r)
    md = table(rows) + "\n\n" + summary(rows) + "\n\n" + pick_summary(rows) + "\n"
    open(os.path.join(args.results, "place.md"), "w").write(md)
    print(md)
    print("(%.0f s)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
