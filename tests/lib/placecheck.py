#!/usr/bin/env python3
"""placecheck.py - checks topod's order, pick and map on a served fabric
against other commands of the same topod (clusters, shared, hopsmatrix) and
brute force. TAP lines; exit 1 on a failure.

  placecheck.py --port PORT --label LABEL [--rails]

- order (all hosts, and a shuffled subset): a permutation; leaf clusters and
  pods are contiguous runs; each line's leaf ID equals `clusters depth-1`.
- pick: on random small free lists, brute force over every subset of the
  size asked for (with `shared`, `order`'s pods): the pick's leaves and
  pods are the fewest (leaves first), and when a subset with those shares
  no link above the leaf, the pick shares none (method=pick; a first-fit
  answer must be predicted faster); the reported sharing, leaves and
  max_hops equal `shared`/`hopsmatrix` on the chosen hosts; the same free
  set in another order gives the same answer.
- map: a stencil over hosts on several leaves with 4 slots each: hop_bytes
  equals the hop-weighted neighbour traffic recomputed from `hopsmatrix`,
  is no worse than block mapping's, every host within its slots.
- errors: unknown host (NOTFOUND), a repeat (DUPLICATE), too few slots
  (SLOTS), too many asked (TOOFEW), a second rail (RAIL, --rails).
"""
import argparse
import itertools
import random
import re
import socket
import sys

failed = 0


def ok(cond, msg):
    global failed
    print(("ok - " if cond else "not ok - ") + msg)
    if not cond:
        failed += 1


class Topod:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def ask(self, req):
        self.s.sendall((req + "\n").encode())
        first = self.f.readline().decode().rstrip("\n")
        m = re.search(r"\blines=(\d+)", first)
        n = int(m.group(1)) if first.startswith("OK") and m else 0
        lines = [self.f.readline().decode().rstrip("\n") for _ in range(n)]
        return first, lines


def kv(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--rails", action="store_true")
    a = ap.parse_args()
    L = a.label
    t = Topod(a.port)
    rng = random.Random(5)
    _, hl = t.ask("hosts")
    hosts = [x.split()[0] for x in hl]
    depth = int(kv(t.ask("depth")[0])["depth"])

    # ---- order
    first, lines = t.ask("order")
    names = [x.split()[0] for x in lines]
    ok(first.startswith("OK") and sorted(names) == sorted(hosts), f"{L}: order lists every host once")

    def runs_contiguous(col):
        seen, prev = set(), None
        for x in lines:
            v = x.split()[col]
            if v != prev:
                if v in seen:
                    return False
                seen.add(v)
                prev = v
        return True

    ok(runs_contiguous(1) and runs_contiguous(2), f"{L}: order keeps each leaf cluster and each pod contiguous")
    _, cl = t.ask(f"clusters {depth - 1} " + " ".join(names))
    ok([c.split()[1] for c in cl] == [x.split()[1] for x in lines],
       f"{L}: order's leaf IDs are `clusters {depth - 1}`'s")
    sub = rng.sample(hosts, min(len(hosts), 12))
    _, l2 = t.ask("order " + " ".join(sub))
    ok([x.split()[0] for x in l2] == [n for n in names if n in set(sub)], f"{L}: order of a subset is the same order")

    # ---- pick against brute force
    hm = {}
    podof = {x.split()[0]: x.split()[2] for x in lines}

    def hops_of(hs):
        _, m = t.ask("hopsmatrix " + " ".join(hs))
        out = {}
        for i, row in enumerate(m):
            for j, v in enumerate(row.split()):
                out[(hs[i], hs[j])] = "-" if v == "-1" else v
        return out

    cases = bad = nondet = figs_bad = 0
    for _ in range(12):
        nf = min(len(hosts), rng.randint(5, 9))
        free = rng.sample(hosts, nf)
        want = rng.randint(2, nf - 1)
        first, chosen = t.ask(f"pick leaves=fewest {want} " + " ".join(free))
        if not first.startswith("OK"):
            bad += 1
            print("# " + first)
            continue
        p = kv(first)
        best = None
        for c in itertools.combinations(free, want):
            sc = kv(t.ask("shared " + " ".join(c))[0])
            key = (int(sc["leaves"]), len({podof[h] for h in c}), int(sc["sharing"]))
            best = key if best is None or key < best else best
        cases += 1
        if p.get("method") == "first_fit":
            if p.get("reason") != "slower" or float(p["pick_time_us"]) <= float(p["first_fit_time_us"]):
                bad += 1
                print(f"# first-fit answered without cause: {first}")
        elif (int(p["leaves"]), int(p["pods"])) != best[:2] or (best[2] == 0 and int(p["sharing"]) != 0):
            bad += 1
            print(f"# brute force (leaves, pods, sharing) {best}, pick: {first} {chosen}")
        sh = kv(t.ask("shared " + " ".join(chosen))[0])
        hm = hops_of(chosen)
        mh = max([int(v) for v in hm.values() if v != "-"] or [0])
        if sh["sharing"] != p["sharing"] or sh["leaves"] != p["leaves"] or int(p["max_hops"]) != mh:
            figs_bad += 1
            print(f"# figures: pick {p} shared {sh} max_hops {mh}")
        f2 = free[:]
        rng.shuffle(f2)
        if t.ask(f"pick leaves=fewest {want} " + " ".join(f2)) != (first, chosen):
            nondet += 1
    ok(cases == 12 and bad == 0,
       f"{L}: pick takes the fewest leaves, then pods, and is sharing-free whenever brute force finds such a set on them ({cases} cases)")
    ok(figs_bad == 0, f"{L}: pick's sharing, leaves and max_hops equal shared/hopsmatrix on the chosen hosts")
    ok(nondet == 0, f"{L}: pick answers the same for the free list in another order")

    # ---- map: a stencil over several leaves
    mh_hosts = [x.split()[0] for x in lines][:: max(1, len(lines) // 8)][:8]
    n = 4 * len(mh_hosts)
    dims = (4, len(mh_hosts), 1) if len(mh_hosts) > 1 else (4, 1, 1)
    first, ml = t.ask(f"map stencil:{dims[0]}x{dims[1]}x{dims[2]} " + " ".join(h + "*4" for h in mh_hosts))
    ok(first.startswith("OK") and len(ml) == n, f"{L}: map of a {n}-rank stencil onto {len(mh_hosts)} hosts x 4 slots")
    if first.startswith("OK"):
        m = kv(first)
        rh = [x.split()[1] for x in ml]
        hm = hops_of(mh_hosts)
        hb = 0
        for r in range(n):
            x, y = r % dims[0], r // dims[0]
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                u = (x + dx, y + dy)
                if 0 <= u[0] < dims[0] and 0 <= u[1] < dims[1]:
                    a2, b2 = rh[r], rh[u[0] + dims[0] * u[1]]
                    if a2 != b2 and hm[(a2, b2)] != "-":
                        hb += int(hm[(a2, b2)])
        ok(int(m["hop_bytes"]) == hb, f"{L}: map's hop_bytes ({m['hop_bytes']}) is the neighbour traffic x hops from hopsmatrix ({hb})")
        # never predicted slower than block (by time where the cables have rates, else by hop-bytes)
        if m["time_us"] != "-" and m["block_time_us"] != "-":
            ok(float(m["time_us"]) <= float(m["block_time_us"]),
               f"{L}: map is never predicted slower than block (method={m['method']} reason={m['reason']} {m['time_us']} us vs block {m['block_time_us']} us, rr {m['rr_time_us']} us)")
        else:
            ok(int(m["hop_bytes"]) <= int(m["block_hop_bytes"]),
               f"{L}: map is no worse than block (method={m['method']} {m['hop_bytes']} vs block {m['block_hop_bytes']}, rr {m['rr_hop_bytes']})")
        ok(all(rh.count(h) <= 4 for h in mh_hosts), f"{L}: map keeps every host within its slots")
        again = t.ask(f"map stencil:{dims[0]}x{dims[1]}x{dims[2]} " + " ".join(h + "*4" for h in mh_hosts))
        ok(again == (first, ml), f"{L}: map gives the same answer twice")

    # ---- errors
    ok(t.ask("order nosuchhost")[0].startswith("ERR NOTFOUND"), f"{L}: order of an unknown host is ERR NOTFOUND")
    ok(t.ask(f"pick 1 {hosts[0]} {hosts[0]}")[0].startswith("ERR DUPLICATE"), f"{L}: pick with a repeated host is ERR DUPLICATE")
    ok(t.ask(f"pick 3 {hosts[0]} {hosts[1]}")[0].startswith("ERR TOOFEW"), f"{L}: pick of more than free is ERR TOOFEW")
    ok(t.ask(f"map stencil:9 {hosts[0]}*4 {hosts[1]}*4")[0].startswith("ERR SLOTS"), f"{L}: map with too few slots is ERR SLOTS")
    ok(t.ask(f"map stencil:2 {hosts[0]} {hosts[0]}")[0].startswith("ERR DUPLICATE"), f"{L}: map with a repeated host is ERR DUPLICATE")
    if a.rails:
        _, hl2 = t.ask("hosts")
        two = [x.split() for x in hl2 if "rails=2" in x]
        if two:
            second = two[0][0] + "/" + two[0][3].split(":")[0]
            ok(t.ask(f"pick 1 {second} {hosts[1]}")[0].startswith("ERR RAIL"), f"{L}: pick of a second rail is ERR RAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
