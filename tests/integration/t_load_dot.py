#!/usr/bin/env python3
"""`topoquery load --dot` is bounded like every other picture: on the k=24 fat
tree (3,456 hosts) random:1 over every host loads 17,976 directed links;
the DOT file holds the 4,096 heaviest (PIC_DOT_LINKS_MAX), says so in its
label and on stderr, and is written in well under a second of drawing (the
drawing pairs links, quadratic in them: it was unbounded before, every link
drawn). A small job is drawn whole, without a note."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import Topod, check, done, note, tmpdir, parse_kv  # noqa: E402
from bigfab import k24  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TQ = os.path.join(ROOT, "build", "bin", "topoquery")
MAX = 4096

d = tmpdir()
t = Topod("--load", k24(d))
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
hf = os.path.join(d, "hosts")
with open(hf, "w") as f:
    f.write("\n".join(hosts) + "\n")


def load_dot(out, *hostargs):
    env = dict(os.environ)
    env.pop("TII_SERVERS", None)
    t0 = time.monotonic()
    r = subprocess.run([TQ, "-s", "127.0.0.1:%d" % t.port, "load", "--links", "--dot", out, "random:1"]
                       + list(hostargs), capture_output=True, text=True, env=env, timeout=120)
    return r, time.monotonic() - t0


out = os.path.join(d, "big.dot")
r, secs = load_dot(out, "-f", hf)
nlinks = sum(1 for line in r.stdout.splitlines() if line.startswith("link "))
note("topoquery exit %d in %.2f s, %d loaded links listed; stderr: %s" % (r.returncode, secs, nlinks, r.stderr.strip()))
dot = open(out).read() if os.path.exists(out) else ""
edges = dot.count(" -> ")
check(r.returncode == 0 and nlinks > MAX and edges <= MAX and dot.endswith("}\n"),
      "3,456 hosts, %d loaded links: %d edges drawn (at most %d), the file complete (%d bytes)"
      % (nlinks, edges, MAX, len(dot)))
check(re.search(r"the %d heaviest of %d loaded links drawn" % (MAX, nlinks), dot) is not None
      and "the %d heaviest of %d loaded links drawn (at most %d)" % (MAX, nlinks, MAX) in r.stderr,
      "the truncation is said in the graph's label and on stderr")
check("style=bold" in dot, "the busiest link (drawn bold) is among those kept")
check(len(dot) < 2 * 1024 * 1024, "the file is bounded: %d KiB" % (len(dot) // 1024))

small = os.path.join(d, "small.dot")
r, secs = load_dot(small, *hosts[:8])
sdot = open(small).read() if os.path.exists(small) else ""
check(r.returncode == 0 and "heaviest" not in sdot and r.stderr == "" and sdot.count(" -> ") > 0,
      "8 hosts: every loaded link drawn (%d edges), no note" % sdot.count(" -> "))
t.stop()
done()
