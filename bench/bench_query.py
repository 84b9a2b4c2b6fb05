#!/usr/bin/env python3
"""bench_query.py - query figures of a running topod, printed, not asserted.

  bench_query.py --port PORT [--ibtracert N]

  - one `hops` request at a time on loopback: median and 99th percentile
    round trip;
  - `hops` requests pipelined on one connection: requests per second;
  - one `hopsbatch` of 10,000 pairs, one `hopsmatrix`, `pathmatrix` and
    `shared` of a 1,024-host job spread over the fabric (every third host),
    and a `pathmatrix` of a packed one (1,024 consecutive hosts);
  - with --ibtracert N (under lab_umad): the same pairs answered by running
    `ibtracert SLID DLID` per pair, the infiniband-diags way.
The client is Python; a C client would only make the rates look better.
"""
import argparse
import random
import re
import socket
import statistics
import subprocess
import time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb", buffering=1 << 20)


def ask(s, f, req):
    s.sendall((req + "\n").encode())
    first = f.readline().decode()
    m = re.search(r"\blines=(\d+)", first)
    n = int(m.group(1)) if first.startswith("OK") and m else 0
    for _ in range(n):
        f.readline()
    return first, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ibtracert", type=int, default=0)
    ap.add_argument("--pipelined", type=int, default=200000)
    a = ap.parse_args()
    s, f = connect(a.port)
    info, _ = ask(s, f, "info")
    print("fabric:", " ".join(w for w in info.split() if w.split("=")[0] in ("hosts", "switches", "engine", "depth")))
    s.sendall(b"hosts\n")
    first = f.readline().decode()
    n = int(re.search(r"lines=(\d+)", first).group(1))
    names = [f.readline().decode().split()[0] for _ in range(n)]
    rnd = random.Random(1)
    pairs = [tuple(rnd.sample(names, 2)) for _ in range(5000)]

    lat = []
    for x, y in pairs[:3000]:
        t = time.perf_counter()
        s.sendall(("hops %s %s\n" % (x, y)).encode())
        f.readline()
        lat.append((time.perf_counter() - t) * 1e6)
    lat.sort()
    print("hops, one at a time:        median %.1f us, p99 %.1f us (%d requests)"
          % (statistics.median(lat), lat[int(len(lat) * 0.99)], len(lat)))

    reqs = b"".join(("hops %s %s\n" % pairs[i % len(pairs)]).encode() for i in range(a.pipelined))
    t = time.perf_counter()
    import threading
    th = threading.Thread(target=s.sendall, args=(reqs,))
    th.start()
    for _ in range(a.pipelined):
        f.readline()
    th.join()
    dt = time.perf_counter() - t
    print("hops, pipelined:            %.0f requests/s (%d on one connection in %.2f s)" % (a.pipelined / dt, a.pipelined, dt))

    batch = " ".join("%s:%s" % pairs[i % len(pairs)] for i in range(10000))
    t = time.perf_counter()
    r, k = ask(s, f, "hopsbatch " + batch)
    dt = time.perf_counter() - t
    print("hopsbatch of 10,000 pairs:  %.1f ms round trip (%.0f pairs/s)" % (dt * 1e3, 10000 / dt))

    job = names[:: max(1, len(names) // 1024)][:1024]
    packed = names[:1024]
    for cmd, job in (("hopsmatrix", job), ("pathmatrix", job), ("shared", job), ("pathmatrix", packed)):
        t = time.perf_counter()
        s.sendall(("%s %s\n" % (cmd, " ".join(job))).encode())
        r = f.readline().decode()
        ttfb = time.perf_counter() - t
        k = int(re.search(r"lines=(\d+)", r).group(1))
        for _ in range(k):
            f.readline()
        dt = time.perf_counter() - t
        # topod computes and formats the whole reply before its first byte
        # leaves, so the first line's arrival is the server's share.
        print("%-11s %4d hosts%s first line after %.1f ms (computed and formatted), all %d lines read after %.1f ms"
              % (cmd, len(job), ", packed:" if job is packed else ", spread:", ttfb * 1e3, k, dt * 1e3))

    if a.ibtracert:
        lid = {}
        for x, y in pairs[:a.ibtracert]:
            for h in (x, y):
                if h not in lid:
                    r, _ = ask(s, f, "resolve " + h)
                    lid[h] = re.search(r"\blid=(\d+)", r).group(1)
        t = time.perf_counter()
        for x, y in pairs[:a.ibtracert]:
            subprocess.run(["ibtracert", lid[x], lid[y]], capture_output=True)
        dt = (time.perf_counter() - t) / a.ibtracert
        print("ibtracert per pair:         %.1f ms (%d pairs); a 1,024-host path matrix would take %.0f s"
              % (dt * 1e3, a.ibtracert, dt * 1024 * 1023))


if __name__ == "__main__":
    main()
