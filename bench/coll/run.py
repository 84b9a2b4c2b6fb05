#!/usr/bin/env python3
"""run.py - topocoll's collectives against SMPI's Open MPI and MPICH
selectors (docs/performance.md "Collectives in SMPI"), simulated on the
LFT routes OpenSM really programmed.

  python3 bench/coll/run.py RESULTS_DIR [--fabrics A,B] [--sizes 16,64,128]
          [--shapes contiguous,fragmented,cyclic] [--ops bcast,...] [--bytes 8,...] [--big]
          [--ranks-per-host K]
  python3 bench/coll/run.py RESULTS_DIR --replay OLD_RESULTS --ops bcast
  python3 bench/coll/run.py RESULTS_DIR --replay OLD_RESULTS --ops allgather --cyclic

For each lab fabric (bench/jobspeed/run.py's: ibsim + OpenSM + the osmtopo
plugin + topod, brought up by its Lab) and each job (shape x hosts, one
rank per host unless --ranks-per-host, ranks in hostname order):
  * `topoquery simgrid HOSTS` -> the job's platform, which is also
    topocoll's TOPOCOLL_TOPOLOGY (topod is out of reach inside SMPI);
  * `schedule route bytes=B window=auto native=smpi-SEL HOSTS` for every
    size class of --bytes -> the Alltoall schedule with topod's
    predictions against each selector's own Alltoall, per selector a
    TOPOCOLL_SCHEDULE (bench/jobspeed/run.py a2a_schedule_file);
  * bench/coll/bench.c, built with smpicc together with coll/*.c
    (-DTOPOCOLL_SMPI), times every op and size through the MPI's own call
    and through topocoll's, under --cfg=smpi/coll-selector:ompi and :mpich
    (topocoll's prediction modelling the same selector: TOPOCOLL_MODEL).
Shape cyclic: the contiguous job's hosts dealt round-robin over its leaves
(Slurm's cyclic distribution). --ranks-per-host K: each host gets K ranks
(SMPI's host file repeats the host; topocoll knows a rank's host by
MPI_Get_processor_name, which SMPI answers with the platform's host, and
ranks of one host talk over SimGrid's loopback, not the host's cable), in
host-major order (ranks 0..K-1 on the first host) for contiguous and
fragmented jobs, dealt round-robin over the hosts for cyclic ones.
Allgather rows carry the bound: every host must take in (P - its ranks)
blocks through its own cable, (P - k) x bytes / that cable's rate in the
platform, for the slowest host. Alltoall rows carry topod's link-load
bound of the job's routes (`bound_us` of the schedule file's header).
Everything runs under smpirun with tests/lib/smpi.sh's SMPI_CFG.

Output: RESULTS_DIR/coll.csv (one row per job, selector, op, size),
RESULTS_DIR/coll.md (the tables), RESULTS_DIR/runs/... (platforms, logs).
Speed-up = T(MPI's own) / T(topocoll), > 1 faster; topocoll's choice is
printed beside it ("own" where it left the call to the MPI).
"""
import argparse
import csv
import functools
import math
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "jobspeed"))
import run as jobspeed  # noqa: E402  (the lab fabrics, Lab, shapes, SMPI settings)

OPS = ["bcast", "gather", "scatter", "allreduce", "alltoall", "allgather"]
SIZES = [1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
# coll.h's enum tc_variant, by TOPOCOLL_CHOICE's names
VARIANTS = {0: "own", 1: "hier", 2: "tree", 3: "rankorder", 4: "pipe", 5: "sched", 6: "ring", 7: "hosts",
            8: "leaves", 9: "agsched", 10: "scag"}
# Gather, Scatter and Alltoall move hosts x bytes through one rank: above
# this many bytes in all, the job's larger sizes are left out (memory).
TOTAL_MAX = 256 << 20
# All ranks' receive buffers together (ranks x that): bench.c's buffers are
# SMPI_SHARED_MALLOC'd, folded onto one backing block, so this is address
# space and SMPI's mappings, not RAM (--vm-max).
ALL_MAX = 64 << 30
CHILD = None


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build(outdir):
    exe = os.path.join(outdir, "bench")
    srcs = sorted(os.path.join(ROOT, "coll", f) for f in os.listdir(os.path.join(ROOT, "coll")) if f.endswith(".c"))
    subprocess.run(["smpicc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-DTOPOCOLL_SMPI",
                    "-I" + os.path.join(ROOT, "coll"), "-I" + os.path.join(ROOT, "common"),
                    "-I" + os.path.join(ROOT, "analysis"), "-I" + os.path.join(ROOT, "snapshot"), "-o", exe,
                    os.path.join(HERE, "bench.c")] + srcs + ["-lm"], check=True, stdout=subprocess.DEVNULL)
    return exe


def smpirun(cfg, env, platform, hostfile, n, args, logf, timeout):
    """bench's result lines, or [] (the log says why)."""
    global CHILD
    cmd = ["smpirun"] + cfg + ["-platform", platform, "-hostfile", hostfile, "-np", str(n)] + args
    logf.write("# %s %s\n" % (" ".join("%s=%s" % kv for kv in env.items()), " ".join(cmd)))
    logf.flush()
    CHILD = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=logf, text=True, start_new_session=True,
                             env=dict(os.environ, **env))
    try:
        out, _ = CHILD.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(CHILD.pid, signal.SIGKILL)
        # the sizes bench finished before the timeout still count
        out, _ = CHILD.communicate()
        logf.write("# timed out after %d s\n" % timeout)
    finally:
        CHILD = None
    logf.write(out)
    rows = []
    for m in re.finditer(r"^coll (\S+) (\d+) native=(\S+) topo=(\S+) variant=(\d+) pred_native=(\S+) pred=(\S+)$",
                         out, re.M):
        rows.append(dict(op=m.group(1), bytes=int(m.group(2)), native=float(m.group(3)), topo=float(m.group(4)),
                         variant=VARIANTS.get(int(m.group(5)), m.group(5)), pred_native=float(m.group(6)),
                         pred=float(m.group(7))))
    return rows


def schedule_files(topod, hosts, work, sizes):
    """topod's all-to-all for libtopocoll under each selector: the route
    schedule with topod's predictions against that MPI's own Alltoall at
    each size (bench/jobspeed/run.py a2a_schedule_file)."""
    got = {}
    for sel in ("ompi", "mpich"):
        got[sel] = jobspeed.a2a_schedule_file(topod, hosts, os.path.join(work, "schedule-%s.txt" % sel),
                                              "smpi-" + sel, sizes)
    return got


def rank_hosts(shape, hosts, k, seed=1):
    """The host of every rank: K ranks per host, host-major, or for a
    cyclic job dealt round-robin over the (already leaf-dealt) hosts, or
    for a random job every rank's place shuffled (seeded)."""
    if shape == "cyclic":
        return [h for _ in range(k) for h in hosts]
    ranks = [h for h in hosts for _ in range(k)]
    if shape == "random":
        import random
        random.Random(seed).shuffle(ranks)
    return ranks


def dealt(hosts):
    """Hosts dealt round-robin over their leaves; a host's leaf is its
    name's part before '-' (fabgen's cRRR-PPP)."""
    by = {}
    for h in hosts:
        by.setdefault(h.split("-")[0], []).append(h)
    cols = [by[k] for k in sorted(by)]
    return [c[i] for i in range(max(len(c) for c in cols)) for c in cols if i < len(c)]


def run_job(args, cfg, exe, lab, fabric, shape, hosts, work):
    os.makedirs(work, exist_ok=True)
    n = len(hosts)
    platform, hostfile = os.path.join(work, "platform.xml"), os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("\n".join(rank_hosts(shape, hosts, args.ranks_per_host, args.seed)) + "\n")
    with open(platform, "w") as f:
        r = subprocess.run([jobspeed.TOPOQUERY, "-s", "127.0.0.1:%d" % lab.port, "simgrid"] + hosts, stdout=f,
                           stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RuntimeError("topoquery simgrid: " + r.stderr.strip())
    sched, algo = {}, "-"
    if shape != "cyclic" and args.ranks_per_host == 1 and "alltoall" in args.ops:
        # topod's all-to-all schedule is per host: one rank each
        topod = jobspeed.Topod(lab.port)
        try:
            sizes = sorted({1 << max(10, (b - 1).bit_length()) for b in args.bytes if b >= 1024})
            sched = schedule_files(topod, hosts, work, sizes)
            first = next((p for p in sched.values() if p), None)
            m = re.search(r"\balgo=(\S+)", open(first).readline()) if first else None
            algo = m.group(1) if m else "-"
        finally:
            topod.close()
    leaves = len({lf for lf in (leaf_of(args.leaves, h) for h in hosts)})
    return time_job(args, cfg, exe, fabric, shape, n, leaves, platform, hostfile, sched, algo, work)


@functools.lru_cache(maxsize=8)
def host_rates(platform):
    """host -> the rate (B/s) of the cable into it: the last link of every
    route that ends at it (the slowest, should they differ). Cached: every
    row of a job asks for its bound, and a 64-host platform's routes are
    megabytes of XML (callers only read the dict)."""
    xml = open(platform).read()
    rate = {m.group(1): int(m.group(2)) / 8.0
            for m in re.finditer(r'<link id="([^"]+)" bandwidth="(\d+)bps"', xml)}
    into = {}
    for m in re.finditer(r'<route src="[^"]+" dst="([^"]+)"[^>]*>(.*?)</route>', xml):
        last = re.findall(r'<link_ctn id="([^"]+)"/>', m.group(2))
        if last and last[-1] in rate:
            into[m.group(1)] = min(into.get(m.group(1), rate[last[-1]]), rate[last[-1]])
    return into


def root_bound(platform, hostfile, nbytes):
    """Gather's and Scatter's bound: the blocks of every rank not on the
    root's host (rank 0's) cross its cable, (P - its ranks) x bytes / that
    cable's rate."""
    ranks = open(hostfile).read().split()
    into = host_rates(platform)
    return (len(ranks) - ranks.count(ranks[0])) * nbytes / into[ranks[0]]


def ag_bound(platform, hostfile, nbytes):
    """Allgather's host-cable bound: max over hosts of (P - ranks on it) x
    bytes / the rate of its cable in."""
    ranks = open(hostfile).read().split()
    into = host_rates(platform)
    per = {}
    for h in ranks:
        per[h] = per.get(h, 0) + 1
    return max((len(ranks) - k) * nbytes / into[h] for h, k in per.items())


def bcast_bound(platform, hostfile, nbytes):
    """Bcast's bound: every host but the root's takes the whole message in
    through its cable, bytes / the slowest such cable's rate."""
    ranks = open(hostfile).read().split()
    into = host_rates(platform)
    return max((nbytes / into[h] for h in set(ranks) if h != ranks[0]), default=0)


def allreduce_bound(platform, hostfile, nbytes):
    """Allreduce's bound (Patarasuk and Yuan 2009), a host's ranks reduced
    among themselves for free: over H hosts each host's cable carries at
    least 2 (H - 1) / H x bytes in, for the slowest host."""
    ranks = open(hostfile).read().split()
    into = host_rates(platform)
    hosts = set(ranks)
    return max((2.0 * (len(hosts) - 1) / len(hosts) * nbytes / into[h] for h in hosts), default=0)


BOUNDS = {"allgather": ag_bound, "gather": root_bound, "scatter": root_bound, "bcast": bcast_bound,
          "allreduce": allreduce_bound}


def a2a_bound(sched_file, nbytes):
    """Alltoall's bound: topod's link-load bound of the job's routes for
    blocks of nbytes (`bound_us` in the schedule file's header of that
    size, which every size class has), 0 where there is none."""
    if not sched_file:
        return 0
    for line in open(sched_file):
        if not line.startswith("#"):
            break
        m = re.search(r" bytes=(\d+) .*\bbound_us=([0-9.]+)", line)
        if m and int(m.group(1)) == nbytes:
            return float(m.group(2)) * 1e-6
    return 0


def time_job(args, cfg, exe, fabric, shape, n, leaves, platform, hostfile, sched, algo, work):
    """bench's rows for one job's exported platform (and schedule); n is
    the job's hosts, the ranks are the host file's lines."""
    os.makedirs(work, exist_ok=True)
    rows = []
    nr = len(open(hostfile).read().split())
    with open(os.path.join(work, "smpi.log"), "w") as logf:
        for sel in args.selectors:
            env = dict(TOPOCOLL_TOPOLOGY=platform, TOPOCOLL_MODEL="smpi-ompi" if sel == "ompi" else "smpi-mpich")
            if sched and sched.get(sel):
                env["TOPOCOLL_SCHEDULE"] = sched[sel]
            for op in args.ops:
                if op == "alltoall" and nr > args.alltoall_max:
                    continue
                per = 1 if op in ("bcast", "allreduce") else nr
                sizes = [b for b in args.bytes if b * per <= TOTAL_MAX and b * per * nr <= args.vm_max]
                capped = [b for b in args.bytes if b not in sizes]
                if capped:
                    log("    %-5s %-9s %s left out: %d ranks x %d x bytes over %d MiB per rank or %d GiB in all"
                        % (sel, op, ",".join(map(str, capped)), nr, per, TOTAL_MAX >> 20, args.vm_max >> 30))
                if not sizes:
                    continue
                t0 = time.monotonic()
                block = jobspeed.shared_block_cfg(max(sizes) * per + 64)
                got = smpirun(cfg + ["--cfg=smpi/coll-selector:" + sel] + block, env, platform, hostfile, nr,
                              [exe, op, ",".join(str(b) for b in sizes), "1"], logf, args.timeout)
                for g in got:
                    g.update(fabric=fabric, shape=shape, hosts=n, leaves=leaves, selector=sel, a2a_algo=algo,
                             rph=nr // n, bound=a2a_bound(sched.get(sel), g["bytes"]) if op == "alltoall" else
                             BOUNDS[op](platform, hostfile, g["bytes"]))
                    rows.append(g)
                log("    %-5s %-9s %s  (%.1f s)" % (sel, op, " ".join(
                    "%s:%.2f%s%s" % (g["bytes"], g["native"] / g["topo"], "" if g["variant"] == "own" else "*",
                                     "/%.2f" % (g["topo"] / g["bound"]) if g["bound"] else "")
                    for g in got) or "FAILED", time.monotonic() - t0))
    return rows


def leaf_of(leaves, host):
    for i, lf in enumerate(leaves):
        if host in lf:
            return i
    return -1


def write_outputs(rows, outdir, header):
    keys = ["fabric", "shape", "hosts", "leaves", "selector", "op", "bytes", "native", "topo", "variant",
            "pred_native", "pred", "a2a_algo", "rph", "bound"]
    with open(os.path.join(outdir, "coll.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys + ["speedup", "over_bound"])
        for r in rows:
            w.writerow([r[k] for k in keys] + ["%.4f" % (r["native"] / r["topo"]) if r["topo"] else "",
                                               "%.4f" % (r["topo"] / r["bound"]) if r["bound"] else ""])
    with open(os.path.join(outdir, "coll.md"), "w") as f:
        f.write(header + "\n\n" + means(rows) + "\n\n" + table(rows) + "\n\n```\n" + summary(rows) + "\n```\n")


def table(rows):
    """One line per job, selector and op: speed-up per size (a name: the
    algorithm topocoll ran, else the MPI's own), in brackets topocoll's
    time over the bound (Bcast, Gather, Scatter, Allreduce, Allgather);
    Alltoall's: the MPI's own and topocoll's time over topod's route
    bound."""
    sizes = sorted({r["bytes"] for r in rows})
    out = ["| fabric | shape | hosts (leaves) | ranks/host | MPI | op | " +
           " | ".join(fmt_bytes(b) for b in sizes) + " |", "|" + " --- |" * (6 + len(sizes))]
    seen = {}
    for r in rows:
        seen.setdefault((r["fabric"], r["shape"], r["hosts"], r["leaves"], r.get("rph", 1), r["selector"], r["op"]),
                        {})[r["bytes"]] = r
    for (fab, shape, n, lv, rph, sel, op), by in seen.items():
        cells = []
        for b in sizes:
            r = by.get(b)
            if not r:
                cells.append("-")
                continue
            over = ""
            if r.get("bound") and op == "alltoall":
                over = " (%.2f / %.2f)" % (r["native"] / r["bound"], r["topo"] / r["bound"])
            elif r.get("bound"):
                over = " (%.2f)" % (r["topo"] / r["bound"])
            cells.append("%.2f%s%s" % (r["native"] / r["topo"], "" if r["variant"] == "own" else " " + r["variant"],
                                       over))
        out.append("| %s | %s | %d (%d) | %d | %s | %s | %s |" % (fab, shape, n, lv, rph, sel, op, " | ".join(cells)))
    return "\n".join(out)


def fmt_bytes(b):
    return "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10) if b >= 1024 else "%d B" % b


def a2a_summary(rs):
    """The library's Alltoall against its bar (docs/performance.md
    "libtopocoll's Alltoall at every size"): over the route bound,
    the MPI's own and the library's; where the MPI's own is more than
    1.25x above the bound at 32 KiB and more, the library 1.25x faster."""
    b = [r for r in rs if r["bound"]]
    if not b:
        return "alltoall  no bound (no schedule files)"
    far = [r for r in b if r["bytes"] >= 32768 and r["native"] / r["bound"] > 1.25]
    miss = ["%s %s %d %s %s: own %.2fx bound, lib %.2fx" % (r["fabric"], r["shape"], r["hosts"], r["selector"],
                                                           fmt_bytes(r["bytes"]), r["native"] / r["bound"],
                                                           r["native"] / r["topo"])
            for r in far if r["native"] / r["topo"] < 1.25]
    return ("alltoall  over the route bound: the MPI's own %.2f-%.2f, the library %.2f-%.2f; own > 1.25x the "
            "bound at >= 32 KiB: %d cases, the library >= 1.25x faster in %d%s"
            % (min(r["native"] / r["bound"] for r in b), max(r["native"] / r["bound"] for r in b),
               min(r["topo"] / r["bound"] for r in b), max(r["topo"] / r["bound"] for r in b), len(far),
               len(far) - len(miss), "; not: " + "; ".join(miss) if miss else ""))


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0


def means(rows):
    """Geometric means of T(MPI's own) / T(topocoll) per op, over every
    job, selector and layout, per size and over all sizes; `room` is the
    geometric mean of T(MPI's own) / bound: the most any algorithm could
    gain in a fluid model without latencies (1.00: the MPI's own already
    runs at the cables' limit)."""
    sizes = sorted({r["bytes"] for r in rows})
    out = ["| op | cases | taken | min | max | all sizes | " + " | ".join(fmt_bytes(b) for b in sizes) +
           " | room |", "|" + " --- |" * (7 + len(sizes))]
    groups = [(op, op, lambda r, op=op: r["op"] == op) for op in OPS]
    groups.append(("allgather", "allgather, random rank order",
                   lambda r: r["op"] == "allgather" and r["shape"] == "random"))
    for op, name, keep in groups:
        rs = [r for r in rows if keep(r) and r["topo"]]
        if not rs:
            continue
        sp = [r["native"] / r["topo"] for r in rs]
        room = [r["native"] / r["bound"] for r in rs if r.get("bound")]
        cells = ["%.2f" % geo([r["native"] / r["topo"] for r in rs if r["bytes"] == b]) if
                 any(r["bytes"] == b for r in rs) else "-" for b in sizes]
        out.append("| %s | %d | %d | %.3f | %.2f | %.2f | %s | %s |"
                   % (name, len(rs), sum(r["variant"] != "own" for r in rs), min(sp), max(sp), geo(sp),
                      " | ".join(cells), "%.2f" % geo(room) if room else "-"))
    return "\n".join(out)


def summary(rows):
    out = []
    for op in OPS:
        rs = [r for r in rows if r["op"] == op and r["topo"]]
        if not rs:
            continue
        ran = [r for r in rs if r["variant"] != "own"]
        sp = [r["native"] / r["topo"] for r in rs]
        big = [r["native"] / r["topo"] for r in rs if r["bytes"] >= 1 << 20 and r["leaves"] >= 2]
        low = ["%s %s %dx%d %s %s: %.3f" % (r["fabric"], r["shape"], r["hosts"], r.get("rph", 1), r["selector"],
                                            fmt_bytes(r["bytes"]), r["native"] / r["topo"])
               for r in rs if r["native"] / r["topo"] < 0.98]
        err = [r["topo"] / r["pred"] for r in ran if r["pred"] > 0]
        out.append("%-9s cases %d, topocoll ran %d, speed-up %.2f-%.2f, >= 1 MiB on >= 2 leaves: best %s, "
                   "SMPI/predicted where it ran %s, below 0.98x: %s"
                   % (op, len(rs), len(ran), min(sp), max(sp), "%.2f" % max(big) if big else "-",
                      "%.2f-%.2f" % (min(err), max(err)) if err else "-", "; ".join(low) if low else "none"))
        if op == "alltoall":
            out.append(a2a_summary(rs))
    return "\n".join(out)


def read_rows(results):
    """The rows of a results directory's coll.csv."""
    with open(os.path.join(results, "coll.csv")) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r.setdefault("rph", "1")
        r.setdefault("bound", "0")
        for k in ("hosts", "leaves", "bytes", "rph"):
            r[k] = int(r[k])
        for k in ("native", "topo", "pred_native", "pred", "bound"):
            r[k] = float(r[k] or 0)
    return rows


def replay(args, cfg, exe, header):
    """--replay OLD: the same jobs re-timed on OLD's exported platforms and
    schedules (no lab brought up); OLD's rows of the ops not asked for are
    carried over as they were."""
    old = read_rows(args.replay)
    jobs = []
    for r in old:
        j = (r["fabric"], r["shape"], r["hosts"], r["leaves"], r["a2a_algo"])
        if j not in jobs:
            jobs.append(j)
    rows = []
    for fab, shape, n, leaves, algo in jobs:
        src = os.path.join(args.replay, "runs", fab, "%s-%d" % (shape, n))
        sched = {sel: os.path.join(src, "schedule-%s.txt" % sel) for sel in ("ompi", "mpich")}
        sched = {k: v for k, v in sched.items() if os.path.exists(v)}
        log("  %s %s %d hosts (replayed from %s)" % (fab, shape, n, src))
        job = [r for r in old if (r["fabric"], r["shape"], r["hosts"]) == (fab, shape, n)
               and r["op"] not in args.ops and r["selector"] in args.selectors]
        job += time_job(args, cfg, exe, fab, shape, n, leaves, os.path.join(src, "platform.xml"),
                        os.path.join(src, "hosts"), sched, algo,
                        os.path.join(args.results, "runs", fab, "%s-%d" % (shape, n)))
        rows += sorted(job, key=lambda r: (args.selectors.index(r["selector"]), OPS.index(r["op"]), r["bytes"]))
        if args.cyclic and shape == "contiguous":
            rows += cyclic_job(args, cfg, exe, fab, n, leaves, src, algo)
        write_outputs(rows, args.results, header)
    return rows


def cyclic_job(args, cfg, exe, fab, n, leaves, src, algo):
    """--cyclic: the contiguous job's hosts with ranks dealt round-robin over
    the leaves (Slurm's cyclic distribution), on the same platform; a
    host's leaf is its name's part before '-' (fabgen's cRRR-PPP)."""
    hosts = list(dict.fromkeys(open(os.path.join(src, "hosts")).read().split()))
    work = os.path.join(args.results, "runs", fab, "cyclic-%d" % n)
    os.makedirs(work, exist_ok=True)
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("\n".join(rank_hosts("cyclic", dealt(hosts), args.ranks_per_host)) + "\n")
    log("  %s cyclic %d hosts (the contiguous job's, dealt over its leaves)" % (fab, n))
    return time_job(args, cfg, exe, fab, "cyclic", n, leaves, os.path.join(src, "platform.xml"), hostfile, None,
                    algo, work)


def platform_leaves(platform, hosts):
    """How many leaf switches the hosts hang off: the switch a host's
    routes leave it by (the first link after its own cable)."""
    xml = open(platform).read()
    leaf = {}
    for m in re.finditer(r'<route src="([^"]+)" dst="[^"]+"[^>]*>(.*?)</route>', xml):
        if m.group(1) in leaf:
            continue
        links = re.findall(r'<link_ctn id="([^":]+):\d+"/>', m.group(2))
        if len(links) >= 2:
            leaf[m.group(1)] = links[1]
    return len({leaf.get(h, h) for h in hosts})


def from_platforms(args, cfg, exe, header):
    """--platforms DIR: the jobs of DIR/FABRIC/SHAPE-N/{platform.xml,hosts}
    (a run's exported platforms, no lab): contiguous and fragmented as
    they are, cyclic and random from the contiguous job's hosts."""
    rows = []
    for fab in args.fabrics_list:
        for n in args.sizes_list:
            for shape in args.shapes.split(","):
                base = "fragmented" if shape == "fragmented" else "contiguous"
                src = os.path.join(args.platforms, fab, "%s-%d" % (base, n))
                if not os.path.exists(os.path.join(src, "platform.xml")):
                    log("  %s %s %d: no platform in %s" % (fab, shape, n, src))
                    continue
                hosts = list(dict.fromkeys(open(os.path.join(src, "hosts")).read().split()))
                if shape == "cyclic":
                    hosts = dealt(hosts)
                work = os.path.join(args.results, "runs", fab, "%s-%dx%d" % (shape, n, args.ranks_per_host))
                os.makedirs(work, exist_ok=True)
                hostfile = os.path.join(work, "hosts")
                with open(hostfile, "w") as f:
                    f.write("\n".join(rank_hosts(shape, hosts, args.ranks_per_host, args.seed)) + "\n")
                platform = os.path.join(src, "platform.xml")
                log("  %s %s %d hosts x %d" % (fab, shape, n, args.ranks_per_host))
                rows += time_job(args, cfg, exe, fab, shape, n, platform_leaves(platform, hosts), platform, hostfile,
                                 None, "-", work)
                write_outputs(rows, args.results, header)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results", help="directory for coll.csv, coll.md and runs/")
    ap.add_argument("--fabrics", default="ft2,ft2-mixed,ft3", help="comma list of bench/jobspeed/run.py's fabrics "
                    "(default ft2,ft2-mixed,ft3; --big adds ft2-big)")
    ap.add_argument("--sizes", help="hosts per job (default 16,64,128; --big adds 256)")
    ap.add_argument("--shapes", default="contiguous,fragmented", help="comma list of " + ",".join(jobspeed.SHAPES) +
                    ", cyclic (the contiguous job's hosts dealt round-robin over its leaves), random (its ranks "
                    "in a seeded random order)")
    ap.add_argument("--ranks-per-host", type=int, default=1, metavar="K", help="K ranks on every host of the job "
                    "(host-major; cyclic jobs: dealt round-robin over the hosts)")
    ap.add_argument("--vm-max", type=int, default=ALL_MAX, help="bytes: sizes whose receive buffers of all ranks "
                    "exceed this are left out (default 64 GiB of address space)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--bytes", default=",".join(str(b) for b in SIZES), help="message sizes (per rank or block)")
    ap.add_argument("--selectors", default="ompi,mpich")
    ap.add_argument("--big", action="store_true", help="256-host jobs on the 512-host fabric")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", metavar="OLD", help="re-time OLD's jobs on its exported platforms and schedules "
                    "(no lab); OLD's rows of the ops not in --ops are kept")
    ap.add_argument("--merge", metavar="A,B", help="time nothing: the tables of these results directories' "
                    "coll.csv together (say, one rank per host and several)")
    ap.add_argument("--cyclic", action="store_true", help="with --replay: each contiguous job also with its ranks "
                    "dealt round-robin over its leaves")
    ap.add_argument("--platforms", metavar="DIR", help="the jobs of DIR/FABRIC/{contiguous,fragmented}-N/"
                    "{platform.xml,hosts} (exported platforms, no lab); shapes cyclic and random from the "
                    "contiguous one's hosts")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per smpirun")
    ap.add_argument("--alltoall-max", type=int, default=64,
                    help="largest job timed in Alltoall (default 64: 128 ranks' 127 steps take SMPI minutes per size)")
    args = ap.parse_args()
    fabrics = args.fabrics.split(",") + (["ft2-big"] if args.big else [])
    sizes = [int(s) for s in (args.sizes or ("16,64,128,256" if args.big else "16,64,128")).split(",")]
    args.ops, args.selectors = args.ops.split(","), args.selectors.split(",")
    args.bytes = [int(b) for b in args.bytes.split(",")]
    for f in fabrics:
        if f not in jobspeed.FABRICS:
            ap.error("unknown fabric %s" % f)

    def on_term(sig, frame):
        if CHILD:
            try:
                os.killpg(CHILD.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    os.makedirs(args.results, exist_ok=True)
    if args.merge:
        rows = [r for d in args.merge.split(",") for r in read_rows(d)]
        header = "Collectives in SMPI: the rows of %s together." % args.merge
        write_outputs(rows, args.results, header)
        print(header + "\n\n" + means(rows) + "\n\n" + summary(rows))
        return 0 if rows else 1
    exe = build(args.results)
    cfg = jobspeed.smpi_cfg()
    sg = subprocess.run(["smpirun", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    header = ("Collectives in SMPI: %s, git %s, %d rank(s) per host, %s. Cells: T(MPI's own) / T(topocoll) "
              "(> 1 faster); a name after it is the algorithm topocoll ran, none: it left the call to the MPI."
              % (sg, rev, args.ranks_per_host, time.strftime("%Y-%m-%d")))
    rows, t_start = [], time.monotonic()
    if args.platforms:
        args.fabrics_list, args.sizes_list = fabrics, sizes
        header += " Jobs of %s's exported platforms." % args.platforms
        rows = from_platforms(args, cfg, exe, header)
        fabrics = []
    elif args.replay:
        header += (" Replayed on %s's platforms; %s re-timed, the other ops' rows are %s's."
                   % (args.replay, ",".join(args.ops), args.replay))
        fabrics = []
        rows = replay(args, cfg, exe, header)
    for fab in fabrics:
        spec = jobspeed.FABRICS[fab]
        log("%s: %s" % (fab, spec["desc"]))
        with jobspeed.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            args.leaves = jobspeed.leaves_of(lab.meta)
            for n in sizes:
                for shape in args.shapes.split(","):
                    hosts = jobspeed.shape_hosts("contiguous" if shape in ("cyclic", "random") else shape, n, args.leaves,
                                                 args.seed)
                    if hosts is None:
                        continue
                    if shape == "cyclic":
                        hosts = dealt(hosts)
                    log("  %s %d hosts" % (shape, n))
                    rows += run_job(args, cfg, exe, lab, fab, shape, hosts,
                                    os.path.join(args.results, "runs", fab, "%s-%d" % (shape, n)))
                    write_outputs(rows, args.results, header)
    write_outputs(rows, args.results, header)
    print(header + "\n\n" + table(rows) + "\n\n" + summary(rows))
    print("\n(%.0f s; %s)" % (time.monotonic() - t_start, os.path.join(args.results, "coll.md")))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
