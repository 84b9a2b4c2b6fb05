#!/usr/bin/env python3
"""tracecheck.py - topod's routes against ibtracert, pair by pair.

  tracecheck.py --port PORT --pairs N [--seed S] [--rails] [--label WHAT] [--plane NAME]

Asks a running topod (127.0.0.1:PORT) for its hosts, picks N random ordered
pairs of distinct hosts (with --rails, half of them name a random HCA as
"host/HCA-n"), and for each pair compares the switch sequence of topod's
`path` with the one `ibtracert SLID DLID` reads from the (simulated) fabric
over SMPs. The environment must let ibtracert reach the fabric (LD_PRELOAD
of libumad2sim and IBSIM_SOCKNAME, as lab_umad sets them).

Also checks, on a subset, that `hopsmatrix` and `hopsbatch` agree with the
paths, so the batched forms are held to the same ground truth.

Prints "ok - ..." / "not ok - ..." lines; exit 1 on any difference.
"""
import argparse
import os
import random
import re
import socket
import subprocess
import sys

SW_RE = re.compile(r"-> switch port \{(0x[0-9a-f]+)\}\[(\d+)\]")


class Topod:
    def __init__(self, port, plane=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.f = self.s.makefile("rb")
        if plane:
            self.s.sendall(("plane %s\n" % plane).encode())
            r = self.line()
            if not r.startswith("OK plane="):
                raise SystemExit("not ok - plane %s: %s" % (plane, r))

    def line(self):
        return self.f.readline().decode().rstrip("\n")

    def ask(self, req):
        self.s.sendall((req + "\n").encode())
        first = self.line()
        m = re.search(r"\blines=(\d+)", first)
        body = [self.line() for _ in range(int(m.group(1)))] if first.startswith("OK") and m else []
        return first, body


def ibtracert(slid, dlid):
    r = subprocess.run(["ibtracert", str(slid), str(dlid)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "To ca" not in r.stdout:
        return None
    return [g.lower() for g, _ in SW_RE.findall(r.stdout)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rails", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--plane", default=None, help="ask topod's plane NAME (several subnets)")
    ap.add_argument("--lmc", action="store_true",
                    help="half the pairs name the destination as lid:N with N = base LID + 1")
    a = ap.parse_args()
    t = Topod(a.port, a.plane)
    first, body = t.ask("hosts")
    hosts = {}
    for l in body:
        w = l.split()
        hosts[w[0]] = [r.split(":")[0] for r in w[2:]]
    names = sorted(hosts)
    rnd = random.Random(a.seed)
    pairs = []
    for _ in range(a.pairs):
        x, y = rnd.sample(names, 2)
        if a.rails and rnd.random() < 0.5:
            x = x + "/" + rnd.choice(hosts[x])
            y = y + "/" + rnd.choice(hosts[y])
        pairs.append((x, y))
    lid = {}
    for x, y in pairs:
        for n in (x, y):
            if n not in lid:
                r, _ = t.ask("resolve " + n)
                m = re.search(r"\blid=(\d+)", r)
                lid[n] = int(m.group(1)) if m else 0
    if a.lmc:
        # With LMC > 0 each port owns 2^LMC LIDs and OpenSM routes them on
        # different paths; "lid:N" must follow LID N, not the base LID.
        for k in range(0, len(pairs), 2):
            x, y = pairs[k]
            if lid[y]:
                alt = "lid:%d" % (lid[y] + 1)
                lid[alt] = lid[y] + 1
                pairs[k] = (x, alt)
    bad = 0
    failed_both = 0
    if a.lmc:
        # The check has teeth only if some lid:N route differs from the
        # base LID's: count them.
        differ = 0
        for x, y in pairs:
            if y.startswith("lid:"):
                base = [n for n in lid if lid[n] == lid[y] - 1 and not n.startswith("lid:")]
                if base:
                    r1, b1 = t.ask("path %s %s" % (x, y))
                    r2, b2 = t.ask("path %s %s" % (x, base[0]))
                    differ += r1.startswith("OK") and r2.startswith("OK") and b1 != b2
        print("%s - %sLMC: %d lid:N routes differ from their base LID's route" % ("ok" if differ else "not ok",
              (a.label + ": ") if a.label else "", differ))
        bad += 0 if differ else 1
    hops = {}
    for x, y in pairs:
        r, body = t.ask("path %s %s" % (x, y))
        mine = [l.split()[0] for l in body] if r.startswith("OK") else None
        truth = ibtracert(lid[x], lid[y]) if lid[x] and lid[y] else None
        if mine is None and truth is None:
            failed_both += 1
            continue
        if mine != truth:
            bad += 1
            if bad <= 5:
                print("# %s -> %s (lids %d -> %d): topod %s, ibtracert %s" % (x, y, lid[x], lid[y], r if mine is None else mine, truth))
        else:
            hops[(x, y)] = len(mine)
    label = (a.label + ": ") if a.label else ""
    print("%s - %s%d random pairs: topod's switch sequence equals ibtracert's (%d routes fail in both)"
          % ("not ok" if bad else "ok", label, len(pairs), failed_both))
    # Batched forms against the same paths.
    sub = names[:min(len(names), 24)]
    r, rows = t.ask("hopsmatrix " + " ".join(sub))
    mism = 0
    for i, row in enumerate(rows):
        for j, v in enumerate(row.split()):
            if i == j:
                continue
            pr, pb = t.ask("path %s %s" % (sub[i], sub[j]))
            want = len(pb) if pr.startswith("OK") else -1
            mism += int(v) != want
    bad += 1 if mism or not r.startswith("OK") else 0
    print("%s - %shopsmatrix of %d hosts agrees with path" % ("not ok" if mism or not r.startswith("OK") else "ok", label, len(sub)))
    req = " ".join("%s:%s" % p for p in list(hops)[:50])
    r, rows = t.ask("hopsbatch " + req)
    mism = sum(1 for row, p in zip(rows, list(hops)[:50]) if row.split()[2] != str(hops[p]))
    bad += 1 if mism or not r.startswith("OK") else 0
    print("%s - %shopsbatch of %d pairs agrees with path" % ("not ok" if mism or not r.startswith("OK") else "ok", label, len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
