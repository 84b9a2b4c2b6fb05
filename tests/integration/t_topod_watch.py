"""`watch`: change notification as a long poll, against a real topod.
- a watch before the first fabric wakes on it; one on an old generation
  answers at once; one that times out says changed=0; requests pipelined
  behind a watch are answered after it, in order; a watch outlives the idle
  timeout; clients that close while parked are forgotten;
- 1,000 parked watchers all hear of one new generation;
- libtii's blocking tii_watch and its file-descriptor form (through ctypes,
  the C API as a program links it), and topoquery watch;
- watches follow the connection's plane: a delivery to another plane does
  not wake them."""
import ctypes
import os
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, Topod, check, done, from_text, parse_kv, send_snapshot, tmpdir  # noqa: E402
from snapdecode import reseal  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()
raw = os.path.join(d, "raw.snap")
from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), raw)
with open(raw, "rb") as f:
    RAW = f.read()


def snap(gen):
    p = os.path.join(d, "g%d.snap" % gen)
    with open(p, "wb") as f:
        f.write(reseal(RAW, generation=gen, timestamp=1700000000000000 + gen))
    return p


def dial(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    return s, s.makefile("rb")


def line(f):
    return f.readline().decode().rstrip("\n")


t = Topod("--idle-timeout", "2", "-i", "rail2=unix:" + os.path.join(d, "ingest2.sock"), d=d)
sink = "sink=unix:" + t.ingest

# 1. Before any fabric: parks, wakes on the first.
s, f = dial(t.port)
s.sendall(b"watch 0 10000\n")
r, _, _ = select.select([s], [], [], 0.3)
check(not r, "watch 0 before any fabric waits")
t0 = time.time()
rc, out = send_snapshot(sink, snap(100))
r = line(f)
check(r == "OK gen=100 changed=1", "and wakes when generation 100 is served: %s (%.0f ms after the delivery began)"
      % (r, (time.time() - t0) * 1e3))

# 2. Old generation: at once. 3. Timeout: changed=0.
s.sendall(b"watch 5\n")
check(line(f) == "OK gen=100 changed=1", "watch of an older generation answers at once")
t0 = time.time()
s.sendall(b"watch 100 300\n")
r = line(f)
el = time.time() - t0
check(r == "OK gen=100 changed=0" and 0.25 < el < 2, "a watch that times out says changed=0 after %.2f s" % el)

# 4. Pipelined behind a watch: answered after it, in order.
s.sendall(b"watch 100 400\nping\n")
check(line(f) == "OK gen=100 changed=0" and line(f) == "OK pong", "a request pipelined behind a watch comes after it")

# 5. Longer than the idle timeout (2 s).
t0 = time.time()
s.sendall(b"watch 100 3000\n")
r = line(f)
check(r == "OK gen=100 changed=0" and time.time() - t0 > 2.8, "a 3 s watch outlives the 2 s idle timeout: %s" % r)
s.sendall(b"watch x\n")
check(line(f).startswith("ERR USAGE"), "a bad generation: ERR USAGE")
s.sendall(b"watch 1 3600001\n")
check(line(f).startswith("ERR USAGE"), "a timeout over an hour: ERR USAGE")
s.close()


def stats():
    return parse_kv(t.admin_ask("stats")[3:])


# 6. Closed while parked: reset or closed, the watcher is let go at once
# (a half-close cannot be told from a close; it is answered changed=0).
import struct  # noqa: E402
socks = [dial(t.port) for _ in range(5)]
for a, _ in socks:
    a.sendall(b"watch 100 600\n")
time.sleep(0.3)
w = stats()["watching"]
for a, fa in socks[:3]:
    a.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    fa.close()  # the file object holds the descriptor too
    a.close()
time.sleep(0.2)
w2 = stats()["watching"]
a, fa = socks[3]
a.shutdown(socket.SHUT_WR)
r = fa.readline().decode().strip()
for a, fa in socks[4:]:
    fa.close()
    a.close()
time.sleep(0.2)
check(w == "5" and w2 == "2" and stats()["watching"] == "0",
      "5 parked watchers counted (%s); reset ones are forgotten at once (%s left), closed ones too" % (w, w2))
check(r == "OK gen=100 changed=0", "a half-closed watcher is answered at once: %s" % r)
socks[3][1].close()
socks[3][0].close()

# 7. 1,000 parked watchers, one new generation.
N = 1000
many = []
for _ in range(N):
    a = socket.create_connection(("127.0.0.1", t.port), timeout=30)
    a.sendall(b"watch 100 60000\n")
    many.append(a)
time.sleep(0.5)
check(stats()["watching"] == str(N), "%d watchers parked" % N)
t0 = time.time()
rc, out = send_snapshot(sink, snap(200))
t_ok = time.time()
got, late = 0, 0.0
for a in many:
    b = a.recv(100)
    got += b == b"OK gen=200 changed=1\n"
    late = max(late, time.time() - t_ok)
    a.close()
check(got == N, "all %d heard of generation 200 (%d right), the last %.0f ms after topod's OK"
      % (N, got, late * 1e3))
check(late < 1.0, "within 1 s")

# 8. libtii, as a C program calls it.
lib = ctypes.CDLL(os.path.join(ROOT, "build", "lib", "libtii.so"))
lib.tii_open.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
lib.tii_watch.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
lib.tii_watch_start.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
lib.tii_watch_finish.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
lib.tii_close.argtypes = [ctypes.c_void_p]
lib.tii_set_plane.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
h = ctypes.c_void_p()
check(lib.tii_open(ctypes.byref(h), ("127.0.0.1:%d" % t.port).encode()) == 0, "tii_open")
ng = ctypes.c_uint64(0)
rc = lib.tii_watch(h, 200, 200, ctypes.byref(ng))
check(rc == -4 and ng.value == 200, "tii_watch times out with TII_E_TIMEOUT and the served generation (%d)" % rc)
res = {}


def blocking():
    g = ctypes.c_uint64(0)
    res["rc"] = lib.tii_watch(h, 200, 10000, ctypes.byref(g))
    res["gen"] = g.value


th = threading.Thread(target=blocking)
th.start()
time.sleep(0.3)
send_snapshot(sink, snap(300))
th.join(10)
check(res.get("rc") == 0 and res.get("gen") == 300, "tii_watch blocks until generation 300: %s" % res)
h2 = ctypes.c_void_p()
lib.tii_open(ctypes.byref(h2), ("127.0.0.1:%d" % t.port).encode())
fd = lib.tii_watch_start(h2, 300, 10000)
r, _, _ = select.select([fd], [], [], 0.3)
check(fd >= 0 and not r, "tii_watch_start gives a descriptor (%d) that stays quiet" % fd)
send_snapshot(sink, snap(400))
r, _, _ = select.select([fd], [], [], 5)
g = ctypes.c_uint64(0)
rc = lib.tii_watch_finish(h2, ctypes.byref(g)) if r else -99
check(r and rc == 0 and g.value == 400, "it polls readable on generation 400 and tii_watch_finish reads it (%d, %d)"
      % (rc, g.value))
rc = lib.tii_watch(h2, 400, 0, ctypes.byref(g))
check(rc == -4, "the handle goes on working after a watch")

# 9. topoquery watch.
tq = [os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port]
p = subprocess.Popen(tq + ["watch", "--count", "1", "--wait", "10"], stdout=subprocess.PIPE, text=True)
time.sleep(0.4)
send_snapshot(sink, snap(500))
out, _ = p.communicate(timeout=15)
check(p.returncode == 0 and out.startswith("generation 500 "), "topoquery watch prints the new generation: %s"
      % out.strip())
r = subprocess.run(tq + ["watch", "--wait", "1"], capture_output=True, text=True, timeout=15)
check(r.returncode == 3 and "within 1 s" in r.stderr, "topoquery watch exits 3 when nothing comes (%d)" % r.returncode)

# 10. Planes: a watch on rail2 ignores the default plane's generations.
s, f = dial(t.port)
s.sendall(b"plane rail2\nwatch 0 10000\n")
check(line(f).startswith("OK plane=rail2"), "plane rail2")
send_snapshot(sink, snap(600))
r, _, _ = select.select([s], [], [], 0.5)
check(not r, "a delivery to the default plane does not wake a rail2 watcher")
send_snapshot("sink=unix:" + os.path.join(d, "ingest2.sock"), snap(700))
check(line(f) == "OK gen=700 changed=1", "one to rail2 does")
s.close()
lib.tii_set_plane(h, b"rail2")
rc = lib.tii_watch(h, 700, 0, ctypes.byref(ng))
check(rc == -4 and ng.value == 700, "tii_set_plane: libtii watches rail2 (%d)" % ng.value)
lib.tii_close(h)
lib.tii_close(h2)
t.stop()

# 11. topoquery watch across a topod restart (systemctl restart topod):
# it says so on stderr, reconnects with back-off, and goes on; each line
# names the cables that went down or came up.
split = os.path.join(d, "split.raw")
from_text(os.path.join(FIX, "2sw4hca-split.topo"), os.path.join(FIX, "2sw4hca-split.lfts"), split)
with open(split, "rb") as f:
    SPLIT = f.read()


def split_snap(gen):
    p = os.path.join(d, "s%d.snap" % gen)
    with open(p, "wb") as f:
        f.write(reseal(SPLIT, generation=gen, timestamp=1700000000000000 + gen))
    return p


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    fixed = probe.getsockname()[1]
sd = os.path.join(d, "state")
os.mkdir(sd)
d2 = tmpdir()
t2 = Topod("-l", "127.0.0.1:%d" % fixed, state_dir=sd, d=d2)
send_snapshot("sink=unix:" + t2.ingest, snap(800))
tq2 = [os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % fixed]
p = subprocess.Popen(tq2 + ["watch", "--count", "2", "--wait", "60"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
time.sleep(0.5)
t2.stop()
time.sleep(1.5)
t3 = Topod("-l", "127.0.0.1:%d" % fixed, state_dir=sd, d=d2)
check(t3.wait_generation(800), "the restarted topod serves generation 800 from its state directory")
time.sleep(2.5)
check(p.poll() is None, "topoquery watch is still running across the restart")
send_snapshot("sink=unix:" + t3.ingest, split_snap(801))
time.sleep(0.5)
send_snapshot("sink=unix:" + t3.ingest, snap(802))
try:
    out, err = p.communicate(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    out, err = p.communicate()
lines = out.splitlines()
check(p.returncode == 0 and len(lines) == 2 and lines[0].startswith("generation 801 ")
      and lines[1].startswith("generation 802 "),
      "watch survives the restart and prints 801 and 802 (exit %s): %r" % (p.returncode, lines))
check("lost topod" in err and "retrying in" in err and "reconnected" in err,
      "it says on stderr that it lost topod, retries and reconnected: %r" % err)
check(len(lines) == 2 and "down: 2 cables: Switch1 port 3 - Switch2 port 3, Switch1 port 5 - Switch2 port 5"
      in lines[0] and "up: none" in lines[0], "801's line names the two cables that went down: %r" % lines[:1])
check(len(lines) == 2 and "up: 2 cables:" in lines[1] and "down: none" in lines[1],
      "802's line names them coming back: %r" % lines[1:])
r = subprocess.run(tq2 + ["diff", "801", "802"], capture_output=True, text=True, timeout=30)
check(r.returncode == 0 and len(r.stdout.splitlines()) <= 10 and "up: 2 cables" in r.stdout,
      "diff prints a summary of at most 10 lines by default: %r" % r.stdout)
r2 = subprocess.run(tq2 + ["diff", "--detail", "801", "802"], capture_output=True, text=True, timeout=30)
check(r2.returncode == 0 and "link-up 0x" in r2.stdout and "links_up 2" in r2.stdout,
      "diff --detail gives every record: %r" % r2.stdout[:200])
t3.stop()
p = subprocess.run(tq2 + ["watch", "--after", "1", "--count", "1", "--wait", "3"], capture_output=True,
                   text=True, timeout=30)
check(p.returncode == 4 and "no answer from topod within 3 s" in p.stderr,
      "with no topod for --wait SEC, watch gives up with exit 4 (%d): %r" % (p.returncode, p.stderr[-200:]))
done()
