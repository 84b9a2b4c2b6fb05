#!/usr/bin/env python3
"""Checks topod's `load` replies against a brute-force count on a live lab.

    loadcheck.py PORT LABEL [SEED]

For a job on some of the fabric's hosts (uneven ranks per host), each
pattern's flows are enumerated here from their definitions (docs/protocol.md),
every distinct host pair's route is read with `path` (the plain LFT walk,
switch by switch) and the source's cable with `resolve`, and each flow adds
one message and its bytes to every link on its route. The result must equal
topod's `link` lines, totals, per-hop split and maximum. TAP lines.
"""
import random
import socket
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from topodtest import check, done, note, parse_kv  # noqa: E402

port, label = int(sys.argv[1]), sys.argv[2]
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
sock = socket.create_connection(("127.0.0.1", port))
f = sock.makefile("rwb")


def ask(line):
    f.write((line + "\n").encode())
    f.flush()
    head = f.readline().decode().rstrip("\n")
    n = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
    return head, [f.readline().decode().rstrip("\n") for _ in range(n)]


head, lines = ask("hosts")
hosts = [ln.split()[0] for ln in lines]
job_hosts = rng.sample(hosts, min(len(hosts), 10))
ranks = []
for h in job_hosts:
    ranks += [h] * rng.randint(1, 3)
R = len(ranks)
rank_tokens = []
for h in job_hosts:
    rank_tokens.append("%s*%d" % (h, ranks.count(h)))

cable, route = {}, {}
for h in job_hosts:
    hd, _ = ask("resolve " + h)
    kv = parse_kv(hd[3:])
    cable[h] = "%s:%s" % (kv["node"], kv["port"])


def path(a, b):
    if (a, b) not in route:
        hd, ls = ask("path %s %s" % (a, b))
        if not hd.startswith("OK"):
            route[(a, b)] = None
        else:
            links = [cable[a]]
            for ln in ls:
                w = ln.split()
                out = w[2].split("=")[1]
                links.append("%s:%s" % (w[0], out))
            route[(a, b)] = links
    return route[(a, b)]


def stencil(dims, periodic):
    n = 1
    for d in dims:
        n *= d
    fl = []
    for r in range(n):
        c, x = [], r
        for d in dims:
            c.append(x % d)
            x //= d
        seen = set()
        for k, d in enumerate(dims):
            for s in (-1, 1):
                cc = list(c)
                cc[k] += s
                if cc[k] < 0 or cc[k] >= d:
                    if not periodic:
                        continue
                    cc[k] %= d
                q, m = 0, 1
                for kk, dd in enumerate(dims):
                    q += cc[kk] * m
                    m *= dd
                if q != r and q not in seen:
                    seen.add(q)
                    fl.append((r, q))
    return fl


def flows_of(spec, n):
    if spec in ("alltoall", "allgather"):
        return [(r, s) for r in range(n) for s in range(n) if r != s]
    if spec.startswith("shift:"):
        k = int(spec[6:]) % n
        return [(r, (r + k) % n) for r in range(n)] if k else []
    if spec == "ring":
        out = []
        for r in range(n):
            for q in sorted({(r - 1) % n, (r + 1) % n}, key=lambda q: 0 if q == (r - 1) % n else 1):
                if q != r:
                    out.append((r, q))
        return out
    if spec.startswith("stencil"):
        parts = spec.split(":")
        dims = [int(x) for x in parts[1].split(",")]
        return stencil(dims, len(parts) > 2)
    raise ValueError(spec)


def brute(flows):
    load, tot = {}, dict(msgs=0, bytes=0, intra=0, failed=0)
    hops = {}
    for s, d, b in flows:
        tot["msgs"] += 1
        tot["bytes"] += b
        a, c = ranks[s], ranks[d]
        if a == c:
            tot["intra"] += 1
            continue
        p = path(a, c)
        if p is None:
            tot["failed"] += 1
            continue
        hops[len(p) - 1] = hops.get(len(p) - 1, 0) + 1
        for k in p:
            m, by = load.get(k, (0, 0))
            load[k] = (m + 1, by + b)
    return load, tot, hops


def compare(spec, flows, request, n=None):
    load, tot, hops = brute(flows)
    hd, ls = ask(request)
    if not check(hd.startswith("OK"), "%s %s: %s" % (label, spec, hd[:120])):
        return
    kv = parse_kv(hd[3:])
    got = {}
    ghops = {}
    for ln in ls:
        w = ln.split()
        if w[0] == "link":
            got[w[1]] = (int(w[3]), int(w[4]))
        elif w[0] == "hops":
            ghops[int(w[1])] = int(parse_kv(" ".join(w[2:]))["msgs"])
    mx = max((v[1] for v in load.values()), default=0)
    check(got == load, "%s %s: %d links equal the brute-force walk of %d flows"
          % (label, spec, len(got), len(flows)))
    if got != load:
        diff = [k for k in set(got) | set(load) if got.get(k) != load.get(k)][:5]
        note("differ: " + ", ".join("%s topod %s brute %s" % (k, got.get(k), load.get(k)) for k in diff))
    check(int(kv["msgs"]) == tot["msgs"] and int(kv["bytes"]) == tot["bytes"]
          and int(kv["intra_msgs"]) == tot["intra"] and int(kv["failed_msgs"]) == tot["failed"]
          and int(kv["max_bytes"]) == mx and ghops == hops and int(kv["ranks"]) == (n or R),
          "%s %s: totals, intra-host %d, failed %d, hop split %s, max %d" %
          (label, spec, tot["intra"], tot["failed"], sorted(hops.items()), mx))


B = 1000
for spec in ("alltoall", "ring", "shift:3", "shift:-5"):
    fl = [(s, d, B) for s, d in flows_of(spec, R)]
    compare(spec, fl, "load bytes=%d %s %s" % (B, spec, " ".join(rank_tokens)))
for spec in ("stencil2d:3,4", "stencil2d:3,4:periodic", "stencil3d:2,3,2:periodic"):
    sub = ranks[:12]
    if len(ranks) < 12:
        continue
    toks = []
    for h in job_hosts:
        c = sub.count(h)
        if c:
            toks.append("%s*%d" % (h, c))
    fl = [(s, d, B) for s, d in flows_of(spec, 12)]
    compare(spec, fl, "load bytes=%d %s %s" % (B, spec, " ".join(toks)), 12)
trip = [(rng.randrange(R), rng.randrange(R), rng.randint(1, 10**6)) for _ in range(60)]
merged = {}
for s, d, b in trip:
    merged[(s, d)] = merged.get((s, d), 0) + b
compare("matrix", [(s, d, b) for (s, d), b in sorted(merged.items())],
        "load matrix %s -- %s" % (" ".join(rank_tokens), " ".join("%d:%d:%d" % t for t in trip)))
# Issue 37: byte counts beyond 32 bits, exact: 6 GB per pair of an
# all-to-all, and a traffic matrix whose 60th entry is 341 GB (the entry
# topod refused before) with one at 2^53, the largest message.
B6 = 6 * 10**9
compare("alltoall 6 GB", [(s, d, B6) for s, d in flows_of("alltoall", R)],
        "load bytes=%d alltoall %s" % (B6, " ".join(rank_tokens)))
big = [(rng.randrange(R), rng.randrange(R), rng.randint(1, 10**12)) for _ in range(60)]
big[59] = (0, R - 1, 341303846527)
big[10] = (R - 1, 0, 2**53)
merged = {}
for s, d, b in big:
    merged[(s, d)] = merged.get((s, d), 0) + b
compare("matrix 341 GB", [(s, d, b) for (s, d), b in sorted(merged.items())],
        "load matrix %s -- %s" % (" ".join(rank_tokens), " ".join("%d:%d:%d" % t for t in big)))
hd, _ = ask("load bytes=%d alltoall %s" % (2**53 + 1, " ".join(rank_tokens)))
check(hd.startswith("ERR USAGE") and "2^53" in hd, "%s bytes=2^53+1 refused: %s" % (label, hd[:100]))
hd, _ = ask("load matrix %s -- %s" % (" ".join(rank_tokens), " ".join(["0:1:%d" % 2**53] * 600)))
check(hd.startswith("ERR RANGE") and "2^62" in hd, "%s 600 entries of 2^53 (2^62.2 in all) refused: %s"
      % (label, hd[:100]))
hd, _ = ask("load alltoall nosuchhost")
check(hd.startswith("ERR NOTFOUND") or hd.startswith("ERR "), "%s unknown host refused: %s" % (label, hd))
done()
