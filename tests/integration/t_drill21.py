#!/usr/bin/env python3
"""Issue 21, the figures two items' tests did not show (docs/reliability.md,
"Audit"), on the k=24 fat tree (3,456 hosts); about a minute.

 21.1  numbers multiplied out: a 4,096-rank all-to-all at bytes=4 GiB (the
       largest a message could be before issue 37) gives totals of 2^56
       and more: every total in the reply is the exact product (ranks x
       (ranks-1) x bytes, and each link's bytes = its messages x bytes),
       nothing wrapped; one byte more than today's limit per message,
       2^53 + 1, is ERR USAGE naming the limit (issue 37.4).
 21.10 20 clients each ask for the 3,456-host `pathmatrix` (a 996,336-line
       reply) and never read it: topod's memory stays within its budgets
       (--max-request-memory 128 MiB, --output-budget 64 MiB for replies
       not yet read) plus 64 MiB (one reply over the output budget, the
       allocator's arenas, the connections), while another
       client's `hops` stays answered; every one of
       the 20 is answered (OK, then cut), refused BUSY or TOOBIG.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import Topod, check, done, note, parse_kv, tmpdir  # noqa: E402
from bigfab import k24, rss_kib  # noqa: E402

REQ_MIB, CLIENT_MIB, OUT_MIB = 128, 64, 64
# --client-budget cuts a client only once it has read nothing for 2 s, so
# until then unread replies are bounded by --output-budget: without it (256
# MiB by default) 243 MB of replies were once waiting, +313 MiB in all.
d = tmpdir()
t = Topod("--load", k24(d), "-t", "2", "--max-request-memory", "%dM" % REQ_MIB, "--client-budget",
          "%dM" % CLIENT_MIB, "--output-budget", "%dM" % OUT_MIB, admin=True)
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]

# ---- 21.1 ------------------------------------------------------------------
B = 4 << 30
with t.conn() as c:
    h = c.ask("load bytes=%d alltoall %s" % (B, " ".join(x + "*1024" for x in hosts[:4])))
    for _ in range(int(parse_kv(h[3:]).get("lines", 0)) if h.startswith("OK") else 0):
        c.readline()
    k = parse_kv(h[3:]) if h.startswith("OK") else {}
    r = int(k.get("ranks", 0))
    exact = (k and int(k["bytes"]) == r * (r - 1) * B and int(k["msgs"]) == r * (r - 1) and
             int(k["max_bytes"]) == int(k["max_msgs"]) * B and
             int(k["intra_bytes"]) == int(k["intra_msgs"]) * B and int(k["bytes"]) < 2**64)
    check(r == 4096 and exact, "4,096 ranks at bytes=4 GiB: total %s bytes = 4096 x 4095 x 2^32 exactly, busiest "
          "link %s = %s messages x 2^32 (no total wrapped)" % (k.get("bytes"), k.get("max_bytes"), k.get("max_msgs")))
    M = 1 << 53  # TOPO_MSG_BYTES_MAX (common/topo_limits.h)
    h = c.ask("load bytes=%d alltoall %s" % (M + 1, " ".join(hosts[:4])))
    check(h.startswith("ERR USAGE") and str(M) in h, "one byte more per message than 2^53: %s" % h[:90])

# ---- 21.10: 20 never-reading pathmatrix clients ------------------------------
time.sleep(0.3)
base = rss_kib(t.p.pid)
req = ("pathmatrix %s\n" % " ".join(hosts)).encode()
lazy = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", t.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(req)
    lazy.append(s)
peak, worst, t_start = base, 0.0, time.time()
# Each of the 20 is answered, refused or timed out by topod's own deadline
# (60 s waiting, 60 s running); on a loaded CI machine that takes longer
# than 90 s, and a client still waiting then read nothing.
t_end = t_start + 300
with t.conn() as c:
    while time.time() < t_end:
        t0 = time.perf_counter()
        ok = c.ask("hops %s %s" % (hosts[0], hosts[3000])).startswith("OK")
        worst = max(worst, (time.perf_counter() - t0) * 1000)
        peak = max(peak, rss_kib(t.p.pid))
        st = parse_kv(t.admin_ask("stats")[3:])
        done_n = sum(int(st.get(k, 0)) for k in ("heavy_done", "busy_heavy", "heavy_toobig", "heavy_timeouts",
                                                  "heavy_expired", "heavy_cancelled"))
        if st["heavy_queued"] == "0" and st["heavy_running"] == "0" and done_n >= 20 and time.time() > t_start + 2:
            break
        time.sleep(0.1)
# what each of the 20 got first
heads = []
for s in lazy:
    s.settimeout(30)
    try:
        heads.append(s.recv(100).split(b"\n")[0].decode(errors="replace")[:40])
    except OSError as e:
        heads.append(str(e))
    s.close()
grow = (peak - base) >> 10
kinds = sorted(set(h.split(" n=")[0] for h in heads))
note("pathmatrix x20: heads %s; stats cut_budget=%s cut_soft=%s busy_heavy=%s heavy_toobig=%s; hops worst %.0f ms"
     % (kinds, st["cut_budget"], st["cut_soft"], st["busy_heavy"], st["heavy_toobig"], worst))
# Every head is an answer or a bounded refusal: busy, too big, or the
# request's deadline spent waiting for a worker (on a loaded 2-core
# machine the twenty queue behind each other for 60 s).
check(ok and grow <= REQ_MIB + OUT_MIB + 64 and
      all(h.startswith(("OK gen=", "ERR BUSY", "ERR TOOBIG", "ERR TIMEOUT")) or not h for h in heads),
      "20 clients ask for the 3,456-host pathmatrix and never read: RSS %d -> peak %d MiB, +%d MiB within "
      "--max-request-memory %d + --output-budget %d + 64 (was 304-328 MB, unbounded); hops still answered (worst "
      "%.0f ms)" % (base >> 10, peak >> 10, grow, REQ_MIB, OUT_MIB, worst))
t.stop()
done()
