#!/usr/bin/env python3
"""pickbalance.py - checks that topod's pick spreads a leaf's hosts over the
upper switches their traffic comes down through (issue 27), from the LFTs
the switches really hold (ibroute) and the CA LIDs ibnetdiscover reports,
not from topod. TAP lines; exit 1 on a failure.

  pickbalance.py --port PORT --meta f.json --ibnd ibnd.out --ibroute ibroute.out

For every answer with method=pick, every chosen leaf A holding c of the
job's hosts and every other chosen leaf L: the hosts of A that L's LFT
sends to through one upper port number at most ceil(c / d), d being the
distinct upper ports L uses for A's free hosts. With c <= d: no two chosen
hosts of A come down through the same upper switch when the free list
offers another. The lists are random plus one made so that taking a leaf's
free hosts in port order collides (so the check is not vacuous).
"""
import argparse
import json
import math
import os
import random
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ibcompare import parse_ibnetdiscover, parse_ibroute  # noqa: E402

failed = 0


def ok(cond, msg):
    global failed
    print(("ok - " if cond else "not ok - ") + msg)
    if not cond:
        failed += 1


def ask(sock, f, req):
    sock.sendall((req + "\n").encode())
    first = f.readline().decode().rstrip("\n")
    m = re.search(r"\blines=(\d+)", first)
    n = int(m.group(1)) if first.startswith("OK") and m else 0
    return first, [f.readline().decode().rstrip("\n") for _ in range(n)]


def kv(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def spread_ok(chosen, free, leaf, up):
    """-> (True, '') or (False, why): every (A, L) pair within ceil(c/d)."""
    by_leaf = {}
    for h in chosen:
        by_leaf.setdefault(leaf[h], []).append(h)
    for a, hs in by_leaf.items():
        offer = [h for h in free if leaf[h] == a]
        for src in by_leaf:
            if src == a:
                continue
            d = len({up(src, h) for h in offer})
            count = {}
            for h in hs:
                count[up(src, h)] = count.get(up(src, h), 0) + 1
            if max(count.values()) > math.ceil(len(hs) / d):
                return False, "leaf %s: %d hosts over ports %s from %s, %d ports offered" % (
                    a, len(hs), sorted(count.items()), src, d)
    return True, ""


def predict(s, f, hs):
    """topod's `load` prediction of an all-to-all of 1 MiB per pair on hs:
    the cost model asked apart from pick."""
    head, _ = ask(s, f, "load bytes=1048576 links=none alltoall %s" % " ".join(hs))
    return float(kv(head)["time_us"]) if head.startswith("OK") else None


def matrix_checks(s, f, a, lists):
    """pick pattern=matrix (issue 27: a traffic matrix): the all-to-all
    written as triples is judged as pattern=alltoall is (the same hosts and
    predictions); a matrix sending only between ranks 0 and 1 is judged by
    its own flows; malformed matrices are refused."""
    free, want = lists[0]
    want = min(want, 12)
    B = 1 << 20
    tri = ["%d:%d:%d" % (i, j, B) for i in range(want) for j in range(want) if i != j]
    ha, la = ask(s, f, "pick bytes=%d pattern=alltoall %d %s" % (B, want, " ".join(free)))
    hm, lm = ask(s, f, "pick pattern=matrix %d %s -- %s" % (want, " ".join(free), " ".join(tri)))
    ka, km = kv(ha), kv(hm)
    # (random_time_us may differ: a matrix has no injection limit to stop at)
    keys = ("time_us", "pick_time_us", "first_fit_time_us", "bottleneck_us", "widened", "leaves")
    same = ha.startswith("OK") and hm.startswith("OK") and la == lm and km.get("pattern") == "matrix" and \
        all(ka.get(x) == km.get(x) for x in keys)
    ok(same, "%s: pick pattern=matrix with the all-to-all's %d triples answers as pattern=alltoall: %s" %
       (a.label, len(tri), "same hosts and predictions" if same else "hosts %s / %s, differing %s" % (
           la, lm, {x: (ka.get(x), km.get(x)) for x in keys + ("pattern",) if ka.get(x) != km.get(x)})))
    # one pair only: far less traffic than the all-to-all, so a faster prediction
    hp, lp = ask(s, f, "pick pattern=matrix %d %s -- 0:1:%d 1:0:%d" % (want, " ".join(free), B, B))
    kp = kv(hp)
    ok(hp.startswith("OK") and len(lp) == want and float(kp["time_us"]) < float(ka["time_us"]) and kp["limit"] == "-",
       "%s: pick pattern=matrix of one pair is judged by its flows: %s us against the all-to-all's %s us" %
       (a.label, kp.get("time_us"), ka.get("time_us")))
    bad = []
    for req, why in (("pick pattern=matrix %d %s" % (want, " ".join(free)), "no triples"),
                     ("pick pattern=matrix %d %s -- 0:%d:5" % (want, " ".join(free), want), "a rank beyond N"),
                     ("pick pattern=matrix %d %s -- 0:1" % (want, " ".join(free)), "not S:D:BYTES"),
                     ("pick pattern=ring %d %s -- 0:1:5" % (want, " ".join(free)), "triples with another pattern")):
        h, _ = ask(s, f, req)
        if not h.startswith("ERR USAGE"):
            bad.append("%s: %s" % (why, h[:120]))
    ok(not bad, "%s: pick pattern=matrix refuses no triples, a rank beyond N, a malformed triple, and triples with "
       "another pattern (ERR USAGE)%s" % (a.label, "" if not bad else ": " + "; ".join(bad)))


def wide_checks(s, f, a, hosts, leaves, leaf, lists):
    """pick leaves=any (issue 27, the default): more leaves than the fewest
    exactly when predicted faster (or, on as many leaves, hosts that
    leaves=fewest refuses for sharing more or being first-fit's: issue 34);
    leaves=fewest keeps the fewest and states the wider pick's time when
    the leaves' uplinks hold it back."""
    # three whole leaves and 4 hosts on each other: 20 on the fewest (3)
    # leaves put 6-7 on a leaf of 4 uplinks (limit=uplinks); 4 per leaf on
    # 5-6 leaves sit at the injection limit
    made = [h for h in hosts if leaf[h] in leaves[:3]]
    for l in leaves[3:]:
        made += [h for h in hosts if leaf[h] == l][:4]
    bad, widened = [], 0
    for free, want in [(made, 20)] + lists:
        req = "%d %s" % (want, " ".join(free))
        hd, ld = ask(s, f, "pick leaves=fewest " + req)
        ha, la = ask(s, f, "pick leaves=any " + req)
        hn, ln = ask(s, f, "pick " + req)
        if ln != la or hn.split(" gen=")[-1] != ha.split(" gen=")[-1]:
            bad.append("pick %d of %d: the default is not leaves=any: %s / %s" % (want, len(free), hn[:200], ha[:200]))
        if not hd.startswith("OK") or not ha.startswith("OK"):
            bad.append("pick %d of %d: %s / %s" % (want, len(free), hd[:100], ha[:100]))
            continue
        d, w = kv(hd), kv(ha)
        nd, nw = len({leaf[h] for h in ld}), len({leaf[h] for h in la})
        td, tw = float(d["time_us"]), float(w["time_us"])
        pd, pw = predict(s, f, ld), predict(s, f, la)
        # fewest: the fewest leaves (unless first-fit was faster), no widening
        if d["method"] == "pick" and (nd != int(d["min_leaves"]) or d["widened"] != "0"):
            bad.append("fewest on %d leaves, min_leaves %s, widened=%s" % (nd, d["min_leaves"], d["widened"]))
        # wider on more leaves exactly when predicted faster (by `load`, not
        # pick); on as many leaves, faster only with hosts leaves=fewest
        # refused for its promise (first-fit's, or sharing more)
        more = nw > nd
        refused = not more and (w["method"] == "first_fit" or int(w["sharing"]) > int(d["sharing"]))
        if (more != (pw < pd * (1 - 1e-6)) and not refused) or more != (w["widened"] == "1") or tw > td * (1 + 1e-6) or \
                abs(pw - tw) > 1e-3 * tw or tw > float(w["first_fit_time_us"]) * (1 + 1e-6):
            bad.append("pick %d of %d: leaves %d -> %d, predicted %.1f -> %.1f us (pick said %.1f -> %.1f), widened=%s"
                       % (want, len(free), nd, nw, pd, pw, td, tw, w["widened"]))
        # fewest states the wider pick's time when limit=uplinks and it is faster
        if more and d["limit"] == "uplinks" and (d["wider_time_us"] == "-" or
                                                 abs(float(d["wider_time_us"]) - tw) > 1e-3 * tw or
                                                 int(d["wider_leaves"]) != nw):
            bad.append("fewest limit=uplinks: wider_time_us=%s wider_leaves=%s, leaves=any answered %.1f us on %d"
                       % (d["wider_time_us"], d["wider_leaves"], tw, nw))
        if free is made:
            made_ok = more and d["limit"] == "uplinks" and w["leaves"] == w["wider_leaves"] and \
                int(w["min_leaves"]) == 3 and float(w["pick_time_us"]) == td
            if not made_ok:
                bad.append("made list: %s / %s" % (hd[:300], ha[:300]))
            made_fig = (nd, td, nw, tw)
        widened += more
    ok(not bad and widened >= 1,
       "%s: pick leaves=any takes more leaves exactly when `load` predicts them faster (%d of %d lists), never "
       "slower than the fewest-leaves pick or first-fit, and is the default; leaves=fewest keeps the fewest and "
       "states wider_time_us under limit=uplinks%s" % (a.label, widened, len(lists) + 1, "" if not bad else ": " + "; ".join(bad[:3])))
    if not bad:
        print("# %s: 20 hosts, 3 whole leaves + 4 free on each other: %d leaves %.1f us, leaves=any %d leaves %.1f us"
              % ((a.label,) + made_fig))
    if a.topoquery:
        r = subprocess.run([a.topoquery, "-s", "127.0.0.1:%d" % a.port, "--json", "pick", "leaves=any", "20"] + made,
                           capture_output=True, text=True)
        ha, la = ask(s, f, "pick leaves=any 20 " + " ".join(made))
        w = kv(ha)
        try:
            j = json.loads(r.stdout)
            same = (sorted(j["hosts"]) == sorted(la) and j["widened"] == (w["widened"] == "1") and
                    j["wider_leaves"] == int(w["wider_leaves"]) and j["leaves"] == int(w["leaves"]) and
                    abs(j["wider_time_us"] - float(w["wider_time_us"])) < 1e-3)
        except (ValueError, KeyError, TypeError) as e:
            same, j = False, "%s: %s %s" % (e, r.stdout[:200], r.stderr[:200])
        ok(same, "%s: topoquery --json pick leaves=any (tii_pick_hosts_leaves) carries widened, wider_leaves and "
           "wider_time_us as topod sent them%s" % (a.label, "" if same else ": %s / %s" % (j, ha[:200])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--ibnd", required=True)
    ap.add_argument("--ibroute", required=True)
    ap.add_argument("--label", default="ftree")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lists", type=int, default=12)
    ap.add_argument("--topoquery", help="also check that libtii (topoquery --json) carries the same fields")
    a = ap.parse_args()
    meta = json.load(open(a.meta))
    topo = parse_ibnetdiscover(open(a.ibnd).read())
    lft = parse_ibroute(open(a.ibroute).read())
    leaf = {h: cas[0]["switch"] for h, cas in meta["hosts"].items()}
    port_of = {h: cas[0]["switch_port"] for h, cas in meta["hosts"].items()}
    lid = {h: topo["lids"][(int(cas[0]["guid"], 16), 1)][0] for h, cas in meta["hosts"].items()}
    swguid = {s["node"]: int(s["guid"], 16) for s in meta["switches"]}
    missing = [s for s in set(leaf.values()) if swguid[s] not in lft]
    ok(not missing and len(lid) == len(leaf), "%s: ibroute read every leaf's LFT, ibnetdiscover every CA's LID (%d hosts)"
       % (a.label, len(lid)))
    if missing:
        return 1

    def up(src, h):
        return lft[swguid[src]].get(lid[h])

    hosts = sorted(leaf)
    leaves = sorted(set(leaf.values()))
    rnd = random.Random(a.seed)
    lists = []
    # made: on two leaves, port 1 and the ports of the next upper round
    # (port order takes two hosts through one upper switch), 3 from each
    made = []
    for l in leaves[:2]:
        mine = sorted((h for h in hosts if leaf[h] == l), key=lambda h: port_of[h])
        ports = {h: up(leaves[2] if l != leaves[2] else leaves[0], h) for h in mine}
        first = mine[0]
        same = [h for h in mine[1:] if ports[h] == ports[first]]
        other = [h for h in mine[1:] if ports[h] != ports[first]]
        made += [first] + same[:1] + other[:4]
    lists.append((made, 8))
    for _ in range(a.lists):
        free = [h for h in hosts if rnd.random() < 0.5]
        if len(free) >= 10:
            lists.append((free, rnd.randint(9, min(len(free) - 1, 30))))
    s = socket.create_connection(("127.0.0.1", a.port))
    f = s.makefile("rb")
    picked = collide_po = 0
    bad = []
    for free, want in lists:
        head, lines = ask(s, f, "pick %d %s" % (want, " ".join(free)))
        k = kv(head)
        if not head.startswith("OK") or len(lines) != want:
            bad.append("pick %d of %d: %s" % (want, len(free), head[:200]))
            continue
        for key in ("balanced", "bottleneck_us", "limit_us", "first_fit_bottleneck_us", "limit"):
            if key not in k:
                bad.append("no %s= in %s" % (key, head[:200]))
        if k.get("method") != "pick":
            print("# %s: first-fit answered for %d of %d" % (a.label, want, len(free)))
            continue
        picked += 1
        good, why = spread_ok(lines, free, leaf, up)
        if not good:
            bad.append("pick %d of %d: %s (%s)" % (want, len(free), why, head[:160]))
        # the same leaves and counts taken in port order: would they collide?
        po = []
        for l in sorted({leaf[h] for h in lines}):
            c = sum(1 for h in lines if leaf[h] == l)
            po += sorted((h for h in free if leaf[h] == l), key=lambda h: port_of[h])[:c]
        collide_po += not spread_ok(po, free, leaf, up)[0]
    ok(not bad and picked >= 3,
       "%s: on %d picks, no leaf's hosts come down through one upper switch where the free list offers another%s"
       % (a.label, picked, "" if not bad else ": " + "; ".join(bad[:3])))
    ok(collide_po >= 1, "%s: %d of those, taken in port order on the same leaves, would collide (the check bites)"
       % (a.label, collide_po))
    # trade: an allocation of two hosts per spine on two leaves, the rest
    # of those leaves free
    alloc = []
    for l in leaves[:2]:
        src = leaves[2]
        mine = sorted((h for h in hosts if leaf[h] == l), key=lambda h: port_of[h])
        by = {}
        for h in mine:
            by.setdefault(up(src, h), []).append(h)
        pairs = [v[:2] for v in by.values() if len(v) >= 2][:2]
        alloc += [h for p in pairs for h in p]
    rest = [h for h in hosts if leaf[h] in leaves[:2] and h not in alloc]
    head, lines = ask(s, f, "pick trade %d %s %s" % (len(alloc), " ".join(alloc), " ".join(rest)))
    k = kv(head)
    good, why = spread_ok(lines, alloc + rest, leaf, up) if head.startswith("OK") else (False, head)
    traded = len(set(lines) - set(alloc))
    ok(good and len(alloc) == 8 and int(k.get("trades", -1)) == traded > 0 and
       {leaf[h] for h in lines} == set(leaves[:2]) and float(k["time_us"]) < float(k["alloc_time_us"]),
       "%s: pick trade: an allocation with two hosts per spine on 2 leaves trades %d hosts on the same leaves, "
       "none then share a spine down, predicted %s us from %s us%s" % (
           a.label, traded, k.get("time_us"), k.get("alloc_time_us"), "" if good else ": " + why))
    wide_checks(s, f, a, hosts, leaves, leaf, lists)
    matrix_checks(s, f, a, lists)
    if a.topoquery:
        # the same trade through libtii (tii_pick_trade): same hosts, same gain
        r = subprocess.run([a.topoquery, "-s", "127.0.0.1:%d" % a.port, "--json", "pick", "trade", str(len(alloc))] +
                           alloc + rest, capture_output=True, text=True)
        try:
            j = json.loads(r.stdout)
            same = (sorted(j["hosts"]) == sorted(lines) and j["trades"] == int(k["trades"]) and
                    all(abs(j[x] - float(k[x])) < 1e-3 for x in ("time_us", "alloc_time_us", "bottleneck_us",
                                                                  "alloc_bottleneck_us", "limit_us")))
        except (ValueError, KeyError, TypeError) as e:
            same, j = False, "%s: %s %s" % (e, r.stdout[:200], r.stderr[:200])
        ok(same, "%s: topoquery --json pick trade (tii_pick_trade) answers the hosts, trades and predicted gain "
           "topod sent%s" % (a.label, "" if same else ": %s / %s" % (j, head)))
        # pick pattern=ring through libtii (tii_pick_hosts_pattern): the
        # ring's figures as topod sent them, no limit stated
        free, want = lists[0]
        hp, lp = ask(s, f, "pick pattern=ring %d %s" % (want, " ".join(free)))
        kp = kv(hp)
        r = subprocess.run([a.topoquery, "-s", "127.0.0.1:%d" % a.port, "--json", "pick", "pattern=ring", str(want)] +
                           free, capture_output=True, text=True)
        try:
            j = json.loads(r.stdout)
            same = (hp.startswith("OK") and kp["pattern"] == "ring" and j["hosts"] == lp and j["limit"] == "-" and
                    j["limit_us"] is None and kp["limit_us"] == "-" and
                    all(abs(j[x] - float(kp[x])) < 1e-3 for x in ("time_us", "first_fit_time_us", "bottleneck_us")) and
                    float(kp["time_us"]) <= float(kp["first_fit_time_us"]) * (1 + 1e-6))
        except (ValueError, KeyError, TypeError) as e:
            same, j = False, "%s: %s %s" % (e, r.stdout[:200], r.stderr[:200])
        ok(same, "%s: pick pattern=ring: topod's ring figures (%s us, first-fit %s us), no limit stated, and "
           "topoquery --json pick pattern=ring carries them%s" % (a.label, kp.get("time_us"), kp.get("first_fit_time_us"),
                                                                  "" if same else ": %s / %s" % (j, hp)))
        head, _ = ask(s, f, "pick %d %s" % (want, " ".join(free)))
        k = kv(head)
        r = subprocess.run([a.topoquery, "-s", "127.0.0.1:%d" % a.port, "--json", "pick", str(want)] + free,
                           capture_output=True, text=True)
        try:
            j = json.loads(r.stdout)
            same = (j["balanced"] == (k["balanced"] == "1") and j["swaps"] == int(k["swaps"]) and
                    j["limit"] == k["limit"] and
                    all(abs(j[x] - float(k[x])) < 1e-3 for x in ("bottleneck_us", "limit_us", "first_fit_bottleneck_us")))
        except (ValueError, KeyError, TypeError) as e:
            same, j = False, "%s: %s %s" % (e, r.stdout[:200], r.stderr[:200])
        ok(same, "%s: topoquery --json pick (libtii 1.4) carries balanced, swaps, bottleneck_us, limit_us, "
           "first_fit_bottleneck_us and limit as topod sent them%s" % (a.label, "" if same else ": %s / %s" % (j, head)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
