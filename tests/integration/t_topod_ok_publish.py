"""A producer's OK means served (issue 22): a query sent the moment the
ingest socket says "OK G" sees generation G, never the one before. topod
used to acknowledge just before it published, so for a few ms after the OK
`info` still answered the previous generation.

bench_build's k=12 fat tree (432 hosts) as a full snapshot, then deltas and
full snapshots alternately; after each OK one `info` on a query connection
opened beforehand, with no waiting in between. 40 rounds, so that the old
window (the publish step after the reply) would be hit many times.

Then publication before persistence: on a disk made slow (each fsync
delayed by an interposed one), a full snapshot and a delta are served
while their producer still waits, the OK comes only after the fsyncs, and
a watch parked on the generation before wakes once `diff` knows the new one."""
import os
import subprocess
import sys
import threading
import time

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

# Served before durable, OK only once durable: the write and fsync of a
# full snapshot (1.3 s at k=56) must not keep the fabric from its clients.
# A disk made slow by an interposed fsync (SLOW_FSYNC_MS each) shows both
# orders: the generation is served while its producer still waits, and
# the OK comes after the fsyncs.
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
int fsync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	const char *e = getenv("SLOW_FSYNC_MS");
	long ms = e ? atol(e) : 0;
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
	nanosleep(&ts, NULL);
	return real(fd);
}
"""
shim_c, shim = os.path.join(d, "slowfsync.c"), os.path.join(d, "slowfsync.so")
open(shim_c, "w").write(SHIM)
subprocess.run(["cc", "-shared", "-fPIC", "-o", shim, shim_c, "-ldl"], check=True)
state2 = os.path.join(d, "state2")
os.mkdir(state2, 0o700)
os.environ.update(LD_PRELOAD=shim, SLOW_FSYNC_MS="1500")
try:
    os.mkdir(os.path.join(d, "slow"))
    t = Topod(state_dir=state2, d=os.path.join(d, "slow"))
finally:
    del os.environ["LD_PRELOAD"], os.environ["SLOW_FSYNC_MS"]
for g, what in ((200, "a full snapshot"), (201, "a delta")):
    data = full(g) if g == 200 else mkdelta((g - 1, nn, eng), g, 0, b"slow%d" % g)
    box = {}
    if g == 201:  # parked on the generation before: woken once G is in the history
        w = t.conn()
        w.send("watch %d 30000\n" % (g - 1))
    th = threading.Thread(target=lambda: box.update(r=deliver(t.ingest, data), t=time.monotonic()))
    t0 = time.monotonic()
    th.start()
    served = None
    with t.conn() as q:
        while th.is_alive() and time.monotonic() - t0 < 30:
            if int(parse_kv(q.ask("info")[3:])["generation"]) == g:
                served = time.monotonic()
                break
            time.sleep(0.01)
    th.join(60)
    if g == 201:
        woke = w.readline()
        dif = t.ask("diff %d %d" % (g - 1, g))
        w.s.close()
        check("gen=%d" % g in woke and dif.startswith("OK"),
              "%s: a watch parked on %d wakes with %d (%s) and `diff %d %d` at once answers %s"
              % (what, g - 1, g, woke.strip(), g - 1, g, dif[:40]))
    ok_at = box.get("t")
    # Served before the first slowed fsync could have returned (1.5 s).
    check(box.get("r") == "OK %d" % g and served is not None and ok_at is not None and served - t0 < 1.5,
          "%s on a slow disk (fsync 1.5 s): served %s, OK at %s s (%s)"
          % (what, "%.2f s after its first byte" % (served - t0) if served else "not before its OK",
             "%.2f" % (ok_at - t0) if ok_at else "?", box.get("r")))
    check(ok_at is not None and ok_at - t0 >= 3.0,
          "%s: OK only after the file's and the directory's fsync (%.2f s >= 3.0 s)"
          % (what, (ok_at - t0) if ok_at else -1))
t.stop()
done()
