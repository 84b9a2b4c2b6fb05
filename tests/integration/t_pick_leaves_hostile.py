#!/usr/bin/env python3
"""t_pick_leaves_hostile.py - libtii's rule on leaves (tii_pick_hosts_leaves,
through topoquery pick [leaves=...]) takes topod's reply as untrusted. A
canned server answers each request with one reply: a widened answer (more
leaves than min_leaves) is accepted under leaves=any (topod's default, not
sent), under leaves=auto only when the reply states the fewest-leaves
pick (pick_time_us) slower than the random picks' mean (random_time_us),
under leaves=fewest never. Every refused reply fails with "malformed" and prints
no hosts; an accepted one is printed as sent.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import check  # noqa: E402

TQ = os.path.join(tt.ROOT, "build", "bin", "topoquery")
FREE = ["h1", "h2", "h3", "h4"]
ANSWER = ["h1", "h3"]


def head(widened=1, random="15.000", wider="wider_leaves=2 wider_time_us=10.000"):
    return ("OK gen=5 picked=2 free=4 sharing_free=1 sharing=0 leaves=2 pods=1 max_hops=3 max_load=1 "
            "pairs_failed=0 min_leaves=1 min_pods=1 sharing_free_wider=0 method=pick reason=none bytes=1048576 "
            "time_us=10.000 pick_time_us=20.000 first_fit_time_us=20.000 balanced=0 swaps=0 bottleneck_us=9.000 "
            "limit_us=9.000 first_fit_bottleneck_us=19.000 limit=at bottleneck=0x0000000000000001:2 "
            "widened=%d %s random_time_us=%s pattern=alltoall lines=2" % (widened, wider, random))


# (what, leaves= sent or None, reply head, accepted)
CASES = [
    ("default, widened", None, head(), True),
    ("default, widened, no random picks stated", None, head(random="-"), True),
    ("default, widened, random_time_us not a time", None, head(random="soon"), False),
    ("leaves=any, widened, random picks slower", "any", head(random="25.000"), True),
    ("leaves=auto, widened, the fewest leaves slower than random picks", "auto", head(), True),
    ("leaves=auto, widened, no random picks stated", "auto", head(random="-"), False),
    ("leaves=auto, widened, random picks slower than the fewest leaves", "auto", head(random="25.000"), False),
    ("leaves=fewest, widened", "fewest", head(), False),
    ("leaves=fewest, not widened, no wider pick", "fewest", head(widened=0, random="-",
                                                               wider="wider_leaves=0 wider_time_us=-"), True),
]


def main():
    if not os.access(TQ, os.X_OK):
        check(False, "build/bin/topoquery built (make all)")
        return tt.done()
    for what, leaves, hd, good in CASES:
        opt = ["leaves=" + leaves] if leaves else []
        r, line = tt.canned_reply(hd + "\n" + "".join(h + "\n" for h in ANSWER), lambda port: subprocess.run(
            [TQ, "-s", "127.0.0.1:%d" % port, "--json", "pick"] + opt + ["2"] + FREE,
            capture_output=True, text=True, timeout=30, env=dict(os.environ, TII_TIMEOUT_MS="5000")))
        seen = [line] if line is not None else []
        # any is topod's default: libtii sends no leaves= for it
        want = "pick %s2 %s" % ("leaves=%s " % leaves if leaves in ("fewest", "auto") else "", " ".join(FREE))
        asked = seen and seen[0] == want
        if good:
            try:
                j = json.loads(r.stdout)
                ok = j["hosts"] == ANSWER and j["widened"] == (hd.find("widened=1") >= 0)
            except (ValueError, KeyError):
                ok = False
            check(asked and r.returncode == 0 and ok, "%s: sent '%s', accepted, printed %s" % (
                what, seen[0] if seen else "", r.stdout.strip()[:100]))
        else:
            check(asked and r.returncode != 0 and "malformed" in r.stderr and not r.stdout.strip(),
                  "%s: sent '%s', refused (exit %d, %s)" % (what, seen[0] if seen else "", r.returncode,
                                                           r.stderr.strip()[:100]))
    return tt.done()


if __name__ == "__main__":
    sys.exit(main())
