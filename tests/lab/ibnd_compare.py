#!/usr/bin/env python3
"""Compare `ibnetdiscover` output with a fabgen.py --meta sidecar.

usage: ibnd_compare.py META.json IBNETDISCOVER.out [--summary]

Checks: number of switches, CAs and links; every node's GUID and
NodeDescription; the exact set of cabled (guid, port) pairs.  Prints one
line per mismatch (at most 20) and exits 1 if there is any, else prints a
one-line summary and exits 0.  With --summary, only prints the counts
found ("switches=N cas=N links=N switch_links=N") and exits 0.
"""

import json
import re
import sys

HDR = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*#\s*"([^"]*)"')
# switch port:  [1]	"H-0002c90300000030"[1](2c90300000031) 	# ...
# CA port:      [1](2c90300000031) 	"S-0008f10500000002"[2]	# ...
PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\]')


def parse_ibnd(text):
    nodes = {}   # guid(int) -> (type, desc)
    ends = set()
    cur = None
    for line in text.splitlines():
        m = HDR.match(line)
        if m:
            cur = int(m.group(4), 16)
            nodes[cur] = (m.group(1), m.group(5))
            continue
        m = PORT.match(line)
        if m and cur is not None:
            lp, rg, rp = int(m.group(1)), int(m.group(3), 16), int(m.group(4))
            ends.add(frozenset([(cur, lp), (rg, rp)]))
            continue
        if not line.strip():
            cur = None
    return nodes, ends


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    text = open(argv[2]).read()
    nodes, links = parse_ibnd(text)
    n_sw = sum(1 for t, _ in nodes.values() if t == "Switch")
    n_ca = sum(1 for t, _ in nodes.values() if t == "Ca")
    sw_guids = {g for g, (t, _) in nodes.items() if t == "Switch"}
    n_swl = sum(1 for l in links if all(g in sw_guids for g, _ in l))
    if "--summary" in argv:
        print("switches=%d cas=%d links=%d switch_links=%d"
              % (n_sw, n_ca, len(links), n_swl))
        return 0
    meta = json.load(open(argv[1]))
    want_nodes = {}
    name2guid = {}
    for s in meta["switches"]:
        g = int(s["guid"], 16)
        want_nodes[g] = ("Switch", s["node"])
        name2guid[s["node"]] = g
    for h, cas in meta["hosts"].items():
        for c in cas:
            g = int(c["guid"], 16)
            want_nodes[g] = ("Ca", c["node"])
            name2guid[c["node"]] = g
    want_links = set()
    for a, pa, b, pb in meta["links"]:
        want_links.add(frozenset([(name2guid[a], pa), (name2guid[b], pb)]))
    errs = []
    c = meta["counts"]
    if n_sw != c["switches"]:
        errs.append("switches: ibnetdiscover %d, meta %d" % (n_sw, c["switches"]))
    if n_ca != c["cas"]:
        errs.append("CAs: ibnetdiscover %d, meta %d" % (n_ca, c["cas"]))
    if len(links) != c["links"]:
        errs.append("links: ibnetdiscover %d, meta %d" % (len(links), c["links"]))
    for g, v in sorted(want_nodes.items()):
        if g not in nodes:
            errs.append("missing node 0x%016x %s" % (g, v))
        elif nodes[g] != v:
            errs.append("node 0x%016x: ibnetdiscover %s, meta %s" % (g, nodes[g], v))
    for g in sorted(set(nodes) - set(want_nodes)):
        errs.append("unexpected node 0x%016x %s" % (g, nodes[g]))
    for l in list(want_links - links)[:5]:
        errs.append("missing link %s" % sorted(l))
    for l in list(links - want_links)[:5]:
        errs.append("unexpected link %s" % sorted(l))
    for e in errs[:20]:
        print(e)
    if errs:
        return 1
    print("switches=%d cas=%d links=%d switch_links=%d match meta"
          % (n_sw, n_ca, len(links), n_swl))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
