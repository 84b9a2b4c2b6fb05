#!/usr/bin/env python3
"""run.py - job speed in SMPI (docs/performance.md "Job speed in SMPI"):
topod's all-to-all schedules against XOR, the MPI libraries' Alltoall and
everything-at-once, simulated on the LFT routes OpenSM really programmed.

  python3 bench/jobspeed/run.py RESULTS_DIR [--fabrics A,B] [--sizes 16,64]
          [--shapes contiguous,fragmented,perleaf,uneven] [--bytes 1048576] [--big]

For each lab fabric (ftree and updn on 2:1 fat trees of 2 and 3 levels, a
failed uplink, mixed 1x/DDR uplinks, a random regular graph under dfsssp):
ibsim + OpenSM (the fabric's engine) + the osmtopo plugin + topod
(bench/jobspeed/lab_up.sh, i.e. tests/lab/lab.sh's lab_bring_up). For
each job (shape x size, one rank per host, ranks in hostname order):
  * `topoquery simgrid HOSTS` -> the job's platform (LFT routes, cable rates);
  * `schedule ALGO fallback=0 HOSTS` for xor, tacs1, tacs2, opt, route ->
    schedule files run by a2a.c's `sched` mode, and `schedule ALGO flows=0
    HOSTS` -> what topod recommends for it (the algorithm, or XOR); a2a's own `xor`, `alltoall` under the ompi and mpich
    collective selectors, and `allatonce`;
  * `load bytes=B links=all alltoall HOSTS` -> the link-load lower bound:
    max over directed cables of (bytes through it / its rate in the platform).
Everything runs under smpirun with tests/lib/smpi.sh's SMPI_CFG.

Output: a table on stdout, RESULTS_DIR/jobspeed.csv (one row per job and
variant), RESULTS_DIR/jobspeed.md (the wide table), RESULTS_DIR/runs/...
(platforms, host files, schedules, SimGrid logs). Ratios: "vs X" is a
speed-up, T(X) / T(variant), > 1 means faster than X;
"/bound" is T(variant) / bound, >= 1.
"""
import argparse
import csv
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOPOQUERY = os.path.join(ROOT, "build", "bin", "topoquery")
FABGEN = os.path.join(ROOT, "tests", "lab", "fabgen.py")
LAB_UP = os.path.join(ROOT, "bench", "jobspeed", "lab_up.sh")
A2A_SRC = os.path.join(ROOT, "bench", "jobspeed", "a2a.c")

SCHEDULES = ["xor", "tacs1", "tacs2", "opt", "route"]
# Column order of the table: the baselines first, then topod's schedules.
# sched-default: topod's all-to-all as libtii and libtopocoll ask for it,
# `schedule route window=auto` (fallback=1), run with its steps in flight.
VARIANTS = ["xor", "ompi", "mpich", "allatonce"] + ["sched-" + a for a in SCHEDULES] + ["sched-default"]

# Per-port rates are PortInfo bitmasks on ibsim's port lines (width 1x=1,
# 4x=2; speed SDR=1 DDR=2 QDR=4), which ibsim reads only when TAB-separated.
W1X, W4X, SDR, DDR, QDR = 1, 2, 1, 2, 4


def mixed_rates(cable, meta):
    """(width, speed) of a cable in the mixed fabric, None = left at 4x QDR:
    the first uplink of every odd-numbered leaf is 1x QDR (a quarter of the
    rate: a cable trained down to one lane), and every uplink of leaf 4 is
    4x DDR (half: an older spine module)."""
    (a, pa), (b, pb) = cable
    for node, port, other in ((a, pa, b), (b, pb, a)):
        m = re.match(r"ibsw-L1-(\d+)$", node)
        if m and other.startswith("ibsw-L2-"):
            leaf = int(m.group(1))
            first_up = meta["params"]["m"][0] + 1
            if leaf % 2 == 1 and port == first_up:
                return W1X, QDR
            if leaf == 4:
                return W4X, DDR
    return None


# name -> what fabgen builds, the engine, and the OSM conf lines it needs.
# XGFT(2; 8,16; 1,4): 16 leaves of 8 hosts with 4 uplinks (2:1), 4 spines.
# XGFT(3; 8,4,4; 1,4,2): leaves 8 down / 4 up, pods of 4 leaves whose
# level-2 switches have 4 down / 2 up: 2:1 at both levels, 128 hosts.
FABRICS = {
    "ft2": dict(desc="2-level fat tree XGFT(2;8,16;1,4), 128 hosts, 2:1", routing="ftree",
                gen=["xgft", "--h", "2", "--m", "8,16", "--w", "1,4"]),
    "ft3": dict(desc="3-level fat tree XGFT(3;8,4,4;1,4,2), 128 hosts, 2:1 at levels 1 and 2", routing="ftree",
                gen=["xgft", "--h", "3", "--m", "8,4,4", "--w", "1,4,2"]),
    "ft2-updn": dict(desc="ft2 under updn", routing="updn", roots=True,
                     gen=["xgft", "--h", "2", "--m", "8,16", "--w", "1,4"]),
    "ft3-updn": dict(desc="ft3 under updn", routing="updn", roots=True,
                     gen=["xgft", "--h", "3", "--m", "8,4,4", "--w", "1,4,2"]),
    "ft2-fail": dict(desc="ft2 with one leaf uplink removed (fabgen --fail 1 --seed 3), ftree with root_guid_file",
                     routing="ftree", roots=True,
                     gen=["xgft", "--h", "2", "--m", "8,16", "--w", "1,4", "--fail", "1", "--seed", "3"]),
    "ft2-mixed": dict(desc="ft2, odd leaves' first uplink 1x QDR, leaf 4's uplinks 4x DDR", routing="ftree",
                      gen=["xgft", "--h", "2", "--m", "8,16", "--w", "1,4"], rates=mixed_rates),
    "rrg": dict(desc="random regular graph, 16 switches of degree 4, 8 hosts each (128 hosts), dfsssp",
                routing="dfsssp", gen=["rrg", "--switches", "16", "--degree", "4", "--hosts-per-switch", "8"]),
    # Bigger ones (--big): 512 hosts, so that 256-host jobs can be fragmented.
    "ft2-big": dict(desc="2-level fat tree XGFT(2;16,32;1,8), 512 hosts, 2:1", routing="ftree",
                    gen=["xgft", "--h", "2", "--m", "16,32", "--w", "1,8"]),
    "ft3-big": dict(desc="3-level fat tree XGFT(3;8,8,8;1,4,4), 512 hosts, 2:1 at both levels", routing="ftree",
                    gen=["xgft", "--h", "3", "--m", "8,8,8", "--w", "1,4,4"]),
    # For the integration test: 8 leaves of 4 hosts with 2 uplinks.
    "ft2-small": dict(desc="2-level fat tree XGFT(2;4,8;1,2), 32 hosts, 2:1", routing="ftree",
                      gen=["xgft", "--h", "2", "--m", "4,8", "--w", "1,2"]),
}
DEFAULT_FABRICS = ["ft2", "ft3", "ft2-updn", "ft3-updn", "ft2-fail", "ft2-mixed", "rrg"]
BIG_FABRICS = ["ft2-big", "ft3-big"]
SHAPES = ["contiguous", "fragmented", "perleaf", "uneven"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Topod:
    """The query protocol over one loopback connection (docs/protocol.md):
    the first line says OK/ERR and lines=N, N lines follow."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rw", newline="\n")

    def ask(self, line):
        self.f.write(line + "\n")
        self.f.flush()
        head = self.f.readline().rstrip("\n")
        if not head.startswith("OK"):
            return head, []
        m = re.search(r"\blines=(\d+)", head)
        return head, [self.f.readline().rstrip("\n") for _ in range(int(m.group(1)) if m else 0)]

    def close(self):
        self.sock.close()


def rate_netfile(src, dst, meta, rule):
    """Copy the ibsim net file, appending w=/s= to both ends of every cable
    rule() gives a rate (ibsim takes the lower end's width and speed)."""
    lines = open(src).read().split("\n")
    node, ends = None, {}
    for i, l in enumerate(lines):
        m = re.match(r'(?:Ca|Switch)\s+\d+\s+"([^"]+)"', l)
        if m:
            node = m.group(1)
            continue
        m = re.match(r'\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', l)
        if m and node:
            ends[(node, int(m.group(1)))] = (i, (m.group(2), int(m.group(3))))
    changed = 0
    for (node, port), (i, peer) in ends.items():
        r = rule(((node, port), peer), meta)
        if r:
            lines[i] = re.sub(r"\t#.*", "", lines[i]).rstrip("\t") + "\tw=%d\ts=%d" % r
            changed += 1
    open(dst, "w").write("\n".join(lines))
    return changed


class Lab:
    """One fabric up (lab_up.sh) for the duration of a with-block."""

    def __init__(self, name, spec, work):
        self.name, self.spec, self.work = name, spec, work
        self.proc = None

    def __enter__(self):
        os.makedirs(self.work, exist_ok=True)
        net, meta_path, roots = (os.path.join(self.work, f) for f in ("f.net", "f.json", "roots"))
        subprocess.run([sys.executable, FABGEN] + self.spec["gen"] +
                       ["-o", net, "--meta", meta_path, "--root-guid-file", roots],
                       check=True, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "fabgen.err"), "w"))
        self.meta = json.load(open(meta_path))
        if self.spec.get("rates"):
            n = rate_netfile(net, os.path.join(self.work, "rated.net"), self.meta, self.spec["rates"])
            net = os.path.join(self.work, "rated.net")
            log("  %s: %d port lines re-rated" % (self.name, n))
        conf = ["root_guid_file " + roots] if self.spec.get("roots") else []
        self.proc = subprocess.Popen(["bash", LAB_UP, net, self.spec["routing"]] + conf,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        m = re.match(r"ready port=(\d+) dir=(\S+)", line)
        if not m:
            self.__exit__(None, None, None)
            raise RuntimeError("%s: lab did not come up: %s" % (self.name, line or "(no output)"))
        self.port, self.labdir = int(m.group(1)), m.group(2)
        return self

    def __exit__(self, *exc):
        if self.proc:
            # EOF on lab_up.sh's stdin: it exits and lab.sh tears down by PID.
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait(timeout=30)
            self.proc = None
        return False


def leaves_of(meta):
    """Hosts grouped by the switch they hang off, switches and hosts in name
    order (fabgen names are cRRR-PPP under the RRR-401'th edge switch)."""
    by = {}
    for h, ports in meta["hosts"].items():
        by.setdefault(ports[0]["switch"], []).append(h)
    return [sorted(by[s]) for s in sorted(by)]


def shape_hosts(shape, n, leaves, seed):
    """The job's hosts, in hostname order (rank order), or None when the
    fabric cannot give that shape at that size."""
    allh = [h for lf in leaves for h in lf]
    if n > len(allh):
        return None
    if shape == "contiguous":
        # What a first-fit scheduler gives an empty machine: whole leaves.
        return allh[:n]
    if shape == "fragmented":
        # A busy machine's free list: any hosts, scattered over the leaves.
        return sorted(random.Random(seed).sample(allh, n))
    if shape == "perleaf":
        if n > len(leaves):
            return None
        return sorted(lf[0] for lf in leaves[:n])
    if shape == "uneven":
        # Leaves filled full, 1, half, 3, full, ...: the leftovers of jobs that ended.
        m = max(len(lf) for lf in leaves)
        pattern = [m, 1, max(1, m // 2), min(3, m)]
        got, i = [], 0
        while len(got) < n and i < len(leaves):
            got += leaves[i][:min(pattern[i % 4], n - len(got))]
            i += 1
        return sorted(got) if len(got) == n else None
    raise ValueError(shape)


def smpi_cfg():
    """SMPI_CFG from tests/lib/smpi.sh: the one copy of the settings."""
    out = subprocess.run(["bash", "-c", '. "$1"; printf "%s\\n" "${SMPI_CFG[@]}"', "-",
                          os.path.join(ROOT, "tests", "lib", "smpi.sh")],
                         check=True, capture_output=True, text=True).stdout
    return [l for l in out.split("\n") if l]


def shared_block_cfg(buf_bytes):
    """SMPI folds a shared buffer onto a backing file block by block (1 MiB
    by default): 2 x 256 MiB per rank at 256 ranks is 131,072 mappings, past
    Linux's vm.max_map_count (65,530), and smpirun aborts ("Could not map
    folded virtual memory"). One block as big as a whole buffer keeps it at
    a couple of mappings per rank."""
    block = 1 << 20
    while block < buf_bytes:
        block <<= 1
    return ["--cfg=smpi/shared-malloc-blocksize:%d" % block]


def build_a2a(outdir):
    exe = os.path.join(outdir, "a2a")
    subprocess.run(["smpicc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", exe, A2A_SRC], check=True,
                   stdout=subprocess.DEVNULL)
    return exe


CHILD = None


def smpirun(cfg, platform, hostfile, n, args, logf, timeout):
    """Simulated seconds a2a reports, or None (its log says why)."""
    global CHILD
    cmd = ["smpirun"] + cfg + ["-platform", platform, "-hostfile", hostfile, "-np", str(n)] + args
    logf.write("# %s\n" % " ".join(cmd))
    logf.flush()
    # Own session: on a timeout or a signal we end smpirun and the simulation
    # it started (its process group), nothing else.
    CHILD = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=logf, text=True, start_new_session=True)
    try:
        out, _ = CHILD.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(CHILD.pid, signal.SIGKILL)
        CHILD.wait()
        logf.write("# timed out after %d s\n" % timeout)
        return None, None
    finally:
        CHILD = None
    logf.write(out)
    m = re.search(r"^a2a \S+ .*steps=(\d+) time=([0-9.eE+-]+)$", out, re.M)
    return (float(m.group(2)), int(m.group(1))) if m else (None, None)


def load_bound(topod, hosts, nbytes, platform_xml):
    """Lower bound of any all-to-all on these routes: the directed cable
    whose bytes / rate is largest (rates from the platform, i.e. the very
    links SMPI simulates). Returns (seconds, link, bytes, rate B/s)."""
    head, lines = topod.ask("load bytes=%d links=all alltoall %s" % (nbytes, " ".join(hosts)))
    if not head.startswith("OK"):
        raise RuntimeError("load: " + head)
    rate = {m.group(1): int(m.group(2)) / 8.0
            for m in re.finditer(r'<link id="([^"]+)" bandwidth="(\d+)bps"', open(platform_xml).read())}
    best = (0.0, None, 0, 0.0)
    for l in lines:
        w = l.split()
        if w[0] != "link":
            continue
        name, b = w[1], int(w[4])
        if name not in rate:
            raise RuntimeError("load names link %s, which the platform lacks" % name)
        t = b / rate[name]
        if t > best[0]:
            best = (t, name, b, rate[name])
    return best


def get_schedule(topod, algo, hosts, path, nbytes, opts="fallback=0"):
    """Writes the steps as lines of SRC:DST; returns (steps, head) or (None, reason).
    fallback=0: each algorithm as asked, to be timed; the reply still carries
    topod's predictions for blocks of nbytes (and the window a2a runs it
    with, window= in the head)."""
    head, lines = topod.ask("schedule %s %s bytes=%d %s" % (algo, opts, nbytes, " ".join(hosts)))
    if not head.startswith("OK"):
        return None, head
    steps = [" ".join(w for w in l.split()[6:] if ":" in w) for l in lines if l.startswith("STEP ")]
    with open(path, "w") as f:
        f.write("# %s\n" % head)
        for s in steps:
            f.write(s + "\n")
    # topod's own per-step figures (flows, max load, conflicts, levels), to
    # set beside SMPI's times when topod predicts them.
    with open(re.sub(r"\.txt$", ".steps", path), "w") as f:
        f.write(head + "\n")
        for l in lines:
            f.write(" ".join(w for w in l.split() if ":" not in w) + "\n")
    return len(steps), head


# Every block size libtopocoll may ask about, 1 KiB to 4 MiB (its size
# classes are powers of two: coll/model.c tc_size_class).
A2A_SIZES = [1 << k for k in range(10, 23)]


def a2a_schedule_file(topod, hosts, path, native, sizes=A2A_SIZES, algo="route"):
    """libtopocoll's TOPOCOLL_SCHEDULE for a job under SMPI, where topod is
    out of reach (docs/collectives.md): what the library would ask topod at
    its first Alltoall of every size class, `schedule ALGO bytes=B
    window=auto native=MODEL`, one `# OK ...` head per size (the steps
    with W in flight, their time, the MPI's own Alltoall's under MODEL,
    fallback=native where topod's rule keeps it), then the steps, which
    do not depend on the size. Returns path, or None if topod refused."""
    steps = None
    heads = []
    for b in sizes:
        head, lines = topod.ask("schedule %s bytes=%d window=auto native=%s %s" % (algo, b, native, " ".join(hosts)))
        if not head.startswith("OK"):
            return None
        st = [" ".join(w for w in l.split()[6:] if ":" in w) for l in lines if l.startswith("STEP ")]
        if steps is None:
            steps = st
        elif st != steps:
            raise RuntimeError("schedule %s: other steps at %d bytes" % (algo, b))
        heads.append(head)
    with open(path, "w") as f:
        for h in heads:
            f.write("# %s\n" % h)
        for s in steps:
            f.write(s + "\n")
    return path


def recommended(topod, algo, hosts, nbytes):
    """What topod answers under its rule (fallback=1): the algorithm run, or
    None if it refuses (OPT whose bound breaks: the job runs XOR)."""
    head, _ = topod.ask("schedule %s flows=0 bytes=%d %s" % (algo, nbytes, " ".join(hosts)))
    m = re.search(r"\balgo=(\S+)", head)
    return m.group(1) if head.startswith("OK") and m else None


REUSE = {}


def same_file(a, b, skip_first=False):
    try:
        with open(a) as fa, open(b) as fb:
            la, lb = fa.readlines(), fb.readlines()
    except OSError:
        return False
    return la[skip_first:] == lb[skip_first:]


def reused(args, fabric, shape, n, v, work):
    """(seconds, steps) of the same run in --reuse's results, or None: SMPI
    is deterministic, so a run on the same hosts and platform (and, for a
    schedule, the same steps; the first line, topod's reply with its
    predictions, aside) has the same time."""
    if not args.reuse:
        return None
    if not REUSE:
        with open(os.path.join(args.reuse, "jobspeed.csv")) as f:
            for r in csv.DictReader(f):
                REUSE[(r["fabric"], r["shape"], int(r["hosts"]), int(r["bytes"]), r["variant"])] = r
        REUSE[None] = True
    r = REUSE.get((fabric, shape, n, args.bytes, v))
    old = os.path.join(args.reuse, "runs", fabric, "%s-%d" % (shape, n))
    if not r or not r["seconds"] or not same_file(os.path.join(old, "hosts"), os.path.join(work, "hosts")) \
            or not same_file(os.path.join(old, "platform.xml"), os.path.join(work, "platform.xml")):
        return None
    if v.startswith("sched-") and not same_file(os.path.join(old, v + ".txt"), os.path.join(work, v + ".txt"), True):
        return None
    return float(r["seconds"]), int(r["steps"]) if r["steps"] else None


def run_job(args, cfg, exe, lab, fabric, shape, hosts, work):
    os.makedirs(work, exist_ok=True)
    n = len(hosts)
    platform = os.path.join(work, "platform.xml")
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("\n".join(hosts) + "\n")
    with open(platform, "w") as f:
        r = subprocess.run([TOPOQUERY, "-s", "127.0.0.1:%d" % lab.port, "simgrid"] + hosts, stdout=f,
                           stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RuntimeError("topoquery simgrid: " + r.stderr.strip())
    topod = Topod(lab.port)
    try:
        bound, blink, bbytes, brate = load_bound(topod, hosts, args.bytes, platform)
        scheds, pred = {}, {}
        for a in SCHEDULES:
            path = os.path.join(work, "sched-%s.txt" % a)
            steps, head = get_schedule(topod, a, hosts, path, args.bytes)
            fb = re.search(r"\bfallback=(\S+)", head or "")
            scheds[a] = (path if steps is not None else None, steps,
                         head if steps is None else (fb.group(1) if fb else "none"))
            # Whatever prediction topod's reply carries (time_us, xor_time_us,
            # bound_us), kept verbatim for the CSV beside SMPI's time.
            pred[a] = " ".join(re.findall(r"\b(?:time_us|xor_time_us|bound_us)=\S+", head or ""))
            rec = recommended(topod, a, hosts, args.bytes)
            pred[a] += " recommended=%s" % (rec or "xor")
        path = os.path.join(work, "sched-default.txt")
        steps, head = get_schedule(topod, "route", hosts, path, args.bytes, "window=auto")
        fb = re.search(r"\bfallback=(\S+)", head or "")
        scheds["default"] = (path if steps is not None else None, steps,
                             head if steps is None else (fb.group(1) if fb else "none"))
        pred["default"] = " ".join(re.findall(r"\b(?:time_us|xor_time_us|bound_us|window|algo)=\S+", head or ""))
    finally:
        topod.close()
    row = dict(fabric=fabric, shape=shape, hosts=n, bytes=args.bytes, bound=bound, bound_link=blink,
               bound_link_bytes=bbytes, bound_link_rate=brate, times={}, steps={}, notes={},
               pred={"sched-" + a: p for a, p in pred.items()})
    b = str(args.bytes)
    cfg = cfg + shared_block_cfg(args.bytes * n)
    with open(os.path.join(work, "smpi.log"), "w") as logf:
        runs = [("xor", [], [exe, b, "xor"]),
                ("ompi", ["--cfg=smpi/coll-selector:ompi"], [exe, b, "alltoall"]),
                ("mpich", ["--cfg=smpi/coll-selector:mpich"], [exe, b, "alltoall"])]
        if n <= args.allatonce_max:
            runs.append(("allatonce", [], [exe, b, "allatonce"]))
        else:
            # n(n-1) flows at once, and Full update re-solves all of them at
            # every completion: 256 hosts ran for over 5 minutes (and mapped
            # 2 x 256 MiB per rank) without finishing.
            row["notes"]["allatonce"] = "skipped (> %d hosts)" % args.allatonce_max
        for a in SCHEDULES + ["default"]:
            path, steps, note = scheds[a]
            row["steps"]["sched-" + a] = steps
            if path:
                runs.append(("sched-" + a, [], [exe, b, "sched", path]))
                if note != "none":
                    row["notes"]["sched-" + a] = "fallback=" + note
            else:
                # topod refused (e.g. OPT: NOTAPPLICABLE): nothing to run.
                row["notes"]["sched-" + a] = note.split(" ", 2)[1] if note.startswith("ERR") else note
        for v, extra, prog in runs:
            t0 = time.monotonic()
            old = reused(args, fabric, shape, n, v, work)
            if old:
                row["times"][v], steps = old
                row["reused"] = row.get("reused", 0) + 1
            else:
                row["times"][v], steps = smpirun(cfg + extra, platform, hostfile, n, prog, logf, args.timeout)
            if v in ("xor", "allatonce"):
                # MPI_Alltoall's steps are the library's business: left blank.
                row["steps"][v] = steps
            log("    %-12s %s  (%.1f s%s)" % (v, "%.3f ms" % (row["times"][v] * 1e3) if row["times"][v] else "FAILED",
                                            time.monotonic() - t0, ", reused" if old else ""))
    return row


def ratio(a, b):
    return a / b if a and b else None


def fmt(x, spec):
    return format(x, spec) if x is not None else "-"


def write_outputs(rows, outdir, header):
    with open(os.path.join(outdir, "jobspeed.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["fabric", "shape", "hosts", "bytes", "variant", "steps", "seconds", "speedup_vs_xor",
                    "speedup_vs_ompi", "over_bound", "bound_seconds", "bound_link", "note", "topod_prediction"])
        for r in rows:
            for v in VARIANTS:
                t = r["times"].get(v)
                w.writerow([r["fabric"], r["shape"], r["hosts"], r["bytes"], v, r["steps"].get(v, ""),
                            "%.9f" % t if t else "", fmt(ratio(r["times"].get("xor"), t), ".4f"),
                            fmt(ratio(r["times"].get("ompi"), t), ".4f"), fmt(ratio(t, r["bound"]), ".4f"),
                            "%.9f" % r["bound"], r["bound_link"], r["notes"].get(v, ""), r["pred"].get(v, "")])
    md = table(rows, markdown=True)
    with open(os.path.join(outdir, "jobspeed.md"), "w") as f:
        f.write(header + "\n\n" + md + "\n\n```\n" + rule_summary(rows) + "\n```\n")
    return md


def cell(r, v):
    """ms, then speed-up vs XOR / vs ompi, then time over the bound."""
    t = r["times"].get(v)
    if t is None:
        return r["notes"].get(v) or "FAILED"
    s = "%.2f (%s/%s/%s)" % (t * 1e3, fmt(ratio(r["times"].get("xor"), t), ".2f"),
                             fmt(ratio(r["times"].get("ompi"), t), ".2f"), fmt(ratio(t, r["bound"]), ".2f"))
    return s + (" " + r["notes"][v] if v in r["notes"] else "")


def table(rows, markdown):
    cols = ["fabric", "shape", "hosts", "bound ms", "XOR ms (/bound)", "ompi", "mpich", "all-at-once",
            "TACS1", "TACS2", "OPT", "route", "topod XOR", "topod default"]
    out = []
    for r in rows:
        x = r["times"].get("xor")
        out.append([r["fabric"], r["shape"], str(r["hosts"]), "%.2f" % (r["bound"] * 1e3),
                    "%s (%s)" % (fmt(x * 1e3 if x else None, ".2f"), fmt(ratio(x, r["bound"]), ".2f")),
                    cell(r, "ompi"), cell(r, "mpich"), cell(r, "allatonce"),
                    cell(r, "sched-tacs1"), cell(r, "sched-tacs2"), cell(r, "sched-opt"), cell(r, "sched-route"),
                    cell(r, "sched-xor"), cell(r, "sched-default")])
    if markdown:
        lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
        lines += ["| " + " | ".join(r) + " |" for r in out]
        return "\n".join(lines)
    width = [max(len(c), *(len(r[i]) for r in out)) if out else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(width[i]) for i, c in enumerate(cols))]
    lines += ["  ".join(c.ljust(width[i]) for i, c in enumerate(r)) for r in out]
    return "\n".join(lines)


def rule_summary(rows):
    """Per schedule: SMPI over predicted time, time over the bound, and how
    the answers topod recommends (fallback=1) run against XOR in SMPI."""
    out = []
    allerr = []
    for a in SCHEDULES:
        v = "sched-" + a
        err, over, rec, low = [], [], 0, []
        for r in rows:
            t, p = r["times"].get(v), r["pred"].get(v, "")
            m = re.search(r"\btime_us=([0-9.]+)", p)
            if t and m:
                err.append(t / (float(m.group(1)) * 1e-6))
                allerr.append((err[-1], "%s %s %d %s" % (r["fabric"], r["shape"], r["hosts"], a)))
            if t:
                over.append(t / r["bound"])
            m = re.search(r"\brecommended=(\S+)", p)
            if m and m.group(1) == a and t and r["times"].get("xor"):
                rec += 1
                if r["times"]["xor"] / t < 0.98:
                    low.append("%s %s %d: %.3f" % (r["fabric"], r["shape"], r["hosts"], r["times"]["xor"] / t))
        out.append("%-6s SMPI/predicted %s, time/bound %s, recommended in %d jobs, below 0.98x XOR: %s"
                   % (a, "%.2f-%.2f" % (min(err), max(err)) if err else "-",
                      "%.2f-%.2f median %.2f" % (min(over), max(over), sorted(over)[len(over) // 2]) if over else "-",
                      rec, ", ".join(low) if low else "none"))
    off = [(e, w) for e, w in allerr if abs(e - 1) > 0.15]
    out.append("predictions within 15 %% of SMPI: %d of %d%s" % (len(allerr) - len(off), len(allerr),
               "" if not off else " (off: %s)" % ", ".join("%s %.3f" % (w, e) for e, w in off)))
    # topod's default (route, window=auto) against the bound, and its
    # prediction against SMPI
    d = [(r["times"]["sched-default"] / r["bound"], r) for r in rows if r["times"].get("sched-default")]
    if d:
        worst = max(d, key=lambda x: x[0])
        errs = []
        for t, r in d:
            m = re.search(r"\btime_us=([0-9.]+)", r["pred"].get("sched-default", ""))
            if m:
                errs.append(r["times"]["sched-default"] / (float(m.group(1)) * 1e-6))
        out.append("default (route, window=auto): time/bound %.2f-%.2f, within 1.05x: %d of %d, within 1.1x: %d of "
                   "%d, worst %s %s %d; SMPI/predicted %s"
                   % (min(x for x, _ in d), worst[0], sum(1 for x, _ in d if x <= 1.05), len(d),
                      sum(1 for x, _ in d if x <= 1.1), len(d), worst[1]["fabric"], worst[1]["shape"],
                      worst[1]["hosts"], "%.3f-%.3f" % (min(errs), max(errs)) if errs else "-"))
    return "\n".join(out)


def on_signals():
    """TERM and INT unwind through the with-blocks: the lab and smpirun end
    by PID (smpirun's process group, which it runs in alone)."""
    def on_term(sig, frame):
        if CHILD:
            try:
                os.killpg(CHILD.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results", help="directory for jobspeed.csv, jobspeed.md and runs/")
    ap.add_argument("--fabrics", help="comma list (default %s; --big adds %s; all: %s)"
                    % (",".join(DEFAULT_FABRICS), ",".join(BIG_FABRICS), ",".join(FABRICS)))
    ap.add_argument("--sizes", help="hosts per job, comma list (default 16,64; with --big 16,64,256)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ",".join(SHAPES))
    ap.add_argument("--bytes", type=int, default=1 << 20, help="message per ordered pair (default 1 MiB)")
    ap.add_argument("--big", action="store_true", help="add the 512-host fabrics and 256-host jobs (tens of minutes)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the fragmented shape (default 1)")
    ap.add_argument("--allatonce-max", type=int, default=128,
                    help="largest job run all-at-once (default 128; SMPI time grows ~quadratically in flows)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per smpirun (default 1800)")
    ap.add_argument("--reuse", help="an earlier RESULTS_DIR: SMPI times of runs whose hosts, platform and "
                    "schedule are unchanged are taken from it (the predictions are always asked anew)")
    args = ap.parse_args()
    fabrics = args.fabrics.split(",") if args.fabrics else DEFAULT_FABRICS + (BIG_FABRICS if args.big else [])
    sizes = [int(s) for s in (args.sizes or ("16,64,256" if args.big else "16,64")).split(",")]
    shapes = args.shapes.split(",")
    for f in fabrics:
        if f not in FABRICS:
            ap.error("unknown fabric %s" % f)
    for s in shapes:
        if s not in SHAPES:
            ap.error("unknown shape %s" % s)

    on_signals()

    os.makedirs(args.results, exist_ok=True)
    exe = build_a2a(args.results)
    cfg = smpi_cfg()
    sg = subprocess.run(["smpirun", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    header = ("Job speed in SMPI: %s, git %s, %d cores, %d bytes per pair, one rank per host, %s.\n"
              "Cells: simulated ms (speed-up vs XOR / vs ompi's MPI_Alltoall / time over the link-load bound)."
              % (sg, rev, os.cpu_count(), args.bytes, time.strftime("%Y-%m-%d")))
    rows, t_start = [], time.monotonic()
    for fab in fabrics:
        spec = FABRICS[fab]
        log("%s: %s" % (fab, spec["desc"]))
        t0 = time.monotonic()
        with Lab(fab, spec, os.path.join(args.results, "runs", fab)) as lab:
            log("  up in %.1f s (topod port %d, lab %s)" % (time.monotonic() - t0, lab.port, lab.labdir))
            leaves = leaves_of(lab.meta)
            for n in sizes:
                for shape in shapes:
                    hosts = shape_hosts(shape, n, leaves, args.seed)
                    if hosts is None:
                        log("  %s %d: not on this fabric" % (shape, n))
                        continue
                    log("  %s %d hosts" % (shape, n))
                    rows.append(run_job(args, cfg, exe, lab, fab, shape, hosts,
                                        os.path.join(args.results, "runs", fab, "%s-%d" % (shape, n))))
                    write_outputs(rows, args.results, header)
    write_outputs(rows, args.results, header)
    print(header)
    print(table(rows, markdown=False))
    print()
    print(rule_summary(rows))
    print("\n(%.0f s; %s)" % (time.monotonic() - t_start, os.path.join(args.results, "jobspeed.md")))
    failed = sum(1 for r in rows for v in ["xor", "ompi", "mpich", "allatonce"]
                 if r["times"].get(v) is None and v not in r["notes"])
    failed += sum(1 for r in rows for a in SCHEDULES if r["steps"].get("sched-" + a) is not None
                  and r["times"].get("sched-" + a) is None)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
