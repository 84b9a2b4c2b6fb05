#!/usr/bin/env python3
"""Issue 7's ingest and persistence defects, each a regression test on the
real topod (loopback and temporary UNIX sockets only):

  4. a header announcing 8 GiB makes topod allocate only what arrives; the
     default --max-snapshot refuses it; ingest connections are bounded;
  5. TCP ingest refuses unsigned snapshots, wrong keys and the old
     (replayable) signature, accepts a producer that proves the shared key
     (challenge-response, HMAC-SHA256; t_ingest_auth.py has the attacks);
     the UNIX socket refuses users that are not root, topod's user or the
     ingest group (SO_PEERCRED);
  6. generations never go backwards: an older one, or an equal one with
     other contents, is ERR STALE; the same one again is a no-op; a
     restarted SM (new SM GUID, later timestamp) is served; the operator can
     force an older one (admin `restore PATH force`);
  7. OK comes only once the state file holds the snapshot; temporary files
     an interrupted write left are removed at start;
  8. a state directory others can write to is refused; the state file is
     0600 and a symlink planted at its name never redirects the write;
  9. producers are told why: truncated, bad header (read while still
     sending, no EPIPE), bytes after the snapshot (counted).
"""
import os
import socket
import stat
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import BIN, ROOT, Conn, Topod, check, done, note, tmpdir, parse_kv, from_text  # noqa: E402
from snapdecode import reseal  # noqa: E402
from bigfab import rss_kib  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()


def snapfile(name):
    p = os.path.join(d, name)
    from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), p)
    time.sleep(0.002)   # generations are microsecond timestamps
    return p


def deliver(addr, data, unix=True, halfclose=True, timeout=20):
    s = socket.socket(socket.AF_UNIX if unix else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(addr)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError) as e:
        # topod may have answered before closing (ERR BUSY at accept)
        try:
            early = s.recv(4096).decode(errors="replace").strip()
        except OSError:
            early = ""
        return early or "EPIPE: %s" % e
    if halfclose:
        s.shutdown(socket.SHUT_WR)
    r = b""
    try:
        while b"\n" not in r:
            c = s.recv(4096)
            if not c:
                break
            r += c
    except socket.timeout:
        return "TIMEOUT"
    s.close()
    return r.decode(errors="replace").strip()


def gen_of(buf):
    return struct.unpack_from("<Q", buf, 16)[0]


# ---- 9. producers learn why --------------------------------------------------------
t = Topod(state_dir=None)
a = open(snapfile("a.snap"), "rb").read()
r = deliver(t.ingest, a[:len(a) // 2])
check(r.startswith("ERR INVALID truncated: got %d of %d bytes" % (len(a) // 2, len(a))),
      "a truncated snapshot is answered (%s)" % r)
r = deliver(t.ingest, a[:40])
check(r.startswith("ERR INVALID truncated") and "less than a snapshot header" in r, "a partial header too (%s)" % r)
bad = b"NOTASNAP" + a[8:] + b"\0" * (4 << 20)   # a bad header followed by 4 MiB still being written
r = deliver(t.ingest, bad)
check(r.startswith("ERR INVALID") and "EPIPE" not in r,
      "a bad header is answered while the producer is still writing, without EPIPE (%s)" % r[:80])
r = deliver(t.ingest, a + b"xyz")
st = parse_kv(t.admin_ask("stats")[3:])
check(r.startswith("ERR INVALID 3 bytes after the snapshot") and st["ingest_trailing"] == "1",
      "bytes after the snapshot are refused, logged and counted (%s; ingest_trailing=%s)" % (r, st["ingest_trailing"]))
check("3 bytes after the snapshot" in t.logtext(), "and logged")

# ---- 4. memory follows the bytes, and the bounds -------------------------------------
base = rss_kib(t.p.pid)
huge = reseal(a, plen=(8 << 30) - 64)
s8 = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(t.ingest)
    s.sendall(huge[:64] + b"\0" * (1 << 20))
    s8.append(s)
time.sleep(0.5)
grow = rss_kib(t.p.pid) - base
st = parse_kv(t.admin_ask("stats")[3:])
note("3 producers announcing 8 GiB, sending 1 MiB each: RSS +%d KiB" % grow)
for s in s8:
    s.close()
t2 = Topod()
r = deliver(t2.ingest, huge[:64])
check(r.startswith("ERR INVALID") and "exceeds max_snapshot 536870912" in r,
      "the default --max-snapshot (512 MiB) refuses an 8 GiB header at once: %s" % r[:90])
tbig = Topod("--max-snapshot", "8G")
base = rss_kib(tbig.p.pid)
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(tbig.ingest)
    s.sendall(huge[:64] + b"\0" * (1 << 20))
    s8.append(s)
time.sleep(0.5)
grow = rss_kib(tbig.p.pid) - base
check(grow < 16 * 1024, "3 headers announcing 8 GiB with 1 MiB sent each cost +%d KiB, not gigabytes" % grow)
tl = Topod("--max-ingest-conns", "2")
held = []
for _ in range(2):
    s = socket.socket(socket.AF_UNIX)
    s.connect(tl.ingest)
    held.append(s)
time.sleep(0.2)
r = deliver(tl.ingest, a)
check(r.startswith("ERR BUSY"), "a third producer over --max-ingest-conns 2 is told ERR BUSY (%s)" % r)
for s in held + s8:
    s.close()

# ---- 5. authentication ------------------------------------------------------------------
key = os.path.join(d, "ingest.key")
subprocess.run([os.path.join(BIN, "topo-snap"), "keygen", key], check=True, capture_output=True)
check(stat.S_IMODE(os.stat(key).st_mode) == 0o600, "topo-snap keygen writes a 0600 key")
other = os.path.join(d, "other.key")
subprocess.run([os.path.join(BIN, "topo-snap"), "keygen", other], check=True, capture_output=True)
ta = Topod("-i", "tcp:127.0.0.1:0", "--ingest-key", key, ingest=False)
# the TCP ingest port: from the log line? topod listens on an ephemeral port: ask with ss
port = None
out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
for line in out.splitlines():
    if "pid=%d," % ta.p.pid in line and ":%d " % ta.port not in line:
        port = int(line.split()[3].rsplit(":", 1)[1])
check(port is not None, "TCP ingest listening (port %s)" % port)


def send(extra, path):
    r = subprocess.run([os.path.join(BIN, "topo-snap"), "send", "sink=tcp:127.0.0.1:%d" % port] + extra + [path],
                       capture_output=True, text=True, timeout=30)
    return r.returncode, (r.stdout + r.stderr).strip()


rc, out = send([], snapfile("u.snap"))
check(rc != 0 and "ERR AUTH" in out, "an unsigned snapshot on TCP is refused: %s" % out[-100:])
rc, out = send(["key_file=" + other], snapfile("w.snap"))
check(rc != 0 and "ERR AUTH wrong proof" in out, "a wrong key is refused: %s" % out[-80:])
p = snapfile("k.snap")
rc, out = send(["key_file=" + key], p)
check(rc == 0 and ta.wait_generation(gen_of(open(p, "rb").read())), "a snapshot signed with the key is served")
# The old signature (version 1: an HMAC of the snapshot alone, checked after
# buffering all of it, replayable, any plane) is refused on TCP at once.
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ingestauth  # noqa: E402
v1 = open(snapfile("v1.snap"), "rb").read()
r = deliver(("127.0.0.1", port), ingestauth.v1_preamble(ingestauth.key_bytes(key), v1) + v1, unix=False)
check(r.startswith("ERR AUTH old-style signed snapshot") and int(ta.info()["generation"]) != gen_of(v1),
      "an old-style signed snapshot, right key, on TCP: %s" % r)
os.chmod(other, 0o644)
rc, out = send(["key_file=" + other], p)
check(rc != 0 and "lets group or others read it" in out, "a key file others can read is refused: %s" % out[-90:])
r = subprocess.run([os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0", "--ingest-key", other],
                   capture_output=True, text=True, timeout=10)
check(r.returncode != 0 and "lets group or others read it" in r.stderr, "topod refuses such a key file too")
# A key file owned by another unprivileged user: that user can rewrite the
# key (OpenSSH's StrictModes refuses such host keys).
os.chmod(other, 0o600)
os.chown(other, 65534, 65534)
r = subprocess.run([os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0", "--ingest-key", other],
                   capture_output=True, text=True, timeout=10)
check(r.returncode != 0 and "owned by uid 65534" in r.stderr,
      "topod refuses a key file another user owns: %s" % r.stderr.strip()[:120])
rc, out = send(["key_file=" + other], p)
check(rc != 0 and "owned by uid 65534" in out, "and so does the sender: %s" % out[-90:])
# UNIX peers: root is allowed (all of the above); another user is not.
os.chmod(d, 0o755)
os.chmod(t.dir, 0o755)
os.chmod(t.ingest, 0o666)
r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    os.path.join(BIN, "topo-snap"), "send", "sink=unix:" + t.ingest, p],
                   capture_output=True, text=True, timeout=30)
check(r.returncode != 0 and "ERR DENIED" in r.stdout + r.stderr,
      "a UNIX producer that is not root, topod's user or the ingest group is refused: %s" % (r.stdout + r.stderr)[-90:])
st = parse_kv(t.admin_ask("stats")[3:])
check(int(st["ingest_denied"]) == 1 and "refused a snapshot producer (uid 65534" in t.logtext(),
      "the refusal is counted and logged with the peer's uid")

# ---- 6. generations ----------------------------------------------------------------------
state = os.path.join(d, "state6")
os.mkdir(state, 0o700)
tg = Topod(state_dir=state)
g1 = open(snapfile("g1.snap"), "rb").read()
g2 = open(snapfile("g2.snap"), "rb").read()
check(deliver(tg.ingest, g2).startswith("OK %d" % gen_of(g2)), "generation 2 served")
r = deliver(tg.ingest, g1)
check(r.startswith("ERR STALE") and "older than the served" in r, "an older generation is refused: %s" % r[:70])
check(deliver(tg.ingest, g2) == "OK %d already served" % gen_of(g2), "the same snapshot again is a no-op")
other_contents = reseal(g1, generation=gen_of(g2))
# reseal keeps the payload CRC valid: same payload, but a different timestamp makes it another capture
other_contents = reseal(g1, generation=gen_of(g2), timestamp=12345)
r = deliver(tg.ingest, other_contents)
check(r.startswith("ERR STALE") and "different contents" in r, "an equal generation with other contents: %s" % r[:80])
sm = struct.unpack_from("<Q", g2, 40)[0]
restarted = reseal(g1, generation=5, sm_guid=sm + 1, sweep=1, timestamp=int(time.time() * 1e6))
r = deliver(tg.ingest, restarted)
check(r.startswith("OK 5") and tg.wait_generation(5) and "restarted subnet manager" in tg.logtext(),
      "a restarted SM (new SM GUID, later snapshot) is served although its generation is lower: %s" % r)
r = deliver(tg.ingest, g2)
check(r.startswith("OK %d" % gen_of(g2)), "and later generations follow it")
old = os.path.join(d, "old.snap")
open(old, "wb").write(g1)
r = tg.admin_ask("restore %s" % old)
time.sleep(0.5)
check(r.startswith("OK queued") and int(tg.info()["generation"]) == gen_of(g2),
      "admin restore of an older snapshot without force changes nothing")
r = tg.admin_ask("restore %s force" % old)
t0 = time.time()
while time.time() - t0 < 10 and int(tg.info()["generation"]) != gen_of(g1):
    time.sleep(0.05)
check(int(tg.info()["generation"]) == gen_of(g1), "admin `restore PATH force` restores an older fabric")
# Burst: arrival order is not generation order; the queued newer one wins.
burst = [reseal(g1, generation=gen_of(g2) + 1000 + i) for i in range(30)]
socks = []
for i in (list(range(29, -1, -1))):
    s = socket.socket(socket.AF_UNIX)
    s.connect(tg.ingest)
    s.sendall(burst[i])
    s.shutdown(socket.SHUT_WR)
    socks.append(s)
for s in socks:
    s.settimeout(20)
    try:
        s.recv(200)
    except OSError:
        pass
    s.close()
time.sleep(0.5)
check(int(tg.info()["generation"]) == gen_of(g2) + 1029,
      "after a burst delivered newest first, the newest is served (%s)" % tg.info()["generation"])
tg.admin_ask("shutdown")
tg.p.wait(10)
tg2 = Topod(state_dir=state)
r = deliver(tg2.ingest, g2)
check(int(tg2.info()["generation"]) == gen_of(g2) + 1029 and r.startswith("ERR STALE"),
      "the rule survives a restart (the state file): %s" % r[:40])

# ---- 7 and 8. durable OK, temporary files, state directory --------------------------------
st7 = os.path.join(d, "state7")
os.mkdir(st7, 0o700)
for n in ("fabric.snap.tmp.1234.0", "fabric.snap.tmp.abcdef"):
    open(os.path.join(st7, n), "wb").write(b"x" * 1000)
t7 = Topod(state_dir=st7)
victim = os.path.join(d, "victim")
open(victim, "w").write("precious\n")
os.symlink(victim, os.path.join(st7, "fabric.snap"))
left = [n for n in os.listdir(st7) if ".tmp." in n]
check(not left and "removed 2 temporary file(s)" in t7.logtext(), "stale temporary files are removed at start")
g = open(snapfile("g7.snap"), "rb").read()
r = deliver(t7.ingest, g)
sf = os.path.join(st7, "fabric.snap")
on_disk = open(sf, "rb").read() if os.path.exists(sf) else b""
check(r == "OK %d" % gen_of(g) and on_disk == g, "OK comes once the state file holds that snapshot")
check(not os.path.islink(sf) and open(victim).read() == "precious\n",
      "a symlink planted at the state file's name is replaced, its target untouched")
check(stat.S_IMODE(os.stat(sf).st_mode) == 0o600, "the state file is mode 0600")
st8 = os.path.join(d, "state8")
os.mkdir(st8)
os.chmod(st8, 0o777)
r = subprocess.run([os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0", "-d", st8],
                   capture_output=True, text=True, timeout=10)
check(r.returncode != 0 and "writable by others" in r.stderr, "a state directory others can write to is refused: %s"
      % r.stderr.strip()[-80:])
# ---- local ingest keeps its slots whatever TCP does (issue 21, item 3) -------------
tq = Topod("-i", "tcp:127.0.0.1:0", "--ingest-key", key, "--max-ingest-conns", "2")
out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
qport = [int(l.split()[3].rsplit(":", 1)[1]) for l in out.splitlines()
         if "pid=%d," % tq.p.pid in l and ":%d " % tq.port not in l][0]
flood = [socket.create_connection(("127.0.0.1", qport)) for _ in range(2)]
time.sleep(0.3)
extra = socket.create_connection(("127.0.0.1", qport))
extra.settimeout(5)
check(extra.recv(100).startswith(b"ERR BUSY"), "TCP ingest over --max-ingest-conns 2: the third is told BUSY")
g = open(snapfile("local.snap"), "rb").read()
r = deliver(tq.ingest, g)
check(r == "OK %d" % gen_of(g), "while the TCP slots are taken, OpenSM's local delivery is accepted: %s" % r)
for s_ in flood + [extra]:
    s_.close()
tq.stop()
done()
