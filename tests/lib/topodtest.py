"""Helpers for integration tests that drive the real topod.

Every process started here is recorded and killed by PID at exit (atexit and
on SIGTERM), so a failing test leaves nothing behind.
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# TOPOD_BIN_DIR: compare another build (benchmarks run old and new in one go).
BIN = os.environ.get("TOPOD_BIN_DIR") or os.path.join(ROOT, "build", "bin")

_procs = []
_tmpdirs = []
_failed = 0


def check(cond, what):
    global _failed
    if cond:
        print("ok - " + what, flush=True)
    else:
        _failed += 1
        print("not ok - " + what, flush=True)
    return cond


def note(msg):
    print("# " + str(msg).replace("\n", "\n# "), flush=True)


def done():
    sys.exit(1 if _failed else 0)


def tmpdir(prefix="topodtest-"):
    d = tempfile.mkdtemp(prefix=prefix)
    _tmpdirs.append(d)
    return d


def fabric_chain(d):
    """tests/unit/test_fabric_chain.c's chain of a k=8 fat tree written into
    d/chain: gen.NNN.snap whole, delta.NNN from the generation before.
    Returns its path and the test's CompletedProcess (its output counts the
    hierarchies shared and rebuilt along the chain)."""
    chain = os.path.join(d, "chain")
    os.mkdir(chain)
    unit = subprocess.run([os.path.join(ROOT, "build", "tests", "test_fabric_chain")],
                          env=dict(os.environ, TF_CHAIN_OUT=chain), capture_output=True, text=True, timeout=300)
    return chain, unit


def _cleanup():
    for p in _procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if os.environ.get("LAB_KEEP") != "1":
        for d in _tmpdirs:
            shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))


class Topod:
    """A topod on 127.0.0.1 with an ephemeral query port."""

    def __init__(self, *args, state_dir=None, ingest=True, admin=True, d=None):
        self.dir = d or tmpdir()
        self.ingest = os.path.join(self.dir, "ingest.sock")
        self.admin = os.path.join(self.dir, "admin.sock")
        self.log = os.path.join(self.dir, "topod.log")
        cmd = [os.path.join(BIN, "topod"), "-f", "-l", "127.0.0.1:0"]
        if ingest:
            cmd += ["-i", "unix:" + self.ingest]
        if admin:
            cmd += ["-a", self.admin]
        if state_dir:
            cmd += ["-d", state_dir]
        cmd += list(args)
        self.logf = open(self.log, "ab")
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.logf)
        _procs.append(self.p)
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready port="):
            raise RuntimeError("topod did not start: %r; log:\n%s" % (line, self.logtext()))
        self.port = int(line.split("=")[1])

    def logtext(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def conn(self):
        return Conn(("127.0.0.1", self.port))

    def ask(self, line):
        with self.conn() as c:
            return c.ask(line)

    def admin_ask(self, line):
        with Conn(self.admin, unix=True) as c:
            return c.ask(line)

    def info(self):
        r = self.ask("info")
        if not r.startswith("OK "):
            raise RuntimeError(r)
        return parse_kv(r[3:])

    def wait_generation(self, gen, timeout=30):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if int(self.info()["generation"]) == gen:
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait(10)
        return self.p.returncode


def canned_reply(reply, run):
    """A one-shot fake topod on loopback: run(port) talks to it, it answers
    its first request line with `reply`. Returns (run's result, the
    request line it read, or None)."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    seen = []

    def serve():
        conn, _ = srv.accept()
        with conn:
            seen.append(conn.makefile("rb").readline().decode().strip())
            conn.sendall(reply.encode())

    th = threading.Thread(target=serve)
    th.start()
    try:
        return run(srv.getsockname()[1]), (seen[0] if seen else None)
    finally:
        th.join(10)
        srv.close()


def parse_kv(s):
    """key=value pairs; values may be "quoted" (no embedded quotes: topod escapes them)."""
    out = {}
    i = 0
    while i < len(s):
        while i < len(s) and s[i] == " ":
            i += 1
        j = s.find("=", i)
        if j < 0:
            break
        k = s[i:j]
        if j + 1 < len(s) and s[j + 1] == '"':
            e = s.find('"', j + 2)
            out[k] = s[j + 2:e]
            i = e + 1
        else:
            e = s.find(" ", j)
            e = len(s) if e < 0 else e
            out[k] = s[j + 1:e]
            i = e
    return out


class Conn:
    def __init__(self, addr, unix=False, timeout=30):
        self.s = socket.socket(socket.AF_UNIX if unix else socket.AF_INET, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(addr)
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.s.close()

    def send(self, data):
        self.s.sendall(data if isinstance(data, bytes) else data.encode())

    def readline(self):
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                r, self.buf = self.buf, b""
                return r.decode(errors="replace")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def ask(self, line):
        self.send(line + "\n")
        return self.readline()

    def closed_by_peer(self):
        try:
            return self.s.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return True


def read_reply(s, buf=b""):
    """Reads one reply from socket s (its head line and the lines it
    announces), counting lines without decoding them, so that a client can
    keep up with multi-megabyte matrices. Returns (head, nlines, rest), rest
    being bytes read past the reply."""
    while b"\n" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            return buf.decode(errors="replace"), 0, b""
        buf += chunk
    head, buf = buf.split(b"\n", 1)
    head = head.decode()
    n = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
    got = 0
    while True:
        k = buf.count(b"\n")
        if got + k >= n:
            parts = buf.split(b"\n", n - got)
            rest = parts[-1] if n - got < len(parts) else b""
            return head, n, rest
        got += k
        buf = s.recv(1 << 20)
        if not buf:
            return head, got, b""


def deliver(path, data, timeout=60):
    """One snapshot or delta to a UNIX ingest socket; the reply line."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    r = b""
    while not r.endswith(b"\n"):
        c = s.recv(4096)
        if not c:
            break
        r += c
    s.close()
    return r.decode(errors="replace").strip()


def send_snapshot(sinkspec, path):
    """Delivers a snapshot file with topo-snap send; returns (rc, output)."""
    r = subprocess.run([os.path.join(BIN, "topo-snap"), "send", sinkspec, path],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


def snap_info(path):
    r = subprocess.run([os.path.join(BIN, "topo-snap"), "info", path],
                       capture_output=True, text=True, check=True)
    return dict(l.split(" ", 1) for l in r.stdout.splitlines())


def from_text(topo, lfts, out):
    subprocess.run([os.path.join(BIN, "topo-snap"), "from-text", topo, lfts, out], check=True)
