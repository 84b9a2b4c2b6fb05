"""topod detached (without --foreground), as an init script or an
administrator by hand would start it:
- it answers light and heavy requests (heavy ones run on the worker pool,
  whose threads must be started in the detached process, not before the
  fork that detaches it);
- SIGTERM stops it within seconds, by the PID in its pidfile;
- it warns at start when it has no ingest, or a TCP ingest without a key
  (every snapshot there would be refused), and not otherwise.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import (BIN, ROOT, Conn, check, done, from_text, parse_kv, send_snapshot,  # noqa: E402
                       tmpdir)

d = tmpdir()
FIX = os.path.join(ROOT, "tests", "fixtures")
pidfile = os.path.join(d, "topod.pid")
sock = os.path.join(d, "ingest.sock")
pid = None


def alive(p):
    try:
        os.kill(p, 0)
        return True
    except ProcessLookupError:
        return False


def stop(p):
    """TERM, then KILL after 10 s; True if TERM sufficed."""
    os.kill(p, 15)
    for _ in range(100):
        if not alive(p):
            return True
        time.sleep(0.1)
    os.kill(p, 9)
    return False


try:
    # The detached process keeps stdout and stderr (daemon(1, 1)): read
    # the ready line, not to the end; stderr goes to a file.
    errf = open(os.path.join(d, "stderr"), "w+")
    p = subprocess.Popen([os.path.join(BIN, "topod"), "-l", "127.0.0.1:0", "-i", "unix:" + sock, "--pidfile",
                          pidfile, "--threads", "2"], stdout=subprocess.PIPE, stderr=errf, text=True)
    line = p.stdout.readline()
    port = int(line.split("=")[1]) if line.startswith("ready port=") else 0
    rc = p.wait(10)
    for _ in range(50):
        if os.path.exists(pidfile) and open(pidfile).read().strip():
            break
        time.sleep(0.1)
    pid = int(open(pidfile).read()) if os.path.exists(pidfile) else None
    check(rc == 0 and port and pid and alive(pid),
          "topod detaches, says ready (port %d) and writes its pidfile (%s)" % (port, pid))
    errf.seek(0)
    err = errf.read()
    check("warning" not in err, "no warning with a UNIX ingest: %r" % err[:200])
    snap = os.path.join(d, "f.snap")
    from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), snap)
    rc, out = send_snapshot("sink=unix:" + sock, snap)
    check(rc == 0, "a snapshot is delivered to the detached topod: %s" % out)
    with Conn(("127.0.0.1", port), timeout=10) as c:
        info = c.ask("info")
        hosts = []
        head = c.ask("hosts")
        for _ in range(int(parse_kv(head[3:]).get("lines", 0))):
            hosts.append(c.readline().split()[0])
        check(info.startswith("OK ") and len(hosts) == 4, "it answers info and hosts: %s" % head)
        heavy = c.ask("hopsmatrix %s" % " ".join(hosts))
        check(heavy.startswith("OK "), "and a heavy request (hopsmatrix, on the worker pool): %s" % heavy)
    check(stop(pid), "SIGTERM stops it")
    pid = None

    p = subprocess.Popen([os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0", "-i", "tcp:127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    p.terminate()
    err = p.communicate(timeout=10)[1]
    check("without --ingest-key: every snapshot on it will be refused" in err,
          "a TCP ingest without a key: a warning at start: %r" % err.splitlines()[:1])
    p = subprocess.Popen([os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    p.terminate()
    err = p.communicate(timeout=10)[1]
    check("warning: no --ingest" in err, "no ingest at all: a warning at start: %r" % err.splitlines()[:1])
finally:
    if pid and alive(pid):
        os.kill(pid, 9)
done()
