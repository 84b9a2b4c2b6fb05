#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/NAME/)
from real components, so that the seeds reach deep code: a topod serving
tests/fixtures/2sw4hca (a real ibnetdiscover capture) answers every libtii
call and every topoquery command once, through a proxy that records what it
says; its snapshot, a delta, its SimGrid platform and its replies become
the other seeds. Hand-written seeds (request lines, configs, schedules) are
written here too, so that one command remakes them all:

    make all tests && python3 tests/fuzz/mkcorpus.py

Run it when a protocol reply or a file format changes; commit the result.
Each seed stays small (a few KB): enough to start from, not a corpus."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import topodtest  # noqa: E402

BIN = os.path.join(ROOT, "build", "bin")
FUZZ = os.path.join(ROOT, "build", "fuzz")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
FIX = os.path.join(ROOT, "tests", "fixtures")


def put(name, seed, data):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, seed), "wb") as f:
        f.write(data)


class Recorder:
    """A proxy to topod that keeps every byte topod sends, in order."""

    def __init__(self, port):
        self.up = port
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        self.data = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            c, _ = self.s.accept()
            u = socket.create_connection(("127.0.0.1", self.up))
            threading.Thread(target=self.pump, args=(c, u, False), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, True), daemon=True).start()

    def pump(self, a, b, keep):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if keep:
                    with self.lock:
                        self.data += d
                b.sendall(d)
        except OSError:
            pass
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def take(self):
        with self.lock:
            d = bytes(self.data)
            self.data.clear()
        return d


def record(rec, harness, head, file_part=None):
    """Runs harness on head (+ file_part) against the real topod; the
    seed is head, the file part and what topod said."""
    inp = head + (file_part + b"\n--\n" if file_part is not None else b"")
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(inp)
    env = dict(os.environ, FUZZ_TII_SERVERS="127.0.0.1:%d" % rec.port)
    rec.take()
    subprocess.run([os.path.join(FUZZ, harness), "-close_fd_mask=3", f.name], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    os.unlink(f.name)
    import time
    time.sleep(0.05)
    return inp + rec.take()


# A diff with every kind of line (docs/protocol.md, diff): a one-generation
# topod has nothing to compare.
DIFF = (b"OK gen=9 from=8 to=9 links_down=1 links_up=1 nodes_gone=1 nodes_new=1 ports=3 lft_switches=1 "
        b"lft_entries=4 routes_changed=2 hosts_changed=2 lines=10\n"
        b"node-gone 0x0000000000100009 ca \"Hca4\"\nnode-new 0x000000000010000c ca \"Hca5\"\n"
        b"link-down 0x0000000000200000/3 0x0000000000200001/3 \"Switch1\" \"Switch2\"\n"
        b"link-up 0x0000000000200000/5 0x0000000000200001/5 \"Switch1\" \"Switch2\"\n"
        b"port 0x0000000000200000/3 \"Switch1\" state=Active->Down width=4X->1X\n"
        b"port-states Init->Active ports=2\nlft 0x0000000000200001 entries=4 first_lid=2 \"Switch2\"\n"
        b"host-missing Hca4 only-in-from\nroute Hca1 Hca2\nhost Hca1 routes=1\n")


def tii_seeds(rec):
    put("fuzz_tii", "call27-lines", bytes([27, 0]) + DIFF)
    for call in range(46):
        put("fuzz_tii", "call%02d" % call, record(rec, "fuzz_tii", bytes([call, 0])))
    for call in (10, 21, 27, 36, 38, 41, 42, 45):   # the variants: host lists, names, window/native, planes
        put("fuzz_tii", "call%02d-v" % call, record(rec, "fuzz_tii", bytes([call, 0x40])))
    for call in (0, 9, 24):             # a plane asked first
        put("fuzz_tii", "call%02d-plane" % call, record(rec, "fuzz_tii", bytes([call, 0x80 | 7])))


PROFILE = b"""{"format":"topoprof/1","ranks":4,"hosts":["Hca1","Hca2"],
"fabric":{"ok":true,"generation":3,"server":"127.0.0.1:7878"},
"p2p":{"bytes":6442450944,"messages":12,"by_hops":[{"hops":0,"bytes":1024,"messages":2},
{"hops":1,"bytes":341303846527,"messages":8},{"hops":3,"bytes":9007199254740992,"messages":2}]},
"collective":{"bytes":100,"messages":1,"by_hops":[{"hops":-1,"bytes":100,"messages":1}]},
"links":{"ok":true,"loaded":2,"top":[{"from":"Hca1","to":"Switch1","bytes":6442450944,"pairs":3}]}}
"""
FILES = {
    0: PROFILE, 1: PROFILE,
    2: b"# src dst bytes\n0 1 6000000000\n1 2 341303846527\n2 3 9007199254740992\n3 0 1\n",
    3: b"0 1 100\n1 0 100\n",
    6: b"% METIS: 8 vertices, 8 edges, edge weights\n8 8 001\n2 5\n1 5 3 5\n2 5 4 5\n3 5 5 5\n4 5 6 5\n"
       b"5 5 7 5\n6 5 8 5\n7 5\n",
    8: b"Hca2 # a comment\nHca[3-4]\n",
    9: b"Hca[1-4]\n",
}


def topoquery_seeds(rec):
    sys.path.insert(0, os.path.dirname(__file__))
    src = open(os.path.join(ROOT, "tests", "fuzz", "fuzz_topoquery.c")).read()
    nlines = src.split("static const char *const lines[][12] = {")[1].split("};")[0].count("\t{ ")
    for i in range(nlines):
        put("fuzz_topoquery", "line%02d" % i, record(rec, "fuzz_topoquery", bytes([i, 0]), FILES.get(i, b"")))


def query_seeds():
    lines = [
        "ping", "info", "hops h0000 h0015", "path h0000 h0015", "hopsbatch h0000:h0001 h0002:h0014",
        "hopsmatrix h0000 h0005 h0010 h0015", "delaymatrix bytes=4096 h0000 h0005 h0010 h0015",
        "pathmatrix h0000 h0005 h0010 h0015", "depth", "clusters 1 h0000 h0005", "tree", "tree gone",
        "switches", "shared h0000 h0005 h0010 h0015", "order h0015 h0000 h0005",
        "pick 2 h0000 h0005 h0010 h0015", "pick bytes=9007199254740992 pattern=ring 2 h0000 h0005 h0010",
        "map stencil:4 h0000*2 h0005*2", "map bytes=6442450944 stencil:2,2 h0000*2 h0005*2",
        "load alltoall h0000*2 h0005 h0010", "load bytes=6000000000 links=max stencil2d:2,2:periodic h0000 h0005 h0010 h0015",
        "load matrix h0000 h0005 -- 0:1:341303846527 1:0:7", "load bytes=9007199254740992 xor:1 h0000 h0005 h0010 h0015",
        "load random:42 h0000 h0005 h0010", "schedule xor h0000*2 h0005 h0010",
        "schedule route bytes=9007199254740992 h0000 h0005 h0010 h0015", "schedule agbest k=2 h0000 h0005 h0010 h0015",
        "simgrid h0000 h0005 h0015", "resolve h0003", "hosts", "planes", "planes h0003", "plane default",
        "watch 3", "watch 7 0", "history", "diff 7 7", "diff 7 @9999999999 h0000 h0001", "show h0000",
        "links state=up", "help", "quit",
    ]
    for i, l in enumerate(lines):
        put("fuzz_query", "req%02d" % i, l.encode())
    put("fuzz_query", "pipelined", b"ping\nhops h0000 h0001\ninfo\n")
    for i, l in enumerate(["hops h0000 h0015", "ping\ntree\nload alltoall h0000 h0005\nquit",
                           "pathmatrix h0000 h0005\nshared h0000 h0005"]):
        put("fuzz_server", "query%d" % i, b"\x00" + l.encode() + b"\n")
    put("fuzz_server", "http-metrics", b"\x01GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    put("fuzz_server", "http-api", b"\x01GET /api/hops?a=h0000&b=h0015 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    put("fuzz_server", "http-page", b"\x01GET / HTTP/1.0\r\n\r\n")
    put("fuzz_server", "tcp-hello", b"\x03TOPOAUTH\x02\x00\x00\x00\x01\x00\x00\x00")
    for i, l in enumerate(["hops h0000 h0015", "ping", "load bytes=4294967297 alltoall h0000 h0005"]):
        put("fuzz_proto", "req%d" % i, l.encode())


def file_seeds(tmp):
    topo = open(os.path.join(FIX, "2sw4hca.topo"), "rb").read()
    lfts = open(os.path.join(FIX, "2sw4hca.lfts"), "rb").read()
    put("fuzz_text", "2sw4hca", topo + b"\n--\n" + lfts)
    put("fuzz_text", "2sw4hca-split", open(os.path.join(FIX, "2sw4hca-split.topo"), "rb").read() + b"\n--\n" +
        open(os.path.join(FIX, "2sw4hca-split.lfts"), "rb").read())
    snap = os.path.join(tmp, "a.snap")
    topodtest.from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca.lfts"), snap)
    data = open(snap, "rb").read()
    put("fuzz_snapshot", "2sw4hca", data)
    put("fuzz_server", "unix-ingest", b"\x02" + data)
    other = os.path.join(tmp, "b.snap")
    topodtest.from_text(os.path.join(FIX, "2sw4hca.topo"), os.path.join(FIX, "2sw4hca-shared.lfts"), other)
    delta = os.path.join(tmp, "ab.delta")
    subprocess.run([os.path.join(BIN, "topo-snap"), "delta", snap, other, delta], check=True,
                   stdout=subprocess.DEVNULL)
    # Small tables: the encoder writes whole blocks (the smaller form).
    # 2sw4hca-lfts-named, beside it, is the same change with its block
    # records naming their entries (flags 1): kept (KEPT), not remade.
    put("fuzz_delta", "2sw4hca-lfts", open(delta, "rb").read())
    put("fuzz_conf", "topod.conf", open(os.path.join(ROOT, "systemd", "topod.conf"), "rb").read())
    put("fuzz_conf", "limits", b"listen = 127.0.0.1:7878\ningest = rail2=tcp:0.0.0.0:7879\nmax-conns = 1000\n"
        b"output-soft-limit = 32M:20\nmax-snapshot = 1G\nhistory-bytes = 128M\nforeground\nhttp = 127.0.0.1:9100\n")
    g = 0x0002c90300000000
    put("fuzz_namemap", "map", ("# node-name-map\n0x%016x \"node7 HCA-1\"\n0x%016x node7 HCA-2\n0x%016x \"c401-[1]\"\n"
                                "0x%016x \"leaf sw\"\n" % (g + 1, g + 5, g + 9, 0x0008f10500000000)).encode())
    put("fuzz_namemap", "clash", ("0x%016x \"a HCA-1\"\n0x%016x \"a HCA-1\"\n" % (g + 1, g + 5)).encode())
    n = 4
    xor = "\n".join(" ".join("%d:%d" % (r, r ^ s) for r in range(n)) for s in range(1, n))
    put("fuzz_coll_sched", "xor4", bytes([n - 1]) + ("# OK gen=3 algo=xor time_us=10 xor_time_us=12 bytes=6442450944\n"
                                                   + xor + "\n").encode())
    # topod 1.7's header: the prediction at one size class, window and the MPI's own
    put("fuzz_coll_sched", "xor4-native", bytes([n - 1]) + (
        "# OK gen=3 algo=route time_us=10 xor_time_us=12 bytes=1048576 window=4 native=smpi-ompi "
        "native_algo=pair native_time_us=15 fallback=none\n# OK gen=3 algo=xor bytes=9007199254740992 "
        "time_us=9e12 window=1 native=ompi native_algo=linear native_time_us=- fallback=native\n"
        + xor + "\n").encode())
    ring = "\n".join(" ".join("%d:%d:%d" % (r, (r + 1) % n, (r - s) % n) for r in range(n)) for s in range(n - 1))
    put("fuzz_coll_sched", "agring4", bytes([0x80 | (n - 1)]) +
        ("# OK gen=3 algo=agring time_us=10 ring_time_us=12 variants=agring:offered:10 bytes=9007199254740992\n"
         + ring + "\n").encode())


# Seeds no step here makes again: read before the corpus is cleared, put back.
KEPT = [("fuzz_delta", "2sw4hca-lfts-named")]


def main():
    tmp = tempfile.mkdtemp()
    try:
        kept = []
        for name, seed in KEPT:
            with open(os.path.join(CORPUS, name, seed), "rb") as f:
                kept.append((name, seed, f.read()))
        for name in os.listdir(CORPUS) if os.path.isdir(CORPUS) else []:
            shutil.rmtree(os.path.join(CORPUS, name))
        for name, seed, data in kept:
            put(name, seed, data)
        file_seeds(tmp)
        query_seeds()
        t = topodtest.Topod("--topology", os.path.join(FIX, "2sw4hca.topo"), "--lfts",
                            os.path.join(FIX, "2sw4hca.lfts"), ingest=False, admin=False)
        rec = Recorder(t.port)
        tii_seeds(rec)
        topoquery_seeds(rec)
        xml = subprocess.run([os.path.join(BIN, "topoquery"), "-s", "127.0.0.1:%d" % t.port, "simgrid",
                              "Hca1", "Hca2", "Hca3", "Hca4"], check=True, stdout=subprocess.PIPE).stdout
        put("fuzz_coll_topo", "2sw4hca", b"\x00" + xml)
        put("fuzz_coll_topo", "2sw4hca-missing", b"\x01" + xml)
        t.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = 0
    for name in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, name))
        size = sum(os.path.getsize(os.path.join(CORPUS, name, f)) for f in files)
        total += size
        print("%-16s %3d seeds %7d bytes" % (name, len(files), size))
    print("all: %d bytes" % total)


if __name__ == "__main__":
    main()
