"""Hostile NodeDescriptions and the server's bounds.

NodeDescriptions are set by whoever administers a host. Here a switch's
description holds a newline, a quote, an escape sequence and a backslash,
one host's holds a quote and a bell, another's a space in the middle; the
snapshot is otherwise the real 2-switch capture. None of it may break a
reply line, topoquery's JSON or topod's log. Then the request bounds:
connection count, idle time, line length, hosts per request.
"""
import json
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, Conn, Topod, check, done, from_text, note, tmpdir  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def reseal(buf):
    """Recompute the payload and header checksums (snapshot-format.md)."""
    b = bytearray(buf)
    struct.pack_into("<I", b, 32, crc32c(bytes(b[64:])))
    struct.pack_into("<I", b, 36, 0)
    struct.pack_into("<I", b, 36, crc32c(bytes(b[:64])))
    return bytes(b)


def patch_desc(buf, old, new):
    """Replace a length-prefixed description by one of the same length."""
    assert len(old) == len(new)
    key = bytes([len(old)]) + old
    i = buf.index(key)
    return buf[:i + 1] + new + buf[i + 1 + len(old):]


d = tmpdir()
clean = os.path.join(d, "clean.snap")
from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), clean)
raw = open(clean, "rb").read()
EVIL_SW = b'S\n"\x1b[\\1'      # 7 bytes, replaces "Switch1"
raw = patch_desc(raw, b"Switch1", EVIL_SW)
raw = patch_desc(raw, b"Hca3", b'H"3\x07')   # no valid hostname: named by GUID
raw = patch_desc(raw, b"Hca2", b"Hx 2")      # hostname "Hx", HCA label "2"
evil = os.path.join(d, "evil.snap")
open(evil, "wb").write(reseal(raw))

t = Topod("--load", evil, "--max-conns", "3", "--idle-timeout", "2", admin=False)
check(int(t.info()["generation"]) > 0, "topod serves a fabric with hostile descriptions")

with t.conn() as c:
    c.send("hosts\n")
    first = c.readline()
    n = int(first.split("lines=")[1])
    hosts = [c.readline() for _ in range(n)]
    names = [h.split()[0] for h in hosts]
    check(first.startswith("OK") and n == 4 and "Hx" in names and "Hca1" in names,
          "hostnames come from the first word: %s" % names)
    check(any(x.startswith("0x") for x in names),
          "a description without a valid hostname names the host by GUID")
    c.send("path Hca1 Hca4\n")
    first = c.readline()
    body = [c.readline() for _ in range(int(first.split("lines=")[1]))]
    note(first)
    for b in body:
        note(b)
    check(len(body) == 2 and all(b.startswith("0x") for b in body), "path reply keeps its line count")
    check(all(ord(ch) >= 0x20 and ord(ch) != 0x7f for b in [first] + body for ch in b),
          "no control byte reaches a reply line")
    check('\\x0a\\x22\\x1b[\\x5c1' in body[0], "the switch description is escaped, not dropped: %s" % body[0])
    check(c.ask("ping") == "OK pong", "the connection is in step after the reply")

r = subprocess.run([os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port, "--json", "path", "Hca1", "Hca4"],
                   capture_output=True, text=True, timeout=30)
try:
    j = json.loads(r.stdout)
    sw = [x["name"] for x in j["switches"]]
    check(r.returncode == 0 and len(sw) == 2, "topoquery path --json parses")
    note("names: %r" % sw)
    check(any("\n" in s or "\\x0a" in s for s in sw), "the hostile name survives JSON as data, not as structure")
except ValueError as e:
    check(False, "topoquery path --json is valid JSON (%s): %r" % (e, r.stdout[:200]))

log = t.logtext()
check("\x1b" not in log and "\x07" not in log, "no escape or bell byte in topod's log")

# --- bounds ----------------------------------------------------------------
conns = [t.conn() for _ in range(3)]
for c in conns:
    c.ask("ping")
with t.conn() as c4:
    r = c4.readline()
    check(r.startswith("ERR BUSY"), "a fourth connection over --max-conns 3 is told why: %s" % r)
for c in conns:
    c.s.close()
time.sleep(0.3)
with t.conn() as c:
    check(c.ask("ping") == "OK pong", "connections free up when clients leave")
    time.sleep(3)
    r = c.readline()
    check(r.startswith("ERR IDLE"), "an idle connection is closed with ERR IDLE after --idle-timeout: %s" % r)
with t.conn() as c:
    hosts = " ".join(["Hca1"] * 4097)
    r = c.ask("hopsmatrix " + hosts)
    check(r.startswith("ERR TOOMANY"), "4,097 hosts in a matrix request: %s" % r[:60])
    r = c.ask("clusters 9 Hca1")
    check(r.startswith("ERR RANGE"), "a level beyond the depth: %s" % r)
    r = c.ask("shared Hca1 Hca1")
    check(r.startswith("ERR DUPLICATE"), "a host listed twice for sharing: %s" % r)
    r = c.ask("hops Hca1 nosuchhost")
    check(r.startswith("ERR NOTFOUND"), "an unknown host: %s" % r)
    r = c.ask("hops Hca1")
    check(r.startswith("ERR USAGE"), "a missing argument: %s" % r)
    check(c.ask("ping") == "OK pong", "still usable after every error")
done()
