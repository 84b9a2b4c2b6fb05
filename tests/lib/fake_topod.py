#!/usr/bin/env python3
"""A tiny stand-in for topod that misbehaves: silence, garbage, stalls, streaming, busy.

    python3 tests/lib/fake_topod.py [--mode MODE] [--fabric 2sw4hca|fattree]
                                    [--broken HOST] [--port N] [--log FILE]

prints "ready port=N" on stdout once it listens on 127.0.0.1 (port 0 by
default: an ephemeral one), then serves until killed (SIGTERM). --log FILE
appends one line per request received ("<conn#> <words> <first 200
bytes of the request>"), so a test can count round trips.

Fabrics (answers are computed from a small model, consistent across commands):
  2sw4hca   the fixture tests/fixtures/2sw4hca.*: Switch1 (0x...200000) with
            Hca1, Hca3; Switch2 (0x...200001) with Hca2, Hca4; depth 2.
  fattree   3 levels: 2 pods x 2 leaves x 4 hosts named c401-101.. c402-204;
            depth 3.
  islands   2sw4hca, but "tree" answers a canned hierarchy with three roots
            (the main part, whose root also holds host gw1 directly; an
            island n01..n05; a lone host "solo").
--broken HOST makes every route to HOST fail (NOROUTE / -1 / ERR NOENTRY).

Normal answers are tested against the real topod (t_tii_real.py,
t_tii_lab.sh); the answers here only give the misbehaving modes something
to cut, stall or repeat. Every reply form this fake sends is one the real
topod sends: tests/integration/t_fake_conform.py checks each header and
line shape against topod's reply to the same request.

Modes (how each connection is treated):
  normal    answer everything
  silent    accept, read, never answer
  stall     send the first half of each reply, then nothing
  close     send the first half of each reply, then close
  garbage   answer lines that are not the protocol
  huge      answer a 2 MiB line
  badcount  send a table without its last line (a one-line reply without
            its newline), then stall
  badrow    the first table line starts with a bad word; one-line replies
            end in an unterminated quote
  nofabric  ERR NOFABRIC to everything
  busy      ERR BUSY, then close
  idle      answer normally, but close every connection 0.3 s after a reply
            (sending "ERR IDLE" first), like topod's idle timeout
  once      answer the first request of each connection, then close it
  busyN     ERR BUSY (and close) to the first N connections (busy3, ...),
            then answer normally: libtii's backoff and retry
  stream    "tree" and "shared" announce 2^25-1 lines and stream valid
            lines without end (until the client closes); others as normal
  bigcount  "tree", "shared", "pathmatrix", "load", "schedule" announce
            counts near 2^25 (schedule: 2^24 steps of 16 levels) and then
            send nothing more (stall)
  longname  "tree" and "path" name a host / switch with 1 MB names, one
            line after another without end; "clusters" echoes 200-byte
            names (above TII_NAME_MAX)

Also importable: FakeTopod(mode=..., fabric=...).start() runs it in a thread
and .port / .stop() / .requests give access.
"""
import argparse
import hashlib
import os
import socket
import sys
import threading
import time

LINE_MAX = 256 * 1024


def esc(s):
    """A NodeDescription as topod quotes it: bytes outside printable ASCII, '"' and '\\' as \\xHH."""
    return "".join(c if 0x20 <= ord(c) < 0x7f and c not in '"\\' else "\\x%02x" % ord(c)
                   for c in s)


def cid(*names):
    """A stable 64-bit cluster ID from member names (any hash will do here)."""
    h = hashlib.sha256(" ".join(sorted(names)).encode()).digest()
    return int.from_bytes(h[:8], "big")


class Fabric:
    """hosts -> leaf; leaves -> pod (fattree); routes by level."""

    def __init__(self, kind="2sw4hca", broken=()):
        self.kind = kind
        self.broken = set(broken)
        self.hosts = []      # (name, port_guid, node_guid, lid, leaf index)
        self.leaves = []     # (guid, name, pod index)
        self.pods = []       # (guid, name) of the pod spine
        self.core = None
        if kind in ("2sw4hca", "islands"):
            self.leaves = [(0x200000, "Switch1", 0), (0x200001, "Switch2", 0)]
            for name, pg, ng, lid, leaf in (("Hca1", 0x100001, 0x100000, 2, 0),
                                            ("Hca2", 0x100004, 0x100003, 4, 1),
                                            ("Hca3", 0x100007, 0x100006, 5, 0),
                                            ("Hca4", 0x10000a, 0x100009, 6, 1)):
                self.hosts.append((name, pg, ng, lid, leaf))
            self.depth = 2
        elif kind == "fattree":
            self.core = (0x300000, "core-1")
            lid = 10
            for p in range(2):
                # spine 2 has a hostile description: quotes, a backslash, a tab, Latin-1
                self.pods.append((0x310000 + p, "spine-1" if p == 0 else 'spine "2"\\\t\xe9'))
                for l in range(2):
                    li = len(self.leaves)
                    self.leaves.append((0x320000 + li, "leaf-%d-%d" % (p + 1, l + 1), p))
                    for h in range(4):
                        name = "c40%d-%d%02d" % (p + 1, l + 1, h + 1)
                        g = 0x0002c90300000000 + lid
                        self.hosts.append((name, g + 0x1000, g, lid, li))
                        lid += 1
            self.depth = 3
        else:
            raise ValueError(kind)

    def resolve(self, name):
        for i, (n, pg, ng, lid, leaf) in enumerate(self.hosts):
            if name in (n, n + "/HCA-1", "0x%016x" % pg, "0x%016x" % ng, "lid:%d" % lid):
                return i
            if name.lower().startswith("0x"):
                try:
                    v = int(name, 16)
                except ValueError:
                    continue
                if v in (pg, ng):
                    return i
        return None

    def route(self, a, b):
        """Switch path [(guid, name, in, out)] from host a to host b, or None."""
        if self.hosts[b][0] in self.broken:
            return None
        la, lb = self.hosts[a][4], self.hosts[b][4]
        pa, pb = self.leaves[la][2], self.leaves[lb][2]
        # ports: host h sits on its leaf's port (position among the leaf's hosts) + 1
        def hport(i):
            leaf = self.hosts[i][4]
            return [h for h in range(len(self.hosts)) if self.hosts[h][4] == leaf].index(i) + 1
        # the uplink a route to b takes: by b's position on its leaf, as an
        # LFT spreading destinations over the two uplinks would
        two = self.kind != "fattree"
        up = (3 if hport(b) % 2 else 5) if two else 5 + (b % 2)
        L = lambda i: (self.leaves[i][0], self.leaves[i][1])
        if la == lb:
            return [L(la) + (hport(a), hport(b))]
        if two:
            return [L(la) + (hport(a), up), L(lb) + (up, hport(b))]
        if pa == pb:
            return [L(la) + (hport(a), up), self.pods[pa] + (1 + la % 2, 1 + lb % 2),
                    L(lb) + (up, hport(b))]
        return [L(la) + (hport(a), up), self.pods[pa] + (1 + la % 2, 3),
                self.core + (1 + pa, 1 + pb), self.pods[pb] + (3, 1 + lb % 2),
                L(lb) + (up, hport(b))]

    # cluster at level: leaf level = depth-1, pods (fattree) = 1, root = 0
    def cluster_members(self, h, level):
        leaf = self.hosts[h][4]
        if level == self.depth - 1:
            return [x for x in range(len(self.hosts)) if self.hosts[x][4] == leaf]
        if level == 1 and self.kind == "fattree":
            pod = self.leaves[leaf][2]
            return [x for x in range(len(self.hosts)) if self.leaves[self.hosts[x][4]][2] == pod]
        return list(range(len(self.hosts)))

    def cluster_id(self, h, level):
        return cid(*[self.hosts[x][0] for x in self.cluster_members(h, level)])


class Handler:
    def __init__(self, fab, gen=7):
        self.fab = fab
        self.gen = gen

    def answer(self, req):
        """The complete reply (a list of lines) to one request line."""
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in req):
            return ["ERR PROTO control character in request"]
        w = req.split()
        if not w:
            return ["ERR PROTO empty request"]
        cmd, args = w[0], w[1:]
        f, G = self.fab, self.gen
        fn = getattr(self, "c_" + cmd, None)
        if fn is None:
            return ["ERR UNKNOWN no such command: " + cmd[:64]]
        try:
            return fn(args)
        except LookupError as e:
            return ["ERR NOTFOUND no such host: %s" % e.args[0]]

    def host(self, name):
        i = self.fab.resolve(name)
        if i is None:
            raise LookupError(name)
        return i

    def c_ping(self, a):
        return ["OK pong"]

    def c_quit(self, a):
        return ["OK bye"]

    def c_help(self, a):
        return ["OK commands: ping help quit info hops path query hopsbatch hopsmatrix pathmatrix depth "
                "clusters tree shared resolve hosts (see docs/protocol.md)"]

    def hca(self, i):
        """The HCA label topod gives host i: these CAs have no "HCA-n" in
        their NodeDescription, so topod names them by node GUID."""
        return "0x%016x" % self.fab.hosts[i][2]

    def epname(self, i):
        return "%s/%s" % (self.fab.hosts[i][0], self.hca(i))

    def c_hopsbatch(self, a):
        out = []
        for p in a:
            if ":" not in p:
                return ["ERR USAGE hopsbatch A:B [A:B ...]; argument is not a pair"]
            x, y = p.split(":", 1)
            i, j = self.fab.resolve(x), self.fab.resolve(y)
            if i is None or j is None:
                out.append("%s %s ERR NOTFOUND" % (x, y))
                continue
            r = self.fab.route(i, j)
            out.append("%s %s %s" % (x, y, "ERR NOENTRY" if r is None else str(0 if i == j else len(r))))
        return ["OK gen=%d lines=%d" % (self.gen, len(out))] + out

    def c_info(self, a):
        f = self.fab
        nsw = len(f.leaves) + len(f.pods) + (1 if f.core else 0)
        return ["OK gen=%d generation=%d nodes=%d switches=%d cas=%d links=%d hosts=%d max_lid=%d "
                "engine=ftree sm_guid=0x%016x sweep=3 snapshot_us=1700000000000000 "
                "received_us=1700000000100000 decode_ms=0.1 build_ms=0.2 depth=%d held=0 "
                "source=\"fake \\x22topod\\x22\"" % (
                    self.gen, self.gen, nsw + len(f.hosts), nsw, len(f.hosts),
                    len(f.hosts) + nsw, len(f.hosts), max(h[3] for h in f.hosts),
                    0x200000, f.depth)]

    def c_depth(self, a):
        return ["OK gen=%d depth=%d" % (self.gen, self.fab.depth)]

    def c_hops(self, a):
        if len(a) != 2:
            return ["ERR USAGE hops A B"]
        x, y = self.host(a[0]), self.host(a[1])
        r = self.fab.route(x, y)
        if r is None:
            return ["ERR NOROUTE NOENTRY switch has no LFT entry for the destination"]
        return ["OK gen=%d hops=%d" % (self.gen, len(r))]

    def c_path(self, a):
        if len(a) != 2:
            return ["ERR USAGE path A B"]
        x, y = self.host(a[0]), self.host(a[1])
        r = self.fab.route(x, y)
        if r is None:
            return ["ERR NOROUTE NOENTRY switch has no LFT entry for the destination"]
        return (["OK gen=%d src=%s dst=%s hops=%d lines=%d" % (self.gen, self.epname(x), self.epname(y),
                                                                len(r), len(r))] +
                ['0x%016x in=%d out=%d "%s"' % (g, i, o, esc(n)) for g, n, i, o in r])

    def c_query(self, a):
        if len(a) != 1 or ":" not in a[0]:
            return ["ERR USAGE query A:B"]
        s, d = a[0].split(":", 1)
        r = self.fab.route(self.host(s), self.host(d))
        if r is None:
            return ["ERR NOROUTE NOENTRY"]
        return [" ".join([s] + ["0x%016x" % g for g, _, _, _ in r] + [d])]

    def many(self, a, maxn=4096):
        if not a:
            raise ValueError
        if len(a) > maxn:
            return None
        return [self.host(x) for x in a]

    def c_hopsmatrix(self, a):
        if not a:
            return ["ERR USAGE hopsmatrix H1 ... Hn"]
        if len(a) > 4096:
            return ["ERR TOOMANY more than 4096 hosts"]
        hs = [self.host(x) for x in a]
        rows = []
        for i in hs:
            row = []
            for j in hs:
                r = self.fab.route(i, j)
                row.append("0" if i == j else ("-1" if r is None else str(len(r))))
            rows.append(" ".join(row))
        return ["OK gen=%d n=%d lines=%d" % (self.gen, len(hs), len(hs))] + rows

    def c_pathmatrix(self, a):
        """topod's form: hosts grouped by leaf switch, one route per (group, destination)."""
        if not a:
            return ["ERR USAGE pathmatrix H1 ... Hn"]
        if len(a) > 4096:
            return ["ERR TOOMANY more than 4096 hosts"]
        hs = [self.host(x) for x in a]
        if len(set(hs)) != len(hs):
            return ["ERR DUPLICATE a host is listed twice"]
        gof, groups = {}, []
        for k, h in enumerate(hs):
            leaf = self.fab.hosts[h][4]
            if leaf not in gof:
                gof[leaf] = len(groups)
                groups.append([])
            groups[gof[leaf]].append(k)
        sw, routes = [], []
        for g, members in enumerate(groups):
            for j in range(len(hs)):
                rep = [m for m in members if m != j]
                if not rep:
                    continue
                r = self.fab.route(hs[rep[0]], hs[j])
                if r is None:
                    routes.append("%d %d ERR NOENTRY" % (g, j))
                    continue
                idx = []
                for guid, _, _, _ in r:
                    if guid not in sw:
                        sw.append(guid)
                    idx.append(str(sw.index(guid)))
                routes.append("%d %d %s" % (g, j, " ".join(idx)))
        head = ["grp %d %s" % (g, " ".join(str(m) for m in members)) for g, members in enumerate(groups)]
        swl = ["sw %d 0x%016x" % (k, guid) for k, guid in enumerate(sw)]
        return (["OK gen=%d n=%d groups=%d switches=%d lines=%d" % (
            self.gen, len(hs), len(groups), len(sw), len(head) + len(swl) + len(routes))] + head + swl + routes)

    def c_clusters(self, a):
        if len(a) < 2:
            return ["ERR USAGE clusters LEVEL H1 ... Hn"]
        d = self.fab.depth
        try:
            lv = {"top": 0, "leaf": d - 1}.get(a[0])
            lv = int(a[0]) if lv is None else lv
        except ValueError:
            return ["ERR RANGE LEVEL '%s' is not a level" % a[0]]
        lv = d + lv if -d <= lv < 0 else lv
        if lv < 0 or lv >= d:
            return ["ERR RANGE LEVEL '%s' is not a level: 0..%d, top, leaf, or -1..-%d from the leaves" % (a[0], d - 1, d)]
        hs = [self.host(x) for x in a[1:]]
        ids = [self.fab.cluster_id(h, lv) for h in hs]
        return (["OK gen=%d level=%d count=%d lines=%d" % (self.gen, lv, len(set(ids)), len(hs))] +
                ["%s 0x%016x" % (n, i) for n, i in zip(a[1:], ids)])

    # islands: a canned hierarchy for tree consumers (slurm, dot): a main
    # part whose root holds two leaves plus a host of its own, an island
    # with zero-padded names, and a lone host; the other commands answer as
    # for 2sw4hca.
    ISLANDS = [
        "cluster 0x00000000000000a1 parent=0x0000000000000f00 level=1 dist=1 hosts=2 name=leaf-a",
        "cluster 0x00000000000000b2 parent=0x0000000000000f00 level=1 dist=1 hosts=2 name=leaf-b",
        "cluster 0x00000000000000c3 parent=0x0000000000000f01 level=1 dist=1 hosts=4 name=leaf-c",
        "cluster 0x0000000000000f00 parent=- level=0 dist=3 hosts=5 name=spine-0",
        "cluster 0x0000000000000f01 parent=- level=0 dist=1 hosts=4 name=cl_00000000000000c3_1",
        "cluster 0x0000000000000f02 parent=- level=0 dist=inf hosts=1 name=cl_0000000000000f02_0",
        "host Hca1 parent=0x00000000000000a1",
        "host Hca2 parent=0x00000000000000b2",
        "host Hca3 parent=0x00000000000000a1",
        "host Hca4 parent=0x00000000000000b2",
        "host gw1 parent=0x0000000000000f00",
        "host n01 parent=0x00000000000000c3",
        "host n02 parent=0x00000000000000c3",
        "host n03 parent=0x00000000000000c3",
        "host n05 parent=0x00000000000000c3",
        "host solo parent=0x0000000000000f02",
    ]

    def c_tree(self, a):
        f = self.fab
        if f.kind == "islands":
            return ["OK gen=%d depth=2 clusters=6 hosts=10 lines=16" % self.gen] + self.ISLANDS
        lines = []
        leafc = {}
        for li in range(len(f.leaves)):
            members = [h for h in range(len(f.hosts)) if f.hosts[h][4] == li]
            if members:
                leafc[li] = members
        root = f.cluster_id(0, 0)
        podc = {}
        if f.kind == "fattree":
            for p in range(len(f.pods)):
                members = [h for h in range(len(f.hosts)) if f.leaves[f.hosts[h][4]][2] == p]
                podc[p] = f.cluster_id(members[0], 1)
        for li, m in leafc.items():
            parent = podc[f.leaves[li][2]] if podc else root
            lines.append("cluster 0x%016x parent=0x%016x level=%d dist=1 hosts=%d name=leaf-%d" % (
                f.cluster_id(m[0], f.depth - 1), parent, f.depth - 1, len(m), li))
        for p, i in podc.items():
            n = sum(1 for h in f.hosts if f.leaves[h[4]][2] == p)
            lines.append("cluster 0x%016x parent=0x%016x level=1 dist=3 hosts=%d name=spine-%d" % (i, root, n, p))
        lines.append("cluster 0x%016x parent=- level=0 dist=%d hosts=%d name=core-0" % (
            root, 5 if podc else 2, len(f.hosts)))
        nc = len(lines)
        for h in range(len(f.hosts)):
            lines.append("host %s parent=0x%016x" % (f.hosts[h][0], f.cluster_id(h, f.depth - 1)))
        return (["OK gen=%d depth=%d clusters=%d hosts=%d lines=%d" % (
            self.gen, f.depth, nc, len(f.hosts), len(lines))] + lines)

    def c_shared(self, a):
        if not a:
            return ["ERR USAGE shared H1 ... Hn"]
        if len(a) > 4096:
            return ["ERR TOOMANY more than 4096 hosts"]
        f = self.fab
        hs = [self.host(x) for x in a]
        if len(set(hs)) != len(hs):
            return ["ERR DUPLICATE repeated host"]
        ingress = {}
        loads = {}
        ok = failed = 0
        for i in hs:
            for j in hs:
                if i == j:
                    continue
                r = f.route(i, j)
                if r is None:
                    failed += 1
                    continue
                ok += 1
                for g, _, _, o in r:
                    loads[(g, o)] = loads.get((g, o), 0) + 1
                if f.hosts[i][4] != f.hosts[j][4] and len(r) >= 2:
                    g, _, _, o = r[-2]
                    ingress.setdefault(j, set()).add((g, o))
        groups = {}
        for j, links in ingress.items():
            for l in links:
                groups.setdefault(l, []).append(j)
        groups = {l: sorted(m, key=hs.index) for l, m in groups.items() if len(m) >= 2}
        sharing = sorted({j for m in groups.values() for j in m}, key=hs.index)
        leaves = {f.hosts[h][4] for h in hs}
        name = {h: a[k] for k, h in enumerate(hs)}
        lines = (["sharing %s" % name[j] for j in sharing] +
                 ["group 0x%016x:%d %s" % (g, p, " ".join(name[j] for j in m))
                  for (g, p), m in sorted(groups.items())] +
                 ["load 0x%016x:%d %d" % (g, p, c) for (g, p), c in sorted(loads.items())])
        return ["OK gen=%d hosts=%d sharing=%d avg_hosts_per_leaf=%.17g leaves=%d pairs_ok=%d "
                "pairs_failed=%d lines=%d" % (self.gen, len(hs), len(sharing), len(hs) / len(leaves),
                                               len(leaves), ok, failed, len(lines))] + lines

    def c_resolve(self, a):
        if len(a) != 1:
            return ["ERR USAGE resolve NAME"]
        i = self.host(a[0])
        h = self.fab.hosts[i]
        return ["OK gen=%d name=%s host=%s hca=%s guid=0x%016x node=0x%016x port=1 lid=%d dlid=%d lmc=0 "
                "leaf=0x%016x" % (self.gen, self.epname(i), h[0], self.hca(i), h[1], h[2], h[3], h[3],
                                  self.fab.leaves[h[4]][0])]

    def c_hosts(self, a):
        f = self.fab
        return (["OK gen=%d lines=%d" % (self.gen, len(f.hosts))] +
                ["%s rails=1 %s:0x%016x:lid=%d" % (h[0], self.hca(i), h[1], h[3]) for i, h in enumerate(f.hosts)])


class FakeTopod:
    def __init__(self, mode="normal", fabric="2sw4hca", broken=(), port=0, log=None):
        self.mode = mode
        self.h = Handler(Fabric(fabric, broken))
        self.log = log
        self.requests = []
        self.lock = threading.Lock()
        self.conns = 0
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stopping = False

    def start(self):
        threading.Thread(target=self.serve, daemon=True).start()
        return self

    def stop(self):
        self.stopping = True
        try:
            self.ls.close()
        except OSError:
            pass

    def serve(self):
        while not self.stopping:
            try:
                s, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                self.conns += 1
                n = self.conns
            threading.Thread(target=self.conn, args=(s, n), daemon=True).start()

    def record(self, n, req):
        with self.lock:
            self.requests.append(req)
            if self.log:
                with open(self.log, "a") as f:
                    f.write("%d %d %s\n" % (n, len(req.split()), req[:200]))

    def conn(self, s, n):
        m = self.mode
        try:
            if m == "busy" or (m.startswith("busy") and n <= int(m[4:])):
                s.sendall(b"ERR BUSY too many connections\n")
                return
            buf = b""
            served = 0
            while True:
                if m == "idle" and served:
                    s.settimeout(0.3)
                try:
                    d = s.recv(65536)
                except socket.timeout:
                    s.sendall(b"ERR IDLE closing idle connection\n")
                    return
                if not d:
                    return
                buf += d
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if len(line) > LINE_MAX:
                        s.sendall(b"ERR TOOLONG request line longer than 262144 bytes\n")
                        return
                    req = line.decode("latin-1").rstrip("\r")
                    self.record(n, req)
                    if not self.reply(s, req):
                        return
                    served += 1
                if len(buf) > LINE_MAX:
                    s.sendall(b"ERR TOOLONG request line longer than 262144 bytes\n")
                    return
        except OSError:
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def reply(self, s, req):
        """Sends the reply per mode; False closes the connection."""
        m = self.mode
        lines = self.h.answer(req)
        data = ("\n".join(lines) + "\n").encode()
        if m.startswith("busy"):   # busyN, past its N refusals
            m = "normal"
        cmd = req.split()[:1]
        if m in ("stream", "bigcount", "longname") and cmd and cmd[0] in self.ABUSE.get(m, ()):
            return self.abuse(s, m, req)
        if m in ("normal", "idle", "stream", "bigcount", "longname"):
            s.sendall(data)
            return req.split()[:1] != ["quit"]
        if m == "once":
            s.sendall(data)
            return False
        if m == "silent":
            return True
        if m == "nofabric":
            s.sendall(b"ERR NOFABRIC topod has not received a fabric yet\n")
            return True
        if m in ("stall", "close"):
            s.sendall(data[:max(1, len(data) // 2)])
            if m == "close":
                return False
            while not self.stopping:
                time.sleep(0.2)
            return False
        if m == "garbage":
            s.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n\r\n<html>\n")
            return True
        if m == "huge":
            s.sendall(b"OK gen=1 hops=" + b"9" * (2 * 1024 * 1024) + b"\n")
            return True
        if m == "badcount":
            # a table loses its last line, a one-line reply its newline
            data = ("\n".join(lines[:-1]) + "\n").encode() if len(lines) > 1 else lines[0].encode()
            s.sendall(data)
            while not self.stopping:
                time.sleep(0.2)
            return False
        if m == "badrow":
            if len(lines) > 1:
                lines[1] = "0xzz " + lines[1]
            elif lines[0].startswith("OK "):
                lines[0] += ' junk="unterminated'
            s.sendall(("\n".join(lines) + "\n").encode())
            return True
        raise ValueError(m)

    ABUSE = {"stream": ("tree", "shared"), "bigcount": ("tree", "shared", "pathmatrix", "load", "schedule"),
             "longname": ("tree", "path", "clusters")}
    BIG = (1 << 25) - 1

    def endless(self, s, chunk):
        """Sends chunk again and again until the client goes away."""
        try:
            while not self.stopping:
                s.sendall(chunk)
        except OSError:
            pass
        return False

    def stall(self):
        while not self.stopping:
            time.sleep(0.2)
        return False

    def abuse(self, s, m, req):
        """Well-formed headers with hostile counts, lines or names."""
        w = req.split()
        cmd, G, B = w[0], self.h.gen, self.BIG
        if m == "stream":
            if cmd == "tree":
                s.sendall(b"OK gen=%d depth=2 clusters=1 hosts=%d lines=%d\n"
                          b"cluster 0x00000000000000a1 parent=- level=0 dist=1 hosts=%d name=leaf-a\n" % (G, B - 1, B, B - 1))
                line = b"host n%06d parent=0x00000000000000a1\n"
                return self.endless(s, b"".join(line % k for k in range(20000)))
            s.sendall(b"OK gen=%d hosts=%d sharing=0 avg_hosts_per_leaf=1 leaves=%d pairs_ok=0 pairs_failed=0 "
                      b"lines=%d\n" % (G, len(w) - 1, len(w) - 1, B))
            return self.endless(s, b"load 0x0000000000200000:1 1\n" * 20000)
        if m == "bigcount":
            if cmd == "tree":
                s.sendall(b"OK gen=%d depth=2 clusters=%d hosts=%d lines=%d\n" % (G, B // 2, B - B // 2, B))
            elif cmd == "shared":
                s.sendall(b"OK gen=%d hosts=%d sharing=%d avg_hosts_per_leaf=1 leaves=1 pairs_ok=0 "
                          b"pairs_failed=0 lines=%d\n" % (G, len(w) - 1, len(w) - 1, B))
            elif cmd == "schedule":
                S = (1 << 24) - 1
                s.sendall(b"OK gen=%d algo=xor requested=xor fallback=none ranks=2 steps=%d multi=0 host_steps=0 "
                          b"extra_steps=0 tiers=16 flows=1 bytes=1 time_us=- xor_time_us=- bound_us=- reason=none "
                          b"lines=%d\n" % (G, S, S + 17))
            elif cmd == "load":
                s.sendall(b"OK gen=%d pattern=alltoall ranks=2 hosts=2 flows=2 msgs=2 bytes=2 intra_msgs=0 "
                          b"intra_bytes=0 failed_msgs=0 failed_bytes=0 max_msgs=1 max_bytes=1 max_links=%d "
                          b"max_hops=2 time_us=- bottleneck=- bottleneck_bps=- links=%d lines=%d\n" % (G, B, B, B))
            else:
                n = len(w) - 1
                s.sendall(b"OK gen=%d n=%d groups=%d switches=%d lines=%d\n" % (G, n, n, B - n * n - n, B))
            return self.stall()
        big = b"x" * 1000000   # 1 MB: under the old 1 MiB line limit
        if cmd == "tree":
            s.sendall(b"OK gen=%d depth=2 clusters=1 hosts=%d lines=%d\n"
                      b"cluster 0x00000000000000a1 parent=- level=0 dist=1 hosts=%d name=leaf-a\n" % (G, B - 1, B, B - 1))
            return self.endless(s, b"host " + big + b" parent=0x00000000000000a1\n")
        if cmd == "path":
            s.sendall(b"OK gen=%d src=Hca1/0x0000000000100000 dst=Hca2/0x0000000000100003 hops=64 "
                      b"lines=64\n" % G)
            return self.endless(s, b'0x0000000000200000 in=1 out=3 "' + big + b'"\n')
        # clusters: names longer than any hostname, echoed as asked
        n = len(w) - 2
        name = b"h" * 200
        s.sendall(b"OK gen=%d level=%s count=1 lines=%d\n" % (G, w[1].encode(), n) +
                  b"".join(name + b" 0x00000000000000a1\n" for _ in range(n)))
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="normal")
    ap.add_argument("--fabric", default="2sw4hca")
    ap.add_argument("--broken", action="append", default=[])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--listen-after", type=float, default=0,
                    help="print 'waiting', then listen only after this many seconds (a topod restarting)")
    o = ap.parse_args()
    if o.listen_after > 0:
        # started, then refusing for a while: the interpreter's own start-up
        # (seconds on a loaded machine) is not part of the wait
        print("waiting", flush=True)
        time.sleep(o.listen_after)
    ft = FakeTopod(o.mode, o.fabric, o.broken, o.port, o.log)
    print("ready port=%d" % ft.port, flush=True)
    try:
        ft.serve()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
