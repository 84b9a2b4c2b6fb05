#!/usr/bin/env python3
"""The shrink guard (issue 37, item 3): a fabric that vanishes is not
served.

- Every loader refuses a fabric that reaches no host, with a clear message
  and a non-zero exit: topo-snap from-text of empty files and of switches
  alone, topod --topology/--lfts of empty files, topod --load of a
  snapshot of no node, and a running topod's ingest (ERR EMPTY, through
  the producers' own delivery code: topo-snap send), which serves and
  keeps on disk what it had.
- A topod serving the k=4 fat tree (16 HCAs) is sent a generation that
  reaches 2 of them (links down, as an SM that lost most of its fabric
  sees it): held back, not served and not written, answered ERR HELD (so
  its producer retries it and never takes it as delivered; test_queue
  checks the plugin's queue does so), and reported in the log, in info's
  held= and on /metrics (topod_generation_held, topod_snapshots_held_total).
  Its producer sending it again changes nothing; a shrinking delta is held
  the same way; admin `confirm` of another generation is refused, of the
  held one serves it (and writes it to the state directory).
- With --shrink-agree 2, the second later generation that reaches as many
  HCAs and switches is served without the operator, and a generation that
  does not shrink is served and drops what was held.
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import snapdecode as sd  # noqa: E402
from topodtest import BIN, ROOT, Topod, check, done, note, send_snapshot, tmpdir  # noqa: E402

d = tmpdir()
SNAP = os.path.join(BIN, "topo-snap")
TOPOD = os.path.join(BIN, "topod")
FIX = os.path.join(ROOT, "tests", "fixtures")


def write(name, data):
    p = os.path.join(d, name)
    with open(p, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return p


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


# ---- every loader refuses an empty fabric ----
empty_topo, empty_lfts = write("empty.topo", ""), write("empty.lfts", "")
out = os.path.join(d, "out.snap")
rc, msg = run(SNAP, "from-text", empty_topo, empty_lfts, out)
check(rc != 0 and "an empty fabric" in msg and not os.path.exists(out),
      "topo-snap from-text of empty files: exit %d, %s" % (rc, msg))
topo = open(os.path.join(FIX, "2sw4hca.topo")).read()
switches_only = "\n\n".join(b for b in topo.split("\n\n") if "\nCa\t" not in b)
switches_only = "\n".join(l for l in switches_only.splitlines() if '"H-' not in l)
rc, msg = run(SNAP, "from-text", write("sw.topo", switches_only), os.path.join(FIX, "2sw4hca.lfts"), out)
check(rc != 0 and "an empty fabric" in msg and "0 CAs, 2 switches" in msg and not os.path.exists(out),
      "topo-snap from-text of two switches and no HCA: exit %d, %s" % (rc, msg))
rc, msg = run(TOPOD, "-f", "-l", "127.0.0.1:0", "--topology", empty_topo, "--lfts", empty_lfts)
check(rc == 1 and "an empty fabric" in msg, "topod --topology/--lfts of empty files: exit %d, %s"
      % (rc, msg.splitlines()[-1]))
k4 = os.path.join(d, "k4.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "4", "1", k4], check=True, capture_output=True)
base = sd.load(k4)
G0 = base.generation
empty = write("empty.snap", sd.empty(G0 + 100, base.timestamp + 100, base.sm_guid))
rc, msg = run(TOPOD, "-f", "-l", "127.0.0.1:0", "--load", empty)
check(rc == 1 and "an empty fabric" in msg, "topod --load of a snapshot of no node: exit %d, %s"
      % (rc, msg.splitlines()[-1]))

# ---- a running topod ----
state = os.path.join(d, "state")
os.mkdir(state, 0o700)
t = Topod("--http", "127.0.0.1:0", "--shrink-agree", "2", state_dir=state)
HP = int(t.p.stdout.readline().decode().split("=")[1])
SINK = "sink=unix:" + t.ingest


def metric(name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % HP, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def on_disk():
    return int(dict(l.split(" ", 1) for l in run(SNAP, "info", state)[1].splitlines())["generation"])


def shrunk(gen, keep=2):
    """The k=4 fabric as generation gen with every HCA's link down but
    keep's (both ends DOWN, the cable in place): what a delta can say."""
    s = sd.decode(open(k4, "rb").read())
    s.generation, s.timestamp = gen, base.timestamp + gen - G0
    cas = 0
    for n in s.nodes:
        if n.type == 1:
            cas += 1
            if cas > keep:
                p = n.ports[1]
                p.state = 1
                s.nodes[p.peer_node].ports[p.peer_port].state = 1
    return write("g%d.snap" % gen, sd.encode(s))


rc, msg = send_snapshot(SINK, k4)
check(rc == 0 and t.info()["generation"] == str(G0), "the k=4 fat tree served: %s" % msg)
rc, msg = send_snapshot(SINK, empty)
info = t.info()
check(rc != 0 and "ERR EMPTY generation %d: an empty fabric" % (G0 + 100) in msg and
      info["generation"] == str(G0) and on_disk() == G0,
      "ingest of a snapshot of no node: refused (%s), generation %s served and on disk" % (msg, info["generation"]))

G1 = G0 + 1
rc, msg = send_snapshot(SINK, shrunk(G1))
info = t.info()
check(rc != 0 and msg.endswith("rejected: ERR HELD generation %d reaches 2 of 16 HCAs, 20 of 20 switches: held back; "
                                "admin confirm %d serves it, or 2 more like it" % (G1, G1)),
      "generation %d reaching 2 of 16 HCAs: the producer is told, whole, %s" % (G1, msg))
check(info["generation"] == str(G0) and info["held"] == str(G1) and on_disk() == G0,
      "held back: generation %s still served and on disk (%d), info held=%s" % (info["generation"], on_disk(),
                                                                               info["held"]))
check(metric('topod_generation_held{plane="default"}') == G1 and
      metric('topod_snapshots_held_total{plane="default"}') == 1,
      "/metrics: topod_generation_held %s, topod_snapshots_held_total 1" % metric('topod_generation_held{plane="default"}'))
log = t.logtext()
check(re.search(r"warning: holding back generation %d from .*: it reaches 2 of the 16 HCAs and 20 of the 20 switches "
                r"generation %d reaches, more than 50%% fewer \(--shrink-guard 0.5\)" % (G1, G0), log),
      "logged as a warning naming the generation, what it reaches and the threshold")
rc, msg = send_snapshot(SINK, shrunk(G1))
check(rc != 0 and "ERR HELD generation %d" % G1 in msg and t.info()["held"] == str(G1) and
      "still holding back generation %d" % G1 in t.logtext() and "more like it (0 so far)" in t.logtext().splitlines()[-1],
      "sent again by its producer: still held, no agreement (logged: %s)" % t.logtext().splitlines()[-1][-40:])

# a shrinking delta: from the served generation to one reaching 2 HCAs
G2 = G0 + 2
delta = os.path.join(d, "d2.snap")
rc, msg = run(SNAP, "delta", k4, shrunk(G2), delta)
check(rc == 0, "topo-snap delta k4 -> generation %d: %s" % (G2, msg))
rc, msg = send_snapshot(SINK, delta)
info = t.info()
check(rc != 0 and "ERR HELD generation %d" % G2 in msg and "(1 so far)" in t.logtext().splitlines()[-1] and
      info["held"] == str(G2) and info["generation"] == str(G0),
      "the same shrink as a delta: held back, agreeing with %d (%s)" % (G1, t.logtext().splitlines()[-1][-40:]))
r = t.admin_ask("confirm %d" % G1)
check(r.startswith("ERR NOTHELD") and "holds back generation %d, not %d" % (G2, G1) in r,
      "admin confirm %d: %s" % (G1, r))
r = t.admin_ask("confirm x")
check(r.startswith("ERR USAGE confirm GENERATION"), "admin confirm x: %s" % r)
r = t.ask("confirm %d" % G2)
check(r.startswith("ERR DENIED"), "confirm on the query port: %s" % r)
r = t.admin_ask("confirm %d" % G2)
served = t.wait_generation(G2, 30)
for _ in range(100):
    if on_disk() == G2:
        break
    time.sleep(0.05)
info = t.info()
check(r.startswith("OK confirmed generation %d (plane default)" % G2) and served and info["held"] == "0" and
      int(info["hosts"]) == 16 and on_disk() == G2 and metric('topod_generation_held{plane="default"}') == 0,
      "admin confirm %d: %s; served and written, held=%s" % (G2, r, info["held"]))
check("generation %d confirmed by the operator" % G2 in t.logtext(), "the confirmation is logged")
rc, msg = send_snapshot(SINK, shrunk(G2))
check(rc == 0 and t.info()["generation"] == str(G2) and "generation %d from ingest unix is already served" % G2
      in t.logtext(), "its producer's next attempt lands: %s, 'already served'" % msg)

# ---- agreement, and a generation that does not shrink ----
G3 = G0 + 3
s3 = sd.decode(open(k4, "rb").read())
s3.generation, s3.timestamp = G3, base.timestamp + 3
rc, msg = send_snapshot(SINK, write("g3.snap", sd.encode(s3)))
check(rc == 0 and t.info()["generation"] == str(G3), "16 HCAs again as generation %d: served (%s)" % (G3, msg))
G4, G5, G6 = G0 + 4, G0 + 5, G0 + 6
rc4, m4 = send_snapshot(SINK, shrunk(G4, 3))
rc5, m5 = send_snapshot(SINK, shrunk(G5, 3))
rc6, m6 = send_snapshot(SINK, shrunk(G6, 3))
info = t.info()
check(rc4 != 0 and "ERR HELD generation %d" % G4 in m4 and rc5 != 0 and "ERR HELD generation %d" % G5 in m5 and
      rc6 == 0 and info["generation"] == str(G6) and info["held"] == "0",
      "--shrink-agree 2: generations %d and %d held, %d (the second to agree) served" % (G4, G5, G6))
check("as the 2 generations held back before it did (--shrink-agree): serving it" in t.logtext(),
      "and logged so")
G7, G8 = G0 + 7, G0 + 8
s8 = sd.decode(open(k4, "rb").read())
s8.generation, s8.timestamp = G8, base.timestamp + 8
rc, msg = send_snapshot(SINK, write("g8.snap", sd.encode(s8)))  # growing back: no shrink
rc7, m7 = send_snapshot(SINK, shrunk(G0 + 9, 1))
check(rc == 0 and rc7 != 0 and t.info()["held"] == str(G0 + 9), "16 HCAs (%d) served, then %d held" % (G8, G0 + 9))
s10 = sd.decode(open(k4, "rb").read())
s10.generation, s10.timestamp = G0 + 10, base.timestamp + 10
rc, msg = send_snapshot(SINK, write("g10.snap", sd.encode(s10)))
info = t.info()
check(rc == 0 and info["generation"] == str(G0 + 10) and info["held"] == "0" and
      "generation %d is no longer held back" % (G0 + 9) in t.logtext(),
      "a generation that does not shrink: served, the held one dropped")
held_total = metric('topod_snapshots_held_total{plane="default"}')
check(held_total == 5, "topod_snapshots_held_total counts the 5 generations held back (%s)" % held_total)
note("log: %s" % t.log)
t.stop()
done()
