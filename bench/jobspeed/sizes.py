#!/usr/bin/env python3
"""sizes.py - the cost model at every message size (docs/performance.md "The
model at every message size"): what topod predicts for the MPIs' own
MPI_Alltoall and for its schedules with steps in flight, beside SMPI's time
of the same thing, block by block.

  python3 bench/jobspeed/sizes.py RESULTS_DIR [--fabrics A,B] [--sizes 16,64]
          [--shapes contiguous,fragmented] [--bytes 1024,8192,32768,262144,1048576]
          [--windows 1,2,4,8] [--schedules route,xor]

For each lab fabric of bench/jobspeed/run.py and each job (one rank per
host, ranks in hostname order), for every block size:
  * `schedule ALGO fallback=0 bytes=B window=W native=smpi-ompi` and
    `... native=smpi-mpich` -> topod's predictions: the schedule with W
    steps in flight (time_us), the MPI's own Alltoall under each of SMPI's
    selectors (native_algo, native_time_us), the bound (bound_us);
  * SMPI (tests/lib/smpi.sh): a2a's `alltoall` under
    --cfg=smpi/coll-selector:ompi and :mpich, and the schedule's file with
    W steps in flight (a2a `sched FILE W`), on the platform
    `topoquery simgrid` exports for the job;
  * `load` -> the link-load bound, as run.py computes it.
Prints one line per (job, size, variant): SMPI ms, predicted ms, SMPI /
predicted, and writes RESULTS_DIR/sizes.csv and sizes.md with the worst
errors per variant and size.
"""
import argparse
import csv
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as js  # noqa: E402  (bench/jobspeed/run.py: labs, jobs, smpirun)

SIZES = [1024, 8192, 32768, 262144, 1048576]
MODELS = {"ompi": "smpi-ompi", "mpich": "smpi-mpich"}


def ask(topod, algo, hosts, nbytes, window, native, path=None):
    """topod's reply head as a dict, and the schedule file written to path."""
    head, lines = topod.ask("schedule %s fallback=0 bytes=%d window=%s native=%s %s"
                            % (algo, nbytes, window, native, " ".join(hosts)))
    if not head.startswith("OK"):
        raise RuntimeError("schedule %s: %s" % (algo, head))
    kv = dict(w.split("=", 1) for w in head.split()[1:] if "=" in w)
    if path:
        with open(path, "w") as f:
            f.write("# %s\n" % head)
            for l in lines:
                if l.startswith("STEP "):
                    f.write(" ".join(w for w in l.split()[6:] if ":" in w) + "\n")
    return kv


def us(kv, key):
    v = kv.get(key, "-")
    return float(v) * 1e-6 if v not in ("-", "") else None


def run_job(args, cfg, exe, lab, fabric, shape, hosts, work):
    os.makedirs(work, exist_ok=True)
    n = len(hosts)
    platform, hostfile = os.path.join(work, "platform.xml"), os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("\n".join(hosts) + "\n")
    with open(platform, "w") as f:
        js.subprocess.run([js.TOPOQUERY, "-s", "127.0.0.1:%d" % lab.port, "simgrid"] + hosts, stdout=f, check=True)
    rows = []
    topod = js.Topod(lab.port)
    logf = open(os.path.join(work, "smpi.log"), "a")
    try:
        for b in args.bytes:
            bound = js.load_bound(topod, hosts, b, platform)[0]
            c = cfg + js.shared_block_cfg(b * n)
            for sel, model in MODELS.items():
                kv = ask(topod, "xor", hosts, b, 1, model)
                t0 = time.monotonic()
                t, _ = js.smpirun(c + ["--cfg=smpi/coll-selector:%s" % sel], platform, hostfile, n,
                                  [exe, str(b), "alltoall"], logf, args.timeout)
                rows.append(dict(fabric=fabric, shape=shape, hosts=n, bytes=b, variant="native-" + sel,
                                 algo=kv.get("native_algo"), window=1, smpi=t, pred=us(kv, "native_time_us"),
                                 bound=bound, secs=time.monotonic() - t0))
                js.log("    %7d %-14s %-10s smpi %s pred %s" % (b, "native-" + sel, kv.get("native_algo"),
                                                               fmt_ms(t), fmt_ms(rows[-1]["pred"])))
            for algo in args.schedules:
                for w in args.windows:
                    path = os.path.join(work, "%s-%d-w%d.txt" % (algo, b, w))
                    kv = ask(topod, algo, hosts, b, w, "smpi-ompi", path)
                    t0 = time.monotonic()
                    t, _ = js.smpirun(c, platform, hostfile, n, [exe, str(b), "sched", path, str(w)], logf,
                                      args.timeout)
                    rows.append(dict(fabric=fabric, shape=shape, hosts=n, bytes=b, variant="%s-w%d" % (algo, w),
                                     algo=kv.get("algo"), window=w, smpi=t, pred=us(kv, "time_us"), bound=bound,
                                     secs=time.monotonic() - t0))
                    js.log("    %7d %-14s %-10s smpi %s pred %s" % (b, "%s-w%d" % (algo, w), kv.get("algo"),
                                                                   fmt_ms(t), fmt_ms(rows[-1]["pred"])))
                # what topod answers with window=auto, for the table
                kv = ask(topod, algo, hosts, b, "auto", "smpi-ompi")
                for r in rows:
                    if r["bytes"] == b and r["variant"] == "%s-w%s" % (algo, kv.get("window")):
                        r["auto"] = 1
    finally:
        topod.close()
        logf.close()
    return rows


def fmt_ms(t):
    return "%.4f ms" % (t * 1e3) if t else "-"


def summary(rows):
    out = ["| variant | bytes | jobs | SMPI / predicted (min - max) | worst job |", "| --- | --- | --- | --- | --- |"]
    keys = sorted({(r["variant"], r["bytes"]) for r in rows}, key=lambda k: (k[0], k[1]))
    worst_all = []
    for v, b in keys:
        rs = [r for r in rows if r["variant"] == v and r["bytes"] == b and r["smpi"] and r["pred"]]
        if not rs:
            continue
        e = [(r["smpi"] / r["pred"], "%s %s %d" % (r["fabric"], r["shape"], r["hosts"])) for r in rs]
        lo, hi = min(e), max(e)
        far = max(e, key=lambda x: abs(math.log(x[0])))
        worst_all.append((abs(far[0] - 1), v, b, far))
        out.append("| %s | %d | %d | %.3f - %.3f | %s %.3f |" % (v, b, len(rs), lo[0], hi[0], far[1], far[0]))
    n5 = sum(1 for r in rows if r["smpi"] and r["pred"] and abs(r["smpi"] / r["pred"] - 1) <= 0.05)
    n = sum(1 for r in rows if r["smpi"] and r["pred"])
    out.append("")
    out.append("Within 5 %% of SMPI: %d of %d predictions." % (n5, n))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results")
    ap.add_argument("--fabrics", default="ft2,ft3,ft2-updn,ft3-updn,ft2-fail,ft2-mixed,rrg")
    ap.add_argument("--sizes", default="16,64", help="hosts per job")
    ap.add_argument("--shapes", default="contiguous,fragmented")
    ap.add_argument("--bytes", default=",".join(map(str, SIZES)))
    ap.add_argument("--windows", default="1,2,4,8")
    ap.add_argument("--schedules", default="route")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()
    args.bytes = [int(x) for x in args.bytes.split(",")]
    args.windows = [int(x) for x in args.windows.split(",")]
    args.schedules = args.schedules.split(",")
    js.on_signals()
    os.makedirs(args.results, exist_ok=True)
    exe = js.build_a2a(args.results)
    cfg = js.smpi_cfg()
    rows = []
    for fab in args.fabrics.split(","):
        spec = js.FABRICS[fab]
        js.log("%s: %s" % (fab, spec["desc"]))
        t0 = time.monotonic()
        with js.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            js.log("  up in %.1f s (topod port %d, lab %s)" % (time.monotonic() - t0, lab.port, lab.labdir))
            leaves = js.leaves_of(lab.meta)
            for n in [int(x) for x in args.sizes.split(",")]:
                for shape in args.shapes.split(","):
                    hosts = js.shape_hosts(shape, n, leaves, args.seed)
                    if hosts is None:
                        continue
                    js.log("  %s %d hosts" % (shape, n))
                    rows += run_job(args, cfg, exe, lab, fab, shape, hosts,
                                    os.path.join(args.results, "runs", fab, "%s-%d" % (shape, n)))
                    write(args.results, rows)
    write(args.results, rows)
    print(summary(rows))


def write(d, rows):
    cols = ["fabric", "shape", "hosts", "bytes", "variant", "algo", "window", "auto", "smpi", "pred", "bound", "secs"]
    with open(os.path.join(d, "sizes.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    with open(os.path.join(d, "sizes.md"), "w") as f:
        f.write(summary(rows) + "\n")


if __name__ == "__main__":
    main()
