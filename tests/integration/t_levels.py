#!/usr/bin/env python3
"""Issue 36 item 4: one level vocabulary in every view (docs/protocol.md,
"Levels, one vocabulary"), on a k=4 3-level fat tree (16 hosts, 8 leaf
switches in 4 pods, 4 core switches) loaded from a snapshot.

A **level** counts the hierarchy from the top: 0 the whole fabric, depth-1
the leaf switches; `top`, `leaf` and -1..-depth name the same levels. A
**tier** counts a cable's ends from the hosts (0 hosts, 1 leaf switches,
...), and only `load` and `schedule opt` use it. Checked in:
  - topoquery tree (text and JSON) and clusters (every level, top, leaf,
    negative levels; text and JSON): level 0 is one cluster of all hosts,
    level depth-1 has one cluster per leaf switch, level 1 one per pod;
  - the web server's /api/tree and /api/clusters (what the web view draws):
    the same level numbers and counts;
  - load (text, JSON, /api/load) and schedule opt (text, /api/schedule):
    their classes are tiers, named so, never "level"; a tier-1 switch is a
    leaf switch (level depth-1) and the switch tiers are depth many;
  - the profiler's split by level is checked against the same numbering
    (level 2 = same leaf on this shape) in t_profiler.sh.
"""
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, Topod, check, done, tmpdir  # noqa: E402

d = tmpdir()
snap = os.path.join(d, "k4.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "4", "1", snap], check=True,
               capture_output=True)
t = Topod("-L", snap, "--http", "127.0.0.1:0")
hport = int(t.p.stdout.readline().decode().split("=")[1])
S = "127.0.0.1:%d" % t.port


def tq(*args):
    e = dict(os.environ)
    e.pop("TII_SERVERS", None)
    r = subprocess.run([os.path.join(BIN, "topoquery"), "-s", S] + list(args), capture_output=True, text=True,
                       env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def api(cmd, args):
    url = "http://127.0.0.1:%d/api/%s?args=%s" % (hport, cmd, urllib.parse.quote(args))
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


rc, out, _ = tq("hosts")
hosts = [l.split()[0] for l in out.splitlines()]
check(rc == 0 and len(hosts) == 16, "the k=4 fat tree has 16 hosts (%d)" % len(hosts))

# ---- the hierarchy: tree and clusters ---------------------------------------
rc, out, _ = tq("--json", "tree")
tree = json.loads(out) if rc == 0 else {}
depth = tree.get("depth")
per = {}
for c in tree.get("clusters", []):
    per.setdefault(c["level"], []).append(c)
counts = [len(per.get(lv, [])) for lv in range(depth or 0)]
top = per.get(0, [{}])
check(depth == 3 and counts == [1, 4, 8] and top[0].get("hosts") == 16 and top[0].get("parent") is None,
      "tree --json: depth %s, clusters per level %s (0 = the whole fabric, 1 = pods, 2 = leaf switches)"
      % (depth, counts))
rc, out, _ = tq("tree")
text_levels = sorted({int(w.split("=")[1]) for l in out.splitlines() for w in l.split() if w.startswith("level=")})
check(rc == 0 and text_levels == [0, 1, 2], "tree text names levels %s, as its JSON" % text_levels)

rc, out, _ = tq("--json", "clusters", *hosts)
cl = json.loads(out) if rc == 0 else {}
got = [(lv["level"], lv["count"]) for lv in cl.get("levels", [])]
check(got == [(0, 1), (1, 4), (2, 8)], "clusters --json, every level: %s = tree's" % got)
for word, lv in (("top", 0), ("0", 0), ("-3", 0), ("-2", 1), ("leaf", 2), ("-1", 2), ("2", 2)):
    rc, out, err = tq("clusters", word, *hosts)
    first = out.splitlines()[0] if rc == 0 and out else err.strip()
    check(first == "level %d clusters %d" % (lv, counts[lv]),
          "clusters %s names level %d: %r" % (word, lv, first))

# ---- the web server's API: the same numbers ---------------------------------
j = api("tree", "")
lv_web = {}
for ln in j.get("lines", []):
    if "level" in ln:
        lv_web[ln["level"]] = lv_web.get(ln["level"], 0) + 1
check(j.get("ok") and [lv_web.get(i, 0) for i in range(3)] == counts,
      "/api/tree: clusters per level %s" % sorted(lv_web.items()))
for word, lv in (("leaf", 2), ("top", 0), ("-2", 1)):
    j = api("clusters", word + " " + " ".join(hosts))
    h = j.get("head", {})
    check(j.get("ok") and h.get("level") == lv and h.get("count") == counts[lv],
          "/api/clusters %s: level=%s count=%s" % (word, h.get("level"), h.get("count")))

# ---- load and schedule opt: tiers, never "level" ----------------------------
rc, out, _ = tq("load", "alltoall", *hosts)
lines = out.splitlines()
tiers = [l.split()[1] for l in lines if l.startswith("tier ")]
check(rc == 0 and "0>1" in tiers and "1>2" in tiers and not any(l.startswith("level") for l in lines),
      "load text: tier classes %s, no 'level' line" % tiers)
sw_tiers = sorted({int(x) for c in tiers for x in c.split(">")} - {0})
check(sw_tiers == list(range(1, depth + 1)), "the switch tiers %s are depth (%s) many" % (sw_tiers, depth))
rc, out, _ = tq("--json", "load", "alltoall", *hosts)
lj = json.loads(out) if rc == 0 else {}
check("tiers" in lj and "levels" not in lj and {(x["from"], x["to"]) for x in lj["tiers"]} ==
      {tuple(map(int, c.split(">"))) for c in tiers}, "load --json: \"tiers\", the same classes")
j = api("load", "alltoall " + " ".join(hosts))
kinds = {ln["kind"] for ln in j.get("lines", [])}
check(j.get("ok") and "tier" in kinds and "level" not in kinds, "/api/load: line kinds %s" % sorted(kinds))

# A tier-1 switch is a leaf switch: the host cables' far ends (tier 0>1) are
# the switches of the leaf level's clusters (level depth-1).
rc, out, _ = tq("--json", "load", "--links", "alltoall", *hosts)
lk = json.loads(out) if rc == 0 else {}
tier1 = {x["head"] for x in lk.get("links", []) if x.get("from") == 0 and x.get("to") == 1}
check(len(tier1) == counts[depth - 1], "the tier-1 switches are %d, as many as level %d's clusters (%d)"
      % (len(tier1), depth - 1, counts[depth - 1]))

rc, out, err = tq("schedule", "opt", "fallback=0", *hosts)
sl = out.splitlines()
check(rc == 0 and any(l.startswith("tier ") for l in sl) and any(l.startswith("tier_max ") for l in sl)
      and not any(l.startswith("level") for l in sl),
      "schedule opt text: tier bounds and tier_max lines, no 'level' (%s)" % (err.strip()[:80] or "ok"))
j = api("schedule", "opt fallback=0 " + " ".join(hosts))
kinds = {ln["kind"] for ln in j.get("lines", [])}
check(j.get("ok") and "tiers" in j.get("head", {}) and "levels" not in j.get("head", {}) and "TIER" in kinds,
      "/api/schedule opt: head tiers=%s, line kinds %s" % (j.get("head", {}).get("tiers"), sorted(kinds)))
t.stop()
done()
