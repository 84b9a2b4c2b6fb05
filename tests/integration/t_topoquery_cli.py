#!/usr/bin/env python3
"""topoquery: every command in text and --json, exit codes, slurm and dot output.

Runs build/bin/topoquery against the real topod on tests/fixtures/2sw4hca
(when its fabric commands are there) and against tests/lib/fake_topod.py
(the same fixture; a 3-level fat tree with a hostile switch description; a
canned hierarchy with several roots for slurm/dot; a silent server).
JSON is checked with the json module; dot with graphviz when installed,
else structurally.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import check, note  # noqa: E402

ROOT = tt.ROOT
TQ = os.path.join(ROOT, "build", "bin", "topoquery")
FAKE = os.path.join(ROOT, "tests", "lib", "fake_topod.py")
TOPO = os.path.join(ROOT, "tests", "fixtures", "2sw4hca.topo")
LFTS = os.path.join(ROOT, "tests", "fixtures", "2sw4hca.lfts")
GUID = re.compile(r"^0x[0-9a-f]{16}$")


class Fake:
    def __init__(self, *args):
        self.p = subprocess.Popen([sys.executable, FAKE] + list(args), stdout=subprocess.PIPE)
        tt._procs.append(self.p)
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready port="):
            raise RuntimeError("fake_topod did not start: %r" % line)
        self.addr = "127.0.0.1:%d" % int(line.split("=")[1])


def tq(*args, server=None, stdin=None, env=None, timeout=30):
    """(status, stdout, stderr) of one topoquery run."""
    e = dict(os.environ)
    e.pop("TII_SERVERS", None)
    e.pop("TII_TIMEOUT_MS", None)
    if env:
        e.update(env)
    cmd = [TQ] + (["-s", server] if server else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, input=stdin, env=e, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def js(out):
    try:
        lines = out.splitlines()
        if len(lines) != 1:
            return None
        return json.loads(out)
    except ValueError:
        return None


def expand(expr):
    """Slurm hostlist expansion, written independently of the C one."""
    out = []
    for word in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", expr):
        m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", word)
        if not m:
            out.append(word)
            continue
        pre, body, rest = m.groups()
        for part in body.split(","):
            lo, _, hi = part.partition("-")
            hi = hi or lo
            for v in range(int(lo), int(hi) + 1):
                out.extend(expand(pre + str(v).zfill(len(lo)) + rest))
    return out


def check_slurm(text, tree, what):
    """topology.conf structure: valid unique names, every host once, one top per root."""
    switches = {}
    ok = True
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r"^SwitchName=([A-Za-z0-9._-]+) (Nodes|Switches)=(\S+)$", line)
        if not m:
            note("bad line: " + line)
            ok = False
            continue
        name, kind, val = m.groups()
        if name in switches:
            ok = False
        switches[name] = (kind, val)
    check(ok and switches, what + ": every line is SwitchName=NAME Nodes=|Switches=, names unique")
    children = [c for k, v in switches.values() if k == "Switches" for c in v.split(",")]
    check(all(c in switches for c in children) and len(children) == len(set(children)),
          what + ": Switches= name defined switches, each under one parent")
    hosts = [h for k, v in switches.values() if k == "Nodes" for h in expand(v)]
    want = sorted(h["name"] for h in tree["hosts"])
    check(sorted(hosts) == want, what + ": every host under exactly one switch (%d hosts)" % len(want))
    tops = [n for n in switches if n not in children]
    roots = [c for c in tree["clusters"] if c["parent"] is None]
    check(len(tops) == len(roots), what + ": one tree per root (%d)" % len(roots))
    for c in tree["clusters"]:
        # topod's name for the cluster (its switch); sLEVEL_ID from a topod without names
        n = c.get("name") or "s%d_%s" % (c["level"], c["id"][2:])
        if n not in switches:
            check(False, what + ": cluster %s has switch %s" % (c["id"], n))
            break
    return switches


def check_dot(text, tree, what):
    lines = text.strip().splitlines()
    ok = lines[0].startswith("graph topology {") and lines[-1] == "}"
    # nested boxes: each cluster once, as a subgraph "cluster_cN" or a node "cN";
    # each host as its own node "hN" (small leaves) or inside a range node
    boxes = set(re.findall(r'"(?:cluster_)?c([0-9]+)"', text))
    hosts = re.findall(r'^\t"h[0-9]+" \[label="([^"]*)"', text, re.M)
    ranged = re.search(r'^\t"[co][0-9]+" \[label=', text, re.M) is not None
    check(ok and len(boxes) == len(tree["clusters"]) and all(l.count('"') % 2 == 0 for l in lines)
          and (ranged or sorted(hosts) == sorted(h["name"] for h in tree["hosts"])),
          what + ": dot structure (graph topology { ... }, %d boxes)" % len(tree["clusters"]))
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True)
        check(r.returncode == 0 and "<svg" in r.stdout, what + ": graphviz renders it")
    else:
        print("skip - %s: graphviz not installed, structure checked only" % what)


def fixture_suite(S, tag):
    """Every command on the 2sw4hca fabric."""
    t = "[%s] " % tag
    rc, out, err = tq("info", server=S)
    kv = dict(l.split(" ", 1) for l in out.splitlines())
    check(rc == 0 and kv.get("switches") == "2" and kv.get("cas") == "4" and kv.get("depth") == "2"
          and kv.get("server") == S and int(kv["generation"]) > 0, t + "info text")
    rc, out, err = tq("--json", "info", server=S)
    j = js(out)
    check(rc == 0 and j and j["nodes"] == 6 and j["switches"] == 2 and j["cas"] == 4 and j["hosts"] == 4
          and j["depth"] == 2 and j["generation"] == int(kv["generation"]) and GUID.match(j["sm_guid"]),
          t + "info --json: generation and counts")
    gen = j["generation"] if j else 0

    rc, out, err = tq("hops", "Hca1", "Hca3", server=S)
    check(rc == 0 and out == "1\n", t + "hops Hca1 Hca3 = 1 (one leaf)")
    rc, out, err = tq("hops", "Hca1", "Hca2", "--json", server=S)
    j = js(out)
    check(rc == 0 and j == {"src": "Hca1", "dst": "Hca2", "hops": 2, "generation": gen}, t + "hops --json")

    rc, out, err = tq("path", "Hca1", "Hca2", server=S)
    ls = out.splitlines()
    check(rc == 0 and ls[0] == "Hca1 Hca2 2" and len(ls) == 3
          and re.match(r"^0x0000000000200000 1 [35] Switch1$", ls[1])
          and re.match(r"^0x0000000000200001 [35] 1 Switch2$", ls[2]), t + "path text")
    rc, out, err = tq("path", "--json", "Hca1", "Hca2", server=S)
    j = js(out)
    check(rc == 0 and j == {"src": "Hca1", "dst": "Hca2", "hops": 2,
                            "switches": [{"guid": "0x0000000000200000", "name": "Switch1"},
                                         {"guid": "0x0000000000200001", "name": "Switch2"}]}
          and list(j.keys()) == ["src", "dst", "hops", "switches"], t + "path --json exactly")

    rc, out, err = tq("depth", server=S)
    check(rc == 0 and out == "2\n", t + "depth")
    rc, out, err = tq("-j", "depth", server=S)
    check(rc == 0 and js(out) == {"depth": 2, "generation": gen}, t + "depth --json")

    rc, out, err = tq("--json", "tree", server=S)
    tree = js(out)
    check(rc == 0 and tree and tree["depth"] == 2 and len(tree["clusters"]) == 3 and len(tree["hosts"]) == 4
          and sum(1 for c in tree["clusters"] if c["parent"] is None) == 1
          and all(GUID.match(c["id"]) for c in tree["clusters"]), t + "tree --json")
    rc, out, err = tq("tree", server=S)
    ls = out.splitlines()
    check(rc == 0 and len(ls) == 7 and ls[0].startswith("cluster cl_0000000000200000_1 (0x") and "level=0" in ls[0]
          and "  cluster Switch1 (0x" in out and "  cluster Switch2 (0x" in out
          and sum(1 for l in ls if l.startswith("  cluster ")) == 2
          and sorted(l.strip() for l in ls if l.startswith("    host ")) ==
          ["host Hca1", "host Hca2", "host Hca3", "host Hca4"], t + "tree text, indented by level, clusters named after their switch (Switch1 (0x...))")
    check([c["name"] for c in tree["clusters"]] == ["Switch1", "Switch2", "cl_0000000000200000_1"],
          t + "tree --json: a name per cluster; two leaves cabled to each other have no switch above: cl_ fallback")
    rc, out, err = tq("tree", "--format", "dot", server=S)
    if check(rc == 0, t + "tree --format dot"):
        check_dot(out, tree, t + "tree dot")

    rc, out, err = tq("clusters", "1", "Hca1", "Hca2", "Hca3", "Hca4", server=S)
    ls = out.splitlines()
    rows = [l.split() for l in ls[1:]]
    check(rc == 0 and ls[0] == "level 1 clusters 2" and len(rows) == 4 and rows[0][1] == rows[2][1]
          and rows[1][1] == rows[3][1] and rows[0][1] != rows[1][1]
          and {rows[0][2], rows[1][2]} == {"0", "1"}
          and (rows[0][2] == "0") == (int(rows[0][1], 16) < int(rows[1][1], 16)), t + "clusters 1 text + colours")
    # one vocabulary: leaf, -1 (from the leaves), top; the output names the level's number
    for word in ("leaf", "-1"):
        rc2, out2, _ = tq("clusters", word, "Hca1", "Hca2", "Hca3", "Hca4", server=S)
        check(rc2 == 0 and out2 == out, t + "clusters %s = clusters 1 on a 2-level hierarchy" % word)
    rc2, out2, _ = tq("clusters", "top", "Hca1", "Hca2", server=S)
    check(rc2 == 0 and out2.splitlines()[0] == "level 0 clusters 1", t + "clusters top = level 0")
    rc2, out2, err2 = tq("clusters", "-3", "Hca1", server=S)
    check(rc2 == 2 and "2 levels" in err2, t + "clusters -3 on 2 levels: usage error naming the depth")
    rc, out, err = tq("clusters", "Hca[1-4]", server=S)
    check(rc == 0 and out.splitlines()[0] == "level 0 clusters 1" and "level 1 clusters 2" in out.splitlines(),
          t + "clusters without a level: every level")
    rc, out, err = tq("clusters", "-L", "1", "--json", "Hca1", "Hca2", server=S)
    j = js(out)
    check(rc == 0 and j and j["depth"] is None and len(j["levels"]) == 1 and j["levels"][0]["level"] == 1
          and j["levels"][0]["count"] == 2 and [h["host"] for h in j["levels"][0]["hosts"]] == ["Hca1", "Hca2"]
          and all(GUID.match(h["cluster"]) for h in j["levels"][0]["hosts"]), t + "clusters -L 1 --json")
    rc, out, err = tq("--json", "clusters", "Hca1", "Hca2", "Hca3", server=S)
    j = js(out)
    check(rc == 0 and j and j["depth"] == 2 and [l["count"] for l in j["levels"]] == [1, 2], t + "clusters --json, all levels")

    rc, out, err = tq("matrix", "Hca1", "Hca2", "Hca3", "Hca4", server=S)
    check(rc == 0 and out == "Hca1 0 2 1 2\nHca2 2 0 2 1\nHca3 1 2 0 2\nHca4 2 1 2 0\n", t + "matrix text")
    rc, out, err = tq("matrix", "--json", "Hca[1-4]", server=S)
    j = js(out)
    check(rc == 0 and j and j["hosts"] == ["Hca1", "Hca2", "Hca3", "Hca4"]
          and j["hops"] == [[0, 2, 1, 2], [2, 0, 2, 1], [1, 2, 0, 2], [2, 1, 2, 0]], t + "matrix --json")

    rc, out, err = tq("shared", "Hca[1-4]", server=S)
    kv = dict((l.split(" ", 1) + [""])[:2] for l in out.splitlines())
    check(rc == 0 and kv.get("hosts") == "4" and kv.get("leaves") == "2" and kv.get("avg_hosts_per_leaf") == "2.00"
          and kv.get("sharing") == "0" and kv.get("pairs_ok") == "12", t + "shared text")
    rc, out, err = tq("shared", "--json", "--loads", "Hca[1-4]", server=S)
    j = js(out)
    check(rc == 0 and j and j["num_sharing"] == 0 and j["sharing"] == [] and j["leaves"] == 2
          and j["avg_hosts_per_leaf"] == 2.0 and len(j["loads"]) > 0
          and all(GUID.match(l["node"]) for l in j["loads"]), t + "shared --json --loads")

    rc, out, err = tq("slurm", server=S)
    if check(rc == 0, t + "slurm"):
        sw = check_slurm(out, tree, t + "slurm")
        leaves = sorted(v for k, v in sw.values() if k == "Nodes")
        check(leaves == ["Hca[1,3]", "Hca[2,4]"], t + "slurm leaves Hca[1,3] and Hca[2,4]: %s" % leaves)

    # host files: comments, blank lines, hostlists, stdin
    d = tt.tmpdir("t_topoquery-")
    hf = os.path.join(d, "hosts")
    with open(hf, "w") as f:
        f.write("# the job\nHca[1-2]\n\nHca3   Hca4  # two on a line\n")
    rc, out, err = tq("matrix", "-f", hf, server=S)
    check(rc == 0 and out.splitlines()[3].startswith("Hca4 2 1 2 0"), t + "matrix -f HOSTFILE")
    rc, out, err = tq("clusters", "1", "-f", "-", server=S, stdin="Hca1\nHca2\n")
    check(rc == 0 and out.splitlines()[0] == "level 1 clusters 2" and len(out.splitlines()) == 3,
          t + "clusters LEVEL -f - (stdin)")
    rc, out, err = tq("shared", "Hca1", "-f", hf, server=S)
    check(rc == 2 and err.startswith("topoquery: shared: "), t + "a host given twice (argument and file) is topod's USAGE error: exit 2")
    # slurm -o
    conf = os.path.join(d, "topology.conf")
    rc, out, err = tq("slurm", "-o", conf, server=S)
    check(rc == 0 and out == "" and os.path.exists(conf) and
          open(conf).read().count("SwitchName=") == 3 and
          not [f for f in os.listdir(d) if ".tmp" in f], t + "slurm -o FILE (no temporary left)")

    # errors: "topoquery: what: why", nothing on stdout; exit 1 when the
    # answer is "no such host" or "no route", 2 for usage, 3 timeout, 4 no server
    rc, out, err = tq("hops", "Hca1", "NoSuchHost", server=S)
    check(rc == 1 and out == "" and err.startswith("topoquery: hops Hca1 NoSuchHost: no such host"),
          t + "unknown host: exit 1, message: " + err.strip())
    rc, out, err = tq("--json", "matrix", "Hca1", "NoSuchHost", server=S)
    check(rc == 1 and out == "" and err.startswith("topoquery: matrix: no such host"), t + "matrix with an unknown host")
    rc, out, err = tq("hops", "Hca1", "bad name", server=S)
    check(rc == 2 and "invalid argument" in err, t + "a host name with a space: exit 2, " + err.strip())
    rc, out, err = tq("clusters", "7", "Hca1", server=S)
    check(rc == 2 and err.startswith("topoquery: clusters at level 7: "), t + "level beyond the depth: exit 2, " + err.strip())
    rc, out, err = tq("info", server=None, env={"TII_SERVERS": S})
    check(rc == 0 and ("server %s" % S) in out, t + "$TII_SERVERS is used without -s")


def usage_suite(S):
    for args, what in ((["--help"], "--help"),):
        rc, out, err = tq(*args)
        check(rc == 0 and out.startswith("usage: topoquery") and "slurm" in out, what + " exits 0 with usage")
    for args, what in (([], "no command"), (["frobnicate"], "unknown command"),
                       (["hops", "Hca1"], "hops with one host"), (["path"], "path without hosts"),
                       (["--timeout", "x", "info"], "bad --timeout"), (["--timeout", "0", "info"], "zero --timeout"),
                       (["--bogus", "info"], "unknown option"), (["depth", "--format", "dot"], "--format on depth"),
                       (["tree", "--format", "svg"], "bad --format"), (["matrix"], "matrix without hosts"),
                       (["matrix", "Hca[1-"], "bad hostlist"), (["info", "extra"], "info with an argument"),
                       (["hops", "-o", "x", "a", "b"], "-o on hops"), (["-s", "host:notaport", "info"], "bad server list"),
                       (["clusters", "-L", "x", "Hca1"], "bad --level")):
        rc, out, err = tq(*args, server=S if "-s" not in args else None)
        check(rc == 2 and out == "" and err.startswith("topoquery: "), "usage error: %s -> exit 2 (%s)" % (
            what, err.splitlines()[0] if err else ""))
    rc, out, err = tq("matrix", "-f", "/nonexistent/hosts", server=S)
    check(rc == 1 and err.startswith("topoquery: /nonexistent/hosts: "), "missing host file: exit 1")


def broken_fabrics_suite():
    """Every command against the real topod on a fabric with an unreachable
    host (LID 6 = Hca4 removed from the LFTs) and on a disconnected one (no
    cable between the switches): issue 8's "topod's reply is malformed"."""
    fix = os.path.join(ROOT, "tests", "fixtures")
    for label, topo, lfts in (("unreach", "2sw4hca.topo", "2sw4hca-unreach.lfts"),
                              ("split", "2sw4hca-split.topo", "2sw4hca-split.lfts")):
        td = tt.Topod("--topology", os.path.join(fix, topo), "--lfts", os.path.join(fix, lfts), ingest=False,
                      admin=False, d=tt.tmpdir("t_tq-topod-"))
        S = "127.0.0.1:%d" % td.port
        tag = "[topod %s]" % label
        rc, out, err = tq("tree", server=S)
        ls = out.splitlines()
        roots = [l for l in ls if l.startswith("cluster ")]
        check(rc == 0 and len(roots) == 2 and all("  host Hca%d" % i in "\n".join(ls) for i in range(1, 5)),
              "%s tree: exit %d, two roots, every host (%s)" % (tag, rc, err.strip()))
        if label == "unreach":
            check(any("dist=inf" in l and "hosts=1" in l for l in roots) and "    host Hca4" not in ls,
                  "%s tree: Hca4 alone under a root at dist=inf" % tag)
        rc, out, err = tq("--json", "tree", server=S)
        tree = js(out)
        check(rc == 0 and tree is not None, "%s tree --json: exit %d, valid JSON" % (tag, rc))
        if label == "unreach" and tree:
            check(any(c["dist"] is None and c["parent"] is None for c in tree["clusters"]),
                  "%s tree --json: \"dist\":null where topod says inf" % tag)
        rc, out, err = tq("slurm", server=S)
        if tree:
            sw = check_slurm(out, tree, "%s slurm" % tag)
            nodes = " ".join(v for k, v in sw.values() if k == "Nodes")
            # check_slurm has checked that every host of the tree is listed once
            check(rc == 0 and len(tree["hosts"]) == 4, "%s slurm: exit %d, 4 hosts (%s)" % (tag, rc, nodes))
        rc, out, err = tq("tree", "--format", "dot", server=S)
        if tree:
            check_dot(out, tree, "%s dot" % tag)
        rc, out, err = tq("info", server=S)
        check(rc == 0, "%s info: exit %d" % (tag, rc))
        rc, out, err = tq("depth", server=S)
        check(rc == 0 and out.strip() in ("1", "2"), "%s depth %s" % (tag, out.strip()))
        rc, out, err = tq("clusters", "Hca[1-4]", server=S)
        check(rc == 0, "%s clusters at every level: exit %d %s" % (tag, rc, err.strip()))
        rc, out, err = tq("--json", "matrix", "Hca[1-4]", server=S)
        j = js(out)
        check(rc == 0 and j is not None and "null" in out, "%s matrix: exit %d, null where the route fails" % (tag, rc))
        rc, out, err = tq("shared", "--loads", "Hca[1-4]", server=S)
        check(rc == 0, "%s shared --loads: exit %d %s" % (tag, rc, err.strip()))
        rc, out, err = tq("hops", "Hca1", "Hca3", server=S)
        check(rc == 0 and out.strip() == "1", "%s hops on one leaf: %s" % (tag, out.strip()))
        rc, out, err = tq("path", "Hca1", "Hca4", server=S)
        check(rc == 1 and "no route" in err, "%s path to an unreachable host: exit %d, %s" % (tag, rc, err.strip()))
        check(td.stop() == 0, "%s topod exits cleanly" % tag)


def main():
    if not os.path.exists(TQ):
        check(False, "build/bin/topoquery exists (make all)")
        tt.done()
    servers = []
    try:
        td = tt.Topod("--topology", TOPO, "--lfts", LFTS, ingest=False, admin=False, d=tt.tmpdir("t_tq-topod-"))
        if td.ask("depth").startswith("OK "):
            servers.append(("topod", "127.0.0.1:%d" % td.port))
        else:
            print("skip - real topod lacks the fabric commands")
    except Exception as e:  # noqa: BLE001
        check(False, "topod starts on the fixture: %s" % e)
    fake = Fake()
    for tag, S in servers:
        fixture_suite(S, tag)
    usage_suite(fake.addr)
    broken_fabrics_suite()

    # fat tree: hostlist compression, 3 levels, a hostile switch description
    fat = Fake("--fabric", "fattree")
    rc, out, err = tq("--json", "tree", server=fat.addr)
    tree = js(out)
    rc, out, err = tq("slurm", server=fat.addr)
    sw = check_slurm(out, tree, "[fattree] slurm")
    check(sorted(v for k, v in sw.values() if k == "Nodes") ==
          ["c401-[101-104]", "c401-[201-204]", "c402-[101-104]", "c402-[201-204]"], "[fattree] slurm hostlists compressed")
    rc, out, err = tq("--json", "path", "c402-101", "c401-101", server=fat.addr)
    j = js(out)
    check(rc == 0 and j and j["hops"] == 5 and j["switches"][1]["name"] == 'spine "2"\\\t\xe9',
          "[fattree] path --json: a hostile switch description survives as valid JSON")
    rc, out, err = tq("path", "c402-101", "c401-101", server=fat.addr)
    check(rc == 0 and out.splitlines()[2] == "0x0000000000310001 1 3 spine \\x222\\x22\\x5c\\x09\\xe9",
          "[fattree] path text: the description escaped as \\xHH, one line")
    rc, out, err = tq("clusters", "c401-101", "c401-201", "c402-101", server=fat.addr)
    ls = out.splitlines()
    check(rc == 0 and "level 1 clusters 2" in ls and "level 2 clusters 3" in ls, "[fattree] clusters at 3 levels")
    rc, out, err = tq("shared", "c401-101", "c401-201", "c402-101", "c401-102", server=fat.addr)
    check(rc == 0 and "sharing 2 c401-101 c401-102" in out.splitlines() and
          any(l.startswith("group 0x") and l.endswith(" c401-101 c401-102") for l in out.splitlines()),
          "[fattree] shared lists the sharing hosts and their group")
    rc, out, err = tq("tree", "--format", "dot", server=fat.addr)
    check_dot(out, tree, "[fattree] dot")

    # several roots, a root holding a host of its own, zero-padded names
    isl = Fake("--fabric", "islands")
    rc, out, err = tq("--json", "tree", server=isl.addr)
    tree = js(out)
    rc, out, err = tq("slurm", server=isl.addr)
    sw = check_slurm(out, tree, "[islands] slurm")
    check(sw.get("leaf-c") == ("Nodes", "n[01-03,05]"), "[islands] zero-padded hostlist n[01-03,05]")
    check(sw.get("spine-0_hosts") == ("Nodes", "gw1") and
          sw.get("spine-0") == ("Switches", "leaf-a,leaf-b,spine-0_hosts"),
          "[islands] a cluster holding hosts and clusters gets a _hosts switch")
    check(sw.get("cl_0000000000000f02_0") == ("Nodes", "solo"), "[islands] a lone host's root switch")
    rc, out, err = tq("tree", server=isl.addr)
    ls = out.splitlines()
    check(rc == 0 and sum(1 for l in ls if l.startswith("cluster ")) == 3 and "  host gw1" in ls
          and "  host solo" in ls, "[islands] tree text: three roots, hosts under roots")
    rc, out, err = tq("tree", "--format", "dot", server=isl.addr)
    check_dot(out, tree, "[islands] dot")

    # servers that are down or silent
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    rc, out, err = tq("depth", server=dead)
    check(rc == 4 and err.startswith("topoquery: depth: cannot connect") and dead in err, "server down: exit 4, " + err.strip())
    rc, out, err = tq("depth", server=dead.split(":")[0])
    check(rc == 0 or (rc == 4 and "127.0.0.1:7878" in err),
          "-s HOST without a port tries topod's default port 7878: exit %d, %s" % (rc, err.strip()))
    rc, out, err = tq("depth", server=dead + "," + fake.addr)
    check(rc == 0 and out == "2\n", "-s with two servers: the second answers")
    silent = Fake("--mode", "silent")
    t0 = time.time()
    rc, out, err = tq("--timeout", "300", "depth", server=silent.addr)
    el = time.time() - t0
    check(rc == 3 and "did not answer in time" in err and el < 3, "silent server: exit 3 after %.1f s" % el)
    t0 = time.time()
    rc, out, err = tq("tree", server=silent.addr, env={"TII_TIMEOUT_MS": "300"})
    el = time.time() - t0
    check(rc == 3 and el < 3, "$TII_TIMEOUT_MS bounds the wait: exit 3 (%.1f s)" % el)
    tt.done()


if __name__ == "__main__":
    main()
