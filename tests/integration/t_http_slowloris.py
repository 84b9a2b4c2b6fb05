#!/usr/bin/env python3
"""No starvation over HTTP (issue 37, item 1): while 1,000 clients hold
requests that never complete, a complete one is answered at once.

On a topod with the defaults (--http-max-conns 64: 128 sockets), a crowd of
1,000 connections (tests/lib/slowloris.py, loopback only) sends
"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\nX-Slow: " and nothing more, in four
ways: from 250 addresses (127.0.0.2-251, so that no per-address limit
applies) reopening every connection topod closes; the same trickled a byte
per connection every half second; from 127.0.0.1, the scraper's own
address; connecting from there and sending nothing at all; and without
reopening (the attack as first measured: /metrics
then went unanswered for 10 s and more). Each time /metrics is asked every
0.3 s for 8 s and must be answered within 1 s every time; topod's sockets
stay within 2 x --http-max-conns and a burst of 64, and its resident set
within 32 MiB of where it was.

Then, on a topod with short settings, each limit on its own: a head held
open and one trickled are closed with 408 after --http-header-timeout, a
body that never completes after --http-body-timeout, a kept-alive
connection idle past --http-timeout, and an address's oldest waiting
connection past --http-per-peer; each counted in topod_http_cut_total.
"""
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest  # noqa: E402
from topodtest import ROOT, Topod, check, done, note, tmpdir  # noqa: E402

ATTACK = os.path.join(ROOT, "tests", "lib", "slowloris.py")
d = tmpdir()
snap = os.path.join(d, "k4.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "4", "1", snap], check=True, capture_output=True)


def start(*args):
    t = Topod("-L", snap, "--http", "127.0.0.1:0", *args)
    return t, int(t.p.stdout.readline().decode().split("=")[1])


def request(port, data, timeout=5, src="127.0.0.1"):
    """Sends data on a fresh connection from src; (status, seconds to the
    whole reply, reply). Status 0: closed without a reply, -1: timed out."""
    t0 = time.monotonic()
    s = socket.socket()
    s.settimeout(timeout)
    out = b""
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(data)
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        return -1, time.monotonic() - t0, out
    except OSError:
        pass
    finally:
        s.close()
    try:
        return int(out.split(b" ", 2)[1]), time.monotonic() - t0, out
    except (IndexError, ValueError):
        return 0, time.monotonic() - t0, out


SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def proc_kb(t, key):
    with open("/proc/%d/status" % t.p.pid) as f:
        return int([x for x in f if x.startswith(key + ":")][0].split()[1])


def fds(t):
    return len(os.listdir("/proc/%d/fd" % t.p.pid))


def metric(port, name):
    _, _, body = request(port, SCRAPE)
    for line in body.decode(errors="replace").splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


# ---- 1. a crowd of 1,000 ----
t, hp = start()
for _ in range(3):
    request(hp, SCRAPE)  # the first scrapes' allocations, before the baseline
base_rss, base_fds = proc_kb(t, "VmRSS"), fds(t)
cut0 = {r: metric(hp, 'topod_http_cut_total{reason="%s"}' % r) for r in ("full", "per_peer")}
SECONDS = 11
crowds = [
    ("from 250 addresses, reopened when closed", ["--addrs", "250", "--reconnect"]),
    ("trickled a byte every 0.5 s from 250 addresses, reopened", ["--trickle", "--addrs", "250", "--reconnect"]),
    ("from 127.0.0.1 (the scraper's own address), reopened", ["--first", "1", "--reconnect"]),
    ("sending nothing at all, from 127.0.0.1, reopened", ["--silent", "--first", "1", "--reconnect"]),
    ("from 250 addresses, not reopened", ["--addrs", "250"]),
]
figures = []
for what, args in crowds:
    a = subprocess.Popen([sys.executable, ATTACK, str(hp), "1000", str(SECONDS)] + args, stdout=subprocess.PIPE)
    topodtest._procs.append(a)
    time.sleep(2)
    times, codes, rss, nfd = [], [], [], []
    t_end = time.monotonic() + SECONDS - 3
    while time.monotonic() < t_end:
        st, sec, _ = request(hp, SCRAPE, timeout=10)
        codes.append(st)
        times.append(sec)
        rss.append(proc_kb(t, "VmRSS"))
        nfd.append(fds(t))
        time.sleep(0.3)
    out = a.communicate(timeout=60)[0].decode().strip()
    opened = int(out.split()[0].split("=")[1]) if out.startswith("opened=") else 0
    worst = max(times)
    check(codes and all(c == 200 for c in codes) and worst < 1.0,
          "1,000 incomplete requests %s: /metrics answered %d times, each within 1 s (median %.0f ms, worst %.0f ms)"
          % (what, len(codes), statistics.median(times) * 1000, worst * 1000))
    check(opened >= 1000, "the crowd opened %d connections (%s)" % (opened, out))
    # tracked: 2 x 64 and a burst of 64; a socket closed while the kernel's
    # accept queue (128) is taken in one go leaves when that is done
    check(max(nfd) - base_fds <= 128 + 64 + 128,
          "topod held at most %d sockets more than before (2 x 64, a burst of 64, an accept queue of 128)"
          % (max(nfd) - base_fds))
    check(max(rss) - base_rss < 32768, "topod's resident set: %d kB before, at most %d kB meanwhile (+%d kB, < 32 MiB)"
          % (base_rss, max(rss), max(rss) - base_rss))
    figures.append("%s: %d scrapes, median %.1f ms, worst %.1f ms; %s; RSS +%d kB; sockets +%d"
                   % (what, len(codes), statistics.median(times) * 1000, worst * 1000, out,
                      max(rss) - base_rss, max(nfd) - base_fds))
for f in figures:
    note(f)
full = metric(hp, 'topod_http_cut_total{reason="full"}') - cut0["full"]
peer = metric(hp, 'topod_http_cut_total{reason="per_peer"}') - cut0["per_peer"]
check(full > 1000 and peer > 100, "counted: topod_http_cut_total{reason=\"full\"} +%d, {reason=\"per_peer\"} +%d"
      % (full, peer))
time.sleep(1)
check(fds(t) - base_fds <= 2, "the crowd gone, topod holds %d sockets more than before" % (fds(t) - base_fds))
note("peak resident set %d kB (VmHWM)" % proc_kb(t, "VmHWM"))
t.stop()

# ---- 2. each limit on its own ----
t, hp = start("--http-header-timeout", "2", "--http-body-timeout", "2", "--http-timeout", "3", "--http-per-peer", "4")
names = ("header_timeout", "body_timeout", "idle_timeout", "per_peer")
c0 = {r: metric(hp, 'topod_http_cut_total{reason="%s"}' % r) for r in names}
st, sec, out = request(hp, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ", timeout=10)
check(st == 408 and 1.9 <= sec <= 3.5, "a head held open: 408 after %.1f s (--http-header-timeout 2)" % sec)

s = socket.create_connection(("127.0.0.1", hp), timeout=10)
t0, got = time.monotonic(), b""
for ch in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 100:
    try:
        s.send(bytes([ch]))
        s.settimeout(0.25)
        got = s.recv(4096)
        break
    except socket.timeout:
        pass
    except OSError:
        break
sec = time.monotonic() - t0
s.close()
check(got.startswith(b"HTTP/1.1 408") and 1.9 <= sec <= 3.5,
      "a head trickled a byte every 0.25 s: 408 after %.1f s, not extended by the bytes (%r)" % (sec, got[:12]))
st, sec, out = request(hp, b"POST /api/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", timeout=10)
check(st == 408 and 1.9 <= sec <= 3.5, "a body that never completes: 408 after %.1f s (--http-body-timeout 2)" % sec)
s = socket.create_connection(("127.0.0.1", hp), timeout=10)
s.sendall(b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
first = s.recv(4096)
t0 = time.monotonic()
try:
    rest = s.recv(4096)
except OSError:
    rest = b""
sec = time.monotonic() - t0
s.close()
check(first.startswith(b"HTTP/1.1 200") and rest == b"" and 2.9 <= sec <= 4.5,
      "a connection kept alive after its reply and idle: closed after %.1f s (--http-timeout 3)" % sec)
# --http-per-peer 4: six heads held open from one address, past the
# 0.2 s any new connection is given to send its request
socks = []
for _ in range(6):
    s = socket.socket()
    s.bind(("127.0.0.9", 0))
    s.connect(("127.0.0.1", hp))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
    time.sleep(0.05)
time.sleep(0.6)
gone = []
for s in socks:
    s.settimeout(0.05)
    try:
        b = s.recv(4096)
        gone.append(b.startswith(b"HTTP/1.1 503") or b == b"")
    except socket.timeout:
        gone.append(False)
    except OSError:
        gone.append(True)
    s.close()
check(gone == [True, True, False, False, False, False],
      "six waiting connections from one address, --http-per-peer 4: its two oldest closed (%s)" % gone)
st, sec, _ = request(hp, SCRAPE, src="127.0.0.9")
check(st == 200 and sec < 1, "and a complete request from that address is answered (%d, %.0f ms)" % (st, sec * 1000))
c1 = {r: metric(hp, 'topod_http_cut_total{reason="%s"}' % r) for r in names}
want = {"header_timeout": 2, "body_timeout": 1, "idle_timeout": 1, "per_peer": 2}
check(all(c1[r] - c0[r] == want[r] for r in names),
      "each counted in topod_http_cut_total: %s" % ", ".join("%s +%d" % (r, c1[r] - c0[r]) for r in names))
note("log: %s" % t.log)
t.stop()
done()
