#!/usr/bin/env python3
"""drpaths.py - directed-route paths to every switch, from ibnetdiscover output.

  drpaths.py IBNETDISCOVER_OUTPUT   ->  lines "LID DRPATH" (e.g. "49 0,1,3,4")

LID-routed SMPs reach a switch only if the fabric's LFTs route to its LID,
and some engines on degraded fabrics (ftree with failed links) leave a
switch's own LID unreachable from the SM's host. Directed routes follow the
cables instead, so `ibroute -D PATH` can read such a switch's LFT anyway.
The path starts at the port ibnetdiscover was initiated from.
"""
import collections
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from ibcompare import parse_ibnetdiscover  # noqa: E402

text = open(sys.argv[1]).read()
m = re.search(r"Initiated from node ([0-9a-f]+) port ([0-9a-f]+)", text)
start = int(m.group(1), 16)
f = parse_ibnetdiscover(text)
adj = collections.defaultdict(list)
for (a, pa), (b, pb) in f["links"]:
    adj[a].append((pa, b))
    adj[b].append((pb, a))
# The initiating CA's own port: the one with a link (port 1 on the lab's CAs).
path = {start: [0]}
q = collections.deque([start])
while q:
    n = q.popleft()
    for p, peer in sorted(adj[n]):
        if peer not in path:
            path[peer] = path[n] + [p]
            if f["nodes"][peer][0] == "switch":
                q.append(peer)
for g, (typ, _, _) in sorted(f["nodes"].items()):
    if typ == "switch" and g in path and (g, 0) in f["lids"]:
        print(f["lids"][(g, 0)][0], ",".join(map(str, path[g])))
