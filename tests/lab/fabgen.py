#!/usr/bin/env python3
"""fabgen.py - generate ibsim net files for the topod simulated-fabric lab.

Writes a fabric description in ibsim's (ibnetdiscover-like) net-file format,
optionally with a JSON sidecar (--meta), an infiniband-diags node-name-map
(--node-name-map) and OpenSM root / compute-node GUID files.

Kinds (sub-commands):
  xgft            generalised fat tree XGFT(h; m1..mh; w1..wh)
  fattree         k-ary fat tree of k-port switches (2 or 3 levels), via XGFT
  stampede-small  over-subscribed 5:4 two-level tree (20 hosts + 16 uplinks
                  per leaf), = xgft --h 2 --m 20,8 --w 1,16 (160 hosts)
  torus2d         2-D torus (or mesh) with DOR-consistent port numbering
  rrg             random regular graph of switches
  slimfly         MMS Slim Fly (prime q)
  mlfm            multi-layer full mesh

Common options (after the kind): -o, --meta, --node-name-map, --fail N,
--seed S, --rails 1|2, --root-guid-file, --cn-guid-file, --switch-ports,
--speed.

ibsim facts this relies on (ibsim 0.10, ibsim/sim_net.c):
  * "caguid=0x..." / "switchguid=0x..." lines set the GUID of the next node
    (absolute); a CA's port N gets GUID nodeguid+N, switch ports share the
    node GUID.  We emit one such line before every node, so GUIDs are
    deterministic.
  * The header 'Ca 1 "nodeid" # "description"' sets the NodeDescription;
    we use the description as the node id too, so console commands are
    e.g.  Unlink "ibsw-L1-003"[21].
  * Every record must end with a blank line (the terminating line is eaten).
  * Both ends of every link must be listed, consistently.
  * The first port in the file is the default attachment point (SM port):
    we write all CAs first, so the SM runs on the first host's HCA-1.
  * Lines are limited to 255 characters; node ids to 64 characters.
"""

import argparse
import itertools
import json
import random
import sys
from collections import deque

HCA_GUID_BASE = 0x0002c90300000000   # Mellanox OUI 00:02:c9, HCA range
SW_GUID_BASE = 0x0008f10500000000    # Voltaire OUI 00:08:f1, switch range
HCA_GUID_STRIDE = 0x10               # node GUID ...k0, port 1 GUID ...k1

# Link speeds ibsim 0.10 understands in a port line's ibnetdiscover-style
# trailer ('... lid 0 4xQDR'); it sets the port's enabled width/speed.
SPEEDS = ("SDR", "DDR", "QDR", "FDR", "EDR")


class FabError(Exception):
    pass


class Fabric:
    """Switches, CAs and point-to-point links, with explicit port numbers."""

    def __init__(self, kind, params):
        self.kind = kind
        self.params = params
        self.switches = []      # dicts: name, nports, attrs
        self.sw_index = {}
        self.cas = []           # dicts: name, host, rail, nports
        self.links = []         # [a, pa, b, pb]  (node names)
        self.removed = []
        self.hosts = {}         # hostname -> [ca names]
        self.used = {}          # (node, port) -> True
        self.roots = []         # switch names usable as ftree/updn roots
        self.roots_arbitrary = False

    def add_switch(self, name, nports, **attrs):
        if name in self.sw_index:
            raise FabError("duplicate switch %s" % name)
        self.sw_index[name] = len(self.switches)
        d = {"name": name, "nports": nports}
        d.update(attrs)
        self.switches.append(d)
        return name

    def add_ca(self, host, rail, nports=1):
        name = "%s HCA-%d" % (host, rail)
        self.cas.append({"name": name, "host": host, "rail": rail,
                         "nports": nports})
        self.hosts.setdefault(host, []).append(name)
        return name

    def link(self, a, pa, b, pb):
        for n, p in ((a, pa), (b, pb)):
            if (n, p) in self.used:
                raise FabError("port %s[%d] used twice" % (n, p))
            if p < 1:
                raise FabError("bad port %s[%d]" % (n, p))
            self.used[(n, p)] = True
        self.links.append([a, pa, b, pb])

    def is_switch(self, name):
        return name in self.sw_index


# ---------------------------------------------------------------- naming

def hostname(rack, pos):
    return "c%03d-%03d" % (401 + rack, 101 + pos)


def attach_hosts(fab, edges, per_switch, port_of, rails):
    """Attach per_switch hosts to every edge switch (in order).

    port_of(edge_index, slot) gives the switch port for host slot `slot`;
    slots 0..per_switch-1 are rail-1 HCAs of the edge's own rack, slots
    per_switch..2*per_switch-1 are rail-2 HCAs of the previous rack (rail 2
    of rack r is cabled to edge switch (r+1) mod E, i.e. a different switch
    of the same fabric/subnet)."""
    E = len(edges)
    if rails == 2 and E < 2:
        raise FabError("--rails 2 needs at least two edge switches")
    for e, sw in enumerate(edges):
        for pos in range(per_switch):
            h = hostname(e, pos)
            ca = fab.add_ca(h, 1)
            fab.link(sw, port_of(e, pos), ca, 1)
    if rails == 2:
        for e in range(E):
            sw2 = edges[(e + 1) % E]
            for pos in range(per_switch):
                h = hostname(e, pos)
                ca = fab.add_ca(h, 2)
                fab.link(sw2, port_of((e + 1) % E, per_switch + pos), ca, 1)


# ---------------------------------------------------------------- XGFT

def build_xgft(fab, H, M, W, rails, min_ports, host_order_first=True):
    """XGFT(H; M1..MH; W1..WH) (Ohring et al.; notation of Prisacari et al.).

    A level-l node has coordinates (m_H..m_{l+1}, w_l..w_1), 0<=m_i<M_i,
    0<=w_i<W_i.  Level 0 are hosts.  A level-l node is linked to the W_{l+1}
    level-(l+1) nodes obtained by dropping m_{l+1} and appending w_{l+1}.
    A level-l switch (l>=1) has M_l down ports (1..M_l, port m_l+1 leads to
    child m_l) and W_{l+1} up ports (M_l+1..M_l+W_{l+1}).
    """
    if len(M) != H or len(W) != H:
        raise FabError("--m and --w need exactly H=%d values each" % H)
    if any(x < 1 for x in M + W):
        raise FabError("m_i and w_i must be >= 1")
    if W[0] != 1:
        raise FabError("w1 must be 1 (hosts have one port per rail); "
                       "use --rails 2 for dual-homed hosts")
    if H < 1:
        raise FabError("h must be >= 1")
    Mx = [0] + list(M)            # Mx[l] = M_l (M_0 = 0: hosts have no children)
    Wx = list(W) + [0]            # Wx[l] = W_{l+1}  (W_{H+1} = 0: roots)

    def coords(level):
        # m_H..m_{level+1}, then w_level..w_1 ; most significant first
        ranges = [range(M[i - 1]) for i in range(H, level, -1)]
        ranges += [range(W[i - 1]) for i in range(level, 0, -1)]
        return list(itertools.product(*ranges))

    names = {}  # (level, coord) -> node name
    # hosts, by rack = (m_H..m_2) and position m_1
    leaves = coords(1)
    leaf_names = []
    for l in range(1, H + 1):
        for i, c in enumerate(coords(l)):
            nm = "ibsw-L%d-%03d" % (l, i + 1)
            down = Mx[l] * (2 if (l == 1 and rails == 2) else 1)
            nports = max(down + Wx[l], min_ports)
            if nports > 254:
                raise FabError("switch %s would need %d ports (ibsim max 254)"
                               % (nm, nports))
            fab.add_switch(nm, nports, level=l, coords=list(c))
            names[(l, c)] = nm
            if l == 1:
                leaf_names.append(nm)
            if l == H:
                fab.roots.append(nm)
    # switch-switch links, level l -> l+1
    for l in range(1, H):
        for c in coords(l):
            nm_m = H - l          # number of m coordinates
            ms, ws = c[:nm_m], c[nm_m:]
            child_idx = ms[-1]     # m_{l+1}
            for w in range(W[l]):  # W_{l+1}
                pc = ms[:-1] + (w,) + ws
                parent = names[(l + 1, pc)]
                fab.link(names[(l, c)], Mx[l] + w + 1, parent, child_idx + 1)

    # hosts: leaf i = rack i (w1 == 1)
    M1, W2 = M[0], Wx[1]

    def port_of(e, slot):
        if slot < M1:
            return slot + 1                 # rail-1 host ports 1..M1
        return M1 + W2 + (slot - M1) + 1    # rail-2 ports after uplinks
    attach_hosts(fab, leaf_names, M1, port_of, rails)


# ---------------------------------------------------------------- torus

def build_torus2d(fab, X, Y, per_switch, rails, min_ports, wrap=True):
    """2-D torus.  Port 1 = +x, 2 = -x, 3 = +y, 4 = -y on every switch, and
    a +x port is always cabled to the neighbour's -x port (likewise y), which
    is what OpenSM's DOR engine needs.  Hosts on ports 5.. ."""
    if X < 2 or Y < 2:
        raise FabError("torus2d needs x >= 2 and y >= 2")
    hp = 2 * per_switch if rails == 2 else per_switch
    nports = max(4 + hp, min_ports)
    names = {}
    edges = []
    for y in range(Y):
        for x in range(X):
            nm = "ibsw-x%02d-y%02d" % (x, y)
            fab.add_switch(nm, nports, coords=[x, y])
            names[(x, y)] = nm
            edges.append(nm)
    for y in range(Y):
        for x in range(X):
            if wrap or x + 1 < X:
                fab.link(names[(x, y)], 1, names[((x + 1) % X, y)], 2)
            if wrap or y + 1 < Y:
                fab.link(names[(x, y)], 3, names[(x, (y + 1) % Y)], 4)
    attach_hosts(fab, edges, per_switch, lambda e, s: 5 + s, rails)


# ---------------------------------------------------------------- rrg

def random_regular_graph(n, d, rng, tries=2000):
    if n * d % 2:
        raise FabError("switches*degree must be even")
    if d >= n:
        raise FabError("degree must be < switches")
    for _ in range(tries):
        # pairing model with restart on self-loops / multi-edges
        stubs = [v for v in range(n) for _ in range(d)]
        rng.shuffle(stubs)
        edges = set()
        ok = True
        # greedy repair: pick pairs, restart if stuck
        while stubs:
            a = stubs.pop()
            cand = [i for i, b in enumerate(stubs)
                    if b != a and (min(a, b), max(a, b)) not in edges]
            if not cand:
                ok = False
                break
            i = rng.choice(cand)
            b = stubs.pop(i)
            edges.add((min(a, b), max(a, b)))
        if not ok:
            continue
        adj = {v: set() for v in range(n)}
        for a, b in edges:
            adj[a].add(b)
            adj[b].add(a)
        if connected(adj):
            return sorted(edges)
    raise FabError("could not build a connected %d-regular graph on %d nodes"
                   % (d, n))


def connected(adj):
    if not adj:
        return True
    start = next(iter(adj))
    seen = {start}
    q = deque([start])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if v not in seen:
                seen.add(v)
                q.append(v)
    return len(seen) == len(adj)


def build_rrg(fab, n, d, per_switch, rails, min_ports, rng):
    edges_g = random_regular_graph(n, d, rng)
    hp = 2 * per_switch if rails == 2 else per_switch
    nports = max(d + hp, min_ports)
    names = []
    for i in range(n):
        names.append(fab.add_switch("ibsw-R-%03d" % (i + 1), nports, index=i))
    nextp = [1] * n
    for a, b in edges_g:
        fab.link(names[a], nextp[a], names[b], nextp[b])
        nextp[a] += 1
        nextp[b] += 1
    attach_hosts(fab, names, per_switch, lambda e, s: d + 1 + s, rails)


# ---------------------------------------------------------------- slim fly

def is_prime(q):
    return q >= 2 and all(q % i for i in range(2, int(q ** 0.5) + 1))


def primitive_element(q):
    for g in range(2, q):
        if len({pow(g, i, q) for i in range(q - 1)}) == q - 1:
            return g
    return 1  # q == 2


def slimfly_sets(q):
    """Generator sets X, X' of the MMS graph (Kathareios & Minkenberg 2.2.1)
    for prime q = 4w + delta."""
    xi = primitive_element(q)
    if q % 4 == 1:
        w = (q - 1) // 4
        X = [pow(xi, i, q) for i in range(0, q - 2, 2)]        # 1..xi^{q-3}
        Xp = [pow(xi, i, q) for i in range(1, q - 1, 2)]       # xi..xi^{q-2}
        delta = 1
    elif q % 4 == 3:
        w = (q + 1) // 4
        X = [pow(xi, i, q) for i in
             list(range(0, 2 * w - 1, 2)) + list(range(2 * w - 1, 4 * w - 2, 2))]
        Xp = [pow(xi, i, q) for i in
              list(range(1, 2 * w, 2)) + list(range(2 * w, 4 * w - 1, 2))]
        delta = -1
    else:
        raise FabError("slimfly: q must be an odd prime (prime powers and "
                       "q = 4w are not implemented)")
    return set(X), set(Xp), w, delta


def build_slimfly(fab, q, per_switch, rails, min_ports):
    if not is_prime(q) or q == 2:
        raise FabError("slimfly: q must be an odd prime (3, 5, 7, 11, 13...)")
    X, Xp, w, delta = slimfly_sets(q)
    radix = (3 * q - delta) // 2
    if per_switch is None:
        per_switch = -(-radix // 2)
    hp = 2 * per_switch if rails == 2 else per_switch
    nports = max(radix + hp, min_ports)
    nodes = [(s, a, b) for s in (0, 1) for a in range(q) for b in range(q)]
    names = {}
    order = []
    for (s, a, b) in nodes:
        nm = "ibsw-SF%d-%02d-%02d" % (s, a, b)
        fab.add_switch(nm, nports, coords=[s, a, b])
        names[(s, a, b)] = nm
        order.append(nm)
    nextp = {n: 1 for n in nodes}
    edges = []
    for i, u in enumerate(nodes):
        for v in nodes[i + 1:]:
            (s, a, b), (t, c, d) = u, v
            ok = False
            if s == t == 0 and a == c and (b - d) % q in X:
                ok = True          # (0,x,y) - (0,x,y')  if y - y' in X
            elif s == t == 1 and a == c and (b - d) % q in Xp:
                ok = True          # (1,m,c) - (1,m,c')  if c - c' in X'
            elif s == 0 and t == 1 and b == (c * a + d) % q:
                ok = True          # (0,x,y) - (1,m,c)   if y = m x + c
            if ok:
                edges.append((u, v))
    for u, v in edges:
        fab.link(names[u], nextp[u], names[v], nextp[v])
        nextp[u] += 1
        nextp[v] += 1
    degs = set(p - 1 for p in nextp.values())
    if degs != {radix}:
        raise FabError("slimfly: internal error, degrees %s != %d" % (degs, radix))
    fab.params.update({"radix": radix, "w": w, "delta": delta,
                       "hosts_per_switch": per_switch,
                       "X": sorted(X), "Xp": sorted(Xp)})
    attach_hosts(fab, order, per_switch, lambda e, s: radix + 1 + s, rails)


# ---------------------------------------------------------------- MLFM

def build_mlfm(fab, h, layers, per_switch, rails, min_ports):
    """Multi-layer full mesh: `layers` layers of h+1 local routers (LRs); one
    global router (GR) per unordered LR pair {i,j}, linked to LR i and LR j of
    every layer.  LR port k (1..h) leads to the GR of the k-th pair of i;
    hosts follow.  GR port 2L+1 / 2L+2 go to LR i / LR j of layer L."""
    if h < 1 or layers < 1:
        raise FabError("mlfm: h and layers must be >= 1")
    hp = 2 * per_switch if rails == 2 else per_switch
    lr = {}
    edges = []
    for L in range(layers):
        for i in range(h + 1):
            nm = "ibsw-LR%02d-%02d" % (L, i)
            fab.add_switch(nm, max(h + hp, min_ports), layer=L, index=i,
                           role="local")
            lr[(L, i)] = nm
            edges.append(nm)
    gr = {}
    for i in range(h + 1):
        for j in range(i + 1, h + 1):
            nm = "ibsw-GR-%02d-%02d" % (i, j)
            fab.add_switch(nm, max(2 * layers, min_ports), pair=[i, j],
                           role="global")
            gr[(i, j)] = nm
            fab.roots.append(nm)
    for L in range(layers):
        for i in range(h + 1):
            k = 0
            for j in range(h + 1):
                if j == i:
                    continue
                a, b = min(i, j), max(i, j)
                gport = 2 * L + (1 if i == a else 2)
                fab.link(lr[(L, i)], k + 1, gr[(a, b)], gport)
                k += 1
    attach_hosts(fab, edges, per_switch, lambda e, s: h + 1 + s, rails)


# ---------------------------------------------------------------- faults

def remove_links(fab, n, rng):
    """Remove n random switch-to-switch links, keeping the switch graph
    (and hence the fabric) connected."""
    if n <= 0:
        return
    sw_links = [i for i, (a, pa, b, pb) in enumerate(fab.links)
                if fab.is_switch(a) and fab.is_switch(b)]
    adj = {s["name"]: [] for s in fab.switches}
    for i in sw_links:
        a, pa, b, pb = fab.links[i]
        adj[a].append((b, i))
        adj[b].append((a, i))
    removed = set()

    def still_connected():
        start = fab.switches[0]["name"]
        seen = {start}
        q = deque([start])
        while q:
            u = q.popleft()
            for v, li in adj[u]:
                if li not in removed and v not in seen:
                    seen.add(v)
                    q.append(v)
        return len(seen) == len(adj)

    order = list(sw_links)
    rng.shuffle(order)
    for li in order:
        if len(removed) == n:
            break
        removed.add(li)
        if not still_connected():
            removed.discard(li)
    if len(removed) < n:
        raise FabError("can only remove %d links and stay connected"
                       % len(removed))
    fab.removed = [fab.links[i] for i in sorted(removed)]
    fab.links = [l for i, l in enumerate(fab.links) if i not in removed]


# ---------------------------------------------------------------- output

def assign_guids(fab):
    for k, ca in enumerate(fab.cas):
        ca["guid"] = HCA_GUID_BASE + HCA_GUID_STRIDE * (k + 1)
        ca["port_guid"] = ca["guid"] + 1
    for k, sw in enumerate(fab.switches):
        sw["guid"] = SW_GUID_BASE + k + 1


def gx(v):
    return "0x%016x" % v


def render_net(fab, speed):
    ports = {}  # node -> {port: (remote, rport)}
    for a, pa, b, pb in fab.links:
        ports.setdefault(a, {})[pa] = (b, pb)
        ports.setdefault(b, {})[pb] = (a, pa)
    out = []
    p = fab.params
    out.append("# topod lab fabric, generated by tests/lab/fabgen.py")
    out.append("# kind: %s  params: %s" % (fab.kind, json.dumps(p, sort_keys=True)))
    out.append("# %d switches, %d CAs (%d hosts), %d links, %d removed"
               % (len(fab.switches), len(fab.cas), len(fab.hosts),
                  len(fab.links), len(fab.removed)))
    for a, pa, b, pb in fab.removed:
        out.append('# removed link: "%s"[%d] "%s"[%d]' % (a, pa, b, pb))
    out.append("")
    # Every port line carries an ibnetdiscover-like trailer
    # ('# "remote desc" lid 0 4xQDR'): ibsim then sets the port's enabled
    # width/speed from it, and does not warn "cannot parse remote lid and
    # connection type" once per port.
    rate = "4x" + (speed or "QDR")
    # CAs first: the first port in the file is ibsim's default (SM) port.
    for ca in fab.cas:
        out.append("caguid=%s" % gx(ca["guid"]))
        out.append('Ca\t%d "%s"\t# "%s"' % (ca["nports"], ca["name"], ca["name"]))
        for pn in sorted(ports.get(ca["name"], {})):
            r, rp = ports[ca["name"]][pn]
            out.append('[%d]\t"%s"[%d]\t\t# lid 0 lmc 0 "%s" lid 0 %s'
                       % (pn, r, rp, r, rate))
        out.append("")
    for sw in fab.switches:
        out.append("switchguid=%s" % gx(sw["guid"]))
        out.append('Switch\t%d "%s"\t# "%s"' % (sw["nports"], sw["name"], sw["name"]))
        for pn in sorted(ports.get(sw["name"], {})):
            r, rp = ports[sw["name"]][pn]
            out.append('[%d]\t"%s"[%d]\t\t# "%s" lid 0 %s'
                       % (pn, r, rp, r, rate))
        out.append("")
    for line in out:
        if len(line) > 250:
            raise FabError("line too long for ibsim: %s" % line[:60])
    return "\n".join(out) + "\n"


def nnm_name(ca):
    # A name that differs from the NodeDescription but keeps the
    # "hostname first token" convention: "nnm-c401-101 HCA-1".
    return "nnm-%s HCA-%d" % (ca["host"], ca["rail"])


def build_meta(fab, args, nnm):
    sw_by = {s["name"]: s for s in fab.switches}
    ca_by = {c["name"]: c for c in fab.cas}
    attach = {}
    for a, pa, b, pb in fab.links:
        if a in ca_by:
            attach[a] = (b, pb)
        if b in ca_by:
            attach[b] = (a, pa)
    hosts = {}
    for h, names in fab.hosts.items():
        hosts[h] = []
        for n in names:
            c = ca_by[n]
            sw, sp = attach.get(n, (None, None))
            hosts[h].append({"node": n, "rail": c["rail"], "guid": gx(c["guid"]),
                             "port_guid": gx(c["port_guid"]),
                             "switch": sw, "switch_port": sp})
    sws = []
    for s in fab.switches:
        d = dict(s)
        d["node"] = d.pop("name")
        d["guid"] = gx(d["guid"])
        sws.append(d)
    sw_links = [l for l in fab.links if l[0] in sw_by and l[2] in sw_by]
    meta = {
        "kind": fab.kind,
        "params": fab.params,
        "rails": args.rails,
        "seed": args.seed,
        "counts": {
            "switches": len(fab.switches),
            "cas": len(fab.cas),
            "hosts": len(fab.hosts),
            "links": len(fab.links),
            "switch_links": len(sw_links),
            "ca_links": len(fab.links) - len(sw_links),
            "removed_links": len(fab.removed),
        },
        "sm_node": fab.cas[0]["name"] if fab.cas else None,
        "hosts": hosts,
        "switches": sws,
        "roots": [gx(sw_by[r]["guid"]) for r in fab.roots],
        "roots_arbitrary": fab.roots_arbitrary,
        "links": fab.links,
        "removed_links": fab.removed,
        "guid_scheme": {
            "ca_node_guid": "0x0002c90300000000 + 0x10*(k+1), k = CA index in file",
            "ca_port_guid": "ca node guid + port number (ibsim rule)",
            "switch_guid": "0x0008f10500000000 + (k+1), k = switch index in file",
        },
    }
    if nnm is not None:
        meta["node_name_map"] = nnm
    return meta


def write_text(path, text):
    if path in (None, "-"):
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)


# ---------------------------------------------------------------- CLI

def int_list(s):
    try:
        return [int(x) for x in s.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma separated integers")


def make_parser():
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("common options")
    g.add_argument("-o", "--output", default="-",
                   help="net file to write (default stdout)")
    g.add_argument("--meta", help="write JSON sidecar here")
    g.add_argument("--node-name-map", dest="nnm",
                   help="write an infiniband-diags node-name-map for all CAs")
    g.add_argument("--root-guid-file",
                   help="write the top-level switch GUIDs (OpenSM root_guid_file)")
    g.add_argument("--cn-guid-file",
                   help="write all CA port GUIDs (OpenSM cn_guid_file)")
    g.add_argument("--fail", type=int, default=0, metavar="N",
                   help="remove N random switch-switch links (stays connected)")
    g.add_argument("--seed", type=int, default=1,
                   help="random seed for --fail and rrg (default 1)")
    g.add_argument("--rails", type=int, choices=(1, 2), default=1,
                   help="HCAs per host; rail 2 goes to the next edge switch")
    g.add_argument("--switch-ports", type=int, default=0, metavar="N",
                   help="minimum port count of every switch (e.g. 36)")
    g.add_argument("--speed", choices=SPEEDS, default="QDR",
                   help="4x link speed enabled on all ports (default QDR)")

    p = argparse.ArgumentParser(
        prog="fabgen.py",
        description="Generate ibsim net files (topod simulated-fabric lab).")
    sub = p.add_subparsers(dest="kind", required=True, metavar="KIND")

    s = sub.add_parser("xgft", parents=[common],
                       help="XGFT(h; m1..mh; w1..wh)")
    s.add_argument("--h", type=int, required=True, help="switch levels")
    s.add_argument("--m", type=int_list, required=True, help="m1,..,mh")
    s.add_argument("--w", type=int_list, required=True, help="w1,..,wh (w1=1)")

    s = sub.add_parser("fattree", parents=[common],
                       help="k-ary fat tree of k-port switches")
    s.add_argument("--k", type=int, required=True, help="switch radix (even)")
    s.add_argument("--levels", type=int, choices=(2, 3), default=3)

    s = sub.add_parser("stampede-small", parents=[common],
                       help="5:4 over-subscribed 2-level tree, 160 hosts")
    s.add_argument("--leaves", type=int, default=8,
                   help="leaf switches (20 hosts each, default 8)")

    s = sub.add_parser("torus2d", parents=[common], help="2-D torus")
    s.add_argument("--x", type=int, required=True)
    s.add_argument("--y", type=int, required=True)
    s.add_argument("--hosts-per-switch", type=int, default=2)
    s.add_argument("--mesh", action="store_true",
                   help="no wraparound links (open mesh)")

    s = sub.add_parser("rrg", parents=[common], help="random regular graph")
    s.add_argument("--switches", type=int, required=True)
    s.add_argument("--degree", type=int, required=True)
    s.add_argument("--hosts-per-switch", type=int, default=2)

    s = sub.add_parser("slimfly", parents=[common], help="MMS Slim Fly")
    s.add_argument("--q", type=int, required=True, help="odd prime")
    s.add_argument("--hosts-per-switch", type=int, default=None,
                   help="default ceil(network radix / 2)")

    s = sub.add_parser("mlfm", parents=[common], help="multi-layer full mesh")
    s.add_argument("--h", type=int, required=True,
                   help="h: h+1 local routers per layer")
    s.add_argument("--layers", type=int, default=None, help="default h")
    s.add_argument("--hosts-per-switch", type=int, default=None,
                   help="hosts per local router, default h")
    return p


def generate(args):
    rng = random.Random(args.seed)
    mp = args.switch_ports
    if args.kind == "xgft":
        fab = Fabric("xgft", {"h": args.h, "m": args.m, "w": args.w})
        build_xgft(fab, args.h, args.m, args.w, args.rails, mp)
    elif args.kind == "fattree":
        k = args.k
        if k < 2 or k % 2:
            raise FabError("fattree: k must be even and >= 2")
        if args.levels == 2:
            H, M, W = 2, [k // 2, k], [1, k // 2]
        else:
            H, M, W = 3, [k // 2, k // 2, k], [1, k // 2, k // 2]
        fab = Fabric("fattree", {"k": k, "levels": args.levels,
                                 "xgft": {"h": H, "m": M, "w": W}})
        build_xgft(fab, H, M, W, args.rails, mp)
    elif args.kind == "stampede-small":
        H, M, W = 2, [20, args.leaves], [1, 16]
        fab = Fabric("stampede-small", {"leaves": args.leaves,
                                        "xgft": {"h": H, "m": M, "w": W},
                                        "oversubscription": "20:16 (5:4)"})
        build_xgft(fab, H, M, W, args.rails, mp)
    elif args.kind == "torus2d":
        fab = Fabric("torus2d", {"x": args.x, "y": args.y,
                                 "hosts_per_switch": args.hosts_per_switch,
                                 "wrap": not args.mesh,
                                 "ports": {"+x": 1, "-x": 2, "+y": 3, "-y": 4}})
        build_torus2d(fab, args.x, args.y, args.hosts_per_switch, args.rails,
                      mp, wrap=not args.mesh)
    elif args.kind == "rrg":
        fab = Fabric("rrg", {"switches": args.switches, "degree": args.degree,
                             "hosts_per_switch": args.hosts_per_switch})
        build_rrg(fab, args.switches, args.degree, args.hosts_per_switch,
                  args.rails, mp, rng)
    elif args.kind == "slimfly":
        fab = Fabric("slimfly", {"q": args.q})
        build_slimfly(fab, args.q, args.hosts_per_switch, args.rails, mp)
    elif args.kind == "mlfm":
        layers = args.layers if args.layers is not None else args.h
        per = args.hosts_per_switch if args.hosts_per_switch is not None else args.h
        fab = Fabric("mlfm", {"h": args.h, "layers": layers,
                              "hosts_per_switch": per})
        build_mlfm(fab, args.h, layers, per, args.rails, mp)
    else:
        raise FabError("unknown kind %s" % args.kind)
    if not fab.roots and fab.switches:
        # No natural roots (torus, rrg, slim fly): name the first switch, so
        # that updn (whose root auto-detection finds none on these) works
        # when given --root-guid-file.
        fab.roots = [fab.switches[0]["name"]]
        fab.roots_arbitrary = True
    if args.fail:
        fab.params["fail"] = args.fail
        remove_links(fab, args.fail, rng)
    assign_guids(fab)
    return fab


def main(argv=None):
    args = make_parser().parse_args(argv)
    try:
        fab = generate(args)
        net = render_net(fab, args.speed)
    except FabError as e:
        print("fabgen: error: %s" % e, file=sys.stderr)
        return 2
    for a, pa, b, pb in fab.removed:
        print('fabgen: removed link "%s"[%d] <-> "%s"[%d]' % (a, pa, b, pb),
              file=sys.stderr)
    write_text(args.output, net)
    nnm = None
    if args.nnm:
        nnm = {gx(c["guid"]): nnm_name(c) for c in fab.cas}
        write_text(args.nnm, "".join('%s "%s"\n' % (g, n)
                                     for g, n in nnm.items()))
    if args.root_guid_file:
        sw_by = {s["name"]: s for s in fab.switches}
        write_text(args.root_guid_file,
                   "".join(gx(sw_by[r]["guid"]) + "\n" for r in fab.roots))
    if args.cn_guid_file:
        write_text(args.cn_guid_file,
                   "".join(gx(c["port_guid"]) + "\n" for c in fab.cas))
    if args.meta:
        write_text(args.meta, json.dumps(build_meta(fab, args, nnm), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
