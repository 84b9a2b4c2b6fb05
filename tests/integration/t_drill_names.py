#!/usr/bin/env python3
"""Names two machines share, and simgrid's arguments (issue 21, round two,
defects 3a and 3b; docs/reliability.md rows d5.names and d5.simgrid).

 3a two CAs whose NodeDescriptions are both "dup1 HCA-1" (a cloned image)
    were merged into one host dup1: `hops dup1 X` answered for whichever
    came first in node order, the other machine had no host name. Now,
    delivered by OpenSM's path (the UNIX ingest socket), neither keeps the
    shared name: each is a host named by its node GUID, `dup1` is
    NOTFOUND, `stats` counts them (ambiguous_names, ambiguous_example) and
    the log says it once. A real multi-rail host ("multi HCA-1", "multi
    HCA-2") stays one host with two rails. The next generation, with one of
    them renamed, serves both names and clears the count.
 3b `simgrid all bytes=1` answered NOTFOUND ('all' taken for a host): now
    ERR USAGE naming the option; `simgrid all` with more hosts is USAGE.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, Topod, check, done, from_text, parse_kv, tmpdir  # noqa: E402
from snapdecode import reseal  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()
DUP_A, DUP_B = "0x0000000000100003", "0x0000000000100006"   # Hca2, Hca3


def snapshot(names, gen):
    src = open(os.path.join(FIX, "2sw4hca.topo"), "rb").read()
    for a, b in names.items():
        src = src.replace(b'"%s"' % a.encode(), b'"%s"' % b.encode())
    topo, out = os.path.join(d, "f%d.topo" % gen), os.path.join(d, "f%d.snap" % gen)
    open(topo, "wb").write(src)
    from_text(topo, os.path.join(FIX, "2sw4hca.lfts"), out)
    return reseal(open(out, "rb").read(), generation=gen)


def deliver(t, buf):
    """As the plugin does: the whole snapshot on the UNIX ingest socket, one line back."""
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(30)
    u.connect(t.ingest)
    u.sendall(buf)
    u.shutdown(socket.SHUT_WR)
    r = u.recv(200).decode().strip()
    u.close()
    return r


def stats_when(t, key, want, timeout=10):
    """The admin stats once key has its value: `OK G` comes before the
    generation is published, and the counters after it."""
    t_end = time.time() + timeout
    while True:
        st = parse_kv(t.admin_ask("stats")[3:])
        if st.get(key) == want or time.time() > t_end:
            return st
        time.sleep(0.05)


def hosts(c):
    h = c.ask("hosts")
    return sorted(c.readline().split()[0] for _ in range(int(parse_kv(h[3:])["lines"])))


t = Topod()
r = deliver(t, snapshot({"Hca1": "multi HCA-1", "Hca4": "multi HCA-2", "Hca2": "dup1 HCA-1", "Hca3": "dup1 HCA-1"},
                        10))
check(r == "OK 10" and t.wait_generation(10), "a snapshot with two 'dup1 HCA-1' CAs on OpenSM's UNIX path: %s" % r)
with t.conn() as c:
    hs = hosts(c)
    check(hs == sorted([DUP_A, DUP_B, "multi"]),
          "the two 'dup1 HCA-1' machines are two hosts named by their GUIDs, the multi-rail host one: %s" % hs)
    rd = c.ask("resolve dup1")
    check(rd.startswith("ERR NOTFOUND"), "the shared name answers for neither machine: resolve dup1 -> %s" % rd)
    ra, rb = c.ask("resolve " + DUP_A), c.ask("resolve " + DUP_B)
    check("host=%s" % DUP_A in ra and "host=%s" % DUP_B in rb and "lid=4" in ra and "lid=5" in rb,
          "each by its own GUID, its own LID: %s | %s" % (ra, rb))
    hp = c.ask("hops %s %s" % (DUP_A, DUP_B))
    check(hp.startswith("OK") and "hops=2" in hp, "routed between the two as two machines (one switch apart): %s"
          % hp)
    rm = [c.ask("resolve multi/HCA-1"), c.ask("resolve multi/HCA-2")]
    check(all(x.startswith("OK") and "host=multi" in x for x in rm),
          "a real multi-rail host (HCA-1, HCA-2) is still one host with two rails: %s" % rm)
st = stats_when(t, "ambiguous_names", "2")
check(st.get("ambiguous_names") == "2" and st.get("ambiguous_example") == "dup1 HCA-1",
      "stats: ambiguous_names=%s ambiguous_example=%r" % (st.get("ambiguous_names"), st.get("ambiguous_example")))
log = t.logtext()
check(log.count("share a hostname and HCA label") == 1 and "dup1 HCA-1" in log,
      "the log says it once, naming the description and the fix (node-name-map)")
# the same again (OpenSM's next sweep): not said again
r = deliver(t, snapshot({"Hca1": "multi HCA-1", "Hca4": "multi HCA-2", "Hca2": "dup1 HCA-1", "Hca3": "dup1 HCA-1"},
                        11))
served = t.wait_generation(11)
stats_when(t, "accepted", "2")
time.sleep(0.3)  # the log line, if any, follows the counters
check(r == "OK 11" and served and t.logtext().count("share a hostname and HCA label") == 1,
      "the next sweep with the same clash: %s, not logged again" % r)
# the administrator fixes the image: both names served, the count cleared
r = deliver(t, snapshot({"Hca1": "multi HCA-1", "Hca4": "multi HCA-2", "Hca2": "dup1 HCA-1", "Hca3": "dup2 HCA-1"},
                        12))
t.wait_generation(12)
with t.conn() as c:
    hs = hosts(c)
st = stats_when(t, "ambiguous_names", "0")
check(r == "OK 12" and hs == ["dup1", "dup2", "multi"] and st.get("ambiguous_names") == "0",
      "renamed in the next generation: %s, hosts %s, ambiguous_names=%s" % (r, hs, st.get("ambiguous_names")))
# The next sweep with no description changed (indexed as a delta, names
# not recomputed: topod/build.c), then a clash again through a changed
# description: the delta's names are recomputed.
fixed = {"Hca1": "multi HCA-1", "Hca4": "multi HCA-2", "Hca2": "dup1 HCA-1", "Hca3": "dup2 HCA-1"}
r13 = deliver(t, snapshot(fixed, 13))
t.wait_generation(13)
with t.conn() as c:
    hs13 = hosts(c)
r14 = deliver(t, snapshot(dict(fixed, Hca3="dup1 HCA-1"), 14))
t.wait_generation(14)
with t.conn() as c:
    hs14 = hosts(c)
st = stats_when(t, "ambiguous_names", "2")
check(r13 == "OK 13" and hs13 == ["dup1", "dup2", "multi"] and r14 == "OK 14" and
      hs14 == sorted([DUP_A, DUP_B, "multi"]) and st.get("ambiguous_names") == "2",
      "unchanged descriptions keep the names (%s), a description that makes a clash again renames both (%s)"
      % (hs13, hs14))

# ---- 3b simgrid's arguments --------------------------------------------------
with t.conn() as c:
    for line, want in (("simgrid all bytes=1", "ERR USAGE simgrid takes no options ('bytes=1')"),
                       ("simgrid dup1 bytes=1 dup2", "ERR USAGE simgrid takes no options ('bytes=1')"),
                       ("simgrid all dup1", "ERR USAGE 'all' stands alone"),
                       ("simgrid nosuchhost", "ERR NOTFOUND")):
        h = c.ask(line)
        check(h.startswith(want), "%s -> %s" % (line, h[:90]))
    h = c.ask("simgrid all")
    n = int(parse_kv(h[3:]).get("lines", 0)) if h.startswith("OK") else 0
    body = [c.readline() for _ in range(n)]
    check(h.startswith("OK") and "hosts=3" in h and body[-1] == "</platform>" and c.ask("ping") == "OK pong",
          "simgrid all alone: %s (%d lines)" % (h[:60], n))
t.stop()
done()
