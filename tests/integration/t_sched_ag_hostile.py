#!/usr/bin/env python3
"""t_sched_ag_hostile.py - libtii takes topod's allgather schedule replies
(issue 25: agbest, kshift, variants=, ORDER) as untrusted. A real topod
(k=8 fat tree) answers `topoquery schedule agbest` and `schedule kshift`
once; a canned server then sends that reply as it was, which topoquery
prints, and altered copies, each of which must fail as malformed with
nothing printed: agbest as the answered algorithm, an answer that is
neither what was asked nor its fallback, variants= with an empty item, a
missing or an extra variant, a variant named agbest or in an unknown state,
no ring_time_us, and ORDER lines that repeat a host, name one out of range
or miss one.
"""
import json
import os
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import ROOT, Topod, check, done, send_snapshot  # noqa: E402

TQ = os.path.join(ROOT, "build", "bin", "topoquery")
ENV = dict(os.environ, TII_TIMEOUT_MS="5000")


def canned(reply):
    """A server that answers one request with reply; returns (address, thread, seen)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    seen = []

    def serve():
        conn, _ = s.accept()
        with conn:
            seen.append(conn.makefile("rb").readline().decode().strip())
            conn.sendall(reply.encode())
        s.close()

    th = threading.Thread(target=serve)
    th.start()
    return "127.0.0.1:%d" % s.getsockname()[1], th, seen


def ask_tq(addr, algo, job):
    # kshift with fallback=0: answered by itself even where the ring is faster
    opt = ["fallback=0"] if algo == "kshift" else []
    return subprocess.run([TQ, "-s", addr, "--json", "schedule", algo] + opt + job, capture_output=True, text=True,
                          timeout=30, env=ENV)


def genuine(t, algo, job):
    """The request topoquery sends for algo, and the real topod's whole reply to it."""
    addr, th, seen = canned("ERR INTERNAL canned\n")
    ask_tq(addr, algo, job)
    th.join(10)
    with t.conn() as c:
        c.send((seen[0] + "\n").encode())
        head = c.readline() + "\n"
        n = int(tt.parse_kv(head[3:])["lines"]) if head.startswith("OK ") else 0
        return seen[0], head, [c.readline() + "\n" for _ in range(n)]


def alter(head, lines, old, new, where="head"):
    if where == "head":
        assert old in head, (old, head)
        return head.replace(old, new, 1), lines
    out = [new + "\n" if l.startswith(old) else l for l in lines]
    assert out != lines, (old, lines)
    return head, out


def main():
    if not os.access(TQ, os.X_OK):
        check(False, "build/bin/topoquery built (make all)")
        return done()
    d = tt.tmpdir("t_sched_ag_hostile-")
    snap = os.path.join(d, "k8.snap")
    subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "8", "128", snap], check=True,
                   capture_output=True)
    t = Topod(d=d)
    rc, out = send_snapshot("sink=unix:" + t.ingest, snap)
    check(rc == 0 and t.wait_generation(1), "k=8 snapshot delivered (%s)" % out)
    # five hosts over three leaves: agring answers, with an ORDER line
    job = ["h0000", "h0001", "h0040", "h0041", "h0080"]
    req_b, head_b, lines_b = genuine(t, "agbest", job)
    req_k, head_k, lines_k = genuine(t, "kshift", job)
    t.stop()
    kv = tt.parse_kv(head_b[3:]) if head_b.startswith("OK ") else {}
    check(kv.get("requested") == "agbest" and kv.get("algo") in ("agring", "kshift", "allgather", "ring") and
          any(l.startswith("ORDER ") for l in lines_b) and head_k.startswith("OK ") and "algo=kshift" in head_k,
          "the real topod's replies: agbest answered by %s with ORDER, kshift by itself" % kv.get("algo"))
    algo = kv.get("algo", "agring")
    v = kv.get("variants", "")
    first, rest = (v.split(",", 1) + [""])[:2]
    cases = [
        ("agbest as the answer", head_b, lines_b, "algo=" + algo, "algo=agbest", "head"),
        ("kshift asked, agring answered without a fallback", head_k, lines_k, "algo=kshift", "algo=agring", "head"),
        ("variants= with an empty item", head_b, lines_b, "variants=" + first + ",", "variants=" + first + ",,", "head"),
        ("agbest with two variants", head_b, lines_b, "variants=" + v, "variants=" + v.rsplit(",", 1)[0], "head"),
        ("kshift with two variants", head_k, lines_k, "variants=", "variants=agring:offered:1.000,", "head"),
        ("a variant named agbest", head_b, lines_b, "variants=" + first.split(":")[0],
         "variants=agbest", "head"),
        ("a variant in an unknown state", head_b, lines_b, "variants=" + ":".join(first.split(":")[:2]),
         "variants=" + first.split(":")[0] + ":fast", "head"),
        ("no ring_time_us", head_b, lines_b, " ring_time_us=", " ring_time=", "head"),
        ("ORDER repeats a host", head_b, lines_b, "ORDER ", "ORDER 0 1 2 3 3", "lines"),
        ("ORDER names a host out of range", head_b, lines_b, "ORDER ", "ORDER 0 1 2 3 9", "lines"),
        ("ORDER misses a host", head_b, lines_b, "ORDER ", "ORDER 0 1 2 3", "lines"),
    ]
    for what, hd, ln, old, new, where in [("as topod sent it", head_b, lines_b, None, None, None)] + cases:
        try:
            h2, l2 = (hd, ln) if old is None else alter(hd, ln, old, new, where)
        except AssertionError as e:
            check(False, "%s: the reply to alter has no %s" % (what, e))
            continue
        addr, th, seen = canned(h2 + "".join(l2))
        r = ask_tq(addr, "kshift" if hd is head_k else "agbest", job)
        th.join(10)
        asked = seen and seen[0] == (req_k if hd is head_k else req_b)
        if old is None:
            try:
                j = json.loads(r.stdout)
                ok = j.get("algo") == algo and len(j.get("variants", [])) == 3
            except ValueError:
                ok = False
            check(asked and r.returncode == 0 and ok, "%s: printed (%s)" % (what, r.stdout.strip()[:100]))
        else:
            check(asked and r.returncode != 0 and "malformed" in r.stderr and not r.stdout.strip(),
                  "%s: refused (exit %d, %s)" % (what, r.returncode, r.stderr.strip()[:100]))
    return done()


if __name__ == "__main__":
    sys.exit(main())
