#!/usr/bin/env bash
# t_inventory.sh - topoquery show, links, hosts and resolve against the
# truth ibnetdiscover gives (tests/lib/ibcompare.py parses it): the real topod
# on the ibnetdiscover fixtures (tests/fixtures/2sw4hca*.topo), every cable
# once with its width and speed, every port's neighbour and LID; then the same
# fabric with one host cable Down and one switch cable at Init (port states
# patched into the snapshot), where --down and --state must pick exactly
# those, show must say "Down" and the host must still be 0 hops from itself.
set -u
cd "$(dirname "$0")/../.." || exit 1
exec python3 - <<'PY'
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, "tests/lib")
import ibcompare  # noqa: E402
import snapdecode  # noqa: E402
import topodtest as tt  # noqa: E402
from topodtest import check, note  # noqa: E402

TQ = os.path.join(tt.BIN, "topoquery")
FIX = "tests/fixtures"
WORD = {"1": "1X", "4": "4X", "8": "8X", "12": "12X", "2": "2X"}


def tq(td, *args):
    r = subprocess.run([TQ, "-s", "127.0.0.1:%d" % td.port] + list(args), capture_output=True, text=True,
                       timeout=30)
    return r.returncode, r.stdout, r.stderr


def js(td, *args):
    rc, out, err = tq(td, "--json", *args)
    try:
        return rc, json.loads(out)
    except ValueError:
        return rc, {"_raw": out + err}


def compare(td, topo, tag):
    ref = ibcompare.parse_ibnetdiscover(open(topo).read())
    rc, j = js(td, "links")
    got = {}
    for k in j.get("links", []):
        a = (int(k["a"]["node"], 16), k["a"]["port"])
        b = (int(k["b"]["node"], 16), k["b"]["port"])
        got[(a, b)] = k
    check(rc == 0 and set(got) == ref["links"] and j.get("total") == len(ref["links"]),
          "%s: links lists ibnetdiscover's %d cables, each once, lower GUID first (%d listed)"
          % (tag, len(ref["links"]), len(got)))
    bad = [k for (a, b), k in got.items()
           if (WORD[ref["rates"][a][0]], ref["rates"][a][1]) != (k["width"], k["speed"]) or k["state"] != "Active"]
    check(not bad, "%s: every cable's width and speed are ibnetdiscover's (4xSDR -> 4X SDR), Active (%s)"
          % (tag, bad[:2]))
    # show, node by node: each port's neighbour is the other end of its cable
    peer = {}
    for a, b in ref["links"]:
        peer[a], peer[b] = b, a
    wrong = []
    for guid, (typ, nports, desc) in ref["nodes"].items():
        name = desc if typ == "switch" else "0x%016x" % guid
        rc, s = js(td, "show", name)
        nodes = s.get("nodes", [])
        if rc != 0 or len(nodes) != 1 or int(nodes[0]["guid"], 16) != guid or nodes[0]["nports"] != nports:
            wrong.append((name, rc, s.get("_raw", "")[:80]))
            continue
        for p in nodes[0]["ports"]:
            want = peer.get((guid, p["port"]))
            have = (int(p["peer"]["node"], 16), p["peer"]["port"]) if p["peer"] else None
            if want != have:
                wrong.append((name, p["port"], want, have))
            lid = ref["lids"].get((guid, 0 if typ == "switch" else p["port"]))
            if lid and lid[0] != p["lid"]:
                wrong.append((name, p["port"], "lid", lid, p["lid"]))
    check(not wrong, "%s: show of each of the %d nodes (switches by description): every port's neighbour and "
          "LID as ibnetdiscover has them (%s)" % (tag, len(ref["nodes"]), wrong[:3]))
    return ref


def serve(snap):
    return tt.Topod("--load", snap, ingest=False, admin=False)


d = tt.tmpdir("t_inventory-")
snap = os.path.join(d, "fab.snap")
tt.from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), snap)
td = serve(snap)
ref = compare(td, os.path.join(FIX, "2sw4hca.topo"), "2sw4hca")

# hosts and resolve: the names and LIDs ibnetdiscover's CAs carry
cas = {g: desc.split()[0] for g, (t, n, desc) in ref["nodes"].items() if t == "ca"}
rc, j = js(td, "hosts")
names = sorted(h["name"] for h in j.get("hosts", []))
check(rc == 0 and names == sorted(cas.values()), "hosts: the CAs' hostnames (%s)" % names)
ok = True
for g, h in cas.items():
    rc, e = js(td, "resolve", h)
    ok &= rc == 0 and int(e["node_guid"], 16) == g and (g, e["port"]) in ref["lids"] and \
        ref["lids"][(g, e["port"])][0] == e["lid"]
check(ok, "resolve: every host's node GUID and LID as ibnetdiscover has them")
rc, out, err = tq(td, "show", "Hca1")
check(rc == 0 and "==( 4X SDR Active )==> 0x0000000000200000 1 \"Switch1\" Switch" in out
      and "leaf Switch1 0x0000000000200000" in out,
      "show Hca1 (text) reads like iblinkinfo: leaf by name, ==( 4X SDR Active )==> Switch1 port 1")
rc, out, err = tq(td, "links", "Hca3")
check(rc == 0 and out.splitlines() == [
    '0x0000000000100006 1 "Hca3/0x0000000000100006" ==( 4X SDR Active )==> 0x0000000000200000 2 "Switch1"'],
      "links Hca3: its one cable, one line (%r)" % out)
rc, out, err = tq(td, "show", "nosuch")
check(rc == 1 and "nosuch" in err, "show nosuch: exit 1, named (%d %r)" % (rc, err.strip()))
rc, out, err = tq(td, "links", "--state", "bogus")
check(rc == 2, "links --state bogus: usage error, exit 2 (%d)" % rc)
td.stop()

# the split fabric: no cable between the switches
split = os.path.join(d, "split.snap")
tt.from_text(os.path.join(FIX, "2sw4hca-split.topo"), os.path.join(FIX, "2sw4hca-split.lfts"), split)
td = serve(split)
compare(td, os.path.join(FIX, "2sw4hca-split.topo"), "2sw4hca-split")
td.stop()


# ---- port states: Hca2's cable Down at the host end, one switch cable Init
def patch_states(path, out, states):
    """Rewrites PortState bytes ({(node_guid, port): state}) of an encoded
    snapshot, walking it as snapdecode.decode does, and fixes both CRCs."""
    buf = bytearray(open(path, "rb").read())
    off = snapdecode.HEADER_LEN
    nnodes, _ = struct.unpack_from("<II", buf, off)
    off += 8
    off += 1 + buf[off]
    done = 0
    for _ in range(nnodes):
        _t, nports, guid, _s, dl = struct.unpack_from("<BBQQB", buf, off)
        off += 19 + dl
        for p in range(nports + 1):
            present = buf[off]
            off += 1
            if present:
                if (guid, p) in states:
                    buf[off + 11] = states[(guid, p)]   # guid 8, lid 2, lmc 1, then state
                    done += 1
                off += 20
        if _t == 2:
            (ll,) = struct.unpack_from("<I", buf, off)
            off += 4 + ll
    struct.pack_into("<I", buf, 32, snapdecode.crc32c(bytes(buf[snapdecode.HEADER_LEN:])))
    open(out, "wb").write(snapdecode.reseal(bytes(buf)))
    return done


states = os.path.join(d, "states.snap")
n = patch_states(snap, states, {(0x100003, 1): 1, (0x200000, 5): 2, (0x200001, 5): 2})
check(n == 3, "patched 3 port states into the snapshot (%d)" % n)
check(snapdecode.load(states) is not None, "the patched snapshot decodes with valid CRCs")
td = serve(states)
rc, j = js(td, "links", "--down")
down = [(k["a"]["node"], k["a"]["port"], k["a"]["state"], k["b"]["state"], k["state"]) for k in j.get("links", [])]
check(rc == 0 and down == [("0x0000000000100003", 1, "Down", "Active", "Down")] and j.get("total") == 6,
      "links --down: exactly Hca2's cable, Down at the host end (%s)" % down)
rc, j = js(td, "links", "--state", "init")
init = [(k["a"]["node"], k["a"]["port"], k["b"]["node"], k["b"]["port"]) for k in j.get("links", [])]
check(init == [("0x0000000000200000", 5, "0x0000000000200001", 5)],
      "links --state init: exactly the switch cable at Init (%s)" % init)
rc, j = js(td, "links", "--state", "notactive")
check(len(j.get("links", [])) == 2, "links --state notactive: both (%d)" % len(j.get("links", [])))
rc, j = js(td, "links", "--state", "up")
check(len(j.get("links", [])) == 5, "links --state up: all but the Down one (%d)" % len(j.get("links", [])))
rc, out, err = tq(td, "show", "Hca2")
check(rc == 0 and "==( Down )==> 0x0000000000200001 1 \"Switch2\"" in out,
      "show Hca2: its port Down, the cable still to Switch2 port 1 (%r)" % out)
rc, j = js(td, "show", "Switch1")
p5 = [p for p in j.get("nodes", [{}])[0].get("ports", []) if p["port"] == 5]
check(p5 and p5[0]["state"] == "Init" and p5[0]["peer"]["state"] == "Init",
      "show --json Switch1: port 5 and its peer Init (%s)" % p5)
rc, out, err = tq(td, "hops", "Hca2", "Hca2")
check(rc == 0 and out.strip() == "0", "hops Hca2 Hca2 = 0 with its cable down (%r %r)" % (out, err))
rc, out, err = tq(td, "hops", "Hca1", "Hca2")
check(rc == 1, "hops Hca1 Hca2 fails: the cable is down (%d %r)" % (rc, err.strip()))
td.stop()
tt.done()
PY
