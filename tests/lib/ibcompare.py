#!/usr/bin/env python3
"""ibcompare.py - check a fabric snapshot against what the fabric itself says.

The reference is the output of the infiniband-diags tools, run against the
(simulated) fabric after OpenSM has configured it:
  ibnetdiscover            (topology format: nodes, links, LIDs)
  ibroute LID              for every switch, concatenated in one file

  ibcompare.py --snap FILE --ibnetdiscover TOPO --ibroute ROUTES
               [--decoder topo-snap|python] [--topo-snap PATH] [--max-show N]
               [--check-rates]
  ibcompare.py --switch-lids TOPO     print every switch's LID, one a line
                                      (what to run ibroute on)

Compares, and prints one line per check ("ok - ..." / "not ok - ..."), with
up to --max-show differences under each failing check as "#   ..." lines:
  nodes   the same node GUIDs with the same type and port count
  descs   the same NodeDescription on every node
  lids    the same LID (and LMC) on every switch port 0 and CA port
  links   the same set of links, (guid, port) <-> (guid, port)
  lfts    for every switch, the same (LID -> port) entries, 0xFF ("no path")
          excluded on both sides; every switch of the snapshot has a dump
  rates   (--check-rates, python decoder only) active width and speed of
          every linked port as ibnetdiscover shows them
Exit status: 0 all checks passed, 1 a difference, 2 usage or parse error.

As a module: parse_ibnetdiscover(text), parse_ibroute(text),
snapshot_text(path, decoder), compare(...) -> list of (name, [differences]).
Larger fabrics reuse it unchanged; nothing here is specific to one topology.
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# ibnetdiscover's topology format (infiniband-diags 44):
#   switchguid=0x8f10500000008(8f10500000008)      caguid=0x...   rtguid=0x...
#   Switch  4 "S-0008f10500000008"  # "desc" base port 0 lid 10 lmc 0
#   Ca      1 "H-0002c90300000010"  # "desc"
#   [1]  "H-0002c903000000f0"[1](2c903000000f1)  # "desc" lid 36 4xSDR      (switch port)
#   [1](2c90300000011)  "S-0008f10500000001"[1]  # lid 1 lmc 0 "desc" lid 17 4xSDR  (CA port)
RE_GUIDLINE = re.compile(r'^(switchguid|caguid|rtguid)=0x([0-9a-fA-F]+)')
RE_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*#\s*"(.*?)"(.*)$')
RE_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*(?:#(.*))?$')
RE_BASE = re.compile(r'base port 0 lid (\d+) lmc (\d+)')
RE_CALID = re.compile(r'^\s*lid (\d+) lmc (\d+)')
RE_RATE = re.compile(r'\b(1|2|4|8|12)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR)\b')

TYPES = {"Switch": "switch", "Ca": "ca", "Rt": "router"}
WIDTH = {"1": 1, "4": 2, "8": 4, "12": 8, "2": 16}
SPEED = {"SDR": (1, 0), "DDR": (2, 0), "QDR": (4, 0), "FDR": (None, 1), "EDR": (None, 2),
         "HDR": (None, 4), "NDR": (None, 8)}


class ParseError(Exception):
    pass


def parse_ibnetdiscover(text):
    """-> dict with nodes {guid: (type, nports, desc)}, lids {(guid, port): (lid, lmc)},
    links set of ((g, p), (g, p)) sorted pairs, rates {(guid, port): (width, speedname)}."""
    ids = {}            # node id string -> guid
    nodes = {}
    lids = {}
    rates = {}
    pending = []        # (guid, port, peer id, peer port)
    guid = None
    cur = None
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        # ibwarn: umad2sim's chatter, when a caller merged stderr in.
        if not line or line.startswith(("#", "vendid", "devid", "sysimgguid", "ibwarn:")):
            continue
        m = RE_GUIDLINE.match(line)
        if m:
            guid = int(m.group(2), 16)
            continue
        m = RE_NODE.match(line)
        if m:
            if guid is None:
                raise ParseError("line %d: node without a guid line" % ln)
            typ, nports, nid, desc, rest = m.groups()
            ids[nid] = guid
            nodes[guid] = (TYPES[typ], int(nports), desc)
            cur = (guid, TYPES[typ])
            b = RE_BASE.search(rest)
            if b:
                lids[(guid, 0)] = (int(b.group(1)), int(b.group(2)))
            guid = None
            continue
        m = RE_PORT.match(line)
        if m:
            if cur is None:
                raise ParseError("line %d: port before any node" % ln)
            port, _myguid, peer, pport, _peerguid, comment = m.groups()
            port = int(port)
            comment = comment or ""
            pending.append((cur[0], port, peer, int(pport)))
            if cur[1] != "switch":
                c = RE_CALID.match(comment)
                if c:
                    lids[(cur[0], port)] = (int(c.group(1)), int(c.group(2)))
            r = RE_RATE.findall(comment)
            if r:
                rates[(cur[0], port)] = r[-1]
            continue
        raise ParseError("line %d: unrecognised: %r" % (ln, line[:80]))
    links = set()
    for g, p, peer, pp in pending:
        if peer not in ids:
            raise ParseError("link to unknown node id %s" % peer)
        a, b = (g, p), (ids[peer], pp)
        links.add((a, b) if a <= b else (b, a))
    return {"nodes": nodes, "lids": lids, "links": links, "rates": rates}


RE_RT_HEAD = re.compile(r'^Unicast lids \[[^\]]*\] of switch .*guid 0x([0-9a-fA-F]+)')
RE_RT_ENTRY = re.compile(r'^0x([0-9a-fA-F]+)\s+(\d+)\s')


def parse_ibroute(text):
    """-> {switch guid: {lid: port}} from any number of concatenated dumps."""
    tables = {}
    cur = None
    for ln, line in enumerate(text.splitlines(), 1):
        m = RE_RT_HEAD.match(line)
        if m:
            cur = tables.setdefault(int(m.group(1), 16), {})
            continue
        m = RE_RT_ENTRY.match(line)
        if m:
            if cur is None:
                raise ParseError("ibroute line %d: entry before a header" % ln)
            port = int(m.group(2))
            if port != 0xFF:
                cur[int(m.group(1), 16)] = port
    return tables


def _run(tool, what, path):
    r = subprocess.run([tool, what, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode:
        raise ParseError("%s %s %s: %s" % (tool, what, path, r.stderr.strip()))
    return r.stdout


def snapshot_text(path, decoder="topo-snap", tool=None):
    """-> dict like parse_ibnetdiscover's, plus lfts {guid: {lid: port}}, from
    the snapshot's text form (topo-snap, or snapdecode.py's identical one)."""
    out = {"nodes": {}, "lids": {}, "links": set(), "lfts": {}, "ports": None}
    if decoder == "python":
        import snapdecode
        s = snapdecode.load(path)
        text_links, text_lfts = snapdecode.links(s), snapdecode.lfts(s)
        for n in s.nodes:
            out["nodes"][n.guid] = (snapdecode.TYPES.get(n.type, "?"), n.nports,
                                    n.desc.decode("latin-1"))
            for pt in n.ports:
                if pt.present and pt.lid and (pt.num == 0) == (n.type == 2):
                    out["lids"][(n.guid, pt.num)] = (pt.lid, pt.lmc)
        out["ports"] = {(n.guid, pt.num): pt for n in s.nodes for pt in n.ports if pt.present}
    else:
        tool = tool or "build/bin/topo-snap"
        text_links = _run(tool, "links", path).splitlines()
        text_lfts = _run(tool, "lfts", path).splitlines()
        # "switch 0xG ports N lid L "desc""  /  "ca 0xG ports N port1:lid L lmc M guid 0x.. ... "desc""
        for line in _run(tool, "nodes", path).splitlines():
            m = re.match(r'^(\S+)\s+0x([0-9a-f]+)\s+ports\s+(\d+)(.*?)\s"(.*)"$', line)
            if not m:
                raise ParseError("topo-snap nodes: %r" % line)
            typ, g, np, rest, desc = m.groups()
            g = int(g, 16)
            # topo-snap escapes bytes outside printable ASCII, '"' and '\\'.
            desc = re.sub(r'\\x([0-9a-f]{2})', lambda e: chr(int(e.group(1), 16)), desc)
            out["nodes"][g] = (typ, int(np), desc)
            if typ == "switch":
                lm = re.match(r'\s*lid (\d+)', rest)
                if lm and int(lm.group(1)):
                    out["lids"][(g, 0)] = (int(lm.group(1)), 0)
            else:
                for p, lid, lmc in re.findall(r'port(\d+):lid (\d+) lmc (\d+)', rest):
                    out["lids"][(g, int(p))] = (int(lid), int(lmc))
    for line in text_links:
        a, pa, b, pb = line.split()
        x, y = (int(a, 16), int(pa)), (int(b, 16), int(pb))
        out["links"].add((x, y) if x <= y else (y, x))
    for line in text_lfts:
        g, lid, port = line.split()
        out["lfts"].setdefault(int(g, 16), {})[int(lid)] = int(port)
    # Switches with an empty (all "no path") LFT still need a dump.
    for g, (typ, _, _) in out["nodes"].items():
        if typ == "switch":
            out["lfts"].setdefault(g, {})
    return out


def _fmt(k):
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], tuple):
        return "0x%016x/%d <-> 0x%016x/%d" % (k[0][0], k[0][1], k[1][0], k[1][1])
    if isinstance(k, tuple):
        return "0x%016x/%d" % k
    return "0x%016x" % k


def _diff_maps(name, snap, ref, fmt=_fmt):
    d = []
    for k in sorted(set(snap) | set(ref)):
        if k not in ref:
            d.append("%s %s: only in the snapshot (%s)" % (name, fmt(k), snap[k]))
        elif k not in snap:
            d.append("%s %s: missing from the snapshot (fabric has %s)" % (name, fmt(k), ref[k]))
        elif snap[k] != ref[k]:
            d.append("%s %s: snapshot %s, fabric %s" % (name, fmt(k), snap[k], ref[k]))
    return d


def compare(snap, topo, routes, check_rates=False):
    checks = []
    sn = {g: v[:2] for g, v in snap["nodes"].items()}
    tn = {g: v[:2] for g, v in topo["nodes"].items()}
    checks.append(("nodes: %d nodes, GUIDs, types and port counts" % len(tn),
                   _diff_maps("node", sn, tn)))
    sd = {g: v[2] for g, v in snap["nodes"].items() if g in topo["nodes"]}
    td = {g: v[2] for g, v in topo["nodes"].items() if g in snap["nodes"]}
    checks.append(("descs: %d NodeDescriptions" % len(td), _diff_maps("desc", sd, td)))
    checks.append(("lids: %d end-port LIDs" % len(topo["lids"]),
                   _diff_maps("lid", snap["lids"], topo["lids"])))
    ld = ["link %s: only in the snapshot" % _fmt(k) for k in sorted(snap["links"] - topo["links"])]
    ld += ["link %s: missing from the snapshot" % _fmt(k) for k in sorted(topo["links"] - snap["links"])]
    checks.append(("links: %d links" % len(topo["links"]), ld))
    fd = []
    nentries = 0
    for g in sorted(set(snap["lfts"]) | set(routes)):
        if g not in routes:
            fd.append("switch 0x%016x: no ibroute dump" % g)
            continue
        if g not in snap["lfts"]:
            fd.append("switch 0x%016x: in ibroute but not a switch in the snapshot" % g)
            continue
        nentries += len(routes[g])
        for lid in sorted(set(snap["lfts"][g]) | set(routes[g])):
            a, b = snap["lfts"][g].get(lid), routes[g].get(lid)
            if a != b:
                fd.append("switch 0x%016x LID %d: snapshot port %s, switch port %s"
                          % (g, lid, "none" if a is None else a, "none" if b is None else b))
    checks.append(("lfts: %d switches, %d routed LIDs" % (len(routes), nentries), fd))
    if check_rates:
        rd = []
        if snap.get("ports") is None:
            rd.append("rates need --decoder python")
        else:
            for k, (w, sp) in sorted(topo["rates"].items()):
                pt = snap["ports"].get(k)
                if pt is None:
                    rd.append("port %s: not in the snapshot" % _fmt(k))
                    continue
                want_w = WIDTH[w]
                sdr, ext = SPEED.get(sp, (None, None))
                ok = pt.width == want_w and (pt.espeed == ext if ext else
                                             (pt.speed == sdr and pt.espeed == 0))
                if not ok:
                    rd.append("port %s: snapshot width %d speed %d espeed %d, fabric %sx%s"
                              % (_fmt(k), pt.width, pt.speed, pt.espeed, w, sp))
        checks.append(("rates: active width and speed of %d ports" % len(topo["rates"]), rd))
    return checks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--switch-lids", metavar="TOPO")
    ap.add_argument("--snap")
    ap.add_argument("--ibnetdiscover")
    ap.add_argument("--ibroute")
    ap.add_argument("--decoder", choices=("topo-snap", "python"), default="topo-snap")
    ap.add_argument("--topo-snap", default=None)
    ap.add_argument("--max-show", type=int, default=10)
    ap.add_argument("--check-rates", action="store_true")
    ap.add_argument("--label", default="", help="prefix for the check names")
    a = ap.parse_args(argv)
    if a.switch_lids:
        try:
            with open(a.switch_lids) as f:
                topo = parse_ibnetdiscover(f.read())
        except (OSError, ParseError) as e:
            sys.stderr.write("ibcompare.py: %s\n" % e)
            return 2
        for (g, p), (lid, _) in sorted(topo["lids"].items(), key=lambda kv: kv[1]):
            if p == 0 and topo["nodes"][g][0] == "switch":
                print(lid)
        return 0
    if not (a.snap and a.ibnetdiscover and a.ibroute):
        ap.error("--snap, --ibnetdiscover and --ibroute are required")
    try:
        with open(a.ibnetdiscover) as f:
            topo = parse_ibnetdiscover(f.read())
        with open(a.ibroute) as f:
            routes = parse_ibroute(f.read())
        snap = snapshot_text(a.snap, a.decoder, a.topo_snap)
    except (OSError, ParseError, ValueError) as e:
        print("not ok - %sibcompare: %s" % (a.label, e))
        return 2
    failed = 0
    for name, diffs in compare(snap, topo, routes, a.check_rates):
        if diffs:
            failed += 1
            print("not ok - %s%s (%d differences)" % (a.label, name, len(diffs)))
            for d in diffs[:a.max_show]:
                print("#   " + d)
        else:
            print("ok - %s%s match" % (a.label, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
