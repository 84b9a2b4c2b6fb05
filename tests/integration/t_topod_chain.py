"""100 chained deltas through a real topod (issue 22): the chain of
tests/unit/test_fabric_chain.c (a k=8 fat tree; up-port moves, entries sent
anywhere or nowhere, restores of earlier tables) goes to topod A as a full
snapshot and 100 deltas through `topo-snap send`, each applied on top of the
generation before; topod B gets generations 1, 51 and 101 whole; topod C
gets all 101 whole, each of which it indexes as the delta from the one it
serves (the same proof, from a diff it makes itself); topod D gets 101 alone
(built from scratch).
- a watch parked on each generation wakes with the next;
- A's state directory holds the intended LFTs after 50 and 100 deltas;
- A's `diff G-1 G` (from its history: reverse deltas) names exactly the LFT
  entries the two whole snapshots differ in, for every step;
- each entry of A's and C's history files (the delta back, made comparing
  only the blocks the delta forward brought) turns the next generation's
  whole snapshot into its own, byte for byte;
- `diff` between 1, 51 and 101, with and without a host list, is the same
  in A and B, and its LFT entries are those of the whole snapshots;
- C's log: 100 whole snapshots indexed as deltas, the hierarchy kept as
  often as A kept it;
- generation 101's `pathmatrix` and `hopsmatrix` of all hosts and `tree`
  are the same in A, B and C as in D."""
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, Topod, check, done, fabric_chain, parse_kv, send_snapshot, tmpdir  # noqa: E402

d = tmpdir()
chain, unit = fabric_chain(d)
check(unit.returncode == 0 and len(os.listdir(chain)) == 201,
      "test_fabric_chain writes the chain: %d files (exit %d)" % (len(os.listdir(chain)), unit.returncode))


def reply(c, line):
    """The whole reply on connection c: the head line and the lines= it announces."""
    head = c.ask(line)
    n = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
    return "\n".join([head] + [c.readline() for _ in range(n)])


def askall(t, line):
    with t.conn() as c:
        return reply(c, line)


def snap(g):
    return os.path.join(chain, "gen.%03d.snap" % g)


def lfts(g):
    """(switch GUID, LID) -> port, from `topo-snap lfts` of a generation's
    whole snapshot or of a state directory."""
    r = subprocess.run([os.path.join(BIN, "topo-snap"), "lfts", snap(g) if isinstance(g, int) else g],
                       capture_output=True, text=True, check=True)
    return {(int(x.split()[0], 16), int(x.split()[1])): x.split()[2] for x in r.stdout.splitlines()}


sa, sb = os.path.join(d, "a"), os.path.join(d, "b")
os.mkdir(sa, 0o700)
os.mkdir(sb, 0o700)
ta = Topod("--history", "101", state_dir=sa)
tb = Topod("--history", "101", state_dir=sb)

rc, out = send_snapshot("sink=unix:" + ta.ingest, snap(1))
check(rc == 0 and ta.wait_generation(1), "topod A serves generation 1 from the full snapshot (%s)" % out)
bad, woke, parked = [], 0, 0
for g in range(2, 102):
    # A watcher parked on the served generation hears of each new one.
    w = ta.conn()
    w.send("watch %d 20000\n" % (g - 1))
    time.sleep(0.02)
    w.s.setblocking(False)
    try:
        parked += not w.s.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        parked += 1
    w.s.settimeout(30)
    rc, out = send_snapshot("sink=unix:" + ta.ingest, os.path.join(chain, "delta.%03d" % g))
    if rc != 0:
        bad.append("%d: %s" % (g, out[-120:]))
    kv = parse_kv(w.readline()[3:])
    woke += kv.get("gen") == str(g) and kv.get("changed") == "1"
    w.s.close()
    if g == 51:
        # The state directory (fabric.snap and its journal) reproduces what is served.
        check(lfts(sa) == lfts(51), "after 50 deltas topod A's state directory holds generation 51's LFTs exactly")
check(parked == 100 and woke == 100, "a watch parked on each generation (%d of 100) wakes with the next (%d of 100)"
      % (parked, woke))
check(not bad and ta.wait_generation(101), "topod A applies the 100 chained deltas, each on the one before (%s)"
      % (bad[:3] or "all OK"))
check(lfts(sa) == lfts(101), "after 100 deltas, generation 101's LFTs exactly")
log = ta.logtext()
# The full build makes the proof by distance's cover with the hierarchy
# (fabric.c, build_hier); every delta shares it, carries it or completes
# it when it rebuilds: each generation's log line names it, and the
# deltas must decide as test_fabric_chain's walks do.
covers = re.findall(r"serving generation \d+ .*?\); cover: (\d+) LIDs;", log)
check(len(covers) == 101 and covers[0] == "128" and all(0 < int(n) <= 128 for n in covers),
      "every generation topod A served came with the proof by distance's cover (%d of 101), the full build's "
      "of all 128 hosts' LIDs (those routed along shortest paths: %s)" % (len(covers), sorted(set(covers))))
reused = log.count("reused: no hop count changed")
m = re.search(r"\((\d+) shared, (\d+) rebuilt", unit.stdout)
check(log.count("delta applied in") == 100 and m and int(m.group(1)) == reused,
      "its log: 100 deltas applied, the hierarchy shared %d times, as in test_fabric_chain (%s)"
      % (reused, m.group(0) + ")" if m else "?"))

for g in (1, 51, 101):
    rc, out = send_snapshot("sink=unix:" + tb.ingest, snap(g))
    check(rc == 0 and tb.wait_generation(g), "topod B serves generation %d whole (%s)" % (g, out))

# Every step of the chain as topod A's history has it: `diff G-1 G` names
# exactly the LFT entries in which the two whole snapshots differ.
wrong, prev = [], lfts(1)
for g in range(2, 102):
    cur = lfts(g)
    want = [k for k in set(prev) | set(cur) if prev.get(k) != cur.get(k)]
    a = askall(ta, "diff %d %d" % (g - 1, g))
    kv = parse_kv(a.splitlines()[0][3:])
    sw = sorted(int(x.split()[1], 16) for x in a.splitlines()[1:] if x.startswith("lft "))
    if not a.startswith("OK") or int(kv.get("lft_entries", -1)) != len(want) or sw != sorted(set(k[0] for k in want)):
        wrong.append(g)
    prev = cur
check(not wrong, "topod A's `diff G-1 G` for each of the 100 steps names exactly the changed LFT entries "
      "(wrong at %s)" % (wrong[:5] or "none"))



def history_back(state, gens):
    """The generations of gens whose entry in STATE/history (a line, then
    the delta back from the next generation) does not turn the next
    one's whole snapshot into its own, byte for byte."""
    bad = []
    for g in gens:
        with open(os.path.join(state, "history", "%020d.hist" % g), "rb") as f:
            line, back = f.read().split(b"\n", 1)
        tmp = os.path.join(d, "back.delta")
        with open(tmp, "wb") as f:
            f.write(back)
        r = subprocess.run([os.path.join(BIN, "topo-snap"), "apply", snap(g + 1), tmp, tmp + ".snap"],
                           capture_output=True, text=True)
        with open(snap(g), "rb") as f:
            want = f.read()
        if b"kind=d " not in line or r.returncode != 0 or open(tmp + ".snap", "rb").read() != want:
            bad.append(g)
    return bad


# topod keeps each generation as the delta back from the next, comparing
# only the blocks the delta that made the next one brought
# (snap_delta_encode_hint): what it kept must still lack nothing.
bad = history_back(sa, range(1, 101))
check(not bad, "each of A's 100 history entries turns generation G+1's whole snapshot into G's, byte for byte "
      "(wrong at %s)" % (bad[:5] or "none"))

ha = askall(ta, "history").splitlines()
check(len(ha) == 102 and parse_kv(ha[1]).get("generation") == "1",
      "topod A's history holds all 101 generations: %s" % ha[0])
hosts = [l.split()[0] for l in askall(ta, "hosts").splitlines()[1:]]
check(len(hosts) == 128, "128 hosts")
some = hosts[::9]
for g1, g2 in ((1, 101), (1, 51), (51, 101), (101, 1)):
    for extra in ("", " " + " ".join(some)):
        q = "diff %d %d%s" % (g1, g2, extra)
        a, b = askall(ta, q), askall(tb, q)
        head = a.splitlines()[0]
        if not extra:
            # From scratch, outside topod: the two whole snapshots' tables.
            t1, t2 = lfts(g1), lfts(g2)
            want = [k for k in set(t1) | set(t2) if t1.get(k) != t2.get(k)]
            kv = parse_kv(head[3:])
            sw = sorted(int(x.split()[1], 16) for x in a.splitlines()[1:] if x.startswith("lft "))
            check(int(kv.get("lft_entries", -1)) == len(want) and sw == sorted(set(k[0] for k in want)),
                  "diff %d %d: its LFT entries and switches are those of the whole snapshots (%d entries, "
                  "%d switches)" % (g1, g2, len(want), len(sw)))
        check(a.startswith("OK") and a == b, "%s%s: equal after the chain and from whole snapshots (%s)"
              % ("diff %d %d" % (g1, g2), " with %d hosts" % len(some) if extra else "",
                 " ".join(x for x in head.split() if x.startswith(("lft_", "routes_", "hosts_")))))

# The chain as whole snapshots: topod C diffs each against the generation
# it serves and proves hop counts as A did from the producer's deltas.
sc = os.path.join(d, "c")
os.mkdir(sc, 0o700)
tc = Topod("--history", "4", state_dir=sc)
bad = []
for g in range(1, 102):
    rc, out = send_snapshot("sink=unix:" + tc.ingest, snap(g))
    if rc != 0:
        bad.append("%d: %s" % (g, out[-120:]))
check(not bad and tc.wait_generation(101), "topod C serves the chain's 101 generations sent whole (%s)"
      % (bad[:3] or "all OK"))
clog = tc.logtext()
as_delta = len(re.findall(r"whole, indexed as the delta from generation \d+", clog))
check(as_delta == 100 and clog.count("reused: no hop count changed") == reused,
      "its log: 100 whole snapshots indexed as the delta from the generation before, the hierarchy kept %d "
      "times (topod A, from the producer's deltas: %d)" % (clog.count("reused: no hop count changed"), reused))
check(lfts(sc) == lfts(101), "C's state directory holds generation 101's LFTs exactly (written whole)")
bad = history_back(sc, range(98, 101))
check(not bad, "C's history entries (98 to 100, --history 4) turn each next whole snapshot into theirs, byte for "
      "byte (wrong at %s)" % (bad or "none"))
td = Topod()
rc, out = send_snapshot("sink=unix:" + td.ingest, snap(101))
check(rc == 0 and td.wait_generation(101), "topod D serves generation 101 alone, built from scratch (%s)" % out)
# `topo-snap send` of a state directory sends what is served from it (A's:
# generation 1 and 100 journalled deltas), not the directory's bytes.
te = Topod()
rc, out = send_snapshot("sink=unix:" + te.ingest, sa)
check(rc == 0 and te.wait_generation(101), "topod E serves generation 101 from `topo-snap send` of A's state "
      "directory (%s)" % out.strip())

# Generation 101 as served after the chain, from whole snapshots, and from scratch.
for q in ("pathmatrix " + " ".join(hosts), "hopsmatrix " + " ".join(hosts), "tree"):
    want = askall(td, q)
    for name, t in (("A", ta), ("B", tb), ("C", tc), ("E", te)):
        a = askall(t, q)
        check(want.startswith("OK") and a == want, "generation 101: `%s` of %s equal to D's (%d lines)"
              % (q.split()[0] + (" of all %d hosts" % len(hosts) if q != "tree" else ""), name,
                 len(a.splitlines())))
ta.stop()
tb.stop()
tc.stop()
td.stop()
te.stop()
done()
