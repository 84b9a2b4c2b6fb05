#!/usr/bin/env python3
"""One admission rule for both ports (topod/server_heavy.c server_admit;
docs/admin-guide.md, "Limits"): while all clients together hold more than
seven eighths of --client-budget, a heavy request is refused with BUSY on
the query port and over HTTP alike, the same words on both; cheap requests
and the metrics are still answered; once the clients let go, both ports
admit again. Four query clients each hold 240 KiB of an unfinished request
line (960 KiB of a 1 MiB budget: above the admission line, below the cut),
on the k=4 fat tree (16 hosts). A few seconds."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, done, parse_kv, tmpdir  # noqa: E402

d = tmpdir()
snap = os.path.join(d, "k4.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "4", "1", snap], check=True, capture_output=True)
t = Topod("-L", snap, "-t", "2", "--http", "127.0.0.1:0", "--client-budget", "1M")
HP = int(t.p.stdout.readline().decode().split("=")[1])


def get(path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (HP, path), timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def held():
    return int(parse_kv(t.admin_ask("stats")[3:])["client_bytes"])


with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
heavy = "hopsmatrix " + " ".join(hosts[:4])
api = "/api/hopsmatrix?args=" + "+".join(hosts[:4])

st, body = get(api)
check(st == 200 and json.loads(body)["ok"], "before: HTTP %s answered (%d)" % (heavy.split()[0], st))

# the crowd: unfinished lines, no newline, so nothing is parsed or answered
crowd = []
for _ in range(4):
    s = socket.create_connection(("127.0.0.1", t.port))
    s.sendall(b"hops " + b"x" * (240 * 1024 - 5))
    crowd.append(s)
for _ in range(100):
    if held() >= 4 * 240 * 1024:
        break
    time.sleep(0.05)
h = held()
check(7 * (1 << 20) // 8 < h <= 1 << 20, "the crowd holds %d bytes: above 7/8 of the budget, within it" % h)

with t.conn() as c:
    tcp = c.ask(heavy)
st, body = get(api)
j = json.loads(body) if body.startswith(b"{") else {}
check(tcp.startswith("ERR BUSY all clients hold ") and "--client-budget" in tcp, "query port: %s refused: %s" % (heavy.split()[0], tcp[:90]))
check(st == 503 and j.get("code") == "BUSY" and "--client-budget" in j.get("error", ""),
      "HTTP: refused the same way: %d %s %s" % (st, j.get("code"), j.get("error", "")[:70]))
check(j.get("error") == tcp[len("ERR BUSY "):], "both say the same words")
with t.conn() as c:
    cheap = c.ask("hops %s %s" % (hosts[0], hosts[1]))
st_m, _ = get("/metrics")
check(cheap.startswith("OK") and st_m == 200, "cheap requests and the metrics still answered (%s; %d)" % (cheap[:20], st_m))
stats = parse_kv(t.admin_ask("stats")[3:])
check(int(stats["cut_budget"]) == 0, "nobody cut (cut_budget %s)" % stats["cut_budget"])

for s in crowd:
    s.close()
for _ in range(100):
    if held() < 7 * (1 << 20) // 8:
        break
    time.sleep(0.05)
with t.conn() as c:
    tcp = c.ask(heavy)
st, body = get(api)
check(tcp.startswith("OK") and st == 200, "after the crowd left: both ports admit again (%s; %d)" % (tcp[:20], st))
t.stop()
done()
