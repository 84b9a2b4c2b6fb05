"""topod's history, `diff` and delta snapshots, without OpenSM: two routings
of ibsim's 2-switch capture (tests/fixtures), the second sent as a delta.
- a delta applies only to the served generation (ERR NOBASE otherwise), a
  corrupt one is refused, and neither changes what is served;
- `history` lists the generations with their kind, and survives a restart
  (STATE/history);
- `diff` names the switches whose LFTs changed and exactly the host pairs
  whose `path` answers differ between the two generations (asked from topod
  while each was served), also restricted to a host list;
- the history stays within --history generations."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import (BIN, ROOT, Topod, check, done, from_text, parse_kv, send_snapshot,  # noqa: E402
                       tmpdir)
from snapdecode import reseal  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
d = tmpdir()
SNAP = os.path.join(BIN, "topo-snap")


def make(lfts, gen, out):
    from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, lfts), out + ".raw")
    with open(out + ".raw", "rb") as f:
        b = f.read()
    with open(out, "wb") as f:
        f.write(reseal(b, generation=gen, timestamp=1700000000000000 + gen, sm_guid=0x77))


def delta(base, new, out):
    r = subprocess.run([SNAP, "delta", base, new, out], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def askall(t, line):
    """The whole reply: the head line and the lines= it announces."""
    with t.conn() as c:
        head = c.ask(line)
        n = int(parse_kv(head[3:]).get("lines", 0)) if head.startswith("OK") else 0
        return "\n".join([head] + [c.readline() for _ in range(n)])


def lines(reply):
    head = reply.splitlines()[0]
    return parse_kv(head[3:]) if head.startswith("OK ") else {}, reply.splitlines()[1:]


def wait_history(t, gen, timeout=30):
    """gen served and in `history`: topod serves a generation, then adds
    it to the history (after the persist), so a diff sent at once can
    miss it."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if t.wait_generation(gen, timeout) and str(gen) in [parse_kv(x).get("generation")
                                                            for x in lines(askall(t, "history"))[1]]:
            return True
        time.sleep(0.05)
    return False


def all_paths(t, hosts):
    out = {}
    for a in hosts:
        for b in hosts:
            if a != b:
                r = askall(t, "path %s %s" % (a, b))
                out[(a, b)] = r.splitlines()[1:] if r.startswith("OK") else r
    return out


a, b, c = (os.path.join(d, n) for n in ("a.snap", "b.snap", "c.snap"))
make("2sw4hca.lfts", 100, a)
make("2sw4hca-shared.lfts", 200, b)
make("2sw4hca.lfts", 300, c)
rc, out = delta(a, b, b + ".delta")
check(rc == 0, "topo-snap delta writes a delta: %s" % out)
dsize, fsize = os.path.getsize(b + ".delta"), os.path.getsize(b)
check(dsize < fsize, "the delta is smaller than the snapshot (%d < %d bytes)" % (dsize, fsize))

state = os.path.join(d, "state")
os.mkdir(state, 0o700)
t = Topod("--history", "3", state_dir=state)
sink = "sink=unix:" + t.ingest

rc, out = send_snapshot(sink, b + ".delta")
check(rc != 0 and "NOBASE" in out, "a delta before any fabric: ERR NOBASE (%s)" % out[-120:])
rc, out = send_snapshot(sink, a)
check(rc == 0 and t.wait_generation(100), "the full snapshot of generation 100 is served")
hosts = [l.split()[0] for l in askall(t, "hosts").splitlines()[1:]]
check(len(hosts) == 4, "four hosts: %s" % hosts)
before = all_paths(t, hosts)

# A delta against the wrong base, a corrupt one: refused, nothing changes.
rc, out = delta(c, b, os.path.join(d, "wrong.delta"))
rc, out = send_snapshot(sink, os.path.join(d, "wrong.delta"))
check(rc != 0 and "NOBASE" in out and "generation 300" in out,
      "a delta against a generation topod does not serve: NOBASE naming it (%s)" % out[-160:])
with open(b + ".delta", "rb") as f:
    good = f.read()
bad = bytearray(good)
bad[-1] ^= 0xFF
with open(os.path.join(d, "bad.delta"), "wb") as f:
    f.write(bytes(bad))
rc, out = send_snapshot(sink, os.path.join(d, "bad.delta"))
check(rc != 0 and "INVALID" in out and "checksum" in out, "a corrupt delta: ERR INVALID (%s)" % out[-100:])
check(t.info()["generation"] == "100", "and generation 100 is still served")

rc, out = send_snapshot(sink, b + ".delta")
check(rc == 0 and t.wait_generation(200), "the delta of generation 200 is applied and served (%s)" % out)
i = t.info()
check(i["hosts"] == "4" and i["switches"] == "2", "with the same fabric: %s hosts" % i["hosts"])
after = all_paths(t, hosts)

# The delta is journalled as itself, not by rewriting fabric.snap; the
# state directory as a whole is what topod serves.
def snapinfo(path):
    r = subprocess.run([SNAP, "info", path], capture_output=True, text=True)
    return dict(l.split(" ", 1) for l in r.stdout.splitlines())


check("fabric.delta.%020d" % 200 in os.listdir(state) and snapinfo(os.path.join(state, "fabric.snap"))
      .get("generation") == "100", "the delta is journalled beside fabric.snap (still generation 100)")
check(snapinfo(state).get("generation") == "200", "topo-snap on the state directory reads generation 200")
r = subprocess.run([SNAP, "export", state, os.path.join(d, "exported.snap")], capture_output=True, text=True)
check(r.returncode == 0 and snapinfo(os.path.join(d, "exported.snap")).get("generation") == "200",
      "topo-snap export writes it as one file: %s" % r.stdout.strip())
changed = sorted(k for k in before if before[k] != after[k])
check(changed, "the two routings differ on %d host pairs (by topod's path answers)" % len(changed))

head, rows = lines(askall(t, "history"))
kinds = [parse_kv(r) for r in rows]
check(head.get("lines") == "2" and [k["generation"] for k in kinds] == ["100", "200"] and
      [k["kind"] for k in kinds] == ["delta", "served"],
      "history: 100 kept as a delta, 200 served: %s" % rows)
check(int(kinds[0]["bytes"]) < fsize and kinds[0]["hosts"] == "4" and kinds[0]["engine"] == "text",
      "each entry has its counts, engine and size (%s bytes)" % kinds[0].get("bytes"))

r = askall(t, "diff 100 200")
head, rows = lines(r)
check(head.get("lines") == str(len(rows)), "diff announces its lines: %s" % r.splitlines()[0])
lft = [x for x in rows if x.startswith("lft ")]
check(head.get("links_down") == "0" and head.get("nodes_gone") == "0" and lft and
      int(head["lft_entries"]) > 0, "diff 100 200: no link or node changed, %d switches' LFTs did" % len(lft))
pairs = sorted(tuple(x.split()[1:3]) for x in rows if x.startswith("route "))
check(not pairs, "without a host list no pairs are listed, only hosts")
hl = {x.split()[1]: int(x.split()[2].split("=")[1]) for x in rows if x.startswith("host ")}
expect = {}
for (s_, t_) in changed:
    expect[s_] = expect.get(s_, 0) + 1
    expect[t_] = expect.get(t_, 0) + 1
check(hl == expect and head.get("routes_changed") == str(len(changed)),
      "the hosts whose routes changed, with counts, equal the path answers: %s vs %s" % (hl, expect))
r = askall(t, "diff 100 200 " + " ".join(hosts))
head, rows = lines(r)
pairs = sorted(tuple(x.split()[1:3]) for x in rows if x.startswith("route "))
check(pairs == changed, "with the job's hosts every changed pair is named: %s" % pairs)
two = list(changed[0])
r = askall(t, "diff 100 200 %s %s" % tuple(two))
head, _ = lines(r)
sub = [p for p in changed if p[0] in two and p[1] in two]
check(sub and head.get("routes_changed") == str(len(sub)), "restricted to %s: %d pairs" % (two, len(sub)))
r = askall(t, "diff 200 200")
head, rows = lines(r)
check(head.get("lft_entries") == "0" and head.get("routes_changed") == "0" and not rows,
      "a generation against itself: nothing")
r = askall(t, "diff @1700000000.00015 200")
head, _ = lines(r)
check(head.get("from") == "100", "diff by time: @T is the generation taken at or before T (%s)" % r[:80])
check(askall(t, "diff 5 200").startswith("ERR NOGENERATION generation 5 is not in the history (it holds"),
      "a generation not in the history: ERR NOGENERATION naming those held")
check(askall(t, "diff x 200").startswith("ERR USAGE"), "a bad generation: ERR USAGE")
# Numbers beyond 64 bits are refused, not clamped or wrapped (strtoull's
# ERANGE was taken as valid).
big = "18446744073709551616"
check(askall(t, "diff %s 200" % big).startswith("ERR USAGE"), "diff: a generation beyond 2^64-1: ERR USAGE")
check(askall(t, "watch %s" % big).startswith("ERR USAGE"), "watch: a generation beyond 2^64-1: ERR USAGE")
check(askall(t, "watch 1 %s" % big).startswith("ERR USAGE"), "watch: a timeout beyond 2^64-1: ERR USAGE")
h2 = " ".join(hosts[:2])
check(askall(t, "load bytes=18446744073709551617 alltoall %s" % h2).startswith("ERR USAGE"),
      "load: bytes= that would wrap to 1: ERR USAGE")
r = askall(t, "load bytes=9007199254740993 alltoall %s" % h2)
check(r.startswith("ERR USAGE") and "9007199254740992" in r, "load: bytes= above 2^53: ERR USAGE naming the limit: %s" % r)
r = askall(t, "load bytes=9007199254740992 alltoall %s" % h2)
check(r.startswith("OK ") and " bytes=18014398509481984 " in r, "load: bytes=2^53 is taken, 2 x 2^53 in all: %s" % r[:120])
r = askall(t, "load matrix %s -- 0:1:18446744073709551617" % h2)
check(r.startswith("ERR USAGE"), "load: a flow's bytes that would wrap: ERR USAGE: %s" % r[:100])
r = askall(t, "load matrix %s -- 0:4294967297:1" % h2)
check(r.startswith("ERR USAGE"), "load: a rank that would wrap to 1 in 32 bits: ERR USAGE: %s" % r[:100])

# topoquery and libtii: the same answers.
import json  # noqa: E402


def tq(*args):
    env = dict(os.environ, TZ="UTC")
    r = subprocess.run([os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port] + list(args),
                       capture_output=True, text=True, env=env, timeout=60)
    return r.returncode, r.stdout, r.stderr


rc, out, err = tq("--json", "history")
j = json.loads(out) if rc == 0 else {}
check([g["generation"] for g in j.get("generations", [])] == [100, 200] and
      j["generations"][0]["kind"] == "delta", "topoquery --json history: %s" % out[:200])
rc, out, err = tq("history")
check(rc == 0 and len(out.splitlines()) == 3 and "delta" in out and "2023-11-14T22:13:20" in out,
      "topoquery history prints a table with the times: %s" % out.splitlines()[1:2])
check("2023-11-14T22:13:20Z" in out, "history's times are UTC, marked Z, as the log has them")
rc2, out2, _ = tq("diff", "2023-11-14T22:13:21Z", "200")
env_other = dict(os.environ, TZ="Asia/Tokyo")
r = subprocess.run([os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port, "diff", "2023-11-14T22:13:21Z",
                    "200"], capture_output=True, text=True, env=env_other, timeout=60)
# The summary's first line names both ends: "diff 200 -> 200".
check(rc2 == 0 and "diff 200 -> 200" in out2 and r.returncode == 0 and "diff 200 -> 200" in r.stdout,
      "diff takes a time with Z back as UTC, whatever the local zone: %s" % r.stderr.strip())
rc, out, err = tq("info")
check(rc == 0 and "\ntaken 2023-11-14T22:13:20Z (" in out and " ago)" in out,
      "info says when the served snapshot was taken and how long ago: %s" %
      [x for x in out.splitlines() if x.startswith("taken")])
rc, out, err = tq("--json", "info")
check(rc == 0 and json.loads(out).get("age_s", 0) > 3600 * 24 * 365, "and --json info its age in seconds")
rc, out, err = tq("--json", "diff", "100", "200", *hosts)
j = json.loads(out) if rc == 0 else {}
check(sorted(tuple(p) for p in j.get("pairs", [])) == changed and j.get("routes_changed") == len(changed),
      "topoquery --json diff with the hosts: the changed pairs (%s)" % err.strip())
# Both generations were taken within 2023-11-14 22:13:20 UTC: a second
# later names the newer one, the second itself none.
rc, out, err = tq("diff", "2023-11-14 22:13:21", "200")
check(rc == 0 and "diff 200 -> 200" in out, "topoquery diff by date and time: %s%s" % (out.splitlines()[:1], err.strip()))
rc, out, err = tq("diff", "2023-11-14T22:13:20", "200")
check(rc == 1 and "no generation" in err, "a time before the history: %s" % err.strip())
rc, out, err = tq("diff", "yesterday", "200")
check(rc == 2 and "not a generation" in err, "topoquery diff with a bad time: usage error")
rc, out, err = tq("diff", "7", "200")
check(rc == 1 and "diff" in err, "topoquery diff of a generation not kept: %s" % err.strip())

# Restart: the history comes back from the state directory.
t.stop()
t = Topod("--history", "3", state_dir=state)
head, rows = lines(askall(t, "history"))
check([parse_kv(x)["generation"] for x in rows] == ["100", "200"], "after a restart the history is back: %s" % rows)
head, _ = lines(askall(t, "diff 100 200"))
check(head.get("routes_changed") == str(len(changed)), "and diff answers the same")

# Bounded: --history 3 keeps three generations, files included.
for g, lf in ((300, "2sw4hca.lfts"), (400, "2sw4hca-shared.lfts"), (500, "2sw4hca.lfts")):
    p = os.path.join(d, "g%d.snap" % g)
    make(lf, g, p)
    send_snapshot("sink=unix:" + t.ingest, p)
    wait_history(t, g)
head, rows = lines(askall(t, "history"))
gens = [parse_kv(x)["generation"] for x in rows]
files = sorted(os.listdir(os.path.join(state, "history")))
check(gens == ["300", "400", "500"] and len(files) == 2,
      "--history 3 keeps the newest three (%s), two of them as files (%s)" % (gens, files))
check(not [f for f in os.listdir(state) if f.startswith("fabric.delta.")],
      "a full snapshot replaces the journal")

# A port that trained to another width and speed: one record in
# iblinkinfo's words with only what changed; the same as JSON records.
topo = open(os.path.join(FIX, "2sw4hca.topo")).read()
slow = topo.replace('"Hca2" lid 4 4xSDR', '"Hca2" lid 4 1xDDR', 1)
check(slow != topo, "the fixture has Hca2's cable to change")
with open(os.path.join(d, "slow.topo"), "w") as f:
    f.write(slow)
from_text(os.path.join(d, "slow.topo"), os.path.join(FIX, "2sw4hca.lfts"), os.path.join(d, "g600.raw"))
with open(os.path.join(d, "g600.raw"), "rb") as f:
    raw = f.read()
with open(os.path.join(d, "g600.snap"), "wb") as f:
    f.write(reseal(raw, generation=600, timestamp=1700000000000600, sm_guid=0x77))
send_snapshot("sink=unix:" + t.ingest, os.path.join(d, "g600.snap"))
wait_history(t, 600)
head, rows = lines(askall(t, "diff 500 600"))
ports = [x for x in rows if x.startswith("port ")]
check(head.get("ports") == "1" and ports == ['port 0x0000000000200001/1 "Switch2" width=4X->1X speed=SDR->DDR'],
      "diff 500 600: the one port, its name, width and speed in words, nothing unchanged: %s" % ports)
head, rows = lines(askall(t, "diff 500 600 Hca1 Hca3"))
check(head.get("ports") == "0" and not [x for x in rows if x.startswith("port ")] and "Hca1" in hosts,
      "with two hosts of Switch1 listed, Switch2's port is off their routes: not listed (%s)" % hosts)
head, rows = lines(askall(t, "diff 500 600 Hca1 Hca2"))
check(head.get("ports") == "1", "with Hca2 listed it is")
rc, out, err = tq("--json", "diff", "500", "600")
j = json.loads(out) if rc == 0 else {}
rec = [r for r in j.get("records", []) if r.get("kind") == "port"]
check(rec == [{"kind": "port", "end": {"guid": "0x0000000000200001", "port": 1}, "name": "Switch2",
               "width": {"from": "4X", "to": "1X"}, "speed": {"from": "SDR", "to": "DDR"}}],
      "topoquery --json diff: the port record as an object: %s" % rec)
lft = [r for r in j.get("records", []) if r.get("kind") == "lft"]
check(all(isinstance(r.get("entries"), int) and r.get("switch", "").startswith("0x") for r in lft),
      "and lft records with numbers as numbers: %s" % lft[:1])
t.stop()
done()
