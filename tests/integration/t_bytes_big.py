#!/usr/bin/env python3
"""Byte counts up to 2^53 (issue 37, item 4) on a real topod serving the
2sw4hca capture (4x SDR cables: 1e9 bytes/s of data): `load` equals an
independent count made here from the routes (tests/lib/loadcheck.py, the
lab's brute force: every flow walked along `path`) with 6 GB per pair and
with a 341 GB matrix entry; `schedule`, `pick`, `map` and `delaymatrix`
take bytes=2^53 and refuse 2^53 + 1 naming the limit; a request whose
totals would pass 2^62 is ERR RANGE naming the sum, never wrapped; the
predictions scale exactly; topoquery and libtii read and print the figures
to the byte, and refuse a matrix file or an option beyond 2^53."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")
BIN = os.path.join(HERE, "..", "..", "build", "bin")
M = 2**53
H4 = "Hca1 Hca2 Hca3 Hca4"

t = tt.Topod("--topology", os.path.join(FIX, "2sw4hca.topo"), "--lfts", os.path.join(FIX, "2sw4hca.lfts"),
             ingest=False, admin=False)

# the independent count: every pattern, 6 GB per pair, the 341 GB entry
r = subprocess.run([sys.executable, os.path.join(HERE, "..", "lib", "loadcheck.py"), str(t.port), "2sw4hca", "5"],
                   capture_output=True, text=True, timeout=600)
for ln in r.stdout.splitlines():
    if ln.startswith(("ok - ", "not ok - ")):
        ok = ln.startswith("ok - ")
        tt.check(ok, "loadcheck: " + ln.split(" - ", 1)[1])
tt.check(r.returncode == 0 and "6 GB" in r.stdout and "341 GB" in r.stdout,
         "loadcheck compared the 6 GB all-to-all and the 341 GB matrix (exit %d)" % r.returncode)


def head(c, line):
    h = c.ask(line)
    n = int(tt.parse_kv(h[3:]).get("lines", 0)) if h.startswith("OK") else 0
    rows = [c.readline() for _ in range(n)]
    return h, rows


with t.conn() as c:
    # load: 2^53 per message, exact; the prediction linear in the bytes
    h1, _ = head(c, "load bytes=1000000000 alltoall %s" % H4)
    hm, _ = head(c, "load bytes=%d alltoall %s" % (M, H4))
    k1, km = tt.parse_kv(h1[3:]), tt.parse_kv(hm[3:])
    tt.check(hm.startswith("OK") and int(km["bytes"]) == 12 * M and int(km["max_bytes"]) == int(km["max_msgs"]) * M,
             "load bytes=2^53: 12 flows, total %s = 12 x 2^53, busiest %s exactly" % (km.get("bytes"), km.get("max_bytes")))
    # 1e9 B/s: the busiest cable's time is its bytes in ns, plus the route's latency
    bw1 = float(k1["time_us"]) - int(k1["max_bytes"]) / 1e3
    bwm = float(km["time_us"]) - int(km["max_bytes"]) / 1e3
    tt.check(abs(bw1 - bwm) < 1e-3 * max(1.0, abs(bw1)) and 0 < bw1 < 10,
             "load time_us = busiest bytes / 1e9 B/s + latency at 1e9 and 2^53 bytes alike (%s, %s us)"
             % (k1.get("time_us"), km.get("time_us")))
    r = c.ask("load bytes=%d alltoall %s" % (M + 1, H4))
    tt.check(r.startswith("ERR USAGE") and "2^53" in r, "load bytes=2^53+1: %s" % r[:100])
    r = c.ask("load bytes=%d alltoall Hca1*20 Hca2*20 Hca3*20" % M)
    tt.check(r.startswith("ERR RANGE") and "2^62" in r and "3540 flows" in r,
             "load of 60 ranks at 2^53 (3,540 flows, 2^64.8 in all): %s" % r[:120])

    # schedule
    h, rows = head(c, "schedule xor bytes=%d Hca1 Hca2 Hca3 Hca4" % M)
    kv = tt.parse_kv(h[3:]) if h.startswith("OK") else {}
    tt.check(kv.get("bytes") == str(M) and float(kv.get("time_us", "0")) > M / 1e3,
             "schedule xor bytes=2^53: bytes=%s, predicted %s us" % (kv.get("bytes"), kv.get("time_us")))
    r = c.ask("schedule xor bytes=%d Hca1 Hca2" % (M + 1))
    tt.check(r.startswith("ERR USAGE") and "2^53" in r, "schedule bytes=2^53+1: %s" % r[:110])
    r = c.ask("schedule xor bytes=%d Hca1*16 Hca2*16" % M)
    tt.check(r.startswith("ERR RANGE") and "2^62" in r, "schedule of 32 ranks at 2^53 (2^62.9): %s" % r[:110])

    # pick
    h, rows = head(c, "pick bytes=%d 2 %s" % (M, H4))
    kv = tt.parse_kv(h[3:]) if h.startswith("OK") else {}
    tt.check(kv.get("bytes") == str(M) and len(rows) == 2 and float(kv.get("time_us", "0")) >= M / 1e3,
             "pick bytes=2^53: bytes=%s, time_us=%s" % (kv.get("bytes"), kv.get("time_us")))
    r = c.ask("pick bytes=%d 2 %s" % (M + 1, H4))
    tt.check(r.startswith("ERR USAGE") and "2^53" in r, "pick bytes=2^53+1: %s" % r[:110])
    r = c.ask("pick bytes=%d pattern=matrix 2 %s -- %s" % (M, H4, " ".join(["0:1:%d" % M] * 600)))
    tt.check(r.startswith("ERR RANGE") and "2^62" in r, "pick pattern=matrix, 600 x 2^53: %s" % r[:110])

    # map
    h, rows = head(c, "map bytes=%d stencil:2x2 Hca1 Hca2 Hca3 Hca4" % M)
    kv = tt.parse_kv(h[3:]) if h.startswith("OK") else {}
    tt.check(kv.get("bytes") == str(M) and len(rows) == 4,
             "map bytes=2^53 stencil:2x2: bytes=%s, time_us=%s" % (kv.get("bytes"), kv.get("time_us")))
    r = c.ask("map bytes=%d stencil:2x2 %s" % (M + 1, H4))
    tt.check(r.startswith("ERR USAGE") and "2^53" in r, "map bytes=2^53+1: %s" % r[:110])
    r = c.ask("map bytes=%d stencil:16x16 Hca1*64 Hca2*64 Hca3*64 Hca4*64" % M)
    tt.check(r.startswith("ERR RANGE") and "2^62" in r, "map of a 16x16 stencil at 2^53: %s" % r[:120])

    # delaymatrix: 2^53 bytes at 1e9 B/s plus 300 ns, exact in the double
    h, rows = head(c, "delaymatrix bytes=%d Hca1 Hca3" % M)
    tt.check(rows and rows[0].split() == ["0", str(M + 300)],
             "delaymatrix bytes=2^53: %s ns between leaf-mates (2^53 + 300)" % (rows[0].split() if rows else h))

# topoquery (libtii): the same figures, to the byte; files and options checked
tq = [os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port]
r = subprocess.run(tq + ["-j", "--bytes", str(M), "load", "alltoall", "Hca1", "Hca2"], capture_output=True, text=True)
tt.check(r.returncode == 0 and '"bytes":%d' % (2 * M) in r.stdout, "topoquery -j load --bytes 2^53: total %d in JSON"
         % (2 * M))
r = subprocess.run(tq + ["--bytes", str(M + 1), "load", "alltoall", "Hca1", "Hca2"], capture_output=True, text=True)
tt.check(r.returncode == 2 and "2^53" in r.stderr, "topoquery --bytes 2^53+1: usage error: %s" % r.stderr.strip()[:80])
d = tt.tmpdir()
mf = os.path.join(d, "m.txt")
with open(mf, "w") as f:
    f.write("# a long run's traffic\n0 1 341303846527\n1 2 6000000000\n2 3 %d\n" % M)
r = subprocess.run(tq + ["--matrix", mf, "load", "matrix", "Hca1", "Hca2", "Hca3", "Hca4"], capture_output=True,
                   text=True)
tt.check(r.returncode == 0 and ("bytes %d" % (341303846527 + 6000000000 + M)) in r.stdout,
         "topoquery load --matrix with 341 GB and 2^53 entries: total exact")
for bad, what in (("0 1 %d\n" % (M + 1), "2^53+1"), ("0 1 -1\n", "-1"), ("0 1 18446744073709551617\n", "2^64+1")):
    with open(mf, "w") as f:
        f.write("0 1 5\n" + bad)
    r = subprocess.run(tq + ["--matrix", mf, "load", "matrix", "Hca1", "Hca2"], capture_output=True, text=True)
    tt.check(r.returncode == 2 and ":2:" in r.stderr, "topoquery matrix file with %s bytes: line 2 refused: %s"
             % (what, r.stderr.strip()[:90]))
r = subprocess.run(tq + ["schedule", "xor", "bytes=%d" % M, "Hca1", "Hca2"], capture_output=True, text=True)
tt.check(r.returncode == 0 and ("bytes %d" % M) in r.stdout, "topoquery schedule bytes=2^53: answered")
r = subprocess.run(tq + ["schedule", "xor", "bytes=%d" % (M + 1), "Hca1", "Hca2"], capture_output=True, text=True)
tt.check(r.returncode == 2 and "2^53" in r.stderr, "topoquery schedule bytes=2^53+1: %s" % r.stderr.strip()[:80])
r = subprocess.run(tq + ["load", "--bytes", str(M), "alltoall", "Hca1*30", "Hca2*30"], capture_output=True, text=True)
tt.check(r.returncode == 2 and "2^62" in r.stderr, "topoquery: topod's ERR RANGE is a usage error naming the sum: %s"
         % r.stderr.strip()[:100])
tt.done()
