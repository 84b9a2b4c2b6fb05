#!/usr/bin/env python3
"""tracepairs.py - every ordered pair of a topod's hosts, traced with ibtracert.

  tracepairs.py --port PORT OUT.json

Asks a running topod (127.0.0.1:PORT) for its hosts and their LIDs, then
runs `ibtracert SLID DLID` for every ordered pair and writes
{"A B": [switch GUID, ...] or null} to OUT.json: the fabric's own answer,
read over SMPs, for comparing two moments (before and after a link fault).
The environment must let ibtracert reach the fabric (lab_umad's LD_PRELOAD
and IBSIM_SOCKNAME).
"""
import json
import sys
from concurrent.futures import ThreadPoolExecutor

from topodask import ask_all
from tracecheck import ibtracert


def main():
    port, out = int(sys.argv[2]), sys.argv[3]
    rows = ask_all(port, ["hosts"])[1:]
    lid = {}
    for r in rows:
        w = r.split()
        lid[w[0]] = int(w[2].split("lid=")[1])
    pairs = [(a, b) for a in sorted(lid) for b in sorted(lid) if a != b]
    with ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda p: ibtracert(lid[p[0]], lid[p[1]]), pairs))
    with open(out, "w") as f:
        json.dump({"%s %s" % p: r for p, r in zip(pairs, res)}, f)


if __name__ == "__main__":
    main()
