"""The delta journal under faults (issue 21, items 6 and 7): every plain
`OK G` survives kill -9 and a restart, whatever happened before it.

1. Corruption. A full snapshot and deltas; then one journal entry on disk
   is damaged (bytes flipped; truncated; replaced by another generation's
   entry), more deltas are acknowledged (topod finds the damage when it
   reads the entry back to compose the next one, and writes the fabric
   whole), topod is killed with SIGKILL and restarted: the newest
   acknowledged generation is served (lost: 0). Then
   the newest entry itself is damaged and topod killed: the previous
   generation is served, the entry is renamed aside (.corrupt), logged and
   counted in admin `stats`, and the journal goes on from there.
2. Disk full (in a private mount namespace, `unshare --mount`, on a small
   tmpfs, so nothing leaks): a full snapshot that cannot be written is
   "OK G not-durable"; a delta on top of it must be "not-durable" too (or
   survive a restart); with the disk still full a delta on a durable base
   is journalled; once space is back everything is durable again.

Each restart checks the invariant: the served generation is the newest one
acknowledged with a plain OK, or a newer one. Figures: "lost N" = plain OKs
a restart did not serve.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, check, done, note, parse_kv, tmpdir  # noqa: E402
from snapdecode import decode, reseal  # noqa: E402
from journalfault import SM, TS0, Run, damage, mkdelta  # noqa: E402


def k12(d):
    """bench_build's k=12 fat tree (432 hosts, 183 KB): big enough that a
    few deltas do not make topod fold the journal into fabric.snap."""
    path = os.path.join(d, "k12.snap")
    subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "12", "64", path], check=True,
                   capture_output=True)
    raw = open(path, "rb").read()
    s = decode(raw, check_crc=False)
    return raw, len(s.nodes), s.engine.encode()


def full(raw, g):
    return reseal(raw, generation=g, timestamp=TS0 + g, sm_guid=SM, sweep=g)


def entries(state):
    return sorted(f for f in os.listdir(state) if f.startswith("fabric.delta."))


def corruption(mode):
    d = tmpdir()
    state = os.path.join(d, "state")
    os.mkdir(state, 0o700)
    raw, nn, eng = k12(d)
    base = (100, nn, eng)
    run = Run(state, d)
    r = [run.send(100, full(raw, 100))]
    for g in (101, 102, 103):
        r.append(run.send(g, mkdelta(base, g, 0, b"h%d" % g)))
        base = (g, base[1], base[2])
    check(r == ["OK 100", "OK 101", "OK 102", "OK 103"], "%s: a full snapshot and three deltas: %s" % (mode, r))
    e = entries(state)
    check(e == ["fabric.delta.%020d" % g for g in (102, 103)],
          "%s: the journal keeps the newest entry and the one before: %s" % (mode, e))
    # Each entry is against fabric.snap, not against the entry before it.
    out = os.path.join(d, "applied.snap")
    p = subprocess.run([os.path.join(BIN, "topo-snap"), "apply", os.path.join(state, "fabric.snap"),
                        os.path.join(state, e[-1]), out], capture_output=True, text=True)
    check(p.returncode == 0 and decode(open(out, "rb").read()).generation == 103,
          "%s: entry 103 applies to fabric.snap alone (cumulative): %s" % (mode, (p.stdout + p.stderr).strip()))

    # "replace": another generation's entry, kept aside before any damage.
    other = os.path.join(d, "entry102")
    with open(os.path.join(state, e[0]), "rb") as f, open(other, "wb") as o:
        o.write(f.read())

    def hit(g):
        damage(os.path.join(state, "fabric.delta.%020d" % g), mode, other)

    hit(103)
    for g in (104, 105):
        r.append(run.send(g, mkdelta(base, g, 0, b"h%d" % g)))
        base = (g, base[1], base[2])
    check(r[-2:] == ["OK 104", "OK 105"], "%s: entry 103 damaged on disk, two more deltas: %s" % (mode, r[-2:]))
    # topod reads the entry back to compose the next one (it does not keep
    # it in memory): the damage is found there, and the fabric written whole.
    snap_gen = decode(open(os.path.join(state, "fabric.snap"), "rb").read(), check_crc=False).generation
    check(snap_gen == 104 and entries(state) == ["fabric.delta.%020d" % 105] and
          "journal: cannot compose generation 104 onto 103" in run.t.logtext(),
          "%s: the damaged entry was found composing 104, which was written whole: fabric.snap holds %d, "
          "entries %s" % (mode, snap_gen, entries(state)))
    served, lost = run.crash()
    check(served == 105 and lost == 0, "%s: kill -9 and restart: generation %d served (newest OK 105), lost %d" %
          (mode, served, lost))
    with run.t.conn() as c:
        head = c.ask("hosts")
        names = [c.readline() for _ in range(int(parse_kv(head[3:])["lines"]))]
    check(any(n.startswith("h105 ") for n in names), "%s: with generation 105's contents (%s)" % (mode, names[0][:20]))

    # The newest entry itself damaged: it alone is lost, and quarantined.
    hit(105)
    served, lost = run.crash()
    e = os.listdir(state)
    st = parse_kv(run.t.admin_ask("stats")[3:])
    check(served == 104 and lost == 1 and "fabric.delta.%020d.corrupt" % 105 in e,
          "%s: entry 105 damaged, kill -9: %d served, lost %d (105, whose own file was destroyed), quarantined (%s)" %
          (mode, served, lost, sorted(x for x in e if "delta" in x)))
    check(st.get("journal_quarantined") == "1" and "00000000000000000105" in st.get("journal_last", ""),
          "%s: stats: journal_quarantined=%s journal_last=\"%s\"" %
          (mode, st.get("journal_quarantined"), st.get("journal_last", "")[:90]))
    check("quarantined as" in run.t.logtext(), "%s: and the log says so" % mode)
    base = (104, base[1], base[2])
    r2 = run.send(106, mkdelta(base, 106, 0, b"h106"))
    served, lost = run.crash()
    check(r2 == "OK 106" and served == 106 and lost == 0,
          "%s: the journal goes on: %s, kill -9, %d served, lost %d" % (mode, r2, served, lost))
    check("fabric.delta.%020d.corrupt" % 105 in os.listdir(state), "%s: the quarantined file stays" % mode)
    run.t.stop()


def restart_compose():
    """After a restart that served fabric.snap and an entry, the next delta
    is composed onto that entry, read back from its file."""
    d = tmpdir()
    state = os.path.join(d, "state")
    os.mkdir(state, 0o700)
    raw, nn, eng = k12(d)
    run = Run(state, d)
    r = [run.send(100, full(raw, 100))] + [run.send(g, mkdelta((g - 1, nn, eng), g, 0, b"h%d" % g)) for g in (101, 102)]
    served, lost = run.crash()
    r.append(run.send(103, mkdelta((102, nn, eng), 103, 0, b"h103")))
    log = run.t.logtext()
    e = entries(state)
    served2, lost2 = run.crash()
    check(r == ["OK 100", "OK 101", "OK 102", "OK 103"] and served == 102 and e == ["fabric.delta.%020d" % g
                                                                                     for g in (102, 103)]
          and "whole" not in log.split("serving generation 102", 1)[-1] and served2 == 103 and lost + lost2 == 0,
          "restart on an entry (%d served), then a delta composed onto it: %s, entries %s, not written whole; "
          "kill -9: %d served" % (served, r, e, served2))
    run.t.stop()


def diskfull(d):
    """Runs in a private mount namespace (see main)."""
    state = os.path.join(d, "state")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", state], check=True)
    raw, nn, eng = k12(d)

    def delta(b, g):
        return mkdelta((b, nn, eng), g, 0, b"h%d" % g)

    run = Run(state, d)
    r = run.send(100, full(raw, 100))
    check(r == "OK 100", "disk full: full snapshot 100 (%d KB) on a 1 MB tmpfs: %s" % (len(raw) // 1024, r))
    sv = os.statvfs(state)
    filler = os.path.join(state, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, sv.f_bavail * sv.f_frsize - 64 * 1024))
    r1 = run.send(101, full(raw, 101))
    # The producer resends it (its OK lost, say): a plain OK would claim
    # what the disk does not hold; the repeat is written again, and fails.
    r1b = run.send(101, full(raw, 101))
    r2 = run.send(102, delta(101, 102))
    check(r1b.startswith("OK 101 already served, not-durable"),
          "disk full: the same snapshot 101 again: %s" % r1b[:70])
    check(r1.startswith("OK 101 not-durable"), "disk full (64 KB left): full snapshot 101: %s" % r1[:60])
    served, lost = run.crash()
    check((r2.startswith("OK 102 not-durable") or served >= 102) and lost == 0,
          "disk full: a delta on the not-durable 101: \"%s\"; kill -9: generation %d served, lost %d" %
          (r2[:40], served, lost))
    r3 = run.send(103, delta(served, 103))
    served, lost = run.crash()
    check(r3 == "OK 103" and served == 103 and lost == 0,
          "disk still full: a delta on the durable %d is journalled: %s; kill -9: %d served, lost %d" %
          (100, r3, served, lost))
    os.unlink(filler)
    r4, r5 = run.send(104, full(raw, 104)), run.send(105, delta(104, 105))
    served, lost = run.crash()
    check(r4 == "OK 104" and r5 == "OK 105" and served == 105 and lost == 0,
          "space back: %s, %s; kill -9: %d served, lost %d" % (r4, r5, served, lost))
    st = parse_kv(run.t.admin_ask("stats")[3:])
    note("replies: %s" % run.replies)
    run.t.stop()
    return st


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--diskfull":
        diskfull(sys.argv[2])
        done()
    for mode in ("flip", "truncate", "replace"):
        corruption(mode)
    restart_compose()
    if os.geteuid() != 0 or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode:
        print("ok - disk full # SKIP needs root and unshare --mount")
        done()
    d = tmpdir()
    os.mkdir(os.path.join(d, "state"), 0o700)
    # The tmpfs lives in a mount namespace of its own: it goes when the
    # inner run ends, however it ends.
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                        "--diskfull", d], timeout=300)
    check(p.returncode == 0, "the disk-full run passed")
    done()


main()
