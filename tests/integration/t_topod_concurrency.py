"""Snapshots arriving while hundreds of queries are in flight.

Two versions of one fabric differ in a single LFT entry: Switch1 sends LID 6
(Hca4) out of port 5 in version A and out of port 3 in version B, so the
path Hca1 -> Hca4 leaves Switch1 by port 5 in A and 3 in B. Client threads
pipeline path, pathmatrix and info requests while another thread keeps
delivering A, B and corrupt snapshots. Every reply names its generation; the
test knows which version each generation is and checks that every reply,
including every line of a multi-line one, matches that version: a swap
never shows through mid-response. Corrupt snapshots must be refused, logged,
and leave the previous version served.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import (ROOT, Topod, check, done, from_text, note, send_snapshot,  # noqa: E402
                       snap_info, tmpdir)

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()
lfts_b = os.path.join(d, "b.lfts")
text = open(os.path.join(FIX, "2sw4hca.lfts")).read()
assert "0x0006 005 :" in text
open(lfts_b, "w").write(text.replace("0x0006 005 :", "0x0006 003 :", 1))

# Every delivery is a new generation (generations never go backwards:
# re-sending an older file would be refused as a rollback), alternating
# between the two versions.
versions = {}
files = []


def fresh(i):
    name, lf = (("A", os.path.join(FIX, "2sw4hca.lfts")), ("B", lfts_b))[i % 2]
    p = os.path.join(d, "%s%d.snap" % (name, i))
    from_text(os.path.join(FIX, "2sw4hca.topo"), lf, p)
    versions[int(snap_info(p)["generation"])] = name
    files.append(p)
    return p


for i in range(12):
    fresh(i)
check(len(versions) == 12, "12 distinct generations prepared")
raw = open(files[0], "rb").read()
corrupt = os.path.join(d, "corrupt.snap")
open(corrupt, "wb").write(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:])

t = Topod("--load", files[0])
OUT = {"A": "5", "B": "3"}
errors = []
replies = [0]
lock = threading.Lock()
stop = threading.Event()
seen = set()


def client(k):
    with t.conn() as c:
        while not stop.is_set():
            # A pipelined burst: the swap can land between any two replies.
            c.send("path Hca1 Hca4\npathmatrix Hca1 Hca2 Hca3 Hca4\ninfo\n" * 20)
            for _ in range(20):
                r = c.readline()
                gen = int(r.split()[1][4:])
                hop1 = c.readline()
                c.readline()
                v = versions.get(gen)
                seen.add(v)
                if not r.startswith("OK") or v is None or ("out=%s " % OUT[v]) not in hop1:
                    errors.append("path gen %s: %s / %s" % (gen, r, hop1))
                r = c.readline()
                gen = int(r.split()[1][4:])
                n = int(r.split("lines=")[1])
                body = [c.readline() for _ in range(n)]
                # The matrix names switches, not ports: check that the
                # reply is whole (its route lines cover all 12 ordered
                # pairs once) and that the generation is one we sent.
                groups = {int(b.split()[1]): b.split()[2:] for b in body if b.startswith("grp ")}
                covered = sum(len(groups.get(int(b.split()[0]), [])) - (b.split()[1] in groups.get(int(b.split()[0]), []))
                              for b in body if b[0].isdigit())
                if gen not in versions or covered != 12:
                    errors.append("pathmatrix gen %s: %d lines, %d pairs" % (gen, n, covered))
                r = c.readline()
                if "generation=" not in r:
                    errors.append("info: " + r)
                with lock:
                    replies[0] += 3


threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
for th in threads:
    th.start()
sent = {"A": 0, "B": 0}
rejected = 0
deadline = time.time() + 8
i = 0
while time.time() < deadline:
    f = files[i] if i < 12 else fresh(i)
    rc, out = send_snapshot("sink=unix:" + t.ingest, f)
    if rc != 0:
        errors.append("delivery failed: " + out)
    if i % 3 == 2:
        rc, out = send_snapshot("sink=unix:" + t.ingest, corrupt)
        rejected += rc != 0 and "ERR INVALID" in out
    i += 1
    time.sleep(0.05)
stop.set()
for th in threads:
    th.join(30)
note("%d replies checked while %d snapshots and %d corrupt ones arrived" % (replies[0], i, rejected))
for e in errors[:5]:
    note(e)
check(replies[0] >= 600, "hundreds of replies checked under concurrent swaps (%d)" % replies[0])
check(seen == {"A", "B"}, "replies came from both versions of the fabric")
check(not errors, "no reply mixes generations or shows a half-swapped fabric")
check(rejected > 0 and rejected == i // 3, "every corrupt snapshot was refused (%d)" % rejected)
last = files[i - 1]
want = int(snap_info(last)["generation"])
check(t.wait_generation(want), "after the storm the last good snapshot is served, not the corrupt one")
check("payload checksum mismatch" in t.logtext(), "the refusals are logged")
done()
