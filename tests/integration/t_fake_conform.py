#!/usr/bin/env python3
"""Every reply form tests/lib/fake_topod.py sends is one the real topod sends.

The fake exists for misbehaviour (silence, stalls, streaming, busy); its
answers must not drift from the protocol again (issue 8: the fake sent
dist=65535 and two pathmatrix forms topod never sent, so tests passed while
topoquery failed on a real fabric). For the same requests, on the same
fixture (2sw4hca; with Hca4 unreachable: the fake's --broken Hca4 against
topod on 2sw4hca-unreach.lfts; shared links: 2sw4hca-shared.lfts), each reply is reduced to shapes: the
header's keys and value classes, and each line's token classes (GUID,
number, quoted string, name, literal keywords and ERR codes; runs of one
class collapsed). Every shape the fake produces must be among the real
topod's shapes for that command, over the four real fabrics (whole,
unreachable host, disconnected, shared links). The hostile modes' headers (stream,
bigcount, longname) are checked the same way, and every ERR code in the
fake's source must be one topod sends.
"""
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import check, note  # noqa: E402

ROOT = tt.ROOT
FAKE = os.path.join(ROOT, "tests", "lib", "fake_topod.py")
FIX = os.path.join(ROOT, "tests", "fixtures")

KEYWORDS = {"OK", "ERR", "grp", "sw", "cluster", "host", "sharing", "group", "load", "pong", "bye",
            "commands:"}
GUID = re.compile(r"^0x[0-9a-f]{16}$")
NUM = re.compile(r"^-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$")


def cls(tok):
    if GUID.match(tok):
        return "G"
    if NUM.match(tok):
        # sentinels keep their own class: "-1" (hopsmatrix's no route) and
        # 65535 (the dist=65535 the fake once sent where topod said -1)
        if tok.startswith("-"):
            return "-N"
        return "65535" if tok == "65535" else "N"
    if tok == "inf":
        return "inf"
    if tok.startswith('"') and tok.endswith('"') and len(tok) >= 2:
        return "Q"
    if "=" in tok and (":" not in tok or tok.index("=") < tok.index(":")):
        k, v = tok.split("=", 1)
        return k + "=" + cls(v)
    for sep in (":", "/"):
        if sep in tok:
            return sep.join(cls(p) for p in tok.split(sep))
    return "W"


def tokens(line):
    """Words, with a quoted string (which may hold spaces) as one."""
    out, cur, q = [], "", False
    for ch in line:
        if ch == '"':
            q = not q
        if ch == " " and not q:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def shape(line, head=False):
    t = tokens(line)
    if not t:
        return ""
    if t[0] == "ERR":
        return "ERR " + (t[1] if len(t) > 1 else "")
    if head and t[0] == "OK" and len(t) > 1 and t[1] == "commands:":
        return "OK commands: W+"
    out = []
    k = 0
    while k < len(t):
        w = t[k]
        if w == "ERR" and k + 1 < len(t):   # "0 3 ERR NOENTRY", "a b ERR NOTFOUND"
            out.append("ERR " + t[k + 1])
            k += 2
            continue
        c = w if (w in KEYWORDS and (k == 0 or head)) else cls(w)
        if out and out[-1] in (c, c + "+"):
            out[-1] = c + "+"
        else:
            out.append(c)
        k += 1
    return " ".join(out)


def read_reply(s, buf):
    """One reply's lines from socket s: the head and the lines it announces
    (a reply that does not start with OK/ERR is one line: "query")."""
    def line():
        nonlocal buf
        while b"\n" not in buf:
            d = s.recv(65536)
            if not d:
                raise EOFError
            buf += d
        l, buf = buf.split(b"\n", 1)
        return l.decode("latin-1")
    head = line()
    n = 0
    m = re.search(r"\blines=([0-9]+)", head) if head.startswith("OK") else None
    if m:
        n = int(m.group(1))
    return [head] + [line() for _ in range(n)], buf


def ask_all(port, reqs):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    out, buf = [], b""
    try:
        for r in reqs:
            s.sendall(r.encode() + b"\n")
            lines, buf = read_reply(s, buf)
            out.append(lines)
    finally:
        s.close()
    return out


def shapes_of(replies, reqs):
    """{command: set of shapes}"""
    sh = {}
    for r, lines in zip(reqs, replies):
        cmd = r.split()[0]
        d = sh.setdefault(cmd, set())
        d.add("H " + shape(lines[0], head=True))
        for l in lines[1:]:
            d.add("L " + shape(l))
    return sh


H = ["Hca1", "Hca2", "Hca3", "Hca4"]
REQS = [
    "ping", "help", "info", "depth", "hosts", "tree",
    "hops Hca1 Hca2", "hops Hca1 Hca3", "hops Hca1 Hca4", "hops Hca4 Hca1", "hops Hca1 Nope", "hops Hca1",
    "path Hca1 Hca2", "path Hca1 Hca3", "path Hca1 Hca4", "path Hca4 Hca1", "path Nope Hca1",
    "query Hca1:Hca2", "query Hca1:Hca4", "query Hca1",
    "hopsbatch Hca1:Hca2 Hca1:Hca4 Hca4:Hca1 Hca1:Nope", "hopsbatch Hca1",
    "hopsmatrix " + " ".join(H), "hopsmatrix Hca1", "hopsmatrix Hca1 Nope",
    "pathmatrix " + " ".join(H), "pathmatrix Hca1 Hca2", "pathmatrix Hca1", "pathmatrix Hca1 Hca1",
    "pathmatrix Hca1 Nope",
    "clusters 0 " + " ".join(H), "clusters 1 " + " ".join(H), "clusters 9 Hca1", "clusters 1 Nope",
    "shared " + " ".join(H), "shared Hca1 Hca2", "shared Hca1 Hca1", "shared Nope",
    "resolve Hca1", "resolve lid:4", "resolve 0x0000000000100007", "resolve Nope",
    "nosuchcommand",
    "quit",
]
FAT = ["c401-101", "c401-201", "c402-101", "c401-102"]
FAT_REQS = ["tree", "info", "hosts", "path c401-101 c402-201", "hopsmatrix " + " ".join(FAT),
            "pathmatrix " + " ".join(FAT), "clusters 1 " + " ".join(FAT), "shared " + " ".join(FAT),
            "resolve c401-101", "hopsbatch c401-101:c402-101", "query c401-101:c402-201"]


def start_fake(*args):
    p = subprocess.Popen([sys.executable, FAKE] + list(args), stdout=subprocess.PIPE)
    tt._procs.append(p)
    line = p.stdout.readline().decode()
    if not line.startswith("ready port="):
        raise RuntimeError("fake_topod did not start: %r" % line)
    return p, int(line.split("=")[1])


def first_line(port, req):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(req.encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        return buf.split(b"\n", 1)[0].decode("latin-1")
    finally:
        s.close()


def main():
    real = {}
    fabrics = {"whole": ("2sw4hca.topo", "2sw4hca.lfts"), "unreach": ("2sw4hca.topo", "2sw4hca-unreach.lfts"),
               "split": ("2sw4hca-split.topo", "2sw4hca-split.lfts"),
               # one cable carries both remote hosts of each leaf: "sharing" and "group" lines
               "shared": ("2sw4hca.topo", "2sw4hca-shared.lfts")}
    for name, (topo, lfts) in fabrics.items():
        td = tt.Topod("--topology", os.path.join(FIX, topo), "--lfts", os.path.join(FIX, lfts), ingest=False,
                      admin=False, d=tt.tmpdir("t_fake_conform-"))
        real[name] = shapes_of(ask_all(td.port, REQS), REQS)
        td.stop()
    union = {}
    for sh in real.values():
        for cmd, ss in sh.items():
            union.setdefault(cmd, set()).update(ss)
    check("L cluster G parent=W level=N dist=inf hosts=N name=W" in union["tree"],
          "the real topod's tree says dist=inf on the unreachable/disconnected fixtures")

    procs, fake_shapes = [], []
    fakes = [("2sw4hca", REQS, []), ("broken Hca4", REQS, ["--broken", "Hca4"]),
             ("islands", REQS, ["--fabric", "islands"]), ("fattree", FAT_REQS, ["--fabric", "fattree"])]
    for label, reqs, args in fakes:
        p, port = start_fake(*args)
        procs.append(p)
        fsh = shapes_of(ask_all(port, reqs), reqs)
        fake_shapes.append(("fake " + label, fsh))
        for cmd in sorted(fsh):
            extra = sorted(fsh[cmd] - union.get(cmd, set()))
            check(not extra, "fake %s: every %s reply shape is one topod sends%s" % (
                label, cmd, "" if not extra else "; not: " + " | ".join(extra)))
        if label == "2sw4hca":
            # and the other way: each command's head shape matches topod's exactly
            same = all(sorted(s for s in fsh[c] if s.startswith("H ")) ==
                       sorted(s for s in real["whole"][c] if s.startswith("H ")) for c in fsh)
            check(same, "fake 2sw4hca: every command's header shapes equal topod's on the same fixture")

    # hostile modes: their headers are well-formed topod headers with hostile values
    for mode, reqs in (("stream", ["tree", "shared Hca1 Hca2"]),
                       ("bigcount", ["tree", "shared Hca1 Hca2", "pathmatrix Hca1 Hca2"]),
                       ("longname", ["tree", "path Hca1 Hca2", "clusters 1 Hca1"])):
        p, port = start_fake("--mode", mode)
        procs.append(p)
        for r in reqs:
            h = "H " + shape(first_line(port, r), head=True)
            check(h in union[r.split()[0]], "fake --mode %s: the %s header is a topod header shape (%s)"
                  % (mode, r.split()[0], h))

    # every OK head, topod's and the fake's, is what topod's command table
    # describes (cmd.h's reply): the keys it has are described, the
    # described ones without '?' are there
    out = subprocess.run([os.path.join(tt.BIN, "topod"), "--commands"], check=True, capture_output=True,
                         text=True).stdout
    described = {ln.split("\t")[0]: ln.split("\t")[6].split() for ln in out.splitlines()}
    bad = []
    for who, sh in [("topod " + n, real[n]) for n in real] + fake_shapes:
        for cmd, ss in sh.items():
            for h in (x for x in ss if x.startswith("H OK")):
                keys = [t.split("=")[0] for t in h.split()[2:] if "=" in t]
                d = described.get(cmd, ["-"])
                want = [k for k in d if not k.endswith("?") and k != "-"]
                if d != ["-"] and (set(keys) - {k.rstrip("?") for k in d} or set(want) - set(keys)):
                    bad.append("%s %s: %s" % (who, cmd, h))
    check(not bad, "every OK head of topod and the fake has the keys the command table describes%s"
          % ("; not: " + " | ".join(bad[:4]) if bad else ""))

    # every ERR code the fake can send is one topod sends
    src = open(FAKE).read()
    codes = set(re.findall(r'ERR ([A-Z_]+)', src))
    tsrc = ""
    for f in os.listdir(os.path.join(ROOT, "topod")):
        if f.endswith(".c"):
            tsrc += open(os.path.join(ROOT, "topod", f)).read()
    topod_codes = set(re.findall(r'"([A-Z_]{3,})"', tsrc)) | set(re.findall(r'ERR ([A-Z_]+)', tsrc))
    missing = sorted(codes - topod_codes)
    check(not missing, "every ERR code in fake_topod.py is one topod sends (%s)%s" % (
        " ".join(sorted(codes)), "; not: " + " ".join(missing) if missing else ""))

    for p in procs:
        p.terminate()
        p.wait(5)
    tt.done()


if __name__ == "__main__":
    main()
