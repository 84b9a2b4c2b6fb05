#!/usr/bin/env python3
"""bench_place.py - order, pick and map through a real topod on the k=24 fat
tree (3,456 hosts), request to last reply line, median of runs. Figures, not
asserts.

  python3 bench/bench_place.py        (starts its own topod on a free port)

The client is Python; the reply is read whole (every line), which for
`order` of 3,456 hosts is part of the figure.
"""
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import bigfab  # noqa: E402

ROOT = bigfab.ROOT


def main():
    d = tempfile.mkdtemp(prefix="bench_place.")
    snap = bigfab.k24(d)
    p = subprocess.Popen([os.path.join(ROOT, "build", "bin", "topod"), "-f", "-L", snap, "-l", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in p.stdout:
            m = re.match(r"ready port=(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        s = socket.create_connection(("127.0.0.1", port))
        f = s.makefile("rb")

        def ask(req):
            t = time.perf_counter()
            s.sendall((req + "\n").encode())
            first = f.readline().decode()
            m = re.search(r"\blines=(\d+)", first)
            for _ in range(int(m.group(1)) if first.startswith("OK") and m else 0):
                f.readline()
            return first.strip(), (time.perf_counter() - t) * 1000

        def cpu_ms():
            # topod's CPU time, all threads: on a shared machine the wall
            # clock measures the neighbours as much as the request
            with open("/proc/%d/stat" % p.pid) as st:
                w = st.read().rsplit(")", 1)[1].split()
            return (int(w[11]) + int(w[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")

        def med(req, k=7):
            c0 = cpu_ms()
            runs = [ask(req) for _ in range(k)]
            return statistics.median(r[1] for r in runs), runs[0][0], (cpu_ms() - c0) / k

        names = ["h%04d" % i for i in range(3456)]
        first_pick = ask("pick 100 " + " ".join(names))[1]
        rows = [
            ("order, 3,456 hosts listed", "order " + " ".join(names)),
            ("order, whole fabric (no list)", "order"),
            ("pick 100 of 3,456 free", "pick 100 " + " ".join(names)),
            ("pick 1,024 of 3,456 free", "pick 1024 " + " ".join(names)),
            ("pick 200 of 1,152 (every third host)", "pick 200 " + " ".join(names[::3])),
            ("pick 1,024 of 1,728 (every other host)", "pick 1024 " + " ".join(names[::2])),
            ("pick leaves=any 1,024 of 3,456 free", "pick leaves=any 1024 " + " ".join(names)),
            ("pick leaves=any 1,024 of 1,728 (every other host)", "pick leaves=any 1024 " + " ".join(names[::2])),
            ("pick trade 512 (every 7th) of 1,728", "pick trade 512 " + " ".join(
                names[::7][:512] + [h for i, h in enumerate(names) if i % 2 and i % 7])),
            ("map 1,024 ranks (16x8x8) on 128 hosts x 8", "map stencil:16x8x8 " + " ".join(h + "*8" for h in names[:128])),
            ("map 4,096 ranks (16x16x16) on 256 hosts x 16",
             "map stencil:16x16x16 " + " ".join(h + "*16" for h in names[:256])),
            ("map 4,096 ranks on 256 hosts x 16, one host in 13",
             "map stencil:16x16x16 " + " ".join(h + "*16" for h in names[::13][:256])),
        ]
        print("first pick after the fabric arrived (builds the entry table): %.1f ms" % first_pick)
        for what, req in rows:
            ms, head, cpu = med(req, 3 if req.startswith("map") else 7)
            figs = " ".join(w for w in head.split() if w.split("=")[0] in (
                "leaves", "pods", "sharing", "max_load", "method", "hop_bytes", "block_hop_bytes", "rr_hop_bytes",
                "balanced", "trades", "bottleneck_us", "limit_us", "first_fit_bottleneck_us", "limit", "widened",
                "wider_leaves", "wider_time_us"))
            print("%-50s %8.1f ms  cpu %6.1f ms   %s" % (what, ms, cpu, figs))
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
