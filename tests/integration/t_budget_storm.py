#!/usr/bin/env python3
"""Issue 21's mixed storm, scaled to a 2-core machine, loopback only, about
40 s: topod serves the k=24 fat tree (3,456 hosts) while

  - 2,000 clients connect: 1,500 stay idle, 500 send a request line a few
    KiB at a time and never finish it (slow clients holding input);
  - 8 clients ask for a 4,096-rank tacs1 schedule each (heavy);
  - a TCP ingest flood: connections that send junk to the keyed TCP ingest,
    again and again;

and meanwhile a separate process asks `hops` 100 times a second and OpenSM
(here: a UNIX-socket producer) delivers a new generation. It holds when
  - `hops` answers with p99 under 10 ms;
  - the UNIX snapshot is accepted (OK) and served;
  - the clients' buffers stay within --client-budget (the largest cut
    first: cut_budget in stats), heavy requests within
    --max-request-memory, and topod's RSS growth within the two budgets
    plus one more generation of the fabric (the new snapshot is built
    beside the served one).
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
print(len(lat), lat[len(lat) // 2], lat[int(len(lat) * 0.99)], lat[-1])
"""


def prober(port, seconds):
    return subprocess.Popen([sys.executable, "-c", PROBE, str(port), hosts[0], hosts[3000], str(seconds)],
                            stdout=subprocess.PIPE, text=True)


REQ_MIB, CLIENT_MIB = 256, 48
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
d = tmpdir()
snap = k24(d)
raw = open(snap, "rb").read()
key = os.path.join(d, "key")
subprocess.run([os.path.join(BIN, "topo-snap"), "keygen", key], check=True, capture_output=True)
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
stop = threading.Event()
# what this machine gives a client when topod is idle (other work shares it)
calm = prober(t.port, 4)
_, _, calm_p99, _ = calm.communicate()[0].split()
calm_p99 = float(calm_p99)

# 8 heavy requests, their replies read as they come
heavy = []


def heavy_client():
    s = socket.create_connection(("127.0.0.1", t.port))
    s.settimeout(120)
    s.sendall(("schedule tacs1 form=hosts " + " ".join(h + "*4" for h in hosts[:1024]) + "\n").encode())
    head, _, _ = read_reply(s)
    heavy.append(head)
    s.close()


hth = [threading.Thread(target=heavy_client) for _ in range(8)]
for th in hth:
    th.start()

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


fth = [threading.Thread(target=flooder) for _ in range(4)]
for th in fth:
    th.start()

# 2,000 clients: 1,500 idle, 500 slow
idle = [socket.create_connection(("127.0.0.1", t.port)) for _ in range(1500)]
slow = [socket.create_connection(("127.0.0.1", t.port)) for _ in range(500)]
for s in slow:
    s.setblocking(False)

probe = prober(t.port, 25)

peak, held_max, chunk, t0, delivered, sent = base, 0, b"x" * 4096, time.time(), None, 0
while probe.poll() is None:
    if sent < 50:  # 200 KiB each, below the line limit (256 KiB)
        sent += 1
        for s in slow:
            try:
                s.send(chunk)
            except OSError:
                pass
    if delivered is None and time.time() - t0 > 8:
        u = socket.socket(socket.AF_UNIX)
        u.settimeout(30)
        u.connect(t.ingest)
        u.sendall(reseal(raw, generation=gen0 + 1))
        u.shutdown(socket.SHUT_WR)
        delivered = u.recv(200).decode().strip()
        u.close()
    st = parse_kv(t.admin_ask("stats")[3:])
    held_max = max(held_max, int(st["client_bytes"]))
    peak = max(peak, rss_kib(t.p.pid))
    time.sleep(0.1)
stop.set()
n, p50, p99, worst = probe.stdout.read().split()
for th in hth + fth:
    th.join()
st = parse_kv(t.admin_ask("stats")[3:])
served = int(t.info()["generation"])
for s in idle + slow:
    s.close()
note("storm: %s hops asked; p50 %.2f ms, p99 %.2f, worst %.2f; ingest flood %d connections; heavy: %s" %
     (n, float(p50), float(p99), float(worst), flood["conns"], ", ".join(sorted(set(h[:26] for h in heavy)))))
# 10 ms, or 10 ms more than the machine gives an idle topod when other work
# shares the cores (the test cannot own the machine)
check(float(p99) < 10 + max(0.0, calm_p99 - 1), "hops during the storm (2,000 clients, 8 heavy schedules, TCP "
      "ingest flood): p99 %.2f ms of %s, worst %.1f ms (idle topod on this machine now: p99 %.2f ms)"
      % (float(p99), n, float(worst), calm_p99))
check(delivered == "OK %d" % (gen0 + 1) and served == gen0 + 1,
      "OpenSM's UNIX-socket snapshot during the storm: %s, served generation %d" % (delivered, served))
check(held_max <= CLIENT_MIB << 20 and int(st["cut_budget"]) > 0,
      "clients' buffers at most %.1f MiB (--client-budget %d MiB): %s of the slow clients cut, the largest first"
      % (held_max / 2**20, CLIENT_MIB, st["cut_budget"]))
bound = REQ_MIB + CLIENT_MIB + base // 1024 + 64
check(len(heavy) == 8 and all(h.startswith(("OK gen=", "ERR BUSY", "ERR TIMEOUT")) for h in heavy) and
      (peak - base) // 1024 <= bound - base // 1024,
      "RSS %d -> peak %d MiB: growth %d MiB, within the request budget %d + client budget %d + one more "
      "generation (%d) + 64" % (base >> 10, peak >> 10, (peak - base) >> 10, REQ_MIB, CLIENT_MIB, base >> 10))
done()
