#!/usr/bin/env python3
"""bench_delta.py - reroutes as delta snapshots into a real topod.

  bench/bench_delta.py [K] [PERMILLE] [CHAIN]      (defaults 24 5 100)
  DELTA_GAP=S bench/bench_delta.py ...             (S seconds between snapshots; default 0)
  DELTA_SMAPS=FILE [DELTA_KILL=1] ...              (topod's /proc smaps after the deltas; then SIGKILL)
  DELTA_REST=S ...                                 (the RSS at rest read S seconds later; default 8)
  TOPOD_ARGS="--warm-interval 0" ...               (more topod options, in both modes)
  DELTA_FILES=BASE.snap,NEW.snap bench/bench_delta.py [REPS]
                                                   (two snapshot files, e.g. bench/real_fault.sh's
                                                    REAL_FAULT_KEEP passes: NEW as the delta from BASE,
                                                    DELTA_GAP seconds after BASE's OK, default 2)

bench_delta (build/bench) makes a k-ary fat tree and CHAIN successive
reroutes, each changing PERMILLE/1000 of the LFT blocks, as deltas. A topod
with a state directory and --history CHAIN gets the full snapshot, then
every delta over its UNIX ingest socket (sent here directly, no client
process in the timing). Prints, per delta, the time from the first byte
sent until a query sees the new generation (served: decoded, applied and
indexed; topod publishes before it persists) and until topod's OK (the
journal entry also fsynced), topod's own
apply and build times from its log, and at the end topod's RSS and what its
history holds, its RSS again at rest (once --warm-interval has passed and
the preparation has made the copy the next delta is applied to), then the
same change as a full snapshot for comparison.

By default each snapshot follows the previous one's OK at once. A subnet
manager sweeps every few seconds (OpenSM: 10 s); DELTA_GAP=S waits S
seconds after each OK, as between sweeps. topod prepares the next delta's
proof by distance on a thread of its own while the builder waits (for the
disk, for the next snapshot), pauses it while one is built, and goes on
from there on the new generation (fabric.h, fabric_index_prepare).
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from bigfab import rss_kib  # noqa: E402
from snapdecode import reseal  # noqa: E402
from topodtest import Topod, deliver, parse_kv  # noqa: E402


def history(t):
    """topod's `history` reply: its head's fields, and its lines."""
    with t.conn() as c:
        head = c.ask("history")
        kv = parse_kv(head[3:])
        return kv, [c.readline() for _ in range(int(kv["lines"]))]


def send(path_sock, data):
    t0 = time.perf_counter()
    r = deliver(path_sock, data)
    return (time.perf_counter() - t0) * 1e3, r


def send_served(t, path_sock, data, gen):
    """send(), and the time from its first byte until a query sees gen
    (topod serves before it persists and acknowledges): polled every 5 ms
    on a connection opened beforehand. (OK ms, served ms or None, reply)."""
    box = {}

    def poll(c, t0):
        while "stop" not in box:
            if int(parse_kv(c.ask("info")[3:])["generation"]) == gen:
                box["served"] = (time.perf_counter() - t0) * 1e3
                return
            time.sleep(0.005)

    with t.conn() as c:
        t0 = time.perf_counter()
        th = threading.Thread(target=poll, args=(c, t0))
        th.start()
        ms, r = send(path_sock, data)
        if not r.startswith("OK"):
            box["stop"] = 1
        th.join(30)
        box["stop"] = 1
    return ms, box.get("served"), r


def info_generation(path):
    out = subprocess.run([os.path.join(ROOT, "build", "bin", "topo-snap"), "info", path],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^generation (\d+)$", out, re.M).group(1))


def topod_args():
    """TOPOD_ARGS: more topod options, for both modes."""
    return os.environ.get("TOPOD_ARGS", "").split()


def files_mode(spec, reps):
    """REPS fresh topods, each given BASE whole and then NEW as the delta
    from it (topo-snap delta): the delta's first byte -> served and -> OK,
    and topod's own serving line."""
    base_path, new_path = spec.split(",")
    d = tempfile.mkdtemp(prefix="bench_delta.")
    dpath = os.path.join(d, "new.delta")
    subprocess.run([os.path.join(ROOT, "build", "bin", "topo-snap"), "delta", base_path, new_path, dpath], check=True)
    g0, g1 = info_generation(base_path), info_generation(new_path)
    with open(base_path, "rb") as f:
        base = f.read()
    with open(dpath, "rb") as f:
        data = f.read()
    print("delta %s -> %s: %d bytes (%.2f %% of the snapshot)" % (g0, g1, len(data), 100.0 * len(data) / len(base)))
    for rep in range(reps):
        state = os.path.join(d, "state.%d" % rep)
        os.mkdir(state, 0o700)
        t = Topod("--history", "4", *topod_args(), state_dir=state, d=d)
        try:
            ms0, served0, r0 = send_served(t, t.ingest, base, g0)
            time.sleep(float(os.environ.get("DELTA_GAP", "2")))  # the preparation, as between sweeps
            ms, served, r = send_served(t, t.ingest, data, g1)
            t.wait_generation(g1)
            time.sleep(0.3)
            line = [l for l in t.logtext().splitlines() if "serving generation %d" % g1 in l]
            print("rep %d: base served %.0f ms; delta: first byte -> served %s ms, -> OK %.1f ms (%s)"
                  % (rep, served0 or -1, "%.1f" % served if served else "?", ms, r))
            if line:
                print("  " + re.sub(r"^.*?serving", "serving", line[-1])[:400])
        finally:
            t.stop()
    if os.environ.get("KEEP"):
        print("kept " + d)
    else:
        subprocess.run(["rm", "-rf", d])
    return 0


def main():
    if os.environ.get("DELTA_FILES"):
        return files_mode(os.environ["DELTA_FILES"], int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    pm = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    chain = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    d = tempfile.mkdtemp(prefix="bench_delta.")
    out = subprocess.run([os.path.join(ROOT, "build", "bench", "bench_delta"), str(k), str(pm), d, str(chain)],
                         capture_output=True, text=True, check=True).stdout
    print(out.strip())
    state = os.path.join(d, "state")
    os.mkdir(state, 0o700)
    t = Topod("--history", str(chain + 1), *topod_args(), state_dir=state, d=d)
    with open(os.path.join(d, "base.snap"), "rb") as f:
        base = f.read()
    ms, served, r = send_served(t, t.ingest, base, 1)
    print("full snapshot of generation 1: %d bytes, served after %s ms, OK after %.1f ms (%s)"
          % (len(base), "%.1f" % served if served else "?", ms, r))
    rss0 = rss_kib(t.p.pid)
    gap = float(os.environ.get("DELTA_GAP", "0"))
    lat, sizes, served_lat = [], [], []
    for i in range(chain):
        time.sleep(gap)
        with open(os.path.join(d, "chain.%03d.delta" % i), "rb") as f:
            data = f.read()
        ms, served, r = send_served(t, t.ingest, data, 10 + i)
        if not r.startswith("OK"):
            print("delta %d: %s" % (i, r))
            return 1
        lat.append(ms)
        if served:
            served_lat.append(served)
        sizes.append(len(data))
    # OK follows the swap, but precedes the history entry: wait for it.
    t.wait_generation(10 + chain - 1)
    time.sleep(0.3)
    log = t.logtext()
    for l in log.splitlines():
        if "warning" in l or "error" in l:
            print("  topod log: " + l[:200])
    applied = [float(x) for x in re.findall(r"delta applied in ([0-9.]+) ms", log)]
    built = [float(x) for x in re.findall(r"delta applied in [0-9.]+ ms, build ([0-9.]+) ms", log)]
    reused = log.count("reused: no hop count changed")
    persisted = [float(x) for x in re.findall(r"delta applied in .*persisted in ([0-9.]+) ms", log)]
    lat.sort()
    print("%d deltas of %d bytes (%.3f %% of the snapshot): first byte -> OK median %.1f ms, p90 %.1f, max %.1f"
          % (chain, statistics.median(sizes), 100.0 * statistics.median(sizes) / len(base), statistics.median(lat),
             lat[int(len(lat) * 0.9)], lat[-1]))
    if served_lat:
        served_lat.sort()
        print("  first byte -> served (a query sees it) median %.1f ms, max %.1f (%d of %d seen; polled every 5 ms)"
              % (statistics.median(served_lat), served_lat[-1], len(served_lat), chain))
    if applied:
        print("  topod: apply median %.1f ms, index median %.1f ms (max %.1f); hierarchy shared %d of %d times"
              % (statistics.median(applied), statistics.median(built), max(built), reused, chain))
    if persisted:
        print("  topod: journal entry written and fsynced (before OK) median %.1f ms (max %.1f)"
              % (statistics.median(persisted), max(persisted)))
    hv, _ = history(t)
    time.sleep(0.5)
    rss1 = rss_kib(t.p.pid)
    if os.environ.get("DELTA_SMAPS"):
        # Where the resident bytes are, mapping by mapping (docs/performance.md).
        with open("/proc/%d/smaps" % t.p.pid) as f, open(os.environ["DELTA_SMAPS"], "w") as out:
            out.write(f.read())
        if os.environ.get("DELTA_KILL"):
            os.kill(t.p.pid, signal.SIGKILL)
            return 0
    journal = [f for f in os.listdir(state) if f.startswith("fabric.delta.")]
    jbytes = sum(os.path.getsize(os.path.join(state, f)) for f in journal)
    folds = log.count("deltas folded into")
    print("journal: %d entries, %d bytes on disk; folded into fabric.snap %d times" % (len(journal), jbytes, folds))
    hist = os.listdir(os.path.join(state, "history"))
    print("history: %s generations in %.2f MB; topod RSS %.1f -> %.1f MiB (+%.1f) over %d generations; "
          "state dir: %d journal entries, %d history files"
          % (hv["lines"], int(hv["bytes"]) / 1e6, rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 1024, chain,
             len(journal), len(hist)))
    # At rest: once --warm-interval (5 s) has passed, the preparation makes
    # the copy the next delta is applied to and maps the chunks it will
    # copy into (docs/performance.md, "Memory made ready before the delta").
    time.sleep(float(os.environ.get("DELTA_REST", "8")))
    print("topod RSS at rest, after the preparation: %.1f MiB" % (rss_kib(t.p.pid) / 1024))
    # The served fabric again, whole, under a new generation (a collector's
    # next run on a fabric that did not change): indexed as the delta from
    # the served generation, nothing rebuilt.
    last = os.path.join(d, "last.snap")
    subprocess.run([os.path.join(ROOT, "build", "bin", "topo-snap"), "export", state, last], check=True,
                   capture_output=True)
    with open(last, "rb") as f:
        same = reseal(f.read(), generation=10 ** 9 - 1, timestamp=10 ** 9 - 1)
    ms, served, r = send_served(t, t.ingest, same, 10 ** 9 - 1)
    line = ([x for x in t.logtext().splitlines() if "serving generation 999999999 " in x] or [""])[-1]
    m = re.search(r"decode ([0-9.]+) ms, build ([0-9.]+) ms", line)
    how = re.search(r"indexed as the delta from generation \d+ \(\d+ LFT blocks", line)
    print("the served fabric again, whole: served after %s ms, OK after %.1f ms (%s); topod: decode %s ms, "
          "build %s ms; %s" % ("%.1f" % served if served else "?", ms, r, m.group(1) if m else "?",
                               m.group(2) if m else "?", how.group(0) + ")" if how else "built whole"))
    with open(os.path.join(d, "new.snap"), "rb") as f:
        full = reseal(f.read(), generation=10 ** 9, timestamp=10 ** 9)
    ms, served, r = send_served(t, t.ingest, full, 10 ** 9)
    m = re.findall(r"serving generation 1000000000 .*decode ([0-9.]+) ms, build ([0-9.]+) ms", t.logtext())
    print("the same fabric as a full snapshot: served after %s ms, OK after %.1f ms (%s); topod: decode %s ms, "
          "build %s ms" % ("%.1f" % served if served else "?", ms, r, m[-1][0] if m else "?", m[-1][1] if m else "?"))
    # Its tables replaced the previous generation's, which were served
    # while it was decoded: what topod keeps after that, once the history
    # (which encodes the one replaced, after the OK) has it.
    for _ in range(600):
        if any(" generation=%d " % 10 ** 9 in " " + x + " " for x in history(t)[1]):
            break
        time.sleep(0.05)
    time.sleep(1)
    print("topod RSS after the fabric was replaced whole: %.1f MiB" % (rss_kib(t.p.pid) / 1024))
    t.stop()
    if os.environ.get("KEEP"):
        print("kept " + d)
    else:
        subprocess.run(["rm", "-rf", d])
    return 0


if __name__ == "__main__":
    sys.exit(main())
