#!/usr/bin/env python3
# test: serial - asserts cheap requests answered within 200 ms / 500 ms while it loads topod
"""topod's query server under the loads issue 7 and 8 describe, on the k=24
fat tree (3,456 hosts):

  - a client that half-closes (echo hosts | nc -q1) gets its whole reply;
  - heavy requests (pathmatrix) run on the worker pool: pipelined replies
    stay in order, and a cheap request on another connection is answered
    while matrices are being computed;
  - clients that ask for big replies and never read cost bounded memory:
    they are cut off (soft limit, write timeout) and logged, heavy requests
    are refused with ERR BUSY while the unread budget is spent, and a
    reply larger than the per-client limit is refused with ERR TOOBIG;
  - the admin socket answers while the query connections are exhausted.
"""
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import Topod, check, done, note, tmpdir, parse_kv, read_reply  # noqa: E402
from bigfab import k24, rss_kib  # noqa: E402

d = tmpdir()
snap = k24(d)


def raw(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    return s


t = Topod("--load", snap, "--output-soft-limit", "16M:3", "--write-timeout", "6", "--output-budget", "128M",
          "--max-conns", "200", "--threads", "2")
with t.conn() as c:
    head = c.ask("hosts")
    n = int(parse_kv(head[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
check(len(hosts) == 3456, "the k=24 fabric has 3,456 hosts (%d)" % len(hosts))
tree_lines = int(parse_kv(t.ask("tree")[3:])["lines"])

# --- 1. half-close -------------------------------------------------------------
for req, want in (("hosts", 3457), ("tree", tree_lines + 1)):
    s = raw(t.port)
    s.sendall((req + "\n").encode())
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    got = data.count(b"\n")
    check(got == want, "half-closed client gets all of '%s': %d of %d lines" % (req, got, want))

# A heavy request before the half-close is answered too.
s = raw(t.port)
s.sendall(("pathmatrix %s\nping\n" % " ".join(hosts[:300])).encode())
s.shutdown(socket.SHUT_WR)
head, nl, rest = read_reply(s)
tail = rest
while b"\n" not in tail:
    ch = s.recv(65536)
    if not ch:
        break
    tail += ch
s.close()
check(head.startswith("OK gen=") and nl > 0 and tail.split(b"\n")[0] == b"OK pong",
      "a pathmatrix then ping, half-closed: both answered, in order (%s ... %r)" % (head[:40], tail[:20]))

# --- 2. ordering and a cheap request beside heavy ones ------------------------
with t.conn() as c:
    c.send("ping\npathmatrix %s\nhops %s %s\ninfo\n" % (" ".join(hosts[:500]), hosts[0], hosts[-1]))
    r1 = c.readline()
    s2 = c.s
    head, nl, rest = read_reply(s2, c.buf)
    c.buf = rest
    r3, r4 = c.readline(), c.readline()
    check(r1 == "OK pong" and head.startswith("OK gen=") and "n=500" in head and r3.startswith("OK gen=")
          and "hops=" in r3 and r4.startswith("OK gen="),
          "pipelined ping, pathmatrix, hops, info come back in order")

# Two clients ask 3,456-host path matrices in a loop; a third asks hops.
import threading  # noqa: E402
stop = threading.Event()
heavy_done = [0]


def heavy():
    s = raw(t.port)
    req = ("pathmatrix %s\n" % " ".join(hosts)).encode()
    while not stop.is_set():
        s.sendall(req)
        head, nl, rest = read_reply(s)
        if head.startswith("OK"):
            heavy_done[0] += 1
    s.close()


th = [threading.Thread(target=heavy) for _ in range(2)]
for x in th:
    x.start()
time.sleep(0.5)
lat = []
with t.conn() as c:
    t_end = time.time() + 4
    while time.time() < t_end:
        t0 = time.perf_counter()
        r = c.ask("hops %s %s" % (hosts[0], hosts[2000]))
        lat.append((time.perf_counter() - t0) * 1000)
        assert r.startswith("OK")
stop.set()
for x in th:
    x.join()
lat.sort()
note("hops beside 2 clients looping 3,456-host pathmatrix: %d answers, median %.2f ms, worst %.2f ms, %d matrices"
     % (len(lat), lat[len(lat) // 2], lat[-1], heavy_done[0]))
# Loose bound for a noisy 2-core machine running this test's own readers;
# bench/bench_stall.py measures the real figure.
check(heavy_done[0] >= 1 and lat[-1] < 200, "cheap requests are not queued behind heavy ones (worst %.1f ms)" % lat[-1])

# --- 3. clients that ask and never read ---------------------------------------------
base = rss_kib(t.p.pid)
req = ("pathmatrix %s\n" % " ".join(hosts)).encode()
lazy = []
for _ in range(40):
    s = raw(t.port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(req)
    lazy.append(s)
peak = base
lat = []
# Until all 40 are answered (or refused) and the soft limit (3 s) has cut
# the ones that got a reply: bounded at 90 s on a loaded machine.
t_end = time.time() + 90
settled = None
with t.conn() as c:
    while time.time() < t_end:
        t0 = time.perf_counter()
        r = c.ask("hops %s %s" % (hosts[1], hosts[3000]))
        lat.append((time.perf_counter() - t0) * 1000)
        peak = max(peak, rss_kib(t.p.pid))
        st = parse_kv(t.admin_ask("stats")[3:])
        # every one of the 40 has something to read (a reply's first bytes,
        # ERR BUSY, or its close): a queue that is empty for a moment while
        # some requests are still unread is not yet settled
        answered = len(select.select(lazy, [], [], 0)[0])
        if settled is None and answered == len(lazy) and st["heavy_queued"] == "0" and st["heavy_running"] == "0":
            settled = time.time()
        if settled and time.time() - settled > 5:
            break
        time.sleep(0.05)
lat.sort()
note("40 clients sent a 3,456-host pathmatrix each and never read: RSS %d MiB -> peak %d MiB; "
     "cut soft=%s write=%s hard=%s, busy=%s, unread now %s bytes; other client's hops worst %.1f ms"
     % (base // 1024, peak // 1024, st["cut_soft"], st["cut_write_timeout"], st["cut_hard"], st["busy_heavy"],
        st["reply_bytes_unread"], lat[-1]))
check(peak - base < 400 * 1024, "memory stays bounded: +%d MiB (budget 128 MiB + replies in flight)" % ((peak - base) // 1024))
resolved = int(st["busy_heavy"]) + int(st["cut_soft"]) + int(st["cut_write_timeout"]) + int(st["cut_hard"])
check(resolved >= 40 and int(st["cut_soft"]) + int(st["cut_write_timeout"]) > 0,
      "every one of the 40 was refused (ERR BUSY) or cut off once its reply went unread (%d)" % resolved)
check(lat[-1] < 500, "another client's answers do not stall (worst %.1f ms)" % lat[-1])
log = t.logtext()
check("closing the connection: unread replies stayed above the soft output limit" in log
      or "write timeout" in log, "the log names the client that was cut off")
for s in lazy:
    s.close()
time.sleep(0.5)
st = parse_kv(t.admin_ask("stats")[3:])
check(int(st["reply_bytes_unread"]) < 1 << 20, "their replies are freed (%s bytes unread)" % st["reply_bytes_unread"])

# --- 3b. the unread budget, deterministically ----------------------------------------
tb = Topod("--load", snap, "--output-budget", "1M", "--output-soft-limit", "64M:100", "--write-timeout", "100")
held = []
for i in range(5):
    s = raw(tb.port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(req)
    held.append(s)
    time.sleep(0.3)
t_end = time.time() + 30
while time.time() < t_end:
    st = parse_kv(tb.admin_ask("stats")[3:])
    if st["heavy_queued"] == "0" and st["heavy_running"] == "0" and int(st["busy_heavy"]) >= 4:
        break
    time.sleep(0.1)
note("budget 1 MiB, 5 clients each asking a 3,456-host pathmatrix (~27 MB) and not reading: busy=%s, unread=%s"
     % (st["busy_heavy"], st["reply_bytes_unread"]))
check(st["busy_heavy"] == "4" and 1 << 20 < int(st["reply_bytes_unread"]) < 40 << 20,
      "past the unread budget heavy requests are answered ERR BUSY; the first reply is still delivered")
for s in held:
    s.close()

# --- 4. ERR TOOBIG ------------------------------------------------------------------
t2 = Topod("--load", snap, "--output-limit", "1M")
with t2.conn() as c:
    r = c.ask("pathmatrix %s" % " ".join(hosts[:1000]))
    check(r.startswith("ERR TOOBIG"), "a reply larger than --output-limit is refused: %s" % r[:90])
    check(c.ask("ping") == "OK pong", "and the connection stays usable")

# --- 5. the admin socket outside the query limit ----------------------------------
t3 = Topod("--load", snap, "--max-conns", "30")
idle = []
busy = 0
for _ in range(40):
    s = raw(t3.port)
    idle.append(s)
time.sleep(0.3)
for s in idle:
    s.setblocking(False)
    try:
        if s.recv(100).startswith(b"ERR BUSY"):
            busy += 1
    except BlockingIOError:
        pass
r = t3.admin_ask("stats")
check(busy == 10 and r.startswith("OK connections=30"), "40 idle clients over --max-conns 30: %d told ERR BUSY, "
      "and the admin socket still answers: %s" % (busy, r[:40]))
for s in idle:
    s.close()

# --- 6. a full heavy queue says BUSY ------------------------------------------------
t4 = Topod("--load", snap, "--threads", "1", "--heavy-queue", "1")
socks = [raw(t4.port) for _ in range(4)]
for s in socks:
    s.sendall(req)
heads = [read_reply(s)[0] for s in socks]
check(any(h.startswith("ERR BUSY") for h in heads) and any(h.startswith("OK") for h in heads),
      "with one worker and a queue of one, extra heavy requests get ERR BUSY: %s"
      % [h[:12] for h in heads])
for s in socks:
    s.close()

# --- 7. the admin rows of the command table -----------------------------------------
with t4.conn() as c:
    denied = c.ask("stats")
    hlp = c.ask("help")
check(denied == "ERR DENIED stats is only available on the admin socket", "query port: %s" % denied)
check(hlp.startswith("OK commands: ping") and " stats" not in hlp and " schedule" in hlp,
      "help lists the queries, not the admin socket's own")
unknown, usage, extra = t4.admin_ask("frobnicate"), t4.admin_ask("confirm"), t4.admin_ask("stats now")
check(unknown == "ERR UNKNOWN unknown command; admin commands: stats reload restore confirm shutdown, and every query",
      "admin socket, an unknown word: %s" % unknown)
check(usage.startswith("ERR USAGE confirm GENERATION") and extra == "ERR USAGE stats",
      "admin socket, arity from the table: %s / %s" % (usage[:40], extra))
check(t4.admin_ask("hops %s %s" % (hosts[0], hosts[1])).startswith("OK"), "admin socket: queries too")
done()
