"""ingestauth.py - topod's ingest authentication (snapshot/auth.h), from the
producer's and an attacker's side, for tests: written from the format in
docs/snapshot-format.md ("Authentication"), with Python's hmac module.

  proof(key, chal, snap)           version 2: head tag + body tag
  v1_preamble(key, snap)           the old 48-byte preamble
  Recorder(target)                 a TCP relay that records what passes
                                   (optionally rewriting topod's challenge)
  anon_kib(pid)                    RssAnon, the memory a peer can make a process hold
  flood(addr, opening, ...)        an attacker that streams after its opening
                                   and reports what topod answered and when
                                   it closed
"""
import hashlib
import hmac
import socket
import struct
import threading
import time

HELLO = b"TOPOAUTH" + struct.pack("<II", 2, 1)
CHAL_LEN = 96
PROOF_LEN = 64


def anon_kib(pid):
    """RssAnon of a process, KiB: the memory a peer can make it hold (VmRSS
    also counts code pages faulted in the first time a path runs)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def key_bytes(path):
    """The key as topod reads it: the file, trailing newlines dropped."""
    with open(path, "rb") as f:
        return f.read().rstrip(b"\r\n")


def proof(key, chal, snap):
    head = hmac.new(key, b"topod-ingest-v2 head\0" + chal + snap[:64], hashlib.sha256).digest()
    body = hmac.new(key, b"topod-ingest-v2 body\0" + chal + snap, hashlib.sha256).digest()
    return head + body


def v1_preamble(key, snap):
    return b"TOPOAUTH" + struct.pack("<II", 1, 1) + hmac.new(key, snap, hashlib.sha256).digest()


def challenge_plane(chal):
    return chal[49:49 + chal[48]].decode()


def with_plane(chal, plane):
    """topod's challenge with another plane name in it (a man in the middle)."""
    p = plane.encode()
    return chal[:48] + bytes([len(p)]) + p.ljust(32, b"\0") + chal[81:]


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            break
        b += c
    return b


def recv_line(s, timeout=20):
    s.settimeout(timeout)
    r = b""
    try:
        while b"\n" not in r:
            c = s.recv(4096)
            if not c:
                break
            r += c
    except OSError:
        pass
    return r.decode(errors="replace").strip()


class Recorder:
    """Relays TCP connections to target; .sessions lists, per connection,
    the bytes the client sent. rewrite(chal) may change topod's first 96
    bytes on their way to the client."""

    def __init__(self, target, rewrite=None):
        self.target, self.rewrite = target, rewrite
        self.sessions = []
        self.challenges = []    # topod's first 96 bytes of each, as it sent them
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            u = socket.create_connection(self.target)
            rec, back = [], []
            self.sessions.append(rec)
            self.challenges.append(back)
            threading.Thread(target=self._pipe, args=(c, u, rec, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, back, self.rewrite), daemon=True).start()

    @staticmethod
    def _pipe(a, b, rec, rewrite):
        head = b""
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    b.shutdown(socket.SHUT_WR)
                    return
                if rec is not None:
                    rec.append(d)
                if rewrite and len(head) < CHAL_LEN:
                    head += d
                    if len(head) < CHAL_LEN:
                        continue
                    d, head = rewrite(head[:CHAL_LEN]) + head[CHAL_LEN:], b"x" * CHAL_LEN
                b.sendall(d)
        except OSError:
            pass

    def close(self):
        self.ls.close()


def flood(addr, opening, seconds=10, chunk=1 << 20, after_challenge=None):
    """Connects, sends opening (after_challenge(chal) -> bytes is sent once
    topod's challenge is read, if given), then streams zeros until topod
    closes or `seconds` pass. Returns (reply, bytes streamed, seconds from
    the reply to the close or None if topod never closed)."""
    s = socket.create_connection(addr)
    s.sendall(opening)
    if after_challenge:
        chal = recv_exact(s, CHAL_LEN)
        s.sendall(after_challenge(chal))
    reply, replied, closed, sent = b"", None, None, 0
    blob = b"\0" * chunk
    s.setblocking(False)
    t_end = time.time() + seconds
    while time.time() < t_end and closed is None:
        try:
            d = s.recv(4096)
            if d:
                reply += d
                replied = replied or time.time()
            else:
                closed = time.time()
                break
        except BlockingIOError:
            pass
        except OSError:
            closed = time.time()
            break
        try:
            sent += s.send(blob)
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            closed = time.time()
    if closed and not reply:
        try:
            reply = s.recv(4096)
        except OSError:
            pass
    s.close()
    linger = closed - replied if closed and replied else None
    return reply.decode(errors="replace").strip(), sent, linger
