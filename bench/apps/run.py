#!/usr/bin/env python3
"""run.py - real MPI applications in SMPI (docs/performance.md "Real
applications in SMPI"): HPC Challenge's MPIFFT (Alltoall transposes) and
PTRANS (pairwise transposes over a process grid), unmodified, on the
job-speed fabrics' exported platforms, with first-fit, random and
topod-picked hosts, with the plain MPI and with libtopocoll bound in place
of its collectives.

  python3 bench/apps/run.py RESULTS_DIR [--fabrics ft2,ft3] [--sizes 16]
          [--free-frac 0.5] [--randoms 2] [--selectors ompi,mpich] [--jobs 2]
  python3 bench/apps/run.py RESULTS_DIR --real [--fabrics ft2-small] [--sizes 16] [--mpis ompi,mpich]
  python3 bench/apps/run.py RESULTS_DIR --merge DIR1,DIR2   (one table of earlier runs)
  python3 bench/apps/run.py RESULTS_DIR --app fftw [--fftw-size 64x64x64] ...   (the second application)

--app fftw: FFTW 2.1.5's MPI test program (Debian's fftw .orig tarball,
bench/apps/build_fftw.sh), `fftw_mpi_test -c SIZE`: 3-D FFTs in slabs whose
transposes are pairwise MPI_Sendrecv steps (in place) or MPI_Alltoall (with
a work array), each checked against FFTW's serial transform; the run counts
if every check says OK, and its figure is 1 / the simulated time. SMPI only.

Sources: Debian's hpcc .orig tarball (bench/apps/fetch_src.sh, apt-get
source), built by bench/apps/build_hpcc.sh for SMPI twice: plain, and with
the application's objects bound to libtopocoll's topocoll_MPI_* (objcopy
--redefine-sym, bench/apps/bind.sh). One HPCC run gives both applications'
figures (HPCC runs all its tests; its input, hpcc_input(), keeps the others
small) and HPCC's own verdict on each.

For each lab fabric (bench/jobspeed/run.py's labs: ibsim + OpenSM + the
osmtopo plugin + topod) and job size N (one rank per host): a free list of
FREE_FRAC of the fabric's hosts (bench/jobspeed/place.py's free_list, seeded)
and from it place.py's pick_sets: topod's `pick N FREE...` (its default
rule), first-fit (the first N free hosts) and RANDOMS random N-subsets. For
each placement: `topoquery simgrid HOSTS` -> the platform (also the
library's TOPOCOLL_TOPOLOGY), job_schedules() -> the schedule files the
library reads in SMPI (topod is out of reach inside a simulation), then
smpirun (tests/lib/smpi.sh's settings) under the ompi and mpich selectors,
plain and with the library (TOPOCOLL_MODEL of the same selector, its
defaults otherwise).

A run counts only if HPCC's own validation passed: Success=1 in its summary
(HPL's residual, PTRANS's residual checks, MPIFFT's error bound,
RandomAccess's error fraction, DGEMM, STREAM, FFT), and PTRANS and MPIFFT ran
on all N ranks. Figures are the applications' own: MPIFFT's Gflop/s and
PTRANS's GB/s (both are rates of a fixed problem, so a ratio of rates is a
speed-up), beside SMPI's simulated wall time of the whole HPCC run.

--real: the same HPCC built for Open MPI and MPICH, run for real on this
machine under each with LD_PRELOAD=libtopocoll.so (mpich/libtopocoll.so),
TII_SERVERS the lab's topod and TII_HOSTMAP topod's pick: HPCC's validation
must pass and the library must have taken calls (TOPOCOLL_STATS).

Output: RESULTS_DIR/apps.csv (one row per run), apps.md (the table: per
fabric, size, selector and application, first-fit with the plain MPI and
every other placement and variant as a speed-up over it; geometric means),
runs/ (platforms, host files, schedules, HPCC's outputs, SMPI logs).
"""
import argparse
import concurrent.futures
import csv
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "jobspeed"))
import run as js  # noqa: E402  (labs, Topod, SMPI settings)
import place  # noqa: E402  (free lists and picks)

APPS = ["mpifft", "ptrans", "fftw"]
# each application's figure (a rate: higher is faster), its apps.csv column
COLUMN = {"mpifft": "mpifft_gflops", "ptrans": "ptrans_gbs", "fftw": "fftw_rate"}
UNIT = {"mpifft": "Gflop/s", "ptrans": "GB/s", "fftw": "1/s"}
CSV_KEYS = ["fabric", "hosts", "free", "placement", "map", "leaves", "selector", "variant", "valid", "why", "mpifft_gflops",
            "mpifft_n", "mpifft_block", "mpifft_maxerr", "ptrans_gbs", "ptrans_time", "ptrans_n", "fftw_rate",
            "fftw_checks", "sim_seconds", "wall_seconds", "lib_stats"]
CHILDREN = set()
CHILD_LOCK = threading.Lock()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def grid(n):
    """The job's process grid P x Q (P <= Q, as square as N allows)."""
    p = int(math.sqrt(n))
    while n % p:
        p -= 1
    return p, n // p


def hpcc_input(n, threshold=16.0):
    """hpccinf.txt for N ranks (a power of two: MPIFFT and Sandia's
    RandomAccess want one). HPCC sizes every test from HPL's memory per
    process, N_hpl^2 x 8 / (the smallest P x Q listed): HPL runs on a 1 x 2
    grid (the memory) and on the job's grid (so PTRANS, which uses HPL's
    grids, transposes over all ranks; its summary is the last grid's).
    N_hpl = 728 gives 2 MiB per process: MPIFFT's Alltoall blocks are 32 KiB
    at 16 ranks, 8 KiB at 64 (mpifft_block), PTRANS transposes an N_hpl/2
    matrix; RandomAccess, DGEMM, STREAM stay small (their cost is real CPU
    time in SMPI, not simulated). THRESHOLD is HPCC's residual threshold
    for every check (HPL's 16.0)."""
    if n < 4 or n & (n - 1):
        raise ValueError("HPCC here needs a power of two of at least 4 ranks, not %d" % n)
    p, q = grid(n)
    return HPCC_INPUT % dict(p=p, q=q, thr=threshold)


N_HPL = 728
HPCC_INPUT = """HPLinpack benchmark input file (bench/apps/run.py)
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
""" + str(N_HPL) + """          Ns
1            # of NBs
64           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
2            # of process grids (P x Q)
1 %(p)d          Ps
2 %(q)d          Qs
%(thr)g         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def mpifft_block(n):
    """Bytes per rank pair in MPIFFT's MPI_Alltoall: HPCC's local vector
    size, the largest power of two <= (HPL memory per process) / 16 bytes
    / (4 x ranks), counts complex doubles (FFT/mpifft.c; io.c
    HPCC_LocalVectorSize); each transpose sends it to every rank."""
    mem = N_HPL * N_HPL * 8 // 2
    q = mem // 16 // (4 * n)
    return 16 * (1 << (q.bit_length() - 1))


def job_schedules(topod, hosts, work, block):
    """The one place that asks topod for what the library needs in SMPI,
    where it cannot ask itself: per selector, the job's Alltoall schedule
    file TOPOCOLL_SCHEDULE names, with topod's predictions against that
    selector's own Alltoall for every size class the library may ask
    (bench/jobspeed/run.py's a2a_schedule_file: `schedule route bytes=B
    window=auto native=smpi-SEL`), the application's block of BLOCK bytes
    among them. Returns {selector: the environment to add to its library
    runs}."""
    cls = 1 << max(10, (block - 1).bit_length())
    sizes = sorted(set(js.A2A_SIZES) | {cls})
    env = {}
    for sel in ("ompi", "mpich"):
        path = js.a2a_schedule_file(topod, hosts, os.path.join(work, "schedule-%s.txt" % sel), "smpi-" + sel, sizes)
        if not path:
            log("    schedule for %s refused (the library runs without one)" % sel)
        env[sel] = {"TOPOCOLL_SCHEDULE": path} if path else {}
    return env


def summary(path):
    """HPCC's summary section as a dict (name=value lines)."""
    out = {}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return out, ""
    part = text.split("Begin of Summary section.", 1)
    for m in re.finditer(r"^(\w+)=(.*)$", part[1] if len(part) > 1 else "", re.M):
        out[m.group(1)] = m.group(2).strip()
    return out, text


def ptrans_job(text, n):
    """PTRANS on the job's grid: (HPCC's figure, the best of its five
    repetitions' GB/s, or None; its rows; how many say PASSED). The
    summary's PTRANS_GBs is the best over all grids, which could be the
    1 x 2 grid's (a real run on few cores)."""
    p, q = grid(n)
    sec = text.split("Begin of PTRANS section.", 1)[-1].split("End of PTRANS section.", 1)[0]
    rows = [(float(m.group(3)), m.group(2)) for m in re.finditer(
        r"^WALL\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+\s+\d+)\s+\S+\s+(\w+)\s+([0-9.]+)\s", sec, re.M)
        if m.group(1).split() == [str(p), str(q)]]
    return (max(r[0] for r in rows) if rows else None), len(rows), sum(1 for r in rows if r[1] == "PASSED")


def validate(s, text, n):
    """HPCC's own verdicts for the run: '' if it validates, else why."""
    why = []
    if s.get("Success") != "1":
        why.append("Success=%s" % s.get("Success", "missing (no summary)"))
    if s.get("MPIFFT_Procs") != str(n):
        why.append("MPIFFT on %s ranks" % s.get("MPIFFT_Procs"))
    _, nrows, passed = ptrans_job(text, n)
    if not nrows or passed != nrows:
        why.append("PTRANS residual checks on the %dx%d grid: %d of %d passed" % (grid(n) + (passed, nrows)))
    m = re.search(r"PTRANS section.*?Finished\s+(\d+) tests, with the following results:\s*"
                  r"(\d+) tests completed and passed residual checks\.\s*(\d+) tests completed and failed", text, re.S)
    if not m or m.group(1) != m.group(2) or m.group(3) != "0":
        why.append("PTRANS residual checks: %s" % (m.group(0).split("\n")[-1] if m else "missing"))
    if not re.search(r"Begin of MPIFFT section.*?max\(\|x-x0\|\)", text, re.S):
        why.append("MPIFFT printed no error")
    return "; ".join(why)


def smpirun(cmd, env, cwd, logf, timeout):
    """Runs one simulation in its own session (ended by PID on timeout)."""
    logf.write("# %s %s\n" % (" ".join("%s=%s" % kv for kv in sorted(env.items())), " ".join(cmd)))
    logf.flush()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                         env=dict(os.environ, **env))
    with CHILD_LOCK:
        CHILDREN.add(p)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        logf.write("# timed out after %d s\n" % timeout)
        return None
    finally:
        with CHILD_LOCK:
            CHILDREN.discard(p)


def run_one(args, cfg, job, sel, variant, when=None):
    """One run of the application in SMPI (time() at WHEN: PTRANS's grid
    map, FFTW's inputs and coin flips); returns the CSV row."""
    work = os.path.join(job["work"], "%s-%s%s" % (sel, variant, "-t%d" % when if when else ""))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if args.app == "hpcc":
        with open(os.path.join(work, "hpccinf.txt"), "w") as f:
            f.write(hpcc_input(job["n"], args.hpl_threshold))
    env = {"APPS_TIME": str(when)} if when else {}
    exe = args.exe["plain"]
    if variant == "lib":
        exe = args.exe["lib"]
        env = dict(env, **job["sched_env"].get(sel, {}), TOPOCOLL_TOPOLOGY=job["platform"], TOPOCOLL_STATS="1", TOPOCOLL_VERBOSE="1",
                   TOPOCOLL_MODEL="smpi-" + sel)
    cmd = (["smpirun"] + cfg + ["--cfg=smpi/coll-selector:" + sel, "--cfg=smpi/display-timing:yes",
                                "--log=smpi_colls.thres:warning", "-platform", job["platform"],
                                "-hostfile", job["hostfile"], "-np", str(job["n"]), exe])
    if args.app == "fftw":
        cmd += ["-c", args.fftw_size]
    t0 = time.monotonic()
    with open(os.path.join(work, "smpi.log"), "w") as logf:
        rc = smpirun(cmd, env, work, logf, args.timeout)
    wall = time.monotonic() - t0
    smpilog = open(os.path.join(work, "smpi.log"), errors="replace").read()
    m = re.search(r"Simulated time: ([0-9.eE+-]+) seconds", smpilog)
    stats = " ".join(re.findall(r"topocoll: rank 0 of MPI_COMM_WORLD: (.*)", smpilog))
    row = {k: "" for k in CSV_KEYS}
    row.update(fabric=job["fabric"], hosts=job["n"], free=job["nfree"], placement=job["placement"], map=when or "",
               leaves=job["leaves"], selector=sel, variant=variant, sim_seconds=m.group(1) if m else "",
               wall_seconds="%.1f" % wall, lib_stats=stats)
    if args.app == "hpcc":
        s, text = summary(os.path.join(work, "hpccoutf.txt"))
        why = validate(s, text, job["n"]) if rc == 0 else "smpirun exit %s" % rc
        row.update(mpifft_gflops=s.get("MPIFFT_Gflops", ""), mpifft_n=s.get("MPIFFT_N", ""),
                   mpifft_maxerr=s.get("MPIFFT_maxErr", ""), mpifft_block=mpifft_block(job["n"]),
                   ptrans_gbs=ptrans_job(text, job["n"])[0] or "", ptrans_time=s.get("PTRANS_time", ""),
                   ptrans_n=s.get("PTRANS_n", ""))
        figs = "mpifft %s Gflop/s, ptrans %s GB/s" % (row["mpifft_gflops"], row["ptrans_gbs"])
    else:
        why, checks = fftw_validate(rc, smpilog)
        sim = float(row["sim_seconds"] or 0)
        row.update(fftw_checks=checks, fftw_rate="%.6g" % (1 / sim) if sim > 0 else "")
        figs = "fftw %s checks OK, %s s" % (checks, row["sim_seconds"])
    row.update(valid=0 if why else 1, why=why)
    log("    %-10s %-5s %-5s%s %s %s, simulated %s s (%.0f s)" % (
        job["placement"], sel, variant, " t=%d" % when if when else "", "valid" if not why else "INVALID (%s)" % why,
        figs, row["sim_seconds"], wall))
    return row


def fftw_validate(rc, out):
    """FFTW's own verdict on its MPI test (mpi/fftw_mpi_test -c SIZE): every
    'Testing nd correctness' line ends in OK (each compares the distributed
    transform with FFTW's serial one and dies on an error above its bound,
    'FATAL ERROR'); returns (why or '', 'OK of tested')."""
    tested = len(re.findall(r"^Testing nd correctness", out, re.M))
    passed = len(re.findall(r"\.\.\.OK$", out, re.M))
    why = []
    if rc != 0:
        why.append("smpirun exit %s" % rc)
    if "FATAL ERROR" in out:
        why.append("FFTW: " + re.search(r"FATAL ERROR.*", out).group(0))
    if not tested or passed != tested:
        why.append("%d of %d transforms checked OK" % (passed, tested))
    return "; ".join(why), "%d/%d" % (passed, tested)


def fftw_block(size, n):
    """Bytes per rank pair in FFTW's transposes of an NX x NY x NZ complex
    array over N ranks (slabs of NX/N planes, each cut in N blocks)."""
    dims = [int(x) for x in size.lower().split("x")]
    return math.prod(dims) * 16 // (n * n)


def leaf_count(leaves, hosts):
    where = {h: i for i, lf in enumerate(leaves) for h in lf}
    return len({where[h] for h in hosts})


def prepare_jobs(args, lab, fab):
    """The placements of every size on this fabric: platform, host file,
    schedules (topod is up only while the lab is)."""
    leaves = js.leaves_of(lab.meta)
    allh = [h for lf in leaves for h in lf]
    jobs = []
    for n in args.sizes:
        rnd, free = place.free_list(args.seed, n, allh, frac=args.free_frac)
        if len(free) <= n:
            log("  %d of %d free hosts: no choice on %s (a bigger fabric, or --free-frac)" % (n, len(free), fab))
            continue
        t = js.Topod(lab.port)
        try:
            head, picks = place.pick_sets(t, rnd, n, free, args.randoms)
            if picks is None:
                raise RuntimeError("pick: " + head)
            log("  %d hosts of %d free: pick %s" % (n, len(free), head))
            for name, hosts in picks.items():
                work = os.path.join(args.results, "runs", fab, "%d-%s" % (n, name))
                os.makedirs(work, exist_ok=True)
                platform, hostfile = os.path.join(work, "platform.xml"), os.path.join(work, "hosts")
                with open(hostfile, "w") as f:
                    f.write("\n".join(hosts) + "\n")
                place.platform_for(lab.port, hosts, platform)
                jobs.append(dict(fabric=fab, n=n, nfree=len(free), placement=name, hosts=hosts, work=work,
                                 platform=platform, hostfile=hostfile, leaves=leaf_count(leaves, hosts),
                                 sched_env=job_schedules(t, hosts, work, args.block(n))))
        finally:
            t.close()
    return jobs


def fetch(args, pkg="hpcc"):
    """Debian's PKG tarball, fetched once into BUILD/src."""
    r = subprocess.run([os.path.join(HERE, "fetch_src.sh"), pkg, os.path.join(args.build, "src")],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("fetch_src.sh %s: %s" % (pkg, r.stderr.strip()))
    return r.stdout.strip()


def build_hpcc(args, tarball, mpi):
    """bench/apps/build_hpcc.sh MPI into BUILD/MPI: HPCC compiled once and
    kept (its stamp), the SMPI binding to libtopocoll redone when the
    library changed; --rebuild compiles it again."""
    out = os.path.join(args.build, mpi)
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(HERE, "build_hpcc.sh"), mpi, tarball, out], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=dict(os.environ, APPS_REBUILD="1" if args.rebuild else "0"))
    if r.returncode:
        raise RuntimeError("build_hpcc.sh %s: %s" % (mpi, r.stderr.strip()[-2000:]))
    log("HPCC for %s %s in %.0f s" % (mpi, "kept, ready" if "HPCC kept" in r.stderr else "built", time.monotonic() - t0))
    return out


def build(args):
    """The application for SMPI (plain and bound): HPCC into BUILD/smpi,
    FFTW's MPI test into BUILD/fftw/smpi (bench/apps/build_fftw.sh)."""
    if args.app == "fftw":
        tarball = fetch(args, "fftw")
        t0 = time.monotonic()
        r = subprocess.run([os.path.join(HERE, "build_fftw.sh"), tarball, os.path.join(args.build, "fftw"), "smpi"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise RuntimeError("build_fftw.sh: " + r.stderr.strip()[-2000:])
        log("FFTW for smpi ready in %.0f s" % (time.monotonic() - t0))
        exe = r.stdout.strip().split("\n")[-1]
        args.exe = {"plain": exe, "lib": exe + "-topocoll"}
        return tarball
    tarball = fetch(args)
    out = build_hpcc(args, tarball, "smpi")
    args.exe = {"plain": os.path.join(out, "hpcc"), "lib": os.path.join(out, "hpcc-topocoll")}
    return tarball


def ratio(a, b):
    try:
        return float(a) / float(b) if float(b) > 0 and float(a) > 0 else None
    except (TypeError, ValueError):
        return None


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def table(rows):
    """Per fabric, size, selector, application: first-fit with the plain MPI
    (the application's figure), then speed-ups over it."""
    cols = [("first-fit", "lib"), ("random", "plain"), ("random", "lib"), ("pick", "plain"), ("pick", "lib")]
    out = ["| app | fabric | hosts (free) | MPI | first-fit plain | first-fit + lib | random plain | random + lib | "
           "pick plain | pick + lib | leaves ff / random / pick |", "|" + " --- |" * 11]
    goal, lines = {}, []
    keys = []
    for r in rows:
        k = (r["fabric"], r["hosts"], r["selector"])
        if k not in keys:
            keys.append(k)
    for app in APPS:
        col = COLUMN[app]
        if not any(r.get(col) or (bool(r.get("fftw_checks")) == (app == "fftw") and not r["valid"]) for r in rows):
            continue
        for fab, n, sel in keys:
            sub = [r for r in rows if (r["fabric"], r["hosts"], r["selector"]) == (fab, n, sel) and
                   bool(r.get("fftw_checks")) == (app == "fftw")]
            if not sub:
                continue

            def val(pl, var):
                vs = [float(r[col]) for r in sub if r["variant"] == var and r["valid"] and r[col] and
                      (r["placement"] == pl or (pl == "random" and r["placement"].startswith("random")))]
                # the random picks' mean time: a rate is work / time, so the harmonic mean of rates
                return len(vs) / sum(1 / v for v in vs) if vs and all(v > 0 for v in vs) else None
            base = val("first-fit", "plain")
            cells = []
            for pl, var in cols:
                x = ratio(val(pl, var), base)
                cells.append("%.2fx" % x if x else "-")
                if (pl, var) == ("pick", "lib") and x:
                    goal.setdefault(app, []).append((x, "%s %d %s" % (fab, n, sel)))
            lv = {pl: sorted({r["leaves"] for r in sub if r["placement"] == pl or
                              (pl == "random" and r["placement"].startswith("random"))})
                  for pl in ("first-fit", "random", "pick")}
            bad = sum(1 for r in sub if not r["valid"])
            out.append("| %s | %s | %d (%d) | %s | %s %s%s | %s | %s / %s / %s |" % (
                app, fab, n, sub[0]["free"], sel, "%.4g" % base if base else "-", UNIT[app],
                " (%d invalid)" % bad if bad else "", " | ".join(cells),
                ",".join(map(str, lv["first-fit"])), ",".join(map(str, lv["random"])), ",".join(map(str, lv["pick"]))))
    for app in APPS:
        xs = goal.get(app, [])
        if xs:
            low = [w for x, w in xs if x < 0.98]
            lines.append("%s: pick + lib over first-fit plain: %d cases, %.2f-%.2fx, geometric mean %.2fx; "
                         "below 0.98x: %s" % (app, len(xs), min(x for x, _ in xs), max(x for x, _ in xs),
                                              gmean([x for x, _ in xs]), ", ".join(low) or "none"))
    nbad = sum(1 for r in rows if not r["valid"])
    lines.append("runs: %d, every one validated by the application's own checks" % len(rows) if not nbad else
                 "runs: %d, %d FAILED validation" % (len(rows), nbad))
    return "\n".join(out), "\n".join(lines)


def write_outputs(rows, results, header):
    keys = CSV_KEYS
    with open(os.path.join(results, "apps.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    if any(r["selector"].startswith("real-") for r in rows):
        md = "\n".join("| %s | %s | %d hosts, %d leaves | %s | MPIFFT %s Gflop/s, PTRANS %s GB/s | %s |" % (
            r["selector"][5:], r["fabric"], r["hosts"], r["leaves"], "valid" if r["valid"] else "INVALID: " + r["why"],
            r["mpifft_gflops"], r["ptrans_gbs"], r["lib_stats"]) for r in rows)
        md = "| MPI | fabric | topod's pick | HPCC's checks | figures (this machine) | libtopocoll |\n" + \
            "|" + " --- |" * 6 + "\n" + md
        summ = "runs: %d, %d invalid" % (len(rows), sum(1 for r in rows if not r["valid"]))
    else:
        md, summ = table(rows)
    with open(os.path.join(results, "apps.md"), "w") as f:
        f.write(header + "\n\n" + md + "\n\n```\n" + summ + "\n```\n")
    return md, summ


def real_runs(args):
    """--real: HPCC under Open MPI and MPICH, for real, on topod's pick in a
    lab, libtopocoll preloaded; returns rows (validated or not)."""
    tarball = build_real_prereq(args)
    rows = []
    for fab in args.fabrics:
        spec = js.FABRICS[fab]
        with js.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            leaves = js.leaves_of(lab.meta)
            allh = [h for lf in leaves for h in lf]
            for n in args.sizes:
                rnd, free = place.free_list(args.seed, n, allh, frac=args.free_frac)
                t = js.Topod(lab.port)
                try:
                    head, picks = place.pick_sets(t, rnd, n, free, 0)
                finally:
                    t.close()
                if picks is None:
                    raise RuntimeError("pick: " + head)
                for mpi in args.mpis:
                    rows.append(real_one(args, tarball, lab, fab, n, picks["pick"], mpi,
                                         leaf_count(leaves, picks["pick"])))
    return rows


def build_real_prereq(args):
    tarball = fetch(args)
    args.real_exe = {mpi: os.path.join(build_hpcc(args, tarball, mpi), "hpcc") for mpi in args.mpis}
    return tarball


def real_one(args, tarball, lab, fab, n, hosts, mpi, leaves):
    work = os.path.join(args.results, "runs", fab, "real-%d-%s" % (n, mpi))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "hpccinf.txt"), "w") as f:
        f.write(hpcc_input(n, args.hpl_threshold))
    hostmap = os.path.join(work, "hostmap")
    with open(hostmap, "w") as f:
        f.write("\n".join(hosts) + "\n")
    lib = os.path.join(ROOT, "build", "lib", "libtopocoll.so" if mpi == "ompi" else "mpich/libtopocoll.so")
    env = dict(LD_PRELOAD=lib, TII_SERVERS="127.0.0.1:%d" % lab.port, TII_HOSTMAP=hostmap, TOPOCOLL_STATS="1",
               TOPOCOLL_VERBOSE="1")
    if mpi == "ompi":
        cmd = ["mpirun", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "-np", str(n)]
        for k, v in env.items():
            cmd += ["-x", "%s=%s" % (k, v)]
        extra = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    else:
        cmd = ["mpiexec.mpich", "-launcher", "fork", "-n", str(n)]
        for k, v in env.items():
            cmd += ["-genv", k, v]
        extra = {}
    t0 = time.monotonic()
    with open(os.path.join(work, "mpi.log"), "w") as logf:
        rc = smpirun(cmd + [args.real_exe[mpi]], extra, work, logf, args.timeout)
    wall = time.monotonic() - t0
    s, text = summary(os.path.join(work, "hpccoutf.txt"))
    why = validate(s, text, n) if rc == 0 else "%s exit %s" % (cmd[0], rc)
    mlog = open(os.path.join(work, "mpi.log"), errors="replace").read()
    stats = " ".join(re.findall(r"topocoll: rank 0 of MPI_COMM_WORLD: (.*)", mlog))
    took = sum(int(x) for x in re.findall(r"(\d+) hierarchical", stats))
    if not why and not stats:
        why = "no TOPOCOLL_STATS line: the library was not preloaded"
    log("  real %s %d ranks on topod's pick (%d leaves): %s; library: %s (%.0f s)" % (
        mpi, n, leaves, "valid" if not why else "INVALID (%s)" % why, stats or "-", wall))
    return dict(fabric=fab, hosts=n, free="", placement="pick", map="", leaves=leaves, selector="real-" + mpi,
                variant="lib", valid=0 if why else 1, why=why, mpifft_gflops=s.get("MPIFFT_Gflops", ""),
                mpifft_n=s.get("MPIFFT_N", ""), mpifft_maxerr=s.get("MPIFFT_maxErr", ""),
                mpifft_block=mpifft_block(n), ptrans_gbs=ptrans_job(text, n)[0] or "",
                ptrans_time=s.get("PTRANS_time", ""), ptrans_n=s.get("PTRANS_n", ""), sim_seconds="",
                wall_seconds="%.1f" % wall, lib_stats="%s (%d calls the library's way)" % (stats, took))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results")
    ap.add_argument("--fabrics", default="ft2,ft3", help="bench/jobspeed/run.py's fabrics (default ft2,ft3)")
    ap.add_argument("--sizes", default="16", help="ranks (one per host), powers of two >= 4 (default 16)")
    ap.add_argument("--free-frac", type=float, default=0.5, help="the free list, a fraction of the fabric (0.5)")
    ap.add_argument("--randoms", type=int, default=2, help="random picks from the free list (default 2)")
    ap.add_argument("--selectors", default="ompi,mpich")
    ap.add_argument("--variants", default="plain,lib")
    ap.add_argument("--placements", default="", help="only these (first-fit,pick,random0,...; default all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fixed-time", default="", metavar="T1,T2,...",
                    help="SMPI runs: the instants time() returns (bench/apps/smpi_time.c), each case run under each; "
                    "PTRANS's random grid map follows it (default one: 1700000000); the table averages them")
    ap.add_argument("--hpl-threshold", type=float, default=16.0,
                    help="HPCC's residual threshold (16.0); one no residual meets fails every run (the test's check)")
    ap.add_argument("--jobs", type=int, default=1, help="simulations at once (default 1)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run (default 3600)")
    ap.add_argument("--build", help="where HPCC's tarball and builds live (default RESULTS_DIR/build)")
    ap.add_argument("--rebuild", action="store_true", help="compile HPCC again even if BUILD has it (it is kept "
                    "otherwise, and only bound to the library again when that changed)")
    ap.add_argument("--merge", metavar="DIR,DIR", help="no runs: one table from these RESULTS_DIRs' apps.csv")
    ap.add_argument("--real", action="store_true", help="Open MPI and MPICH for real, libtopocoll preloaded, "
                    "on topod's pick in a lab (default fabric ft2-small unless --fabrics)")
    ap.add_argument("--mpis", default="ompi,mpich", help="--real: under these MPIs (default ompi,mpich)")
    ap.add_argument("--app", default="hpcc", choices=["hpcc", "fftw"],
                    help="hpcc (MPIFFT and PTRANS) or fftw (FFTW 2.1.5's MPI test: 3-D FFTs, transposes by "
                    "pairwise exchanges and MPI_Alltoall; SMPI only)")
    ap.add_argument("--fftw-size", default="64x64x64", help="--app fftw: the 3-D size (default 64x64x64)")
    args = ap.parse_args()
    args.mpis = args.mpis.split(",")
    if args.app == "fftw":
        args.block = lambda n: fftw_block(args.fftw_size, n)
    else:
        args.block = mpifft_block
    if any(m not in ("ompi", "mpich") for m in args.mpis):
        ap.error("--mpis: ompi and/or mpich")
    if args.real and "--fabrics" not in " ".join(sys.argv):
        args.fabrics = "ft2-small"
    args.fabrics = args.fabrics.split(",")
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.fixed_time = [int(x) for x in args.fixed_time.split(",") if x] or [None]
    args.results = os.path.abspath(args.results)
    args.build = os.path.abspath(args.build or os.path.join(args.results, "build"))
    for f in args.fabrics:
        if f not in js.FABRICS:
            ap.error("unknown fabric %s" % f)

    def on_term(sig, frame):
        with CHILD_LOCK:
            for p in list(CHILDREN):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    os.makedirs(args.results, exist_ok=True)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    t_start = time.monotonic()
    if args.merge:
        rows = []
        for d in args.merge.split(","):
            with open(os.path.join(d, "apps.csv")) as f:
                for r in csv.DictReader(f):
                    r.update(hosts=int(r["hosts"]), free=int(r["free"] or 0), valid=int(r["valid"]))
                    for k in CSV_KEYS:
                        r.setdefault(k, "")
                    rows.append(r)
        header = open(os.path.join(args.merge.split(",")[0], "apps.md")).read().split("\n\n")[0]
        md, summ = write_outputs(rows, args.results, header + " Merged from " + args.merge + ".")
        print(md + "\n\n" + summ)
        return 0 if rows and all(r["valid"] for r in rows) else 1
    if args.real:
        rows = real_runs(args)
        header = "HPCC 1.5.0 for real (Open MPI, MPICH), libtopocoll preloaded, git %s, %s." % (
            rev, time.strftime("%Y-%m-%d"))
        write_outputs(rows, args.results, header)
        bad = [r for r in rows if not r["valid"]]
        print("\n".join("real %s %d ranks: %s; %s" % (r["selector"], r["hosts"], "valid" if r["valid"] else
                                                       "INVALID: " + r["why"], r["lib_stats"]) for r in rows))
        return 1 if bad or not rows else 0
    build(args)
    cfg = js.smpi_cfg()
    sg = subprocess.run(["smpirun", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    if args.app == "fftw":
        what = "FFTW 2.1.5's MPI test (fftw_mpi_test -c %s: 3-D FFTs in slabs, %s per rank pair; its figure " \
            "1 / the simulated time of the run)" % (args.fftw_size, ", ".join(
                "%d KiB at %d ranks" % (args.block(n) >> 10, n) for n in args.sizes))
    else:
        what = "HPCC 1.5.0 (MPIFFT, PTRANS), HPL N=%d (MPIFFT blocks %s)" % (N_HPL, ", ".join(
            "%d KiB at %d ranks" % (mpifft_block(n) >> 10, n) for n in args.sizes))
    header = ("Real applications in SMPI: %s, %s, git %s, %s, free list %.0f %% of the fabric. Cells: first-fit "
              "with the plain MPI (the application's rate), then speed-ups over it (random: the mean of %d seeded "
              "picks; means are of time over the maps too)." % (
                  what, sg, rev, time.strftime("%Y-%m-%d"), 100 * args.free_frac, args.randoms))
    rows = []
    for fab in args.fabrics:
        spec = js.FABRICS[fab]
        log("%s: %s" % (fab, spec["desc"]))
        with js.Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            jobs = prepare_jobs(args, lab, fab)
        if args.placements:
            jobs = [j for j in jobs if j["placement"] in args.placements.split(",")]
        tasks = [(j, sel, var, t) for j in jobs for sel in args.selectors.split(",")
                 for var in args.variants.split(",") for t in args.fixed_time]
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            for row in ex.map(lambda t: run_one(args, cfg, *t), tasks):
                rows.append(row)
                write_outputs(rows, args.results, header)
    md, summ = write_outputs(rows, args.results, header)
    print(header + "\n\n" + md + "\n\n" + summ)
    print("\n(%.0f s; %s)" % (time.monotonic() - t_start, os.path.join(args.results, "apps.md")))
    return 0 if rows and all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
