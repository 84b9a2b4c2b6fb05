#!/usr/bin/env python3
# test: serial - asserts hops median and p90 under 10 ms during its storm; other tests on 2 cores break that
"""Issue 21's mixed storm, all four loads at once, loopback only, on the
k=24 fat tree (3,456 hosts); about a minute on 2 cores:

  - 10,000 clients connect: 9,000 stay idle, 1,000 send a request line a
    few KiB at a time and never finish it (slow clients holding input);
  - 8 clients ask for a 4,096-rank tacs1 schedule each, again as soon as
    one is answered, for the whole storm (heavy);
  - a TCP ingest flood: 4 threads connect to the keyed TCP ingest, send
    4 KiB of junk, close, again and again;

and, once all of that runs, a separate process asks `hops` 100 times a
second for 25 s (about 2,000 queries) while OpenSM's path - the plugin's
UNIX ingest socket - delivers a new generation every 6 s. It holds when
  - `hops`: at least 200 answered; the median and the 90th percentile
    under 10 ms (p99 and the worst are printed, not bounded: on a shared
    2-core CI machine a few queries wait for a descheduled topod whatever
    topod does; the median and p90 of 2,000 are stable);
  - every UNIX snapshot is answered `OK G` and G is then served;
  - topod's memory stays within its budgets, sampled every 0.1 s: heavy
    requests' reservations within --max-request-memory, the clients'
    buffers within --client-budget (the largest cut first: cut_budget),
    and RSS growth within the two budgets, plus one more generation of the
    fabric (built beside the served one; measured as what loading it cost),
    plus 32 MiB for 10,000 connections' own state;
  - heavy work ran throughout (a heavy request running or queued in 90% of
    the samples) and ended as OK, BUSY, TIMEOUT or TOOBIG.
"""
import os
import resource
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import BIN, Topod, check, done, note, parse_kv, read_reply, tmpdir  # noqa: E402
from bigfab import k24, rss_kib  # noqa: E402
from snapdecode import reseal  # noqa: E402

# the prober: its own process, so that this one's threads cannot delay it
PROBE = r"""
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
lat, t_end, buf = [], time.time() + float(sys.argv[4]), b""
while time.time() < t_end:
    t0 = time.perf_counter()
    s.sendall(("hops %s %s\n" % (sys.argv[2], sys.argv[3])).encode())
    while b"\n" not in buf:
        buf += s.recv(4096)
    line, buf = buf.split(b"\n", 1)
    assert line.startswith(b"OK"), line
    lat.append((time.perf_counter() - t0) * 1000)
    time.sleep(0.01)
lat.sort()
n = len(lat)
print(n, lat[n // 2], lat[int(n * 0.9)], lat[int(n * 0.99)], lat[-1])
"""

IDLE, SLOW, HEAVY, FLOODERS = 9000, 1000, 8, 4
REQ_MIB, CLIENT_MIB, CONN_MIB = 256, 48, 32
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < IDLE + SLOW + 500:
    print("skip - the descriptor hard limit (%d) is below %d clients" % (hard, IDLE + SLOW))
    sys.exit(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def prober(port, seconds):
    return subprocess.Popen([sys.executable, "-c", PROBE, str(port), hosts[0], hosts[3000], str(seconds)],
                            stdout=subprocess.PIPE, text=True)


d = tmpdir()
snap = k24(d)
raw = open(snap, "rb").read()
key = os.path.join(d, "key")
subprocess.run([os.path.join(BIN, "topo-snap"), "keygen", key], check=True, capture_output=True)
# what loading one generation costs topod: the same daemon without a fabric
empty = Topod("-t", "2", d=tmpdir())
time.sleep(0.3)
empty_kib = rss_kib(empty.p.pid)
empty.stop()
t = Topod("--load", snap, "-t", "2", "-i", "tcp:127.0.0.1:0", "--ingest-key", key, "--max-request-memory",
          "%dM" % REQ_MIB, "--client-budget", "%dM" % CLIENT_MIB, "--request-timeout", "60")
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
gen0 = int(t.info()["generation"])
out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
tcp_ingest = [int(ln.split()[3].rsplit(":", 1)[1]) for ln in out.splitlines()
              if "pid=%d," % t.p.pid in ln and ":%d " % t.port not in ln][0]
time.sleep(0.3)
base = rss_kib(t.p.pid)
gen_kib = max(0, base - empty_kib)
stop = threading.Event()
# what this machine gives a client when topod is idle (other work shares it)
calm = prober(t.port, 4)
calm_n, calm_p50, calm_p90, _, _ = calm.communicate()[0].split()

# 8 heavy clients, each asking again as soon as it is answered
heavy = []
SCHED = ("schedule tacs1 form=hosts " + " ".join(h + "*4" for h in hosts[:1024]) + "\n").encode()


def heavy_client():
    while not stop.is_set():
        s = socket.create_connection(("127.0.0.1", t.port))
        s.settimeout(120)
        s.sendall(SCHED)
        head, _, _ = read_reply(s)
        heavy.append(head)
        s.close()


# the TCP ingest flood
flood = {"conns": 0}


def flooder():
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", tcp_ingest), timeout=2)
            s.sendall(b"\x00" * 4096)
            flood["conns"] += 1
            time.sleep(0.05)
            s.close()
        except OSError:
            time.sleep(0.01)


ths = [threading.Thread(target=heavy_client) for _ in range(HEAVY)] + \
      [threading.Thread(target=flooder) for _ in range(FLOODERS)]
for th in ths:
    th.start()
t_conn = time.time()
idle = [socket.create_connection(("127.0.0.1", t.port)) for _ in range(IDLE)]
slow = [socket.create_connection(("127.0.0.1", t.port)) for _ in range(SLOW)]
for s in slow:
    s.setblocking(False)
t_conn = time.time() - t_conn
st = parse_kv(t.admin_ask("stats")[3:])
conns = int(st["connections"])

probe = prober(t.port, 25)
samples, busy, held_max, reserved_max, peak = 0, 0, 0, 0, base
chunk, t0, sent, deliveries = b"x" * 4096, time.time(), 0, []
while probe.poll() is None:
    if sent < 50:  # 200 KiB each, below the line limit (256 KiB)
        sent += 1
        for s in slow:
            try:
                s.send(chunk)
            except OSError:
                pass
    if time.time() - t0 > 3 + 6 * len(deliveries) and len(deliveries) < 3:
        g = gen0 + 1 + len(deliveries)
        u = socket.socket(socket.AF_UNIX)
        u.settimeout(30)
        u.connect(t.ingest)
        u.sendall(reseal(raw, generation=g))
        u.shutdown(socket.SHUT_WR)
        r = u.recv(200).decode().strip()
        u.close()
        deliveries.append((g, r, r == "OK %d" % g and t.wait_generation(g, 30)))
    st = parse_kv(t.admin_ask("stats")[3:])
    samples += 1
    busy += int(st["heavy_running"]) + int(st["heavy_queued"]) > 0
    held_max = max(held_max, int(st["client_bytes"]))
    reserved_max = max(reserved_max, int(st["heavy_reserved"]))
    peak = max(peak, rss_kib(t.p.pid))
    time.sleep(0.1)
stop.set()
n, p50, p90, p99, worst = probe.stdout.read().split()
n, p50, p90, p99, worst = int(n), float(p50), float(p90), float(p99), float(worst)
for th in ths:
    th.join()
st = parse_kv(t.admin_ask("stats")[3:])
for s in idle + slow:
    s.close()
kinds = sorted(set(h.split()[0] + " " + h.split()[1].split("=")[0] for h in heavy))
note("storm: %d clients connected in %.1f s; idle topod on this machine first: %s hops, median %.2f ms, p90 %.2f"
     % (conns, t_conn, calm_n, float(calm_p50), float(calm_p90)))
note("storm: %d hops; median %.2f ms, p90 %.2f, p99 %.2f, worst %.1f; ingest flood %d connections "
     "(ingest_unsigned %s, ingest_denied %s); heavy answers %d: %s" %
     (n, p50, p90, p99, worst, flood["conns"], st["ingest_unsigned"], st["ingest_denied"], len(heavy), kinds))
check(conns >= IDLE + SLOW and flood["conns"] > 100 and busy >= 0.9 * samples,
      "all four loads at once: %d clients connected, %d TCP ingest flood connections, a heavy schedule running "
      "or queued in %d of %d samples" % (conns, flood["conns"], busy, samples))
check(n >= 200 and p50 < 10 and p90 < 10,
      "hops during the storm: median %.2f ms and p90 %.2f ms of %d queries, both under 10 ms (p99 %.1f, worst %.1f)"
      % (p50, p90, n, p99, worst))
check(len(deliveries) == 3 and all(ok for _, _, ok in deliveries),
      "OpenSM's snapshots on the UNIX ingest during the storm: %s, each then served"
      % ", ".join("%d: %s" % (g, r) for g, r, _ in deliveries))
check(held_max <= CLIENT_MIB << 20 and int(st["cut_budget"]) > 0,
      "clients' buffers at most %.1f MiB (--client-budget %d MiB): %s of the slow clients cut, the largest first"
      % (held_max / 2**20, CLIENT_MIB, st["cut_budget"]))
check(reserved_max <= REQ_MIB << 20 and int(st["max_request_memory"]) == REQ_MIB << 20,
      "heavy requests' reservations at most %d MiB (--max-request-memory %d MiB)" % (reserved_max >> 20, REQ_MIB))
grow, allow = (peak - base) >> 10, REQ_MIB + CLIENT_MIB + (gen_kib >> 10) + CONN_MIB
check(grow <= allow, "RSS %d -> peak %d MiB: growth %d MiB within %d = request budget %d + client budget %d + one "
      "more generation %d + %d for 10,000 connections" % (base >> 10, peak >> 10, grow, allow, REQ_MIB, CLIENT_MIB,
                                                          gen_kib >> 10, CONN_MIB))
check(heavy and all(h.startswith(("OK gen=", "ERR BUSY", "ERR TIMEOUT", "ERR TOOBIG")) for h in heavy) and
      any(h.startswith("OK gen=") for h in heavy),
      "heavy schedules answered: %d, of them %d OK" % (len(heavy), sum(h.startswith("OK") for h in heavy)))
done()
