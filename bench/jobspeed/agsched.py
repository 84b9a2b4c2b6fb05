#!/usr/bin/env python3
"""agsched.py - topod's predicted times of the allgather schedules
(docs/performance.md "Allgather schedules in topod"): `schedule agbest
fallback=0 flows=0` on the lab fabrics of run.py (ibsim + OpenSM + the
osmtopo plugin + topod, bench/jobspeed/lab_up.sh), for contiguous,
fragmented and cyclic jobs (the contiguous job's hosts with ranks dealt
round-robin over its leaves, as bench/coll/run.py --cyclic), one rank per
host, and what topod answers under its rule (`schedule agbest`).

  python3 bench/jobspeed/agsched.py [--fabrics ft2,ft3,ft2-mixed] [--sizes 16,64] [--bytes 1048576]

Prints a markdown table: per job the predicted time (us) of the MPIs' ring
in rank order (the baseline), the ring in the fabric's order, kShift (k =
8) and kPrefix (k = 8 where it divides P), each variant's speed-up over the
ring in rank order, the host-cable bound and the answer.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as js  # noqa: E402


def cyclic(hosts):
    by = {}
    for h in hosts:
        by.setdefault(h.split("-")[0], []).append(h)
    cols = [by[k] for k in sorted(by)]
    return [c[i] for i in range(max(len(c) for c in cols)) for c in cols if i < len(c)]


def kv(head):
    return dict(w.split("=", 1) for w in head.split()[1:] if "=" in w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabrics", default="ft2,ft3,ft2-mixed")
    ap.add_argument("--sizes", default="16,64")
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--work", default="/tmp/agsched")
    a = ap.parse_args()
    print("| fabric | job | hosts | ring (rank order) us | agring | kshift | allgather (kPrefix) | bound us | answer |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for fab in a.fabrics.split(","):
        with js.Lab(fab, js.FABRICS[fab], os.path.join(a.work, fab)) as lab:
            t = js.Topod(lab.port)
            leaves = js.leaves_of(lab.meta)
            for n in map(int, a.sizes.split(",")):
                for shape in ("contiguous", "fragmented", "cyclic"):
                    hosts = js.shape_hosts("contiguous" if shape == "cyclic" else shape, n, leaves, 1000 + n)
                    if not hosts:
                        continue
                    if shape == "cyclic":
                        hosts = cyclic(hosts)
                    q = "schedule agbest flows=0 bytes=%d %%s %s" % (a.bytes, " ".join(hosts))
                    head, _ = t.ask(q % "fallback=0")
                    ans, _ = t.ask(q % "fallback=1")
                    if not head.startswith("OK") or not ans.startswith("OK"):
                        js.log("%s %s %d: %s %s" % (fab, shape, n, head, ans))
                        continue
                    f, g = kv(head), kv(ans)
                    ring = float(f["ring_time_us"])
                    cells = {}
                    for v in f["variants"].split(","):
                        name, state, us = v.split(":")
                        cells[name] = "-" if us == "-" else "%.0f (%.2fx%s)" % (
                            float(us), ring / float(us), "" if state == "offered" else ", " + state)
                        if us == "-":
                            cells[name] = state
                    print("| %s | %s | %d | %.0f | %s | %s | %s | %s | %s%s |" % (
                        fab, shape, n, ring, cells["agring"], cells["kshift"], cells["allgather"],
                        re.sub(r"\.\d+$", "", f["bound_us"]), g["algo"],
                        " (fallback)" if g["fallback"] != "none" else ""), flush=True)
            t.close()


if __name__ == "__main__":
    main()
