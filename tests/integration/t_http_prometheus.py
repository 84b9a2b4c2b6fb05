#!/usr/bin/env python3
"""/metrics (issue 23 item 1) scraped by a real Prometheus (Debian's
prometheus package), checked through Prometheus's own query API: the
fixture's hosts and switches, the generation before and after a reroute,
queries by command and outcome, a refused snapshot by its reason. promtool
(the same package) lints the exposition.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest  # noqa: E402
from topodtest import ROOT, Topod, check, done, from_text, note, send_snapshot, tmpdir  # noqa: E402
from snapdecode import reseal  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()


def make(lfts, gen, out):
    from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, lfts), out + ".raw")
    with open(out + ".raw", "rb") as f:
        b = f.read()
    with open(out, "wb") as f:
        f.write(reseal(b, generation=gen, timestamp=1700000000000000 + gen, sm_guid=0x77))


for tool in ("prometheus", "promtool"):
    if not os.path.exists("/usr/bin/" + tool):
        check(False, "%s is installed (make deps: Debian's prometheus)" % tool)
        done()

g1, g2, stale = (os.path.join(d, n) for n in ("g1.snap", "g2.snap", "stale.snap"))
make("2sw4hca.lfts", 1, g1)
make("2sw4hca-split.lfts", 2, g2)
make("2sw4hca-split.lfts", 1, stale)  # generation 1 again with other routes: refused

t = Topod("-L", g1, "--http", "127.0.0.1:0")
HP = int(t.p.stdout.readline().decode().split("=")[1])
info = t.info()
note("fixture: %s hosts, %s switches" % (info["hosts"], info["switches"]))

with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % HP, timeout=10) as r:
    ctype = r.headers.get("Content-Type", "")
    text = r.read()
check(ctype.startswith("text/plain; version=0.0.4"), "/metrics is the text format 0.0.4 (%s)" % ctype)
lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
check(lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(),
      "promtool check metrics: no problem %s" % (lint.stdout + lint.stderr).decode()[:400])

s = socket.socket()
s.bind(("127.0.0.1", 0))
PP = s.getsockname()[1]
s.close()
cfg = os.path.join(d, "prometheus.yml")
with open(cfg, "w") as f:
    f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: topod\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % HP)
plog = open(os.path.join(d, "prometheus.log"), "wb")
prom = subprocess.Popen(["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(d, "tsdb"),
                         "--web.listen-address=127.0.0.1:%d" % PP], stdout=plog, stderr=plog)
topodtest._procs.append(prom)


def query(q):
    u = "http://127.0.0.1:%d/api/v1/query?query=%s" % (PP, urllib.parse.quote(q))
    try:
        with urllib.request.urlopen(u, timeout=5) as r:
            res = json.load(r)["data"]["result"]
    except (OSError, ValueError, KeyError):
        return None
    return float(res[0]["value"][1]) if res else None


def until(q, want, timeout=45):
    t0 = time.time()
    v = None
    while time.time() - t0 < timeout:
        v = query(q)
        if v is not None and want(v):
            return True, v
        time.sleep(0.5)
    return False, v


ok, v = until('up{job="topod"}', lambda x: x == 1)
check(ok, "Prometheus scrapes topod (up == %s)" % v)
ok, v = until('topod_hosts{plane="default"}', lambda x: x == int(info["hosts"]))
check(ok, "topod_hosts == the fixture's %s hosts (%s)" % (info["hosts"], v))
ok, v = until('topod_switches{plane="default"}', lambda x: x == int(info["switches"]))
check(ok, "topod_switches == %s (%s)" % (info["switches"], v))
ok, v = until('topod_generation{plane="default"}', lambda x: x == 1)
check(ok, "topod_generation == 1 (%s)" % v)

with t.conn() as c:
    head = c.ask("hosts")
    hosts = [c.readline().split()[0] for _ in range(int(head.split("lines=")[1].split()[0]))]
for _ in range(3):
    t.ask("path %s %s" % (hosts[0], hosts[-1]))
t.ask("path %s nosuch" % hosts[0])
ok, v = until('topod_queries_total{command="path",outcome="ok"}', lambda x: x == 3)
check(ok, "topod_queries_total{command=path,outcome=ok} == 3 (%s)" % v)
ok, v = until('topod_queries_total{command="path",outcome="error"}', lambda x: x == 1)
check(ok, "topod_queries_total{command=path,outcome=error} == 1 (%s)" % v)
with urllib.request.urlopen("http://127.0.0.1:%d/api/path?args=%s+%s" % (HP, hosts[0], hosts[-1]), timeout=10) as r:
    r.read()
ok, v = until('topod_queries_total{command="path",outcome="ok"}', lambda x: x == 4)
check(ok, "an /api/path request counts as a path query too: 4 (%s)" % v)
ok, v = until('topod_query_duration_seconds_count{lane="loop"}', lambda x: x >= 4)
check(ok, "the latency histogram counts them (%s)" % v)

rc, out = send_snapshot("sink=unix:" + t.ingest, g2)
check(rc == 0, "a reroute arrives: generation 2 (%s)" % out)
ok, v = until('topod_generation{plane="default"}', lambda x: x == 2)
check(ok, "after the reroute Prometheus reads topod_generation == 2 (%s)" % v)
ok, v = until('topod_snapshots_accepted_total{plane="default"}', lambda x: x == 2)
check(ok, "topod_snapshots_accepted_total == 2 (%s)" % v)
ok, v = until('topod_build_seconds_count', lambda x: x == 2)
check(ok, "the build-time histogram holds both generations (%s)" % v)
ok, v = until('topod_generation_age_seconds{plane="default"}', lambda x: 0 <= x < 60)
check(ok, "topod_generation_age_seconds is the new generation's age (%s)" % v)

# Two switches of a few LIDs: one 512-entry chunk each, once generation 1
# (replaced whole) has let go of its own.
ok, v = until('topod_lft_pool_bytes{state="tables"}', lambda x: x == 2 * 512)
check(ok, "topod_lft_pool_bytes{state=tables} == two switches' one chunk each, 1024 (%s)" % v)
ok, v = until('topod_lft_pool_bytes{state="spare"} < ignoring(state) topod_resident_memory_bytes', lambda x: x > 0)
check(ok, "and the spare chunks are a part of topod's resident memory (%s)" % v)
# Every 5 s (--warm-interval) the served generation is read to keep it
# mapped: its tables, its index and the free table chunks, less than
# topod holds.
ok, v = until('topod_memory_warm_bytes < topod_resident_memory_bytes and topod_memory_warm_bytes > 1000',
              lambda x: x > 1000)
check(ok, "the served generation was read to keep it mapped: topod_memory_warm_bytes (%s), below the "
      "resident size" % v)

rc, out = send_snapshot("sink=unix:" + t.ingest, stale)
check(rc != 0, "a stale snapshot is refused (%s)" % out)
ok, v = until('sum(topod_snapshots_refused_total)', lambda x: x == 1)
check(ok, "topod_snapshots_refused_total counts it (%s)" % v)
ok, v = until('topod_links_down{plane="default"}', lambda x: x == 0)
check(ok, "topod_links_down == 0 (%s)" % v)
ok, v = until('topod_links_lost{plane="default"}', lambda x: x == 0)
check(ok, "topod_links_lost == 0: the split routes keep every cable (%s)" % v)
prom.terminate()
prom.wait(10)
done()
