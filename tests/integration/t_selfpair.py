#!/usr/bin/env python3
"""A host to itself is 0 hops in every command, and repeated hosts follow one
rule (docs/protocol.md, "Naming hosts"), on the real topod over
tests/fixtures/2sw4hca (Hca1, Hca3 on Switch1; Hca2, Hca4 on Switch2).

Rank lists (hopsmatrix, clusters, load, schedule) take a repeat as one more
rank: its pairs are 0 hops and load no cable. Host sets (pathmatrix, shared,
order, pick, map, simgrid, diff) refuse it with ERR DUPLICATE naming the host.
topoquery's hops, path and matrix say the same.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import check, note  # noqa: E402

FIX = os.path.join(tt.ROOT, "tests", "fixtures")
TQ = os.path.join(tt.BIN, "topoquery")


def reply(td, line):
    """(head, lines) of one request."""
    with td.conn() as c:
        c.send(line + "\n")
        head = c.readline()
        n = int(tt.parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
        return head, [c.readline() for _ in range(n)]


def kv(head):
    return tt.parse_kv(head[3:]) if head.startswith("OK ") else {}


def tq(td, *args):
    r = subprocess.run([TQ, "-s", "127.0.0.1:%d" % td.port] + list(args), capture_output=True, text=True,
                       timeout=30)
    return r.returncode, r.stdout, r.stderr


td = tt.Topod("--topology", os.path.join(FIX, "2sw4hca.topo"), "--lfts", os.path.join(FIX, "2sw4hca.lfts"),
              ingest=False, admin=False)
PORT1 = "0x0000000000100001"   # Hca1's port GUID: another name of Hca1's port

# ---- 0 hops ------------------------------------------------------------------
h, _ = reply(td, "hops Hca1 Hca1")
check(kv(h).get("hops") == "0", "hops Hca1 Hca1 = 0 (%s)" % h)
h, _ = reply(td, "hops Hca1 " + PORT1)
check(kv(h).get("hops") == "0", "hops Hca1 <its port GUID> = 0 (%s)" % h)
h, _ = reply(td, "hops Hca1 Hca3")
check(kv(h).get("hops") == "1", "hops Hca1 Hca3 (one leaf) stays 1 (%s)" % h)
h, lines = reply(td, "path Hca1 Hca1")
check(kv(h).get("hops") == "0" and lines == [], "path Hca1 Hca1: hops=0 and no switch (%s %s)" % (h, lines))
h, _ = reply(td, "query Hca1:Hca1")
check(h == "Hca1 Hca1", "query Hca1:Hca1 names no switch (%r)" % h)
h, lines = reply(td, "hopsbatch Hca1:Hca1 lid:2:Hca1 Hca1:Hca3")
check(lines == ["Hca1 Hca1 0", "lid:2 Hca1 0", "Hca1 Hca3 1"], "hopsbatch: self pairs 0, by name and by LID (%s)" % lines)
h, lines = reply(td, "hopsmatrix Hca1 Hca3 Hca1 Hca2 " + PORT1)
rows = [[int(x) for x in l.split()] for l in lines]
want = [[0, 1, 0, 2, 0], [1, 0, 1, 2, 1], [0, 1, 0, 2, 0], [2, 2, 2, 0, 2], [0, 1, 0, 2, 0]]
check(rows == want, "hopsmatrix with Hca1 three times (two names): 0 wherever Hca1 meets Hca1 (%s)" % rows)

rc, out, err = tq(td, "hops", "Hca1", "Hca1")
check(rc == 0 and out.strip() == "0", "topoquery hops Hca1 Hca1 prints 0 (%d %r %r)" % (rc, out, err))
rc, out, err = tq(td, "--json", "path", "Hca1", "Hca1")
j = json.loads(out) if rc == 0 else {}
check(j.get("hops") == 0 and j.get("switches") == [], "topoquery path --json Hca1 Hca1: 0 hops, no switch (%r)" % out)
rc, out, err = tq(td, "--json", "matrix", "Hca1", "Hca2", "Hca1")
j = json.loads(out) if rc == 0 else {}
check(j.get("hops") == [[0, 2, 0], [2, 0, 2], [0, 2, 0]], "topoquery matrix Hca1 Hca2 Hca1: 0 between the Hca1s (%r)" % out)

# ---- loads and schedules: ranks of one host load nothing --------------------
h, lines = reply(td, "load links=all alltoall Hca1 Hca1")
k = kv(h)
check(k.get("intra_msgs") == "2" and k.get("msgs") == "2" and k.get("links") == "0" and k.get("max_hops") == "0"
      and k.get("bottleneck") == "-" and not [l for l in lines if l.startswith("link ")],
      "load alltoall on two ranks of Hca1: 2 intra-host messages, no cable loaded (%s)" % h)
h, lines = reply(td, "load links=all alltoall Hca1*2 Hca3")
k = kv(h)
loaded = sorted(l.split()[1] for l in lines if l.startswith("link "))
check(k.get("intra_msgs") == "2" and k.get("msgs") == "6" and k.get("max_hops") == "1" and loaded == [
    "0x0000000000100000:1", "0x0000000000100006:1", "0x0000000000200000:1", "0x0000000000200000:2"],
    "load alltoall Hca1*2 Hca3: 2 of 6 messages intra-host, the other 4 over the 4 directed host cables (%s %s)"
    % (h, loaded))
h, lines = reply(td, "schedule xor Hca1*2")
k = kv(h)
# A rank to another on its own host crosses the host's loopback only, as
# SMPI times it (docs/cost-model.md: 10 GB/s, shared with nothing): the
# block and its 16-byte envelope over 1e10 B/s.
LOOP_US = (1048576 + 16) / 1e10 * 1e6
t_loop = float(k.get("time_us", "nan"))
check(abs(t_loop - LOOP_US) < 0.01 * LOOP_US and lines and lines[0].split()[3] == "0",
      "schedule xor Hca1*2: the one step loads no link, predicted as the loopback's %.3f us (%s %s)"
      % (LOOP_US, h, lines))
h, lines = reply(td, "schedule xor fallback=0 Hca1 Hca2 Hca1 Hca2")
steps = [l.split() for l in lines if l.startswith("STEP")]
intra = [s for s in steps if s[6:] == ["0:2", "1:3", "2:0", "3:1"]]
check(len(steps) == 3 and len(intra) == 1 and intra[0][3] == "0" and all(s[3] == "2" for s in steps if s not in intra),
      "schedule xor Hca1 Hca2 Hca1 Hca2: the step pairing each host's two ranks has max load 0 (%s)" % lines)
h2, _ = reply(td, "schedule xor fallback=0 Hca1 Hca2")
t4, t2 = float(kv(h).get("time_us", "nan")), float(kv(h2).get("time_us", "nan"))
check(abs(t4 - 4 * t2 - LOOP_US) < 0.01 * t4,
      "its prediction is two inter-host steps of two blocks per cable and the loopback's step (%.3f us = "
      "4 x %.3f + %.3f, Hca1 Hca2 alone): the intra-host step loads no cable" % (t4, t2, LOOP_US))
h, lines = reply(td, "clusters 1 Hca1 Hca1 Hca3")
check(h.startswith("OK") and len(lines) == 3 and lines[0] == lines[1],
      "clusters takes a repeat as another rank: one line per word (%s)" % h)

# ---- host sets: ERR DUPLICATE naming the host --------------------------------
for req in ("pathmatrix Hca1 Hca2 Hca1", "shared Hca1 Hca2 Hca1", "order Hca1 Hca1", "pick 1 Hca1 Hca1",
            "map stencil:2 Hca1 Hca1", "simgrid Hca1 Hca1", "diff 1 1 Hca1 Hca1"):
    h, _ = reply(td, req)
    check(h.startswith("ERR DUPLICATE") and "Hca1" in h, "%s: ERR DUPLICATE naming Hca1 (%s)" % (req, h))
h, _ = reply(td, "shared Hca2 Hca1 " + PORT1)
check(h.startswith("ERR DUPLICATE") and "Hca1" in h and PORT1 in h and "2 and 3" in h,
      "shared Hca2 Hca1 <Hca1's port GUID>: both names and their places (%s)" % h)
h, _ = reply(td, "ping")
check(h == "OK pong", "the connection serves on after the refusals")
tt.done()
