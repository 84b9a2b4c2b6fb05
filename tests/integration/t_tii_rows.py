#!/usr/bin/env python3
"""libtii's table of commands (libtii/cmds.c) against topod's (topod/cmd.c,
read through `topod --commands`).

libtii names a command and the keys of its reply's head in one place,
cmds.c: tii__req_begin() takes a row's index (a request can only start
with a command written there), and the head a parser gets sees only the
keys its row declares (tii__kv_get, parse.c), so a key a parser reads but
cmds.c does not declare reads as absent and that parser's own tests fail.
This test ties the declarations to topod's rows:

  - every command libtii sends is one of topod's query commands (not an
    admin one), and names a generation ("gen" or "generation") unless it
    is "ping";
  - every head key libtii reads is one the row declares for the reply's
    head; a "legacy" key (an older topod's spelling, read for
    compatibility) is one the row no longer has;
  - libtii's sources start every request through the table (no command
    word written elsewhere), and use every row;
  - libtii's schedule algorithm names (libtii/sched.c's algo_names[],
    indexed by tii.h's TII_SCHED_*) are the server's (analysis/schedule.c's
    algos[]), as are the schedule usage's alternatives and the list in
    topod's "unknown algorithm" error;
  - and it is not vacuous: it reads at least 25 commands and 150 keys, and
    a mutated table (a key, a command, a legacy key, an algorithm) fails it.

Not checked: whether a parser treats a key the row marks optional ("key?")
as required. libtii legitimately requires some for the form it asked for
(simgrid all: omitted=, zones=; schedule form=hosts: hosts=, hsteps=, k=).
"""
import copy
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, check, done  # noqa: E402
import cmdtable  # noqa: E402


def src(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def strings(s):
    """The C string literals of s, concatenated (adjacent literals are one)."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', s))


def read_libtii():
    """{ENUM: (name, [keys], [legacy])} from libtii/cmds.c, and the enum's members in tii_impl.h."""
    text = src("libtii/cmds.c")
    body = text[text.index("tii__cmds[TII__NCMDS] = {"):]
    body = body[:body.index("\n};")]
    rows = {}
    dup = []
    for m in re.finditer(r'\[TII__(\w+)\]\s*=\s*\{((?:\s*"[^"]*")+)\s*,((?:\s*"[^"]*")+)\s*,((?:\s*"[^"]*")+)\s*\}', body):
        e = m.group(1)
        if e in rows:
            dup.append(e)
        rows[e] = (strings(m.group(2)), strings(m.group(3)).split(), strings(m.group(4)).split())
    impl = src("libtii/tii_impl.h")
    em = re.search(r"enum tii__cmd \{(.*?)\};", impl, re.S)
    members = re.findall(r"TII__(\w+)", em.group(1)) if em else []
    if members and members[-1] == "NCMDS":
        members.pop()
    return rows, members, dup


def topod_rows():
    return {r[0]: {"kind": r[3], "usage": r[4],
                   "keys": [k.rstrip("?") for k in r[6].split()] if r[6] != "-" else []}
            for r in cmdtable.table(os.path.join(BIN, "topod"))}


def compare(lib, top):
    """[(ok, what)] for libtii's rows against topod's."""
    out = []
    for e, (name, keys, legacy) in sorted(lib.items()):
        row = top.get(name)
        out.append((row is not None and row["kind"] != "admin",
                    "libtii sends %s: one of topod's query commands" % name))
        if row is None:
            continue
        if name != "ping":
            out.append(("gen" in row["keys"] or "generation" in row["keys"],
                        "%s: topod's row names the generation libtii reads (gen or generation)" % name))
        extra = [k for k in keys if k not in row["keys"]]
        out.append((not extra, "%s: the %d head keys libtii reads are in topod's row%s"
                    % (name, len(keys), (": not " + " ".join(extra)) if extra else "")))
        stale = [k for k in legacy if k in row["keys"]]
        out.append((not stale, "%s: libtii's legacy keys (%s) are no longer in topod's row%s"
                    % (name, " ".join(legacy) or "none", (": still " + " ".join(stale)) if stale else "")))
        twice = sorted({k for k in keys + legacy if (keys + legacy).count(k) > 1})
        out.append((not twice, "%s: each key declared once%s" % (name, (": " + " ".join(twice)) if twice else "")))
    return out


def algo_lists(top):
    """The schedule algorithm names: libtii's (by TII_SCHED_* index), the server's table's,
    the usage's alternatives, topod's error message's."""
    m = re.search(r"algo_names\[\]\s*=\s*\{([^}]*)\}", src("libtii/sched.c"))
    lib = re.findall(r'"(\w+)"', m.group(1)) if m else []
    idx = {k.lower(): int(v) for k, v in re.findall(r"#define TII_SCHED_([A-Z0-9]+) (\d+)\b", src("libtii/tii.h"))}
    t = src("analysis/schedule.c")
    t = t[t.index("sched_algo_row algos[] = {"):]
    server = re.findall(r'^\s*\{\s*"(\w+)",\s*SCHED_', t[:t.index("\n};")], re.M)
    usage = top.get("schedule", {}).get("usage", "").split()
    alts = usage[1].split("|") if len(usage) > 1 else []
    em = re.search(r'unknown algorithm[^(]*\(([^)]*)\)', src("topod/schedule_cmd.c"))
    err = [w.strip() for w in em.group(1).split(",")] if em else []
    return lib, idx, server, alts, err


def compare_algos(lib, idx, server, alts, err):
    out = [(lib == server, "libtii's algo_names[] are analysis/schedule.c's algos[], in order (%s)" % " ".join(lib))]
    bad = [n for i, n in enumerate(lib) if idx.get(n) != i]
    out.append((lib and not bad,
                "each name's index in algo_names[] is its TII_SCHED_* in tii.h%s" % ((": not " + " ".join(bad)) if bad else "")))
    out.append((sorted(alts) == sorted(server), "the schedule usage's alternatives are the server's algorithms"))
    out.append((sorted(err) == sorted(server), "topod's \"unknown algorithm\" error lists the server's algorithms"))
    return out


def failures(results):
    return [w for ok, w in results if not ok]


lib, members, dup = read_libtii()
top = topod_rows()
nkeys = sum(len(k) for _, k, _ in lib.values())
check(len(lib) >= 25 and nkeys >= 150 and not dup,
      "libtii/cmds.c: %d rows, %d head keys read (at least 25 and 150), none twice%s"
      % (len(lib), nkeys, (": " + " ".join(dup)) if dup else ""))
check(sorted(members) == sorted(lib), "libtii/cmds.c has a row for each member of enum tii__cmd, and only those")
check(all(name == e.lower() for e, (name, _, _) in lib.items()), "each row's enum member spells its command")
for ok, what in compare(lib, top):
    check(ok, what)

# ---- the sources go through the table -------------------------------------
sources = {f: src(os.path.join("libtii", f)) for f in sorted(os.listdir(os.path.join(ROOT, "libtii")))
           if f.endswith(".c") and f != "cmds.c"}
calls = [(f, a.strip()) for f, t in sources.items() for a in re.findall(r"tii__req_begin\(\s*t\s*,([^)]*)\)", t)]
raw = [(f, a) for f, a in calls if not re.fullmatch(r"TII__[A-Z]+", a)]
check(len(calls) >= 25 and not raw, "libtii's %d tii__req_begin() calls name a row of cmds.c%s"
      % (len(calls), (": not " + " ".join("%s:%s" % x for x in raw)) if raw else ""))
used = {e for t in sources.values() for e in re.findall(r"TII__([A-Z]+)\b", t)}
unused = sorted(set(lib) - used - {"NCMDS"})
check(not unused, "every row of cmds.c is used by libtii's sources%s" % ((": not " + " ".join(unused)) if unused else ""))
names = {name for name, _, _ in lib.values()} | set(top)
written = []
for f, t in sources.items():
    for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', t):
        m = re.match(r"([a-z]+)(?: %|\\n)", lit)   # a request line being printed: "plane %s\n"
        if m and m.group(1) in names:
            written.append("%s:%r" % (f, lit))
check(not written, "no command word is written outside libtii/cmds.c%s" % ((": " + " ".join(written)) if written else ""))

# ---- schedule algorithm names ----------------------------------------------
algos = algo_lists(top)
check(len(algos[0]) >= 10 and len(algos[2]) >= 10, "the algorithm names read: libtii %d, server %d"
      % (len(algos[0]), len(algos[2])))
for ok, what in compare_algos(*algos):
    check(ok, what)

# ---- not vacuous: each mutation fails the comparison ------------------------
def mutated(fn):
    m = copy.deepcopy(lib)
    fn(m)
    return failures(compare(m, top))


mut = {
    "a key hops's row does not declare": mutated(lambda m: m["HOPS"][1].append("hops_total")),
    "a key of another command's row (path's src for hops)": mutated(lambda m: m["HOPS"][1].append("src")),
    "a command topod does not have": mutated(lambda m: m.__setitem__("FROB", ("frob", [], []))),
    "an admin command": mutated(lambda m: m.__setitem__("STATS", ("stats", [], []))),
    "a legacy key the row still has": mutated(lambda m: m["SCHEDULE"][2].append("tiers")),
}
for what, fails in mut.items():
    check(bool(fails), "self-test: libtii's table with %s fails the comparison (%s)"
          % (what, fails[0] if fails else "passed"))
lib_a, idx, server, alts, err = algos
check(bool(failures(compare_algos(lib_a[:-1], idx, server, alts, err))) and
      bool(failures(compare_algos(lib_a, idx, server[:3] + ["wheel"] + server[3:], alts, err))),
      "self-test: an algorithm missing from libtii, or one more on the server, fails the comparison")
done()
