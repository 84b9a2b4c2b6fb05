#!/usr/bin/env python3
"""libtii reads `delaymatrix` and `simgrid all` replies as untrusted: a fake
server answers each request with a crafted reply, and topoquery (which calls
tii_get_delay_matrix / tii_get_simgrid_fabric) must print the good ones
exactly and refuse every bad one (a malformed-reply error, nothing on
stdout): wrong counts, entries past TII_DELAY_NS_MAX, a non-zero diagonal,
short rows, a platform announcing more than the limits, lines or bytes that
do not add up."""
import os
import socket
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TQ = os.path.join(ROOT, "build", "bin", "topoquery")
failed = 0
reply = [b""]
asked = []


def check(cond, what):
    global failed
    print(("ok - " if cond else "not ok - ") + what)
    failed += not cond


def serve(srv):
    while True:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        f = c.makefile("rb")
        line = f.readline()
        asked.append(line.decode(errors="replace").strip())
        try:
            c.sendall(reply[0])
        except OSError:
            pass
        c.close()


srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
port = srv.getsockname()[1]
threading.Thread(target=serve, args=(srv,), daemon=True).start()


def tq(body, *args):
    reply[0] = body.encode()
    p = subprocess.run([TQ, "-s", "127.0.0.1:%d" % port, "-t", "3000"] + list(args), capture_output=True,
                       timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


H = ["a", "b"]
good = "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 1300\n4000300 0\n"
rc, out, err = tq(good, "matrix", "--delay=1000", *H)
check(rc == 0 and out == "a 0 1300\nb 4000300 0\n" and asked[-1] == "delaymatrix bytes=1000 a b",
      "a good reply is printed as sent, the request names bytes=1000 (%r, %r)" % (out, asked[-1]))
rc, out, err = tq(good.replace("1300", "-1"), "-j", "matrix", "--delay=1000", *H)
check(rc == 0 and '"delay_ns":[[0,null],[4000300,0]]' in out and '"unit":"ns"' in out,
      "JSON: null where the route fails: %s" % out.strip())
bad = {
    "n other than asked": "OK gen=7 n=3 bytes=1000 unit=ns lines=2\n0 1\n1 0\n",
    "bytes other than asked": "OK gen=7 n=2 bytes=999 unit=ns lines=2\n0 1\n1 0\n",
    "another unit": "OK gen=7 n=2 bytes=1000 unit=us lines=2\n0 1\n1 0\n",
    "no unit": "OK gen=7 n=2 bytes=1000 lines=2\n0 1\n1 0\n",
    "fewer lines announced": "OK gen=7 n=2 bytes=1000 unit=ns lines=1\n0 1\n",
    "an entry past TII_DELAY_NS_MAX": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 40000000000000001\n1 0\n",
    "an entry of 2^64": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 18446744073709551616\n1 0\n",
    "a negative entry other than -1": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 -2\n1 0\n",
    "a non-zero diagonal": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n5 1\n1 0\n",
    "a short row": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0\n1 0\n",
    "a long row": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 1 2\n1 0\n",
    "a word that is no number": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 1x\n1 0\n",
    "a cut-short table": "OK gen=7 n=2 bytes=1000 unit=ns lines=2\n0 1\n",
}
for what, body in bad.items():
    rc, out, err = tq(body, "matrix", "--delay=1000", *H)
    cut = what == "a cut-short table"
    check(rc not in (0, 2) and out == "" and (cut or "malformed" in err),
          "delay matrix refused: %s (exit %d: %s)" % (what, rc, err.strip()[:60]))
rc, out, err = tq(good, "matrix", "--delay=9007199254740993", *H)
check(rc == 2 and "--delay" in err, "--delay above 2^53 is a usage error before anything is sent")

# ---- simgrid all ----------------------------------------------------------------
doc = ["<?xml version='1.0'?>"] + ["<x/>"] * 13 + ["</platform>"]
text = "".join(l + "\n" for l in doc)


def sg(hosts=1, zones=1, links=1, routes=1, nbytes=None, lines=None, body=text):
    return "OK gen=7 hosts=%d omitted=0 zones=%d links=%d routes=%d bytes=%d lines=%d\n%s" % (
        hosts, zones, links, routes, len(body) if nbytes is None else nbytes,
        len(doc) if lines is None else lines, body)


rc, out, err = tq(sg(), "simgrid", "--all")
check(rc == 0 and out == text and asked[-1] == "simgrid all", "simgrid --all: a consistent reply is written as sent")
bad = {
    "more hosts than TOPO_SIMGRID_ALL_HOSTS_MAX": sg(hosts=4097, zones=1, routes=4097),
    "more bytes than TOPO_SIMGRID_ALL_BYTES_MAX": sg(nbytes=256 * 1024 * 1024 + 1),
    "fewer bytes than lines": sg(nbytes=3),
    "bytes that do not add up": sg(nbytes=len(text) + 5),
    "fewer lines than hosts + links + routes + 12": sg(hosts=1, links=5, routes=1),
    "fewer routes than zone pairs": sg(hosts=3, zones=3, routes=2, lines=len(doc)),
    "no hosts": sg(hosts=0),
    "a document that does not end in </platform>": sg(body=text.replace("</platform>", "</platfor>")),
}
for what, body in bad.items():
    rc, out, err = tq(body, "simgrid", "--all")
    check(rc not in (0, 2) and out == "" and "malformed" in err,
          "simgrid --all refused: %s (exit %d: %s)" % (what, rc, err.strip()[:60]))
srv.close()
sys.exit(1 if failed else 0)
