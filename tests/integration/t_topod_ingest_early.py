"""A large full snapshot's tables copied while it arrives (issue 39 item 4).

Every 16 MiB of a full snapshot received, topod's builder thread copies the
tables of the records that are in (builder_feed, snap_early_feed) and the
decode after the last byte takes them. A k=40 fat tree (38.6 MB, 16,000
hosts): sent in pieces with pauses it is served whole, and the log says how
many table entries were copied before the last byte; cut off, followed by
bytes, damaged (its checksum fails at the decode) or silent past the ingest
timeout, it is refused and the tables made for it are given back: the
chunk pool (topod_lft_pool_bytes) holds the served fabric's tables again,
and that fabric stays served. Then the same fabric sent in one piece is
served with the same tables."""
import os
import re
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bigfab import fattree  # noqa: E402
from snapdecode import reseal  # noqa: E402
from topodtest import Conn, Topod, check, done, note, tmpdir  # noqa: E402

d = tmpdir()
big = open(fattree(d, 40), "rb").read()
t = Topod("--ingest-timeout", "2", "--http", "127.0.0.1:0")
HP = int(t.p.stdout.readline().decode().split("=")[1])
PIECE = 4 << 20


def pool():
    """topod_lft_pool_bytes{state="tables"}: chunks held by any table."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % HP, timeout=10) as r:
        m = re.search(r'^topod_lft_pool_bytes\{state="tables"\} (\d+)$', r.read().decode(), re.M)
    return int(m.group(1)) if m else -1


def pool_back(want, timeout=10):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = pool()
        if v == want:
            return v
        time.sleep(0.1)
    return v


def send(data, upto=None, pause=0.03, extra=b"", shut=True, timeout=30):
    """data[:upto] in PIECE-byte pieces with pauses (the builder feeds
    between them), extra with the last; the reply."""
    upto = len(data) if upto is None else upto
    with Conn(t.ingest, unix=True, timeout=timeout) as c:
        for i in range(0, upto, PIECE):
            c.send(data[i:min(i + PIECE, upto)] + (extra if i + PIECE >= upto else b""))
            time.sleep(pause)
        if shut:
            c.s.shutdown(socket.SHUT_WR)
        return c.readline()


G = 1700000000000000
data = reseal(big, generation=G + 1, timestamp=G + 1)
r = send(data)
m = re.search(r"generation %d: (\d+) of (\d+) table entries were copied while it arrived" % (G + 1), t.logtext())
check(r == "OK %d" % (G + 1) and t.info()["cas"] == "16000" and m and 0 < int(m.group(1)) <= int(m.group(2)),
      "a %d-byte snapshot sent in %d MiB pieces is served whole (%s), %s of %s table entries copied while it "
      "arrived" % (len(data), PIECE >> 20, r, m.group(1) if m else "?", m.group(2) if m else "?"))
time.sleep(0.5)
v1 = pool()
note("the chunk pool holds %d bytes of tables" % v1)
check(v1 >= 36002000, "its tables are in the chunk pool: %d bytes for 36,002,000 entries" % v1)

data2 = reseal(big, generation=G + 2, timestamp=G + 2)
cut = len(data2) * 6 // 10
with Conn(t.ingest, unix=True, timeout=30) as c:
    for i in range(0, cut, PIECE):
        c.send(data2[i:min(i + PIECE, cut)])
        time.sleep(0.03)
    t0 = time.time()
    while time.time() - t0 < 10 and pool() <= v1:
        time.sleep(0.05)
    during = pool()
    c.s.shutdown(socket.SHUT_WR)
    r = c.readline()
check(during > v1 and r == "ERR INVALID truncated: got %d of %d bytes" % (cut, len(data2)),
      "cut off at 60 %%, after %d bytes of tables were copied for it: %s" % (during - v1, r))
check(pool_back(v1) == v1, "the tables made for it are given back (%d bytes)" % pool())

r = send(data2, extra=b"X" * 100)
check(r == "ERR INVALID 100 bytes after the snapshot: one snapshot per connection", "followed by bytes: %s" % r)
check(pool_back(v1) == v1, "given back (%d bytes)" % pool())

bad = bytearray(data2)
bad[-(1 << 20)] ^= 0x40  # in the last, unfed step: the checksum fails at the decode
r = send(bytes(bad))
check(r.startswith("ERR INVALID payload checksum mismatch"), "damaged: refused by the decode: %s" % r)
check(pool_back(v1) == v1, "given back (%d bytes)" % pool())

t0 = time.time()
r = send(data2, upto=cut, shut=False, timeout=10)
check(r == "" and 1.5 <= time.time() - t0 <= 8 and "ingest timed out after %d of %d bytes" % (cut, len(data2))
      in t.logtext(), "silent past --ingest-timeout 2: dropped (%.1f s)" % (time.time() - t0))
check(pool_back(v1) == v1, "given back (%d bytes)" % pool())
check(int(t.info()["generation"]) == G + 1, "generation %d is still served" % (G + 1))

data3 = reseal(big, generation=G + 3, timestamp=G + 3)
r = send(data3, pause=0)
m = re.search(r"generation %d: (\d+) of (\d+) table entries were copied while it arrived" % (G + 3), t.logtext())
check(r == "OK %d" % (G + 3) and t.info()["cas"] == "16000", "the same fabric in one go: %s (%s of %s entries "
      "copied while it arrived)" % (r, m.group(1) if m else "none", m.group(2) if m else "-"))
check(pool_back(v1) == v1, "the pool holds one fabric's tables again (%d bytes)" % pool())
st = t.admin_ask("stats")
check(" ingest_connections=0 " in st, "every producer's connection closed")
t.stop()
done()
