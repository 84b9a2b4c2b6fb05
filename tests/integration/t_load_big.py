#!/usr/bin/env python3
"""`load` at the issue's scale: 16,384 ranks on all 3,456 hosts of the k=24
fat tree (d-mod-k LFTs) in one request line, served by a real topod; the
totals follow from the rank counts, every level's maximum meets seed 000's
bound on this fabric, the full reply (every loaded link) is framed, and one
rank more is refused with ERR TOOMANY."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import Topod, check, done, note, tmpdir, parse_kv, read_reply  # noqa: E402
from bigfab import k24, rss_kib  # noqa: E402

d = tmpdir()
t = Topod("--load", k24(d))
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
check(n == 3456, "k=24: %d hosts" % n)
counts = [5 if i < 2560 else 4 for i in range(n)]      # 16,384 ranks, uneven per host
R = sum(counts)
toks = ["%s*%d" % (h, k) for h, k in zip(hosts, counts)]


def request(line):
    s = socket.create_connection(("127.0.0.1", t.port))
    t0 = time.monotonic()
    s.sendall((line + "\n").encode())
    buf = b""
    while b"\n" not in buf:
        buf += s.recv(1 << 20)
    head, rest = buf.split(b"\n", 1)
    head = head.decode()
    lines = []
    nl = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
    while rest.count(b"\n") < nl:
        rest += s.recv(1 << 20)
    ms = (time.monotonic() - t0) * 1e3
    s.close()
    return head, rest.decode().split("\n")[:nl], ms


line = "load links=max alltoall " + " ".join(toks)
check(len(line) < 256 * 1024, "16,384 ranks on 3,456 hosts fit one request line (%d bytes)" % len(line))
head, lines, ms = request(line)
note("load links=max alltoall, %d ranks: %.0f ms (request to last byte)" % (R, ms))
kv = parse_kv(head[3:])
check(head.startswith("OK") and int(kv["ranks"]) == R and int(kv["hosts"]) == n, head[:160])
intra = sum(k * (k - 1) for k in counts)
check(int(kv["msgs"]) == R * (R - 1) and int(kv["intra_msgs"]) == intra and int(kv["failed_msgs"]) == 0,
      "msgs = R(R-1) = %d, intra-host = sum c(c-1) = %d, none failed" % (R * (R - 1), intra))
hops = sum(int(parse_kv(" ".join(ln.split()[2:]))["msgs"]) for ln in lines if ln.startswith("hops "))
check(hops + intra == R * (R - 1), "the hop split adds up to the routed flows")


def levels_vs_bound(lines, equal):
    levels = [ln for ln in lines if ln.startswith("tier ")]
    ok = len(levels) == 6
    for ln in levels:
        lk = parse_kv(" ".join(ln.split()[2:]))
        mx, b = int(lk["max_msgs"]), int(lk["bound_msgs"]) if lk["bound_msgs"] != "-" else -1
        ok &= b > 0 and (mx == b if equal else mx >= b)
        note(ln)
    return ok


check(levels_vs_bound(lines, False), "6 link classes, none below seed 000's bound (uneven ranks per host)")
head4, lines4, ms4 = request("load links=max alltoall " + " ".join("%s*4" % h for h in hosts))
note("4 ranks on every host (13,824 ranks): %.0f ms" % ms4)
check(head4.startswith("OK") and levels_vs_bound(lines4, True),
      "4 ranks per host: every class's maximum equals seed 000's bound under d-mod-k")
check(int(kv["max_msgs"]) == max(k * (R - k) for k in counts), "the busiest links are host cables: c(R-c)")

# the whole answer: every loaded link and the job's hosts
s = socket.create_connection(("127.0.0.1", t.port))
t0 = time.monotonic()
s.sendall(("load bytes=4096 alltoall " + " ".join(toks) + "\n").encode())
head, nlines, _ = read_reply(s)
s.close()
kv = parse_kv(head[3:])
note("load alltoall with every link: %d lines in %.0f ms" % (nlines, (time.monotonic() - t0) * 1e3))
check(head.startswith("OK") and nlines == int(kv["lines"]) and int(kv["links"]) == 20736
      and int(kv["bytes"]) == R * (R - 1) * 4096,
      "full reply framed: %s lines, %s links" % (kv.get("lines"), kv.get("links")))
note("topod RSS after: %d KiB" % rss_kib(t.p.pid))

# Issue 37: 6 GB per pair (6e9, beyond 32 bits; 1.6e18 bytes in all) at
# the full scale, exact: the totals and the busiest cables from the rank
# counts, every level's total equal to its links'.
B6 = 6 * 10**9
head, lines, ms6 = request("load bytes=%d links=max alltoall %s" % (B6, " ".join(toks)))
kv = parse_kv(head[3:])
cmax = max(k * (R - k) for k in counts)
check(head.startswith("OK") and int(kv["bytes"]) == R * (R - 1) * B6 and int(kv["intra_bytes"]) == intra * B6
      and int(kv["max_bytes"]) == cmax * B6 and int(kv["max_msgs"]) == cmax,
      "bytes=6e9: total %s = R(R-1) x 6e9, busiest %s = %d x 6e9 exactly (%.0f ms)"
      % (kv.get("bytes"), kv.get("max_bytes"), cmax, ms6))
# a traffic matrix whose 60th entry is 341 GB (refused before, 4 GiB was the cap)
trip = ["%d:%d:%d" % (i, (i * 7 + 1) % R, 1000 + i) for i in range(59)] + ["6:82:341303846527"]
head, lines, _ = request("load matrix %s -- %s" % (" ".join(toks), " ".join(trip)))
kv = parse_kv(head[3:])
want = sum(1000 + i for i in range(59)) + 341303846527
check(head.startswith("OK") and int(kv["bytes"]) == want and int(kv["max_bytes"]) >= 341303846527,
      "matrix entry 60 of 341,303,846,527 bytes taken: total %s = %d" % (kv.get("bytes"), want))
head, _, _ = request("load bytes=%d alltoall %s" % (2**40, " ".join(toks)))
check(head.startswith("ERR RANGE") and "2^62" in head,
      "16,384 ranks at 2^40 bytes per pair (2^68 in all) refused, not wrapped: " + head[:120])

head, _, _ = request("load alltoall " + " ".join(toks) + " " + hosts[0])
check(head.startswith("ERR TOOMANY"), "16,385 ranks refused: " + head)
done()
