#!/usr/bin/env python3
"""bench_watch.py - 10,000 clients hold a `watch` on one topod (loopback).

  bench/bench_watch.py [N]          (default 10000)

A topod serving the k=24 fabric (bigfab.k24) gets N connections, each
parked on `watch G 600000`. Prints topod's RSS before and with the N
watchers, then delivers one new generation and prints the time from
topod's OK to the producer until the last watcher has its answer (read
here with one selector loop), and how many answered right.
"""
import os
import resource
import selectors
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from bigfab import k24, rss_kib  # noqa: E402
from snapdecode import reseal  # noqa: E402
from topodtest import Topod, parse_kv, send_snapshot, tmpdir  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    d = tmpdir()
    base = k24(d)
    t = Topod("--load", base)
    gen = int(t.info()["generation"])
    time.sleep(0.5)
    rss0 = rss_kib(t.p.pid)
    socks = []
    t0 = time.monotonic()
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", t.port))
        s.sendall(b"watch %d 600000\n" % gen)
        socks.append(s)
    for _ in range(100):
        if int(parse_kv(t.admin_ask("stats")[3:])["watching"]) >= n:
            break
        time.sleep(0.1)
    parked = int(parse_kv(t.admin_ask("stats")[3:])["watching"])
    rss1 = rss_kib(t.p.pid)
    print("%d watchers parked in %.1f s; topod RSS %.1f MiB -> %.1f MiB (+%.1f MiB, %.0f bytes each)"
          % (parked, time.monotonic() - t0, rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 1024,
             (rss1 - rss0) * 1024.0 / max(parked, 1)))
    with open(base, "rb") as f:
        nxt = os.path.join(d, "next.snap")
        with open(nxt, "wb") as g:
            g.write(reseal(f.read(), generation=gen + 1, timestamp=gen + 1))
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    t_send = time.monotonic()
    rc, out = send_snapshot("sink=unix:" + t.ingest, nxt)
    t_ok = time.monotonic()
    want = b"OK gen=%d changed=1\n" % (gen + 1)
    right = got = 0
    last = t_ok
    while got < n and time.monotonic() - t_ok < 30:
        for key, _ in sel.select(timeout=1):
            b = key.fileobj.recv(100)
            got += 1
            right += b == want
            last = time.monotonic()
            sel.unregister(key.fileobj)
    print("new generation: delivery took %.0f ms (decode, build, persist); the last of %d watchers heard %.0f ms "
          "after topod's OK (%d answers right)" % ((t_ok - t_send) * 1e3, got, (last - t_ok) * 1e3, right))
    for s in socks:
        s.close()
    t.stop()


if __name__ == "__main__":
    main()
