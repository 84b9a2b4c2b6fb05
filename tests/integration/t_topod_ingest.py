"""topod ingest: start-up sources, snapshots over the ingest socket, bad
snapshots that must leave the previous fabric served, persistence across a
restart, and the protocol's error handling. No OpenSM needed: the fabric is
a real ibnetdiscover/ibroute capture of ibsim's 2-switch example."""
import os
import shutil
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bigfab import k24  # noqa: E402
from snapdecode import reseal  # noqa: E402
from topodtest import (ROOT, Conn, Topod, check, done, from_text, note, send_snapshot,  # noqa: E402
                       snap_info, tmpdir)

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()
snap1 = os.path.join(d, "one.snap")
snap2 = os.path.join(d, "two.snap")
from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), snap1)
time.sleep(0.01)
from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), snap2)
gen1 = int(snap_info(snap1)["generation"])
gen2 = int(snap_info(snap2)["generation"])

# --- start-up from text dumps -------------------------------------------------
t = Topod("--topology", os.path.join(FIX, "2sw4hca.topo"), "--lfts", os.path.join(FIX, "2sw4hca.lfts"))
i = t.info()
check(i["nodes"] == "6" and i["switches"] == "2" and i["cas"] == "4" and i["links"] == "6",
      "serves an ibnetdiscover + ibroute capture given with --topology/--lfts")
check(i["engine"] == "text" and i["source"].startswith("text "), "info names the source")
t.stop()

# --- start-up from a snapshot file, then ingest --------------------------------
state = tmpdir()
t = Topod("--load", snap1, state_dir=state)
check(int(t.info()["generation"]) == gen1, "serves --load FILE at start")
rc, out = send_snapshot("sink=unix:" + t.ingest, snap2)
check(rc == 0, "a good snapshot is acknowledged (%s)" % out)
check(t.wait_generation(gen2), "the new generation is served after ingest")
check(os.path.exists(os.path.join(state, "fabric.snap")) and
      int(snap_info(os.path.join(state, "fabric.snap"))["generation"]) == gen2,
      "the accepted snapshot is persisted in the state directory")

# --- bad snapshots: rejected, named, previous one still served -----------------
raw = open(snap2, "rb").read()
bad = {
    "bit-flipped": raw[:200] + bytes([raw[200] ^ 0x10]) + raw[201:],
    "header-damaged": raw[:20] + bytes([raw[20] ^ 1]) + raw[21:],
    "garbage": b"GARBAGE!" * 16,
    "wrong-version": raw[:8] + b"\x63\x00\x00\x00" + raw[12:],
}
for name, data in bad.items():
    p = os.path.join(d, name + ".snap")
    open(p, "wb").write(data)
    rc, out = send_snapshot("sink=unix:" + t.ingest, p)
    check(rc != 0 and "ERR INVALID" in out, "%s snapshot is refused with a reason: %s" % (name, out))
check(int(t.info()["generation"]) == gen2, "after four bad snapshots the previous fabric is still served")
log = t.logtext()
check("payload checksum mismatch" in log and "header checksum mismatch" in log,
      "each rejection is logged with its reason")

# A producer that dies mid-snapshot: nothing is published, topod stays up.
with Conn(t.ingest, unix=True) as c:
    c.send(raw[:len(raw) // 2])
time.sleep(0.3)
check(t.ask("ping") == "OK pong" and int(t.info()["generation"]) == gen2,
      "a snapshot cut off mid-way is dropped and topod keeps serving")
st = t.admin_ask("stats")
note(st)
check(st.startswith("OK ") and "rejected=5" in st and "ingest_truncated=1" in st,
      "admin stats counts the rejections, the truncated one too")

# --- the protocol: errors keep the connection usable ---------------------------
with t.conn() as c:
    r = c.ask("frobnicate")
    check(r.startswith("ERR UNKNOWN"), "unknown command: %s" % r)
    check(c.ask("ping") == "OK pong", "connection usable after an error")
    r = c.ask("ping \x01")
    check(r.startswith("ERR PROTO"), "control character refused: %s" % r)
    r = c.ask("stats")
    check(r.startswith("ERR DENIED"), "admin command refused on the query port: %s" % r)
    check(c.ask("ping") == "OK pong", "still usable")
    r = c.ask("   ")
    check(r.startswith("ERR PROTO"), "empty request: %s" % r)
with t.conn() as c:
    c.send("x" * (300 * 1024))
    r = c.readline()
    check(r.startswith("ERR TOOLONG"), "a line over the limit gets ERR TOOLONG")
    check(c.closed_by_peer(), "and the connection is closed")
with t.conn() as c:
    c.send("ping\nping\ninfo\nping\n")
    rs = [c.readline() for _ in range(4)]
    check(rs[0] == rs[1] == rs[3] == "OK pong" and rs[2].startswith("OK gen=") and " generation=" in rs[2],
          "pipelined requests are answered in order")

# --- restart serves the persisted fabric before anything new arrives ----------
check(t.admin_ask("shutdown") == "OK shutting down", "admin shutdown")
t.p.wait(10)
check(t.p.returncode == 0, "topod exits 0 after shutdown")
t2 = Topod(state_dir=state)
check(int(t2.info()["generation"]) == gen2 and t2.info()["source"].startswith("state "),
      "a restarted topod serves the persisted generation at once")
os.kill(t2.p.pid, signal.SIGHUP)
t0 = time.time()
while time.time() - t0 < 10 and "is already served" not in t2.logtext():
    time.sleep(0.05)
check(t2.p.poll() is None and "SIGHUP: reloading" in t2.logtext() and
      "generation %d from state" % gen2 in t2.logtext() and int(t2.info()["generation"]) == gen2,
      "SIGHUP re-reads the snapshot source (systemctl reload): the same generation is a no-op, topod keeps running")
t2.stop()

# A corrupt state file is an error at start, not a silent empty fabric.
sf = os.path.join(state, "fabric.snap")
open(sf, "r+b").write(b"X")
try:
    Topod(state_dir=state)
    check(False, "a corrupt state file stops start-up")
except RuntimeError as e:
    check("bad magic" in str(e) or "not a topod snapshot" in str(e), "a corrupt state file stops start-up with a reason")
shutil.rmtree(state, ignore_errors=True)

# --- a large snapshot, read past libevent straight into topod's buffer ----------
# Once the header is in, the payload is read from the socket into the
# snapshot's buffer (server_ingest.c, ingest_direct_cb): the cases above
# (713 bytes) end within the first read; these cross many.
big = open(k24(d), "rb").read()
BASE = gen2 + 10 ** 6  # generations are microseconds since the epoch
t = Topod("--ingest-timeout", "2", "--load", snap2)


def producer(first, pause=0.0, rest=b"", shut=True):
    """Sends first, waits pause, sends rest, half-closes if shut; the reply."""
    with Conn(t.ingest, unix=True) as c:
        c.send(first)
        time.sleep(pause)
        if rest:
            c.send(rest)
        if shut:
            c.s.shutdown(socket.SHUT_WR)
        return c.readline()


g = BASE + 1
data = reseal(big, generation=g, timestamp=g)
with Conn(t.ingest, unix=True) as c:
    step = len(data) // 8 + 1
    for i in range(0, len(data), step):
        c.send(data[i:i + step])
        time.sleep(0.03)
    c.s.shutdown(socket.SHUT_WR)
    r = c.readline()
check(r == "OK %d" % g and int(t.info()["generation"]) == g and t.info()["cas"] == "3456",
      "a %d-byte snapshot sent in 8 pieces with pauses is served whole: %s" % (len(data), r))

data = reseal(big, generation=g + 1, timestamp=g + 1)
half = len(data) // 2
r = producer(data[:half])
check(r == "ERR INVALID truncated: got %d of %d bytes" % (half, len(data)),
      "a large snapshot cut off mid-payload is refused with the bytes it got: %s" % r)

r = producer(data[:-1000], 0.2, data[-1000:] + b"X" * 100)
check(r == "ERR INVALID 100 bytes after the snapshot: one snapshot per connection",
      "bytes after a large snapshot refuse it: %s" % r)

t0 = time.time()
with Conn(t.ingest, unix=True, timeout=10) as c:
    c.send(data[:half])
    r = c.readline()
    waited = time.time() - t0
log = t.logtext()
check(r == "" and 1.5 <= waited <= 6 and "ingest timed out after %d of %d bytes" % (half, len(data)) in log,
      "a producer silent mid-payload is dropped after --ingest-timeout 2 (%.1f s), logged" % waited)
t0 = time.time()
while time.time() - t0 < 5 and " ingest_connections=0 " not in t.admin_ask("stats"):
    time.sleep(0.05)
st = t.admin_ask("stats")
check(int(t.info()["generation"]) == g and t.ask("ping") == "OK pong" and "ingest_truncated=1" in st and
      "ingest_trailing=1" in st and " ingest_connections=0 " in st,
      "after them generation %d is still served, every producer's connection closed; stats count them" % g)
note(st)
t.stop()
done()
