#!/usr/bin/env python3
"""snapdecode.py - an independent decoder of topod snapshot files, for tests.

Written from the format comment at the top of snapshot/snapshot.c, not from
its code, so that a test comparing this decoder's output with topo-snap's
catches an encoder and decoder that agree with each other but not with the
documented format.

  snapdecode.py info|nodes|links|lfts|ports FILE

links and lfts print exactly what `topo-snap links|lfts` prints:
  links  "0xGUID PORT 0xGUID PORT", each link once, from its lower end
  lfts   "0xSWITCHGUID LID PORT" for every LID >= 1 that has a path
ports prints one line per present port:
  "0xNODEGUID PORT guid=0x.. lid=N lmc=N state=N width=N speed=N espeed=N"

As a module: decode(bytes) -> Snapshot; ValueError on any malformed input;
encode(Snapshot) -> bytes, the inverse, for tests that need a snapshot
topo-snap cannot make (one of no node, links down in place).
"""

import struct
import sys

HEADER_LEN = 64
MAGIC = b"TOPOSNAP"
NONE = 0xFFFFFFFF
LFT_NONE = 0xFF
TYPES = {1: "ca", 2: "switch", 3: "router"}


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


_CRC = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC
    for b in data:
        c = (c >> 8) ^ t[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


class Port:
    __slots__ = ("num", "present", "guid", "lid", "lmc", "state", "width",
                 "speed", "espeed", "peer_node", "peer_port")


class Node:
    __slots__ = ("type", "nports", "guid", "sysimg", "desc", "ports", "lft")


class Snapshot:
    pass


def reseal(buf, **fields):
    """A copy of an encoded snapshot with header fields rewritten
    (generation, plen, sm_guid, sweep, timestamp) and the header CRC made
    valid again, so that the change reaches topod's checks past the CRC."""
    b = bytearray(buf)
    offs = {"generation": 16, "plen": 24, "sm_guid": 40, "sweep": 48, "timestamp": 56}
    for k, v in fields.items():
        struct.pack_into("<Q", b, offs[k], v)
    struct.pack_into("<I", b, 36, 0)
    struct.pack_into("<I", b, 36, crc32c(bytes(b[:64])))
    return bytes(b)


def decode(buf, check_crc=True):
    if len(buf) < HEADER_LEN or buf[:8] != MAGIC:
        raise ValueError("not a snapshot (short or bad magic)")
    ver, hlen, gen, plen, pcrc, hcrc, smg, sweep, ts = struct.unpack_from(
        "<IIQQIIQQQ", buf, 8)
    if ver != 1 or hlen != HEADER_LEN:
        raise ValueError("version %d header length %d" % (ver, hlen))
    if len(buf) != HEADER_LEN + plen:
        raise ValueError("file has %d bytes, header says %d" % (len(buf), HEADER_LEN + plen))
    if check_crc:
        h = bytearray(buf[:HEADER_LEN])
        h[36:40] = b"\0\0\0\0"
        if crc32c(h) != hcrc:
            raise ValueError("header CRC mismatch")
        if crc32c(buf[HEADER_LEN:]) != pcrc:
            raise ValueError("payload CRC mismatch")
    s = Snapshot()
    s.generation, s.sm_guid, s.sweep, s.timestamp = gen, smg, sweep, ts
    off = HEADER_LEN
    nnodes, flags = struct.unpack_from("<II", buf, off)
    off += 8
    elen = buf[off]
    off += 1
    s.engine = buf[off:off + elen].decode("ascii", "replace")
    off += elen
    s.nodes = []
    for _ in range(nnodes):
        n = Node()
        n.type, n.nports, n.guid, n.sysimg, dl = struct.unpack_from("<BBQQB", buf, off)
        off += 19
        n.desc = bytes(buf[off:off + dl])
        off += dl
        n.ports = []
        for p in range(n.nports + 1):
            pt = Port()
            pt.num = p
            pt.present = buf[off]
            off += 1
            if pt.present:
                (pt.guid, pt.lid, pt.lmc, pt.state, pt.width, pt.speed, pt.espeed,
                 pt.peer_node, pt.peer_port) = struct.unpack_from("<QHBBBBBIB", buf, off)
                off += 20
            else:
                pt.guid = pt.lid = pt.lmc = pt.state = pt.width = pt.speed = pt.espeed = 0
                pt.peer_node, pt.peer_port = NONE, 0
            n.ports.append(pt)
        n.lft = b""
        if n.type == 2:
            (ll,) = struct.unpack_from("<I", buf, off)
            off += 4
            n.lft = bytes(buf[off:off + ll])
            if len(n.lft) != ll:
                raise ValueError("truncated LFT")
            off += ll
        s.nodes.append(n)
    if off != len(buf):
        raise ValueError("%d bytes left over" % (len(buf) - off))
    return s


def encode(s):
    """The snapshot file of s (as decode() returns it, changed or not)."""
    p = bytearray(struct.pack("<II", len(s.nodes), 0))
    eng = s.engine.encode("ascii")
    p += bytes([len(eng)]) + eng
    for n in s.nodes:
        p += struct.pack("<BBQQB", n.type, n.nports, n.guid, n.sysimg, len(n.desc)) + n.desc
        for pt in n.ports:
            p.append(1 if pt.present else 0)
            if pt.present:
                p += struct.pack("<QHBBBBBIB", pt.guid, pt.lid, pt.lmc, pt.state, pt.width, pt.speed, pt.espeed,
                                 pt.peer_node, pt.peer_port)
        if n.type == 2:
            p += struct.pack("<I", len(n.lft)) + n.lft
    h = bytearray(MAGIC + struct.pack("<IIQQIIQQQ", 1, HEADER_LEN, s.generation, len(p), crc32c(p), 0, s.sm_guid,
                                      s.sweep, s.timestamp))
    struct.pack_into("<I", h, 36, crc32c(bytes(h)))
    return bytes(h) + bytes(p)


def empty(generation, timestamp, sm_guid=0, sweep=0):
    """A snapshot of no node at all."""
    s = Snapshot()
    s.generation, s.timestamp, s.sm_guid, s.sweep, s.engine, s.nodes = generation, timestamp, sm_guid, sweep, "", []
    return encode(s)


def load(path, check_crc=True):
    with open(path, "rb") as f:
        return decode(f.read(), check_crc)


def links(s):
    out = []
    for i, n in enumerate(s.nodes):
        for pt in n.ports[1:]:
            if pt.peer_node == NONE:
                continue
            j, q = pt.peer_node, pt.peer_port
            if j < i or (j == i and q < pt.num):
                continue
            out.append("0x%016x %d 0x%016x %d" % (n.guid, pt.num, s.nodes[j].guid, q))
    return out


def lfts(s):
    out = []
    for n in s.nodes:
        for lid in range(1, len(n.lft)):
            if n.lft[lid] != LFT_NONE:
                out.append("0x%016x %d %d" % (n.guid, lid, n.lft[lid]))
    return out


def ports(s):
    out = []
    for n in s.nodes:
        for pt in n.ports:
            if pt.present:
                out.append("0x%016x %d guid=0x%016x lid=%d lmc=%d state=%d width=%d speed=%d espeed=%d"
                           % (n.guid, pt.num, pt.guid, pt.lid, pt.lmc, pt.state, pt.width,
                              pt.speed, pt.espeed))
    return out


def nodes(s):
    out = []
    for n in s.nodes:
        out.append("%s 0x%016x ports %d sysimg 0x%016x %r"
                   % (TYPES.get(n.type, "?"), n.guid, n.nports, n.sysimg, n.desc))
    return out


def info(s):
    sw = sum(1 for n in s.nodes if n.type == 2)
    return ["generation %d" % s.generation, "sweep %d" % s.sweep,
            "timestamp_us %d" % s.timestamp, "sm_guid 0x%016x" % s.sm_guid,
            "engine %s" % (s.engine or "-"), "nodes %d" % len(s.nodes), "switches %d" % sw,
            "links %d" % len(links(s))]


def main(argv):
    cmds = {"info": info, "nodes": nodes, "links": links, "lfts": lfts, "ports": ports}
    if len(argv) != 3 or argv[1] not in cmds:
        sys.stderr.write("usage: snapdecode.py %s FILE\n" % "|".join(cmds))
        return 2
    try:
        s = load(argv[2])
    except (OSError, ValueError, struct.error) as e:
        sys.stderr.write("snapdecode.py: %s: %s\n" % (argv[2], e))
        return 1
    sys.stdout.write("".join(line + "\n" for line in cmds[argv[1]](s)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
