#!/usr/bin/env python3
"""The HTTP endpoint's bounds with short settings (the review of issue 23):

- --http-header-timeout: sockets trickling a byte every 2 s are closed once
  their request's head has taken longer than it, even when they hold every
  socket slot (2 x --http-max-conns), and /metrics is answered meanwhile
  (t_http_slowloris.py: at once, whatever the crowd);
- a client refused with 503 (--http-max-conns requests being answered) that
  goes on writing: topod reads at most one request's worth of it (its
  resident set grows < 8 MiB for 200 MB sent);
- --output-budget holds when the replies are sent, not only when the
  requests are admitted: 16 clients that do not read, each asking a
  1,200-host hopsmatrix on the k=24 fat tree at once, leave at most the
  budget and one reply unread, the others answered 503.
"""
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, done, note, tmpdir  # noqa: E402

d = tmpdir()
BENCH = os.path.join(ROOT, "build", "bench", "bench_build")


def start(k, *args):
    snap = os.path.join(d, "k%d.snap" % k)
    if not os.path.exists(snap):
        subprocess.run([BENCH, str(k), "1", snap], check=True, capture_output=True)
    t = Topod("-L", snap, "--http", "127.0.0.1:0", *args)
    return t, int(t.p.stdout.readline().decode().split("=")[1])


def get(port, path, timeout=10):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def rss_kb(t):
    with open("/proc/%d/status" % t.p.pid) as f:
        return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])


def metric(port, name):
    _, body = get(port, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


# ---- 1. --http-header-timeout against a trickle on every socket slot ----
TIMEOUT = 4
t, hp = start(4, "--http-max-conns", "2", "--http-header-timeout", str(TIMEOUT))
req = b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"z" * 200 + b"\r\n\r\n"
socks = [socket.create_connection(("127.0.0.1", hp), timeout=5) for _ in range(4)]
closed = [None] * 4
scrape = {}


def scraper():
    t1 = time.time()
    try:
        scrape["st"] = get(hp, "/metrics", timeout=TIMEOUT + 10)[0]
    except OSError as e:
        scrape["st"] = str(e)
    scrape["at"] = time.time() - t1


t0 = time.time()
th = None
i = 0
while time.time() - t0 < TIMEOUT + 10 and None in closed:
    for n, s in enumerate(socks):
        if closed[n] is not None:
            continue
        try:
            s.sendall(req[i:i + 1])
            s.settimeout(0.01)
            if s.recv(1) == b"":
                closed[n] = time.time() - t0
        except socket.timeout:
            pass
        except OSError:
            closed[n] = time.time() - t0
    if th is None:
        th = threading.Thread(target=scraper)
        th.start()
    i += 1
    time.sleep(2)
th.join()
check(None not in closed and max(closed) <= TIMEOUT + 3,
      "4 sockets trickling a byte every 2 s with --http-max-conns 2 --http-header-timeout %d: closed after %s s"
      % (TIMEOUT, [c and round(c, 1) for c in closed]))
check(scrape.get("st") == 200 and scrape["at"] <= TIMEOUT + 3,
      "/metrics asked meanwhile: %s after %.1f s" % (scrape.get("st"), scrape.get("at", -1)))
for s in socks:
    s.close()

# ---- 5. the Host header (DNS rebinding) and 6. %00 ----
def host_get(port, host, path="/api/ping"):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode())
        out = b""
        while True:
            b = c.recv(65536)
            if not b:
                break
            out += b
    return int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0, out


t.stop()
t, hp = start(4)
me = socket.gethostname()
for host, want in (("evil.example", 421), ("evil.example:%d" % hp, 421), ("127.0.0.1.evil.example", 421),
                   ("127.0.0.1:%d" % hp, 200), ("[::1]:%d" % hp, 200), ("localhost:%d" % hp, 200),
                   ("LOCALHOST", 200), ("%s:%d" % (me, hp), 200), ("[evil.example]", 421)):
    st, out = host_get(hp, host)
    check(st == want and (want == 200 or b"Host" in out), "Host: %s -> %d (%d)" % (host, want, st))
st, _ = host_get(hp, "evil.example", "/metrics")
check(st == 421, "/metrics for Host: evil.example -> 421 (%d)" % st)
st, body = get(hp, "/api/path?args=h0000%00+h0015")
check(st == 400 and b"control character" in body, "%%00 in args=: 400 naming a control character (%d %s)" % (st, body))
st, body = get(hp, "/api/path?args=h0000+h0015%00x")
check(st == 400 and b"control character" in body, "%%00 at the end of args=: 400 (%d)" % st)
st, body = get(hp, "/api/path?args=h0000+h0015")
check(st == 200, "the same without it: 200 (%d)" % st)
t.stop()
# ---- 8. squeue (--http-slurm): its output bounded, one at a time, its children killed ----
fake = os.path.join(d, "bin")
os.mkdir(fake)
with open(os.path.join(fake, "squeue"), "w") as f:
    f.write('#!/bin/sh\ncase "$3" in\n'
            '1) yes h | head -c 140000 | tr -d "[:space:]"; echo ;;\n'
            '2) sleep 3; echo "h[0000-0003]" ;;\n'
            '3) sleep 60 >/dev/null 2>&1 & echo $! >"$SQ_CHILD"; echo h0000 ;;\n'
            '*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;;\nesac\n')
os.chmod(os.path.join(fake, "squeue"), 0o755)
os.environ["PATH"] = fake + ":" + os.environ["PATH"]
os.environ["SQ_CHILD"] = os.path.join(d, "sq_child")
# ---- 2. a refused client that goes on writing ----
# --http-max-conns 1 and a lookup of a squeue taking 3 s being answered:
# the next request is refused (503, Connection: close).
t, hp = start(4, "--http-slurm", "--http-max-conns", "1")
slow = threading.Thread(target=lambda: get(hp, "/api/job?id=2", timeout=30))
slow.start()
time.sleep(0.5)
base = rss_kb(t)
s = socket.create_connection(("127.0.0.1", hp), timeout=5)
s.sendall(b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
head = s.recv(4096)
sent = 0
chunk = b"x" * (1 << 20)
s.settimeout(3)
try:
    while sent < 200 << 20:
        sent += s.send(chunk)
except OSError:
    pass
s.close()
grown = (rss_kb(t) - base) / 1024
check(head.startswith(b"HTTP/1.1 503") and b"http-max-conns" in head and grown < 8,
      "a request while --http-max-conns 1 is being answered: %r naming the option, then wrote %.1f MB: topod's "
      "resident set grew %.1f MiB (< 8)" % (head.split(b"\r\n")[0], sent / 1e6, grown))
slow.join()
st, _ = get(hp, "/api/ping")
check(st == 200, "answered again once the lookup is done (%d)" % st)
t.stop()
t, hp = start(4, "--http-slurm", "--http-max-conns", "16")
st, body = get(hp, "/api/job?id=1")
check(st == 413 and b"64 KiB" in body, "squeue answering 70 kB: 413 naming the 64 KiB cap, not a cut list (%d %s)"
      % (st, body[:80]))
res = []


def lookup():
    try:
        res.append(get(hp, "/api/job?id=2", timeout=30))
    except OSError as e:
        res.append((str(e), b""))


ths = [threading.Thread(target=lookup) for _ in range(6)]
for th in ths:
    th.start()
    time.sleep(0.05)
# a lookup waiting on squeue holds a heavy worker, not the light lane's
t0 = time.monotonic()
mst, _ = get(hp, "/metrics", timeout=30)
mms = (time.monotonic() - t0) * 1000
for th in ths:
    th.join()
codes = sorted(r[0] for r in res if isinstance(r[0], int))
check(codes == [200] + [503] * 5 and all(b"retry" in r[1] for r in res if r[0] == 503),
      "6 lookups at once of a squeue taking 3 s: 1 served, 5 x 503 BUSY (%s)" % codes)
check(mst == 200 and mms < 1000, "/metrics meanwhile: %d in %.0f ms (the light lane is not held)" % (mst, mms))
st, body = get(hp, "/api/job?id=2", timeout=30)
check(st == 200 and b"h[0000-0003]" in body, "and one more once they are done: 200 (%d)" % st)
# a squeue that leaves a child behind: the child goes with it (its group)
st, body = get(hp, "/api/job?id=3", timeout=30)
child = int(open(os.environ["SQ_CHILD"]).read())
gone = False
for _ in range(50):
    try:
        os.kill(child, 0)
        if open("/proc/%d/stat" % child).read().split(") ")[1].startswith("Z"):
            gone = True
            break
    except (ProcessLookupError, FileNotFoundError):
        gone = True
        break
    time.sleep(0.02)
if not gone:
    os.kill(child, 9)
check(st == 200 and gone, "a child squeue left running is killed with it (%d, child %s)" % (st, "gone" if gone else "alive"))
t.stop()
t, hp = start(4, "--http-host", "topod.example,web.example")
for host, want in (("topod.example:%d" % hp, 200), ("WEB.example", 200), ("localhost", 421),
                   ("evil.example", 421), ("127.0.0.1:%d" % hp, 200)):
    st, _ = host_get(hp, host)
    check(st == want, "--http-host topod.example,web.example: Host: %s -> %d (%d)" % (host, want, st))
t.stop()

# ---- 3. --output-budget when the replies are sent ----
# --http-per-peer 32: all 16 come from 127.0.0.1, and on a loaded machine
# topod may not have read their requests before the next ones connect;
# past the default 8 waiting the gate would cut the oldest (its own 503,
# counted as a cut: section 1's subject, not this one's)
t, hp = start(24, "--http-max-conns", "20", "--output-budget", "1M", "--max-request-memory", "128M",
              "--http-per-peer", "32")
REFUSED = 'topod_heavy_refused_total{reason="%s"}'
hosts = "+".join("h%04d" % i for i in range(1200))
path = "/api/hopsmatrix?args=" + hosts
st, body = get(hp, path, timeout=120)
one = len(body)
check(st == 200 and one > 1 << 20, "a 1,200-host hopsmatrix alone: %s, %d bytes" % (st, one))
busy0 = metric(hp, REFUSED % "busy")
clients = []
for _ in range(16):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", hp))
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode())
    clients.append(s)
worst = 0
t0 = time.time()
answered = 0
# the pool runs at nice +10: beside make check's other jobs the matrices may
# take long; the loop ends as soon as all are answered
while time.time() - t0 < 180:
    worst = max(worst, metric(hp, "topod_http_reply_bytes_unread") or 0)
    # the first request and the 16 answered, served or refused
    answered = sum(metric(hp, 'topod_queries_total{command="hopsmatrix",outcome="%s"}' % o) or 0
                   for o in ("ok", "refused"))
    if answered >= 17:
        break
    time.sleep(0.2)
codes = []
for s in clients:
    s.settimeout(30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    try:
        first = s.recv(64)
        m = re.match(rb"HTTP/1\.1 (\d+)", first)
        codes.append(int(m.group(1)) if m else 0)
    except OSError:
        codes.append(-1)
    s.close()
check(answered >= 17, "all 16 answered within 180 s (%d)" % (answered - 1))
check(worst <= (1 << 20) + one,
      "16 clients that do not read, --output-budget 1M: at most %d bytes unread (budget + one reply of %d)"
      % (worst, one))
check(codes.count(503) >= 1 and codes.count(200) >= 1,
      "at least one served and one 503 BUSY (%d x 200, %d x 503)" % (codes.count(200), codes.count(503)))
busy = metric(hp, REFUSED % "busy") - busy0
check(busy == codes.count(503), "each 503 counted in topod_heavy_refused_total{reason=\"busy\"} (+%d)" % busy)
toobig0 = metric(hp, REFUSED % "toobig")
st, body = get(hp, "/api/hopsmatrix?args=" + "+".join("h%04d" % i for i in range(3456)), timeout=60)
toobig = metric(hp, REFUSED % "toobig") - toobig0
check(st == 413 and toobig == 1, "a 3,456-host hopsmatrix past --max-request-memory 128M: 413, counted as toobig (%d, +%d)"
      % (st, toobig))
note("log: %s" % t.log)
t.stop()
done()
