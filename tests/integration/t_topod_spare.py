#!/usr/bin/env python3
"""The copy a delta is written into, made between snapshots (issue 39).

On the lab's VM memory written for the first time costs 1-3 ms a
megabyte (its host backs it anew), and a k=56 delta's copy of the nodes
and ports is 12.5 MB. So topod's preparation thread, once the warm
interval passes after a generation is served, makes the copy of it that
the next delta is applied to (topod/build.c: warm_spare_copy,
snap_delta_apply_to), and drops it whenever another generation is
published. The chain of tests/unit/test_fabric_chain.c (a k=8 fat tree)
goes to a topod with --warm-interval 1 and a state directory:
- deltas sent after the interval are applied to the copy (the serving
  line says so), a delta sent at once is not, and every one is served;
- a whole snapshot in between drops the copy (it is of the generation it
  replaced) and the next delta after the interval uses a new one;
- the state directory then holds the last generation's LFTs exactly, and
  `pathmatrix` of all hosts equals a topod's given that generation whole.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, Topod, check, done, fabric_chain, parse_kv, send_snapshot, tmpdir  # noqa: E402

d = tmpdir()
chain, unit = fabric_chain(d)
check(unit.returncode == 0 and os.path.exists(os.path.join(chain, "delta.010")),
      "test_fabric_chain writes the chain (exit %d)" % unit.returncode)


def snap(g):
    return os.path.join(chain, "gen.%03d.snap" % g)


def lfts(path):
    r = subprocess.run([os.path.join(BIN, "topo-snap"), "lfts", path], capture_output=True, text=True, check=True)
    return sorted(r.stdout.splitlines())


def pathmatrix(t):
    with t.conn() as c:
        hosts = c.ask("hosts")
        n = int(parse_kv(hosts[3:]).get("lines", 0))
        names = [c.readline().split()[0] for _ in range(n)]
        head = c.ask("pathmatrix " + " ".join(names))
        m = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
        return [head] + [c.readline() for _ in range(m)]


SERVED = re.compile(r"serving generation (\d+) from .*?persisted in [0-9.]+ ms(; applied to the copy made beforehand)?$",
                    re.M)
state = os.path.join(d, "state")
os.mkdir(state, 0o700)
t = Topod("--history", "16", "--warm-interval", "1", state_dir=state)
try:
    rc, out = send_snapshot("sink=unix:" + t.ingest, snap(1))
    check(rc == 0 and t.wait_generation(1), "generation 1 served whole (%s)" % out[-80:])
    # (generation, what was sent, waited for the warm interval first)
    plan = [(2, "delta", True), (3, "delta", True), (4, "delta", False), (5, "whole", True), (6, "delta", True),
            (7, "delta", True)]
    bad = []
    for g, kind, wait in plan:
        if wait:
            time.sleep(2.5)  # the interval, and the ready memory and copy made after it
        rc, out = send_snapshot("sink=unix:" + t.ingest, os.path.join(chain, "delta.%03d" % g) if kind == "delta"
                                else snap(g))
        if rc != 0 or not t.wait_generation(g):
            bad.append("%d: %s" % (g, out[-100:]))
    check(not bad, "deltas and a whole snapshot in between are served (%s)" % (bad[:2] or "all OK"))
    time.sleep(0.3)
    lines = {int(g): bool(spare) for g, spare in SERVED.findall(t.logtext())}
    want = {1: False, 2: True, 3: True, 4: False, 5: False, 6: True, 7: True}
    check(lines == want, "applied to the copy made beforehand exactly for the deltas sent after the interval: %s"
          % sorted(lines.items()))
    # The list the next delta's changed blocks go into: made once, after
    # the first whole snapshot (for a quarter of its blocks), then kept
    # by every delta that wrote into it (topod/build.c: ready_update).
    log = t.logtext()
    made = [(m.start(), int(m.group(1))) for m in re.finditer(r"a list for (\d+) LFT blocks made ready", log)]
    first2 = log.find("serving generation 2 ")
    check(len(made) == 1 and made[0][1] > 0 and made[0][0] < first2,
          "a list for the next delta's blocks made ready once, before generation 2: %s" % made)
    check(lfts(state) == lfts(snap(7)), "the state directory holds generation 7's LFTs exactly")
    w = Topod()
    try:
        rc, out = send_snapshot("sink=unix:" + w.ingest, snap(7))
        check(rc == 0 and w.wait_generation(7), "a second topod serves generation 7 whole")
        a, b = pathmatrix(t), pathmatrix(w)
        check(a[0].startswith("OK") and len(a) > 100 and a == b,
              "pathmatrix of all hosts: the same after the copies as from the whole snapshot (%d lines)" % len(a))
    finally:
        w.stop()
finally:
    t.stop()
done()
