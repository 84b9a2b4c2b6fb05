#!/usr/bin/env python3
"""pickrun.py - picks judged by the all-to-all the job runs
(docs/performance.md "Picks judged by the job's all-to-all"), in SMPI on the
lab fabrics (run.py's): for a free list of FREE x N hosts drawn at random
(seeded, as place.py draws them), N wanted,

  `pick run=R N FREE...` for each R of --runs (bound: the all-at-once
  bottleneck, topod's default; route: topod's route all-to-all as
  `schedule route window=auto` predicts it), first-fit (the first N free
  hosts by name) and RANDOMS random N-subsets of the free list;

then on each host set the job's all-to-all as libtopocoll runs it: topod's
`schedule route window=auto bytes=B` on those hosts (its fallback to XOR
included, its window), run from its file by a2a in SMPI; with --job xor,
the MPIs' pairwise XOR exchange (then ask --runs bound,xor). Ranks: a pick's
hosts in the order topod answers them (hierarchy order, what a hostfile
from topod holds), first-fit and random picks in hostname order.

  python3 bench/jobspeed/pickrun.py RESULTS_DIR [--fabrics ft2,ft3]
          [--sizes 32,64] [--bytes 32768,1048576] [--free 2] [--randoms 3]
          [--runs bound,route] [--seed 1]

Output: one line per job on stdout, RESULTS_DIR/pickrun.csv and
pickrun.md: per run R, SMPI's time of the pick and the speed-ups
T(first-fit) / T(pick) and mean T(random) / T(pick) (> 1: the pick is
faster), topod's predictions, and the pick's wall time (the request as a
client sees it, on the lab's topod).
"""
import argparse
import csv
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import place as pl  # noqa: E402  (free lists, platforms, reply fields)
import run as js  # noqa: E402  (the lab, topod, SMPI helpers)


def job_time(cfg, exe, topod, platform, hosts, nbytes, work, tag, timeout, job):
    """SMPI's time of the job's all-to-all on hosts, and topod's prediction
    of it: job route, topod's route schedule (window=auto) from its file;
    xor, a2a's own XOR exchange (topod's `schedule xor` predicts it)."""
    path = os.path.join(work, "sched-%s.txt" % tag)
    steps, head = js.get_schedule(topod, "route", hosts, path, nbytes, "window=auto") if job == "route" else \
        js.get_schedule(topod, "xor", hosts, path, nbytes, "fallback=1")
    if steps is None:
        raise RuntimeError("schedule %s on %s: %s" % (job, tag, head))
    hostfile = os.path.join(work, "hosts-%s" % tag)
    with open(hostfile, "w") as f:
        f.write("\n".join(hosts) + "\n")
    with open(os.path.join(work, "smpi-%s.log" % tag), "w") as logf:
        t, _ = js.smpirun(cfg + js.shared_block_cfg(nbytes * len(hosts)), platform, hostfile, len(hosts),
                          [exe, str(nbytes), "sched", path] if job == "route" else [exe, str(nbytes), "xor"],
                          logf, timeout)
    return t, pl.us(pl.kv(head, "time_us")), pl.kv(head, "algo")


def pick_job(args, cfg, exe, lab, fab, n, allh, nbytes, work):
    os.makedirs(work, exist_ok=True)
    rnd, free = pl.free_list(args.seed, n, allh, args.free)
    platform = os.path.join(work, "platform.xml")
    pl.platform_for(lab.port, free, platform)
    sets, heads, wall = {"first-fit": free[:n]}, {}, {}
    for k in range(args.randoms):
        sets["random%d" % k] = sorted(rnd.sample(free, n))
    t = js.Topod(lab.port)
    try:
        for r in args.runs.split(","):
            t0 = time.monotonic()
            head, lines = t.ask("pick bytes=%d run=%s %d %s" % (nbytes, r, n, " ".join(free)))
            wall[r] = time.monotonic() - t0
            if not head.startswith("OK"):
                raise RuntimeError("pick run=%s: %s" % (r, head))
            sets["pick-" + r], heads[r] = lines, head
        times, pred = {}, {}
        for k, h in sets.items():
            times[k], pred[k], algo = job_time(cfg, exe, t, platform, h, nbytes, work, k, args.timeout, args.job)
            js.log("    %-11s %s (predicted %s, %s)" % (k, pl.fmt_ms(times[k]), pl.fmt_ms(pred[k]), algo))
    finally:
        t.close()
    rows = []
    rand = [times[k] for k in sets if k.startswith("random")]
    rmean = sum(rand) / len(rand) if rand and all(rand) else None
    for r in args.runs.split(","):
        tp, head = times["pick-" + r], heads[r]
        rows.append(dict(fabric=fab, job=args.job, hosts=n, free=len(free), bytes=nbytes, run=r, judged=pl.kv(head, "judged"),
                         t_pick=tp, t_ff=times["first-fit"], t_random=rmean,
                         vs_ff=times["first-fit"] / tp if tp else None, vs_random=rmean / tp if tp and rmean else None,
                         p_pick=pred["pick-" + r], p_time=pl.us(pl.kv(head, "time_us")),
                         p_ff=pl.us(pl.kv(head, "first_fit_time_us")), p_random=pl.us(pl.kv(head, "random_time_us")),
                         method=pl.kv(head, "method"), widened=pl.kv(head, "widened"), leaves=pl.kv(head, "leaves"),
                         same_as_ff=int(sorted(sets["pick-" + r]) == sorted(sets["first-fit"])),
                         pick_wall_s=wall[r]))
    return rows


FIELDS = ["fabric", "job", "hosts", "free", "bytes", "run", "judged", "t_pick", "t_ff", "t_random", "vs_ff", "vs_random",
          "p_pick", "p_time", "p_ff", "p_random", "method", "widened", "leaves", "same_as_ff", "pick_wall_s"]


def fmt(x, spec):
    return spec % x if isinstance(x, (int, float)) else "-"


def table(rows):
    out = ["| fabric | job | hosts | free | bytes | run | pick ms | first-fit ms | random mean ms | vs first-fit | "
           "vs random | pick's wall s |", "|" + "---|" * 12]
    for r in rows:
        if r["run"] == "-":
            out.append("| %s | %s | %d | %d | %d | failed: %s |" % (r["fabric"], r["job"], r["hosts"], r["free"],
                                                                 r["bytes"], r["judged"]))
            continue
        out.append("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["fabric"], r["job"], r["hosts"], r["free"], r["bytes"], r["run"], fmt(r["t_pick"] and r["t_pick"] * 1e3, "%.3f"),
            fmt(r["t_ff"] and r["t_ff"] * 1e3, "%.3f"), fmt(r["t_random"] and r["t_random"] * 1e3, "%.3f"),
            fmt(r["vs_ff"], "%.3f"), fmt(r["vs_random"], "%.3f"), fmt(r["pick_wall_s"], "%.2f")))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results")
    ap.add_argument("--fabrics", default="ft2,ft3")
    ap.add_argument("--sizes", default="32,64")
    ap.add_argument("--bytes", default="32768,1048576")
    ap.add_argument("--free", type=int, default=2)
    ap.add_argument("--randoms", type=int, default=3)
    ap.add_argument("--job", default="route", choices=["route", "xor"],
                    help="the all-to-all the job runs in SMPI: topod's route schedule (default) or XOR")
    ap.add_argument("--runs", default="bound,route")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--request-timeout", type=int, default=None,
                    help="the lab topod's --request-timeout (its default 60 s): its heavy workers run at nice +10, "
                    "so on a machine busy with other work a 1 s pick can take minutes")
    args = ap.parse_args()
    if args.request_timeout is not None:
        os.environ["LAB_UP_TOPOD_ARGS"] = "--request-timeout %d" % args.request_timeout

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
    # topoquery simgrid on a loaded machine: more than libtii's default
    os.environ.setdefault("TII_TIMEOUT_MS", "300000")
    exe = js.build_a2a(args.results)
    cfg = js.smpi_cfg()
    rows, t0 = [], time.monotonic()
    for fab in args.fabrics.split(","):
        spec = js.FABRICS[fab]
        js.log("%s: %s" % (fab, spec["desc"]))
        with js.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            js.log("  (topod port %d, lab %s)" % (lab.port, lab.labdir))
            allh = [h for lf in js.leaves_of(lab.meta) for h in lf]
            for n in [int(s) for s in args.sizes.split(",")]:
                if n * args.free > len(allh):
                    continue
                for b in [int(x) for x in args.bytes.split(",")]:
                    js.log("  pick %d of %d, %d B" % (n, n * args.free, b))
                    try:
                        rows += pick_job(args, cfg, exe, lab, fab, n, allh, b,
                                         os.path.join(args.results, "runs", fab, "pick-%d-%d" % (n, b)))
                    except RuntimeError as e:
                        # one job that fails (topod refused, a client timed out
                        # on a loaded machine) is a row, not the end of the run
                        js.log("    FAILED: %s" % e)
                        rows.append(dict(fabric=fab, job=args.job, hosts=n, free=n * args.free, bytes=b,
                                         run="-", judged=str(e)[:80]))
    with open(os.path.join(args.results, "pickrun.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    md = table(rows) + "\n"
    open(os.path.join(args.results, "pickrun.md"), "w").write(md)
    print(md)
    print("(%.0f s)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
