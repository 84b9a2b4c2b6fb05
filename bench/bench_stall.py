#!/usr/bin/env python3
"""Does a heavy request stall the others? (docs/performance.md "Job start and heavy requests")

One client asks one `hops` at a time, first alone (the idle figure), then
while HEAVY other clients ask 3,456-host path matrices in a loop on the k=24
fat tree. Prints median, 99th percentile and worst latency of each phase and
their ratio.

    python3 bench/bench_stall.py [SECONDS] [HEAVY]     (defaults 10, 4)

Needs `make all bench`. Loopback only; stops by itself.
"""
import os
import socket
import sys
import multiprocessing
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from topodtest import Topod, tmpdir, parse_kv, read_reply  # noqa: E402
from bigfab import k24  # noqa: E402

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10
nheavy = int(sys.argv[2]) if len(sys.argv) > 2 else 4
d = tmpdir()
t = Topod("--load", k24(d))
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]


def measure(duration):
    lat = []
    with t.conn() as c:
        c.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        end = time.time() + duration
        i = 0
        while time.time() < end:
            i += 1
            t0 = time.perf_counter()
            r = c.ask("hops %s %s" % (hosts[i % n], hosts[(i * 977) % n]))
            lat.append((time.perf_counter() - t0) * 1e3)
            if not r.startswith("OK"):
                raise SystemExit("hops failed: " + r)
    lat.sort()
    return lat


def fig(lat):
    return "median %.3f ms, p99 %.3f ms, worst %.3f ms (%d answers)" % (
        lat[len(lat) // 2], lat[int(len(lat) * 0.99)], lat[-1], len(lat))


idle = measure(secs / 2)
# The heavy clients are processes: threads of this one would make the
# measuring client wait for Python's interpreter lock, not for topod.
stop = multiprocessing.Event()
count = multiprocessing.Array("i", nheavy)


def heavy(k):
    s = socket.create_connection(("127.0.0.1", t.port))
    req = ("pathmatrix %s\n" % " ".join(hosts)).encode()
    while not stop.is_set():
        s.sendall(req)
        head, _, _ = read_reply(s)
        if not head.startswith("OK"):
            raise SystemExit("pathmatrix: " + head)
        count[k] += 1
    s.close()


th = [multiprocessing.Process(target=heavy, args=(k,)) for k in range(nheavy)]
for x in th:
    x.start()
time.sleep(1)
loaded = measure(secs)
stop.set()
for x in th:
    x.join(30)
print("idle:                      %s" % fig(idle))
print("beside %d x pathmatrix(3456): %s; %d matrices answered" % (nheavy, fig(loaded), sum(count)))
print("ratio loaded/idle: median %.2fx, worst %.1f ms (target: median within 1.2x, worst within 5 ms)"
      % (loaded[len(loaded) // 2] / idle[len(idle) // 2], loaded[-1]))
t.stop()
