#!/usr/bin/env python3
"""The proof by distance after a cable fault, through back-to-back deltas
(issue 39). A full build makes the cover (the LIDs routed along shortest
paths) with the hierarchy; a delta that changes links carries it when the
distances to a few leaves changed (fabric.c, RELINK_MOVED_MAX: a 64th of
the leaves, at least 4; test_fabric_update), and otherwise keeps the
clusters (renamed) and leaves the new generation without one: here pod
0's 20 leaves of 800 moved, past 12. topod's
preparation thread makes it (topod/build.c, prepare_one): paused whenever
the builder builds the next snapshot, and taken up where it stopped on the
generation that delta made (fabric_index_update carries the cover;
test_fabric_chain checks the carry itself against the walks).

A k=40 fat tree (bench_delta: 2,000 switches, 16,000 hosts) is sent whole;
then, as deltas each 10 ms after the OK of the one before, to a topod
without a state directory (a journal's fsync leaves the preparation time
to finish), a cable fault (DELTA_FAULT=1: pod 0's leaves lose their
cables to aggregation switch 0, rerouted round them) and 14 reroutes:
- the full build's log line names its cover; the fault is renamed, its
  line says the cover is pending; every reroute shares the hierarchy;
- the preparation is paused part way and finishes on a later generation,
  with the switches checked before counted, each pause going on from the
  one before;
- from the generation it finished on, every line names a cover, and no
  preparation runs again.
Whether a delta lands while the preparation runs depends on timing; the
chain is run up to three times for that."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, deliver, done, note, tmpdir  # noqa: E402

K, CHAIN = 40, 15


d = tmpdir()
gen = subprocess.run([os.path.join(ROOT, "build", "bench", "bench_delta"), str(K), "5", d, str(CHAIN)],
                     capture_output=True, text=True, timeout=600, env=dict(os.environ, DELTA_FAULT="1"))
check(gen.returncode == 0 and os.path.exists(os.path.join(d, "chain.%03d.delta" % (CHAIN - 1))),
      "bench_delta writes a k=%d fat tree, a cable fault and %d reroutes as deltas (exit %d)"
      % (K, CHAIN - 1, gen.returncode))
with open(os.path.join(d, "base.snap"), "rb") as f:
    base = f.read()
deltas = []
for i in range(CHAIN):
    with open(os.path.join(d, "chain.%03d.delta" % i), "rb") as f:
        deltas.append(f.read())

PAUSED = re.compile(r"generation (\d+): proof by distance paused after (\d+) of (\d+) switches")
FINISHED = re.compile(r"generation (\d+): (\d+) LIDs routed along shortest paths, which a delta's proof checks "
                      r"without walks \([0-9.]+ ms, (\d+) of (\d+) switches checked before\)")
for attempt in range(3):
    run = os.path.join(d, "run%d" % attempt)
    os.mkdir(run)
    t = Topod("-v", "--history", str(CHAIN + 1), d=run)
    replies = [deliver(t.ingest, base)]
    for x in deltas:
        replies.append(deliver(t.ingest, x))
        # Time for the preparation between OKs: with tables in chunks a
        # k=40 delta's own work after its OK leaves it about 1.5 ms, 60
        # switches, and 15 deltas did not reach 2,000. A subnet manager
        # sweeps every few seconds; 10 ms keeps the pauses part way.
        time.sleep(0.01)
    t.wait_generation(10 + CHAIN - 1)
    t.stop()
    log = t.logtext()
    paused = [(int(g), int(n), int(m)) for g, n, m in PAUSED.findall(log)]
    finished = [(int(g), int(c), int(b), int(m)) for g, c, b, m in FINISHED.findall(log)]
    resumed = [f for f in finished if f[2] > 0]
    # and finished before the last generation, so that one line after
    # it shows the cover carried
    if any(0 < n < m for _, n, m in paused) and resumed and resumed[0][0] < 10 + CHAIN - 1:
        break
    note("run %d: no preparation paused part way and finished before the last generation (paused %s, "
         "finished %s); again" %
         (attempt + 1, paused, finished))

SERVING = re.compile(r"serving generation (\d+) .*?(, reused: [^;)]*)?\); (cover: pending|cover: \d+ LIDs);")
lines = [(int(g), reused, cover) for g, reused, cover in SERVING.findall(log)]
ok = [r for r in replies if r.startswith("OK")]
check(len(ok) == CHAIN + 1 and len(lines) == CHAIN + 1,
      "the full snapshot and %d deltas are served back to back (%d OK, %d log lines; %s)"
      % (CHAIN, len(ok), len(lines), [r for r in replies if not r.startswith("OK")][:2] or "no error"))
hosts = K ** 3 // 4
check(lines and lines[0][0] == 1 and lines[0][2] == "cover: %d LIDs" % hosts,
      "the full build made the cover with the hierarchy: %s" % (lines[0][2] if lines else "?"))
check(len(lines) > 1 and "renamed" in lines[1][1] and lines[1][2] == "cover: pending",
      "the cable fault's generation keeps the clusters renamed, its cover pending (%s; %s)"
      % (lines[1][1].strip(", ") if len(lines) > 1 else "?", lines[1][2] if len(lines) > 1 else "?"))
shared = sum(1 for g, r, c in lines[2:] if r == ", reused: no hop count changed")
check(shared == CHAIN - 1, "every reroute after it shares the hierarchy (%d of %d)" % (shared, CHAIN - 1))
check(any(0 < n < m for _, n, m in paused),
      "a delta paused the preparation part way (%s)" % (["generation %d after %d of %d switches" % p
                                                         for p in paused][:3] or "never"))
check(len(finished) == 1 and resumed and resumed[0][0] > 10,
      "the preparation finished once, on a later delta's generation, counting the switches checked before it "
      "(%s)" % (["generation %d: %d LIDs, %d of %d switches checked before" % f for f in finished] or "never"))
done_at = finished[0][0] if finished else None
after = [c for g, r, c in lines if done_at is not None and g > done_at]
check(all(a[1] <= b[1] for a, b in zip(paused, paused[1:])) and done_at is not None and
      not [p for p in paused if p[0] >= done_at] and after and all(c.startswith("cover: ") and "LIDs" in c
                                                                    for c in after),
      "each pause went on from where the one before stopped (%s switches); from generation %s on, the cover "
      "was carried to every later generation (%d lines name it) and no preparation ran again"
      % ([p[1] for p in paused], done_at, len(after)))
done()
