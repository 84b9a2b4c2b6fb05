"""A producer's OK means served (issue 22): a query sent the moment the
ingest socket says "OK G" sees generation G, never the one before. topod
used to acknowledge just before it published, so for a few ms after the OK
`info` still answered the previous generation.

bench_build's k=12 fat tree (432 hosts) as a full snapshot, then deltas and
full snapshots alternately; after each OK one `info` on a query connection
opened beforehand, with no waiting in between. 40 rounds, so that the old
window (the publish step after the reply) would be hit many times."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, done, note, parse_kv, tmpdir  # noqa: E402
from snapdecode import decode, reseal  # noqa: E402
from journalfault import SM, TS0, deliver, mkdelta  # noqa: E402

ROUNDS = 40

d = tmpdir()
path = os.path.join(d, "k12.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "12", "64", path], check=True,
               capture_output=True)
raw = open(path, "rb").read()
s = decode(raw, check_crc=False)
nn, eng = len(s.nodes), s.engine.encode()


def full(g):
    return reseal(raw, generation=g, timestamp=TS0 + g, sm_guid=SM, sweep=g)


state = os.path.join(d, "state")
os.mkdir(state, 0o700)
t = Topod("--history", "4", state_dir=state, d=d)
stale, bad, seen = [], [], []
with t.conn() as q:
    g = 100
    r = deliver(t.ingest, full(g))
    check(r == "OK %d" % g, "the base snapshot is acknowledged: %s" % r)
    for i in range(ROUNDS):
        g += 1
        # Deltas (the fast path, where the old window was widest relative
        # to the work) and now and then a full snapshot.
        data = full(g) if i % 5 == 4 else mkdelta((g - 1, nn, eng), g, i % nn, b"n%d" % g)
        r = deliver(t.ingest, data)
        if r != "OK %d" % g:
            bad.append((g, r))
            continue
        got = int(parse_kv(q.ask("info")[3:])["generation"])
        seen.append(got)
        if got != g:
            stale.append((g, got))
check(not bad, "every snapshot and delta is acknowledged with OK G (%d rounds): %s" % (ROUNDS, bad[:3]))
check(len(seen) == ROUNDS and not stale,
      "a query right after each OK sees that generation, %d of %d (stale: %s)"
      % (len(seen) - len(stale), ROUNDS, stale[:5]))
note("generations seen: %d..%d" % (min(seen or [0]), max(seen or [0])))
t.stop()
done()
