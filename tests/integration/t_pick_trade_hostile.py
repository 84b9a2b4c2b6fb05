#!/usr/bin/env python3
"""t_pick_trade_hostile.py - libtii's tii_pick_trade (through topoquery pick
trade) takes topod's reply as untrusted: a canned server answers each
request with one reply, and every inconsistent one (a trade count that is
not the free hosts answered, a host not asked about, a repeat, a wrong
allocation size, a line too many, a bad time, no balance fields) must fail
with "malformed" and no hosts printed; the well-formed one is printed as
sent (hosts, trades, the predicted gain).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import check  # noqa: E402

TQ = os.path.join(tt.ROOT, "build", "bin", "topoquery")
ALLOC = ["a1", "a2", "a3"]
FREE = ["f1", "f2"]
TAIL = ("sharing=0 leaves=2 pods=1 max_hops=3 max_load=2 pairs_failed=0 bytes=1048576 time_us=10.000 "
        "alloc_time_us=15.000 alloc_bottleneck_us=14.000 balanced=1 swaps=1 bottleneck_us=9.000 limit_us=9.000 "
        "first_fit_bottleneck_us=14.000 limit=at bottleneck=0x0000000000000001:2")


def head(alloc=3, trades=1, tail=TAIL, lines=3):
    return "OK gen=5 alloc=%d free=2 trades=%d %s lines=%d" % (alloc, trades, tail, lines)


CASES = [
    ("well-formed", head(), ["a1", "f1", "a3"], True),
    ("trades says 2, one free host answered", head(trades=2), ["a1", "f1", "a3"], False),
    ("trades says 0, one free host answered", head(trades=0), ["a1", "f1", "a3"], False),
    ("a host not asked about", head(), ["a1", "zz", "a3"], False),
    ("a host twice", head(), ["a1", "f1", "f1"], False),
    ("alloc is not the allocation's size", head(alloc=4), ["a1", "f1", "a3"], False),
    ("a line too many", head(lines=4), ["a1", "f1", "a3", "f2"], False),
    ("trades beyond the allocation", head(trades=9), ["a1", "f1", "a3"], False),
    ("a bad time", head(tail=TAIL.replace("time_us=10.000", "time_us=ten")), ["a1", "f1", "a3"], False),
    ("no balance fields", head(tail=TAIL.split(" balanced=")[0]), ["a1", "f1", "a3"], False),
]


def main():
    if not os.access(TQ, os.X_OK):
        check(False, "build/bin/topoquery built (make all)")
        return tt.done()
    for what, hd, lines, good in CASES:
        r, line = tt.canned_reply(hd + "\n" + "".join(l + "\n" for l in lines), lambda port: subprocess.run(
            [TQ, "-s", "127.0.0.1:%d" % port, "--json", "pick", "trade", "3"] + ALLOC + FREE,
            capture_output=True, text=True, timeout=30, env=dict(os.environ, TII_TIMEOUT_MS="5000")))
        seen = [line] if line is not None else []
        asked = seen and seen[0] == "pick trade 3 " + " ".join(ALLOC + FREE)
        if good:
            try:
                j = json.loads(r.stdout)
                ok = (j["hosts"] == lines and j["trades"] == 1 and j["time_us"] == 10.0 and j["alloc_time_us"] == 15.0
                      and j["alloc_bottleneck_us"] == 14.0 and j["limit"] == "at")
            except (ValueError, KeyError):
                ok = False
            check(asked and r.returncode == 0 and ok, "%s: sent '%s', printed %s" % (
                what, seen[0] if seen else "", r.stdout.strip()[:160]))
        else:
            check(asked and r.returncode != 0 and "malformed" in r.stderr and not r.stdout.strip(),
                  "%s: refused (exit %d, %s)" % (what, r.returncode, r.stderr.strip()[:120]))
    return tt.done()


if __name__ == "__main__":
    sys.exit(main())
