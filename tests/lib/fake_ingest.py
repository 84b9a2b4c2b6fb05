#!/usr/bin/env python3
"""fake_ingest.py - a stand-in for topod's ingest socket, for tests.

Accepts producers (the OpenSM plugin, the collector) on a UNIX or TCP socket,
reads one snapshot per connection (64-byte header, then the payload whose
length is the u64 at offset 24, little-endian; see snapshot/snapshot.c),
stores it and replies "OK <generation>\\n".

  fake_ingest.py (--unix PATH | --tcp HOST:PORT) --out DIR
                 [--mode normal|noread|close] [--count N] [--lifetime S]

  --out DIR     every snapshot is written to DIR/gen-<generation>.snap and
                DIR/latest.snap (atomically), and a line
                "<generation> <bytes>" is appended to DIR/received.log
  --mode        normal: as above; noread: accept and never read or reply
                (holds every connection open); close: accept and close at once
  --count N     exit 0 after N snapshots (normal mode)
  --lifetime S  exit after S seconds whatever happens (default 600), so a
                test that forgets us cannot leave us behind for long

Prints "ready port=N" (TCP) or "ready path=PATH" (UNIX) on stdout once it
listens. Stdlib only.
"""

import argparse
import os
import socket
import struct
import sys
import time

HEADER_LEN = 64
MAGIC = b"TOPOSNAP"
MAX_PAYLOAD = 8 << 30  # SNAP_MAX_PAYLOAD


def read_exact(conn, n, deadline):
    chunks = []
    while n:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        b = conn.recv(min(n, 1 << 20))
        if not b:
            raise EOFError("peer closed after a short read")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def serve_one(conn, out):
    deadline = time.monotonic() + 60
    hdr = read_exact(conn, HEADER_LEN, deadline)
    if hdr[:8] != MAGIC:
        conn.sendall(b"ERR bad magic\n")
        return None
    gen, plen = struct.unpack_from("<QQ", hdr, 16)
    if plen > MAX_PAYLOAD:
        conn.sendall(b"ERR payload too large\n")
        return None
    payload = read_exact(conn, plen, deadline)
    data = hdr + payload
    write_atomic(os.path.join(out, "gen-%d.snap" % gen), data)
    write_atomic(os.path.join(out, "latest.snap"), data)
    with open(os.path.join(out, "received.log"), "a") as f:
        f.write("%d %d\n" % (gen, len(data)))
    conn.sendall(b"OK %d\n" % gen)
    return gen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--unix", metavar="PATH")
    g.add_argument("--tcp", metavar="HOST:PORT")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=("normal", "noread", "close"), default="normal")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=600)
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    if a.unix:
        try:
            os.unlink(a.unix)
        except FileNotFoundError:
            pass
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(a.unix)
        ready = "ready path=%s" % a.unix
    else:
        host, port = a.tcp.rsplit(":", 1)
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, int(port)))
        ready = "ready port=%d" % ls.getsockname()[1]
    if a.mode == "noread":
        # A small receive buffer makes "stopped reading" happen at a few
        # hundred KB instead of several MB, so small fabrics can test it.
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ls.listen(16)
    print(ready, flush=True)

    end = time.monotonic() + a.lifetime
    held = []
    got = 0
    while time.monotonic() < end:
        ls.settimeout(max(0.01, min(1.0, end - time.monotonic())))
        try:
            conn, _ = ls.accept()
        except socket.timeout:
            continue
        if a.mode == "close":
            conn.close()
            continue
        if a.mode == "noread":
            held.append(conn)
            continue
        try:
            if serve_one(conn, a.out) is not None:
                got += 1
        except (OSError, EOFError) as e:
            print("fake_ingest: %s" % e, file=sys.stderr, flush=True)
        finally:
            conn.close()
        if a.count and got >= a.count:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
