#!/usr/bin/env python3
"""hiercheck.py - topod's hierarchy against the fabric's real structure.

  hiercheck.py --port PORT --meta FABGEN_META.json [--label WHAT]

For a tree fabric from fabgen (fattree, xgft, stampede-small) the
neighbour-joining hierarchy must come out as the tree's own levels: the
deepest level groups hosts exactly by the leaf switch their first HCA is
cabled to; on a 3-level tree the level above groups them by pod (leaves
joined through the same level-2 switches); level 0 is the whole fabric.
Ground truth is fabgen's description of what it built, not topod.
"""
import argparse
import collections
import json
import re
import socket
import sys


def ask(f, s, req):
    s.sendall((req + "\n").encode())
    first = f.readline().decode().rstrip("\n")
    m = re.search(r"\blines=(\d+)", first)
    body = [f.readline().decode().rstrip("\n") for _ in range(int(m.group(1)))] if m else []
    return first, body


def partition(groups):
    return sorted(sorted(g) for g in groups)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    label = (a.label + ": ") if a.label else ""
    m = json.load(open(a.meta))
    levels = m["params"].get("levels") or m["params"].get("xgft", {}).get("h") or m["params"].get("h")
    leaf_of = {h: rails[0]["switch"] for h, rails in m["hosts"].items()}
    level_of = {sw["node"]: sw["level"] for sw in m["switches"]}
    # Pods: leaves linked to the same level-2 switches (connected components
    # of the leaf/level-2 graph).
    up = collections.defaultdict(set)
    for x, px, y, py in m["links"]:
        if level_of.get(x) == 1 and level_of.get(y) == 2:
            up[x].add(y)
        if level_of.get(y) == 1 and level_of.get(x) == 2:
            up[y].add(x)
    pod = {}
    for leaf in sorted(up):
        if leaf in pod:
            continue
        stack, comp = [leaf], set()
        while stack:
            n = stack.pop()
            if n in comp:
                continue
            comp.add(n)
            for l2 in up[n]:
                stack.extend(x for x in up if l2 in up[x])
        for n in comp:
            pod[n] = leaf

    s = socket.create_connection(("127.0.0.1", a.port), timeout=60)
    f = s.makefile("rb")
    first, _ = ask(f, s, "depth")
    depth = int(first.split("depth=")[1])
    bad = 0
    ok = depth == levels
    bad += not ok
    print("%s - %shierarchy depth %d, fabric has %d switch levels" % ("ok" if ok else "not ok", label, depth, levels))
    hosts = sorted(m["hosts"])
    want = {depth - 1: partition(
        [h for h in hosts if leaf_of[h] == leaf] for leaf in set(leaf_of.values()))}
    if levels == 3:
        want[1] = partition([h for h in hosts if pod[leaf_of[h]] == p] for p in set(pod[leaf_of[h]] for h in hosts))
    want[0] = [sorted(hosts)]
    for lvl in sorted(want):
        if lvl < 0 or lvl >= depth:
            continue
        first, body = ask(f, s, "clusters %d %s" % (lvl, " ".join(hosts)))
        got = collections.defaultdict(list)
        for line in body:
            h, cid = line.split()
            got[cid].append(h)
        same = partition(got.values()) == want[lvl]
        bad += not same
        name = {0: "the whole fabric", depth - 1: "leaf switches"}.get(lvl, "pods")
        print("%s - %slevel %d = %s (%d clusters)" % ("ok" if same else "not ok", label, lvl, name, len(want[lvl])))
    multi = [h for h, rails in m["hosts"].items() if len(rails) > 1]
    if multi:
        r, _ = ask(f, s, "clusters 0 %s/HCA-2" % multi[0])
        ok = r.startswith("ERR RAIL")
        bad += not ok
        print("%s - %sa hierarchy question about a second rail is refused: %s" % ("ok" if ok else "not ok", label, r[:60]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
