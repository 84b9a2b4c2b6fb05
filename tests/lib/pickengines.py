#!/usr/bin/env python3
"""pickengines.py - checks topod's pick on a served fabric against the true
minimum computed from the fabric file alone (fabgen's JSON sidecar), not
from topod. TAP lines; exit 1 on a failure.

  pickengines.py --port PORT --meta f.json --label LABEL

Truth from the sidecar: a host's leaf is the switch its cable reaches; a
pod is a set of leaves joined through level-2 switches (a 2-level tree is
one pod). For each free list and N: the fewest leaves holding N (free
counts, largest first) and, among sets of that many leaves holding N, the
fewest pods (brute force over leaf subsets). `pick leaves=fewest` must
answer exactly those (method=pick), with the prediction fields present and
time_us <= first_fit_time_us unless first-fit's hosts (the first N free by
name) break the promise (more leaves or pods than those, more sharing hosts
than the answer's, by `shared`, or on one leaf not the best fit); a leaf
that holds N alone is the one with the fewest free hosts that suffices.
The default rule (leaves=any) must answer the same hosts; or hosts that
leaves=fewest refused, predicted no slower than its answer: first-fit's, or
hosts on its leaves and pods sharing more (the promise covers sharing, the
default does not); or a pick on more leaves (widened=1) predicted faster
than them and than random picks from the free list (random_time_us) if
stated; or the fastest random pick where it lies on the fewest leaves and
pods.
"""
import argparse
import itertools
import json
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


def ask(sock, f, req):
    sock.sendall((req + "\n").encode())
    first = f.readline().decode().rstrip("\n")
    m = re.search(r"\blines=(\d+)", first)
    n = int(m.group(1)) if first.startswith("OK") and m else 0
    return first, [f.readline().decode().rstrip("\n") for _ in range(n)]


def kv(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def truth(meta):
    leaf = {h: cas[0]["switch"] for h, cas in meta["hosts"].items()}
    level = {s["node"]: s["level"] for s in meta["switches"]}
    up = {}
    for a, _, b, _ in meta["links"]:
        if level.get(a) == 1 and level.get(b) == 2:
            up.setdefault(a, set()).add(b)
        if level.get(b) == 1 and level.get(a) == 2:
            up.setdefault(b, set()).add(a)
    leaves = sorted(set(leaf.values()))
    # pods: leaves joined through shared level-2 switches; a 2-level tree
    # (no level-3 switches) is one pod
    if not any(s["level"] == 3 for s in meta["switches"]):
        return leaf, {l: 0 for l in leaves}
    pod, n = {}, 0
    for l in leaves:
        if l in pod:
            continue
        stack = [l]
        pod[l] = n
        while stack:
            x = stack.pop()
            for y in leaves:
                if y not in pod and up.get(x, set()) & up.get(y, set()):
                    pod[y] = n
                    stack.append(y)
        n += 1
    return leaf, pod


def minimum(free, want, leaf, pod):
    cnt = {}
    for h in free:
        cnt[leaf[h]] = cnt.get(leaf[h], 0) + 1
    desc = sorted(cnt.values(), reverse=True)
    k, acc = 0, 0
    while acc < want:
        acc += desc[k]
        k += 1
    pods = min(len({pod[l] for l in c}) for c in itertools.combinations(cnt, k) if sum(cnt[l] for l in c) >= want)
    one = min([v for v in cnt.values() if v >= want], default=None)
    return k, pods, one, cnt


def k_of(free, want, leaf):
    """The fewest leaves holding want of the free hosts."""
    cnt = {}
    for h in free:
        cnt[leaf[h]] = cnt.get(leaf[h], 0) + 1
    k, acc = 0, 0
    for v in sorted(cnt.values(), reverse=True):
        if acc >= want:
            break
        acc += v
        k += 1
    return k


def refused(d, fw, dchosen, leaf, pod):
    """The default's answer is one leaves=fewest refused for its promise
    and predicted no slower than fewest's: first-fit's hosts, or hosts on
    the same number of leaves and pods sharing more."""
    if not d or not fw or d.get("widened") != "0" or d["time_us"] == "-" or fw["time_us"] == "-" or \
            float(d["time_us"]) > float(fw["time_us"]) * (1 + 1e-6) or fw["method"] != "pick":
        return False
    same = len({leaf[h] for h in dchosen}) == int(fw["leaves"]) and len({pod[leaf[h]] for h in dchosen}) == int(fw["pods"])
    return d["method"] == "first_fit" or (same and int(d["sharing"]) > int(fw["sharing"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    meta = json.load(open(a.meta))
    leaf, pod = truth(meta)
    hosts = sorted(leaf)
    rng = random.Random(a.seed)
    s = socket.create_connection(("127.0.0.1", a.port))
    f = s.makefile("rb")
    L = a.label
    cases = []
    for frac in (1.0, 0.75, 0.5, 0.3):
        free = sorted(rng.sample(hosts, max(4, int(len(hosts) * frac))))
        for want in sorted({2, len(free) // 4, len(free) // 2, (3 * len(free)) // 4, len(free) - 1}):
            if 1 <= want <= len(free):
                cases.append((free, want))
    bad_min = bad_fields = bad_time = bad_one = fallback = bad_auto = widened = kept = 0
    for free, want in cases:
        order = free[:]
        rng.shuffle(order)
        first, chosen = ask(s, f, f"pick leaves=fewest {want} " + " ".join(order))
        dfirst, dchosen = ask(s, f, f"pick {want} " + " ".join(order))
        if dchosen != chosen:
            d = kv(dfirst) if dfirst.startswith("OK") else {}
            t, pt, rt = (float(d[x]) if d.get(x, "-") != "-" else -1
                         for x in ("time_us", "pick_time_us", "random_time_us"))
            cause = 0 <= t < pt and t <= max(rt, pt) * (1 + 1e-6)
            dl = len({leaf[h] for h in dchosen})
            if cause and d.get("widened") == "1" and int(d["leaves"]) > int(d["min_leaves"]) and dl > k_of(free, want, leaf):
                widened += 1
                print(f"# {L}: default widened {want} of {len(free)}: {dfirst}")
            elif cause and rt >= 0 and d.get("widened") == "0" and dl == k_of(free, want, leaf) and \
                    len({pod[leaf[h]] for h in dchosen}) == int(kv(first).get("pods", -1)):
                # the fastest random pick happened to lie on the fewest leaves and pods
                print(f"# {L}: default took a random pick on the fewest leaves {want} of {len(free)}: {dfirst}")
            elif refused(d, kv(first) if first.startswith("OK") else {}, dchosen, leaf, pod):
                print(f"# {L}: default took hosts leaves=fewest refused {want} of {len(free)}: {dfirst}")
            else:
                bad_auto += 1
                print(f"# {L}: default differs without cause: {dfirst} / fewest {first}")
        if not first.startswith("OK"):
            bad_fields += 1
            print("# " + first)
            continue
        p = kv(first)
        k, pods, one, cnt = minimum(free, want, leaf, pod)
        need = ("time_us", "pick_time_us", "first_fit_time_us", "method", "reason", "min_leaves", "min_pods",
                "sharing_free_wider", "bytes")
        if any(x not in p for x in need) or p["time_us"] == "-" or p["first_fit_time_us"] == "-" or \
                len(chosen) != want or not set(chosen) <= set(free) or p["bytes"] != str(1 << 20):
            bad_fields += 1
            print(f"# fields: {first}")
            continue
        if float(p["time_us"]) > float(p["first_fit_time_us"]) * (1 + 1e-6):
            # leaves=fewest keeps the promise over a faster first-fit that breaks it
            ff = sorted(free)[:want]
            ffl, ffp = len({leaf[h] for h in ff}), len({pod[leaf[h]] for h in ff})
            ffs = int(kv(ask(s, f, "shared " + " ".join(ff))[0]).get("sharing", -1))
            breaks = ffl > k or ffp > pods or ffs > int(p["sharing"]) or (k == 1 and cnt[leaf[ff[0]]] > one)
            if p["method"] != "pick" or not breaks:
                bad_time += 1
                print(f"# slower than first-fit, which keeps the promise: {first}")
            else:
                kept += 1
        true_leaves = len({leaf[h] for h in chosen})
        true_pods = len({pod[leaf[h]] for h in chosen})
        if p["method"] == "first_fit":
            fallback += 1
            if p["reason"] != "slower" or float(p["pick_time_us"]) <= float(p["first_fit_time_us"]):
                bad_fields += 1
                print(f"# first_fit without cause: {first}")
            print(f"# {L}: first-fit answered for {want} of {len(free)}: {first}")
            if (true_leaves, true_pods) != (k, pods):   # only where it keeps the promise too
                bad_min += 1
                print(f"# first-fit breaks the promise: want leaves={k} pods={pods}, got {true_leaves}/{true_pods}")
            continue
        if (int(p["leaves"]), int(p["pods"]), int(p["min_leaves"]), int(p["min_pods"]), true_leaves, true_pods) != \
                (k, pods, k, pods, k, pods):
            bad_min += 1
            print(f"# {want} of {len(free)}: want leaves={k} pods={pods}, got {true_leaves}/{true_pods}: {first}")
        if one is not None and (true_leaves != 1 or cnt[leaf[chosen[0]]] != one):
            bad_one += 1
            print(f"# one leaf: best fit {one}, got {cnt.get(leaf[chosen[0]])}: {first}")
    n = len(cases)
    ok(bad_fields == 0, f"{L}: pick answers {n} free lists with time_us, pick_time_us, first_fit_time_us, method, min_leaves, min_pods")
    ok(bad_min == 0 and fallback * 2 <= n,
       f"{L}: pick's leaves and pods are the true minimum from the fabric file ({n - fallback} of {n} picks; {fallback} first-fit)")
    ok(bad_one == 0, f"{L}: where one leaf holds N, pick takes the one with the fewest free hosts")
    ok(bad_time == 0, f"{L}: time_us <= first_fit_time_us on every answer, unless first-fit's hosts break the "
       f"promise ({kept} such)")
    ok(bad_auto == 0, f"{L}: the default answers leaves=fewest's hosts, or more leaves only where predicted faster "
       f"({widened} of {n} widened)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
