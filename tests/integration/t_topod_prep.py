#!/usr/bin/env python3
"""The proof by distance survives back-to-back deltas (issue 39): topod
prepares it on its own thread after serving a generation (topod/build.c,
prepare_one), pauses it when the next snapshot is to be built, and goes on
from the switches already checked on the generation that delta made
(fabric_index_update carries the cover; test_fabric_chain checks the carry
itself against the walks, slice by slice).

A k=40 fat tree (bench_delta: 2,000 switches, 16,000 hosts) is sent whole,
then 15 reroutes as deltas, each right after the OK of the one before, to a
topod without a state directory (with one, the full snapshot's write
leaves the preparation time to finish):
- every delta is served and its hierarchy shared (the reroutes keep every
  route's length);
- the log shows a preparation paused part way and finished on a later
  generation, with the switches it had checked before counted;
- the pauses go on from where the one before stopped, and once finished
  the cover is carried to every later generation: no preparation runs
  again.
Whether a delta lands while the preparation runs depends on timing; the
chain is run up to three times for that."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, deliver, done, note, tmpdir  # noqa: E402

K, CHAIN = 40, 15


d = tmpdir()
gen = subprocess.run([os.path.join(ROOT, "build", "bench", "bench_delta"), str(K), "5", d, str(CHAIN)],
                     capture_output=True, text=True, timeout=600)
check(gen.returncode == 0 and os.path.exists(os.path.join(d, "chain.%03d.delta" % (CHAIN - 1))),
      "bench_delta writes a k=%d fat tree and %d reroutes as deltas (exit %d)" % (K, CHAIN, gen.returncode))
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
    replies = [deliver(t.ingest, base)] + [deliver(t.ingest, x) for x in deltas]
    t.wait_generation(10 + CHAIN - 1)
    t.stop()
    log = t.logtext()
    paused = [(int(g), int(n), int(m)) for g, n, m in PAUSED.findall(log)]
    finished = [(int(g), int(c), int(b), int(m)) for g, c, b, m in FINISHED.findall(log)]
    resumed = [f for f in finished if f[2] > 0]
    if any(0 < n < m for _, n, m in paused) and resumed:
        break
    note("run %d: no preparation paused part way and resumed (paused %s, finished %s); again" %
         (attempt + 1, paused, finished))

ok = [r for r in replies if r.startswith("OK")]
check(len(ok) == CHAIN + 1, "the full snapshot and %d deltas are served back to back (%d OK; %s)"
      % (CHAIN, len(ok), [r for r in replies if not r.startswith("OK")][:2] or "no error"))
shared = log.count("reused: no hop count changed")
check(shared == CHAIN, "every delta's hierarchy is shared (%d of %d): the reroutes keep every route's length"
      % (shared, CHAIN))
check(any(0 < n < m for _, n, m in paused),
      "a delta paused the preparation part way (%s)" % (["generation %d after %d of %d switches" % p
                                                         for p in paused][:3] or "never"))
check(len(finished) == 1 and resumed and resumed[0][0] >= 10,
      "the preparation finished once, on a delta's generation, counting the switches checked before it "
      "(%s)" % (["generation %d: %d LIDs, %d of %d switches checked before" % f for f in finished] or "never"))
done_at = finished[0][0] if finished else None
later = [p for p in paused if done_at is not None and p[0] >= done_at]
check(all(a[1] <= b[1] for a, b in zip(paused, paused[1:])) and not later,
      "each pause went on from where the one before stopped (%s switches), and once finished on generation %s "
      "the cover was carried to every later generation: no preparation ran again"
      % ([p[1] for p in paused], done_at))
done()
