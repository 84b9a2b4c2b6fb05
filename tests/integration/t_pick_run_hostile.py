#!/usr/bin/env python3
"""t_pick_run_hostile.py - libtii's pick judge (tii_set_pick_run, through
topoquery pick run=R [bytes=B]) takes topod's reply as untrusted. A canned
server answers each request with one reply: libtii sends run=NAME (and the
block size as bytes=) only for a judged run, and accepts a reply only when
its judged= names the run asked (a reply without judged=, as a topod
before it sends, only for the bound). Refused replies fail with
"malformed" and print no hosts.
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


def head(judged="judged=route "):
    return ("OK gen=5 picked=2 free=4 sharing_free=1 sharing=0 leaves=1 pods=1 max_hops=1 max_load=1 "
            "pairs_failed=0 min_leaves=1 min_pods=1 sharing_free_wider=0 method=pick reason=none bytes=32768 "
            "time_us=10.000 pick_time_us=10.000 first_fit_time_us=20.000 balanced=0 swaps=0 bottleneck_us=9.000 "
            "limit_us=9.000 first_fit_bottleneck_us=19.000 limit=at bottleneck=0x0000000000000001:2 "
            "widened=0 wider_leaves=0 wider_time_us=- random_time_us=30.000 %spattern=alltoall lines=2" % judged)


# (what, topoquery's words before N, what libtii must send before N, reply head, accepted)
CASES = [
    ("run=route bytes=32768, judged=route", ["run=route", "bytes=32768"], "bytes=32768 run=route ", head(), True),
    ("run=route, judged=bound", ["run=route"], "run=route ", head("judged=bound "), False),
    ("run=route, no judged=", ["run=route"], "run=route ", head(""), False),
    ("run=smpi-mpich, judged=smpi-mpich", ["run=smpi-mpich"], "run=smpi-mpich ", head("judged=smpi-mpich "), True),
    ("no run, judged=bound", [], "", head("judged=bound "), True),
    ("no run, no judged= (a topod before 1.8)", [], "", head(""), True),
    ("no run, judged=route", [], "", head(), False),
    ("run=bound (not sent), judged=bound", ["run=bound"], "", head("judged=bound "), True),
]


def main():
    if not os.access(TQ, os.X_OK):
        check(False, "build/bin/topoquery built (make all)")
        return tt.done()
    for what, words, sent, hd, good in CASES:
        r, line = tt.canned_reply(hd + "\n" + "".join(h + "\n" for h in ANSWER), lambda port: subprocess.run(
            [TQ, "-s", "127.0.0.1:%d" % port, "--json", "pick"] + words + ["2"] + FREE,
            capture_output=True, text=True, timeout=30, env=dict(os.environ, TII_TIMEOUT_MS="5000")))
        want = "pick %s2 %s" % (sent, " ".join(FREE))
        asked = line == want
        if good:
            try:
                ok = json.loads(r.stdout)["hosts"] == ANSWER
            except (ValueError, KeyError):
                ok = False
            check(asked and r.returncode == 0 and ok, "%s: sent '%s', accepted" % (what, line))
        else:
            check(asked and r.returncode != 0 and "malformed" in r.stderr and not r.stdout.strip(),
                  "%s: sent '%s', refused (exit %d, %s)" % (what, line, r.returncode, r.stderr.strip()[:100]))
    r = subprocess.run([TQ, "-s", "127.0.0.1:1", "pick", "run=nosuch", "2"] + FREE, capture_output=True, text=True,
                       timeout=30)
    check(r.returncode != 0 and "run=" in r.stderr, "run=nosuch: a usage error (%s)" % r.stderr.strip()[:80])
    return tt.done()


if __name__ == "__main__":
    sys.exit(main())
