#!/usr/bin/env python3
"""collect_compare.py - the checks on a collector snapshot that ibcompare.py
and `topo-snap diff` leave out. Used by tests/integration/t_collect_*.sh.

  collect_compare.py conventions SNAP TOPO [LABEL]
      SNAP a snapshot, TOPO `ibnetdiscover` output of the same fabric.
      lft-shape:    every switch's LFT has exactly max_lid + 1 entries (max_lid
                    = highest end-port LID incl. LMC range, from TOPO) and
                    entry 0 is 0xFF: the convention the collector and the
                    OpenSM plugin share (see clients/collect/collect.h)
      descriptions: NodeDescriptions and system image GUIDs as ibnetdiscover
                    shows them

  collect_compare.py strict A B [LABEL]
      What `topo-snap diff` ignores between two producers' snapshots of one
      fabric: LFT lengths, and active width/speed/ext speed of every port.
      PortState differences are printed as notes only: the plugin copies the
      fabric when routing is done, before OpenSM arms the ports.

Prints "ok - ..." / "not ok - ..." lines with "# " details; exit 0 if all ok.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibcompare  # noqa: E402
import snapdecode  # noqa: E402

RE_SYSIMG = re.compile(r"^sysimgguid=0x([0-9a-fA-F]+)")
RE_GUIDLINE = re.compile(r"^(?:switch|ca|rt)guid=0x([0-9a-fA-F]+)")
MAX_SHOW = 10


def report(label, name, diffs):
    print("%s - %s%s" % ("not ok" if diffs else "ok", label, name))
    for d in diffs[:MAX_SHOW]:
        print("#   " + d)
    if len(diffs) > MAX_SHOW:
        print("#   ... %d in all" % len(diffs))
    return 1 if diffs else 0


def sysimg_guids(text):
    out, pending = {}, None
    for line in text.splitlines():
        m = RE_SYSIMG.match(line)
        if m:
            pending = int(m.group(1), 16)
            continue
        m = RE_GUIDLINE.match(line)
        if m and pending is not None:
            out[int(m.group(1), 16)] = pending
            pending = None
    return out


def conventions(snap_path, topo_path, label):
    s = snapdecode.load(snap_path)
    with open(topo_path) as f:
        text = f.read()
    topo = ibcompare.parse_ibnetdiscover(text)
    max_lid = max([lid + (1 << lmc) - 1 for lid, lmc in topo["lids"].values() if lid] or [0])
    want = max_lid + 1 if max_lid else 0
    shape = []
    for n in s.nodes:
        if n.type != 2:
            continue
        if len(n.lft) != want:
            shape.append("switch 0x%016x: %d entries" % (n.guid, len(n.lft)))
        elif n.lft and n.lft[0] != snapdecode.LFT_NONE:
            shape.append("switch 0x%016x: LID 0 -> port %d" % (n.guid, n.lft[0]))
    rc = report(label, "lft-shape: every LFT covers LIDs 0..%d, LID 0 unrouted" % max_lid, shape)

    sysimg = sysimg_guids(text)
    dd = []
    for n in s.nodes:
        t = topo["nodes"].get(n.guid)
        if t is None:
            continue  # ibcompare's node check reports it
        desc = n.desc.decode("latin-1")
        # ibnetdiscover prints a printable description unchanged.
        if desc.isprintable() and desc != t[2]:
            dd.append("node 0x%016x: %r, ibnetdiscover %r" % (n.guid, desc, t[2]))
        if n.guid in sysimg and sysimg[n.guid] != n.sysimg:
            dd.append("node 0x%016x: sysimg 0x%016x, ibnetdiscover 0x%016x"
                      % (n.guid, n.sysimg, sysimg[n.guid]))
    rc |= report(label, "descriptions: %d node descriptions and system image GUIDs" % len(s.nodes), dd)
    return rc


def strict(a_path, b_path, label):
    a, b = snapdecode.load(a_path), snapdecode.load(b_path)
    bn = {n.guid: n for n in b.nodes}
    lens, rates, states = [], [], []
    for x in a.nodes:
        y = bn.get(x.guid)
        if y is None:
            continue  # topo-snap diff reports node differences
        if x.type == 2 and len(x.lft) != len(y.lft):
            lens.append("switch 0x%016x: %d vs %d entries" % (x.guid, len(x.lft), len(y.lft)))
        for u, v in zip(x.ports, y.ports):
            if not (u.present and v.present):
                continue
            if (u.width, u.speed, u.espeed) != (v.width, v.speed, v.espeed):
                rates.append("0x%016x/%d: width/speed/espeed %d/%d/%d vs %d/%d/%d"
                             % (x.guid, u.num, u.width, u.speed, u.espeed, v.width, v.speed, v.espeed))
            if u.state != v.state:
                states.append("0x%016x/%d: state %d vs %d" % (x.guid, u.num, u.state, v.state))
    rc = report(label, "lft-length: LFT lengths equal", lens)
    rc |= report(label, "rates: active width, speed and ext speed equal on every port", rates)
    if states:
        print("# note: %d ports differ in PortState (e.g. %s)" % (len(states), states[0]))
    return rc


def main(argv):
    try:
        if len(argv) in (4, 5) and argv[1] == "conventions":
            return conventions(argv[2], argv[3], argv[4] + " " if len(argv) == 5 else "")
        if len(argv) in (4, 5) and argv[1] == "strict":
            return strict(argv[2], argv[3], argv[4] + " " if len(argv) == 5 else "")
    except (OSError, ValueError, ibcompare.ParseError) as e:
        print("not ok - collect_compare.py %s: %s" % (argv[1], e))
        return 1
    sys.stderr.write("usage: collect_compare.py conventions SNAP TOPO [LABEL] | strict A B [LABEL]\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
