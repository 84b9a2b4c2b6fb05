#!/usr/bin/env python3
"""Holds many incomplete HTTP requests open against a port on loopback.

    slowloris.py PORT N SECONDS [--trickle|--silent] [--addrs K] [--first F] [--reconnect]

N connections, from K source addresses (127.0.0.F .. 127.0.0.F+K-1, in
turn, F 2 unless given; the whole of 127/8 is loopback on Linux), each
sending the head of a request that never ends:
"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\nX-Slow: ", at once, or (--trickle)
one byte per connection per round, then a byte of the header's value
every round for ever, or (--silent) nothing at all. With --reconnect a
connection the server closes is opened again at once, as an attacker
would. Stops by itself after SECONDS and prints one line of counts:
    opened=N closed_by_server=C bytes=B refused=R
It connects to 127.0.0.1 only.
"""
import errno
import resource
import selectors
import socket
import sys
import time

HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "


def main():
    args = sys.argv[1:]
    port, n, seconds = int(args[0]), int(args[1]), float(args[2])
    trickle = "--trickle" in args
    silent = "--silent" in args
    reconnect = "--reconnect" in args
    k = int(args[args.index("--addrs") + 1]) if "--addrs" in args else 1
    first = int(args[args.index("--first") + 1]) if "--first" in args else 2
    if not 1 <= first <= first + k - 1 <= 254:
        sys.exit("--addrs, --first: addresses 127.0.0.1 to 127.0.0.254")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n + 64)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    sel = selectors.DefaultSelector()
    conns = {}  # socket -> bytes of HEAD sent
    stats = {"opened": 0, "closed": 0, "bytes": 0, "refused": 0}

    def open_one(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind(("127.0.0.%d" % (first + i % k), 0))
            s.connect_ex(("127.0.0.1", port))
        except OSError:
            s.close()
            stats["refused"] += 1
            return
        conns[s] = [0, i]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        stats["opened"] += 1

    def drop(s):
        i = conns.pop(s)[1]
        sel.unregister(s)
        s.close()
        stats["closed"] += 1
        if reconnect and time.time() < end:
            open_one(i)

    end = time.time() + seconds
    for i in range(n):
        open_one(i)
    next_round = time.time()
    while time.time() < end:
        for key, ev in sel.select(timeout=0.05):
            s = key.fileobj
            if s not in conns:
                continue
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    drop(s)
                    continue
            if ev & selectors.EVENT_WRITE and s in conns:
                # connected: the whole head at once, or its first byte
                st = conns[s]
                chunk = b"" if silent else HEAD[:1] if trickle else HEAD
                try:
                    st[0] += s.send(chunk) if chunk else 0
                    stats["bytes"] += len(chunk)
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.ENOTCONN):
                        drop(s)
                        continue
                sel.modify(s, selectors.EVENT_READ)
        if trickle and time.time() >= next_round:
            next_round = time.time() + 0.5
            for s, st in list(conns.items()):
                if not st[0]:
                    continue
                b = HEAD[st[0]:st[0] + 1] or b"z"
                try:
                    s.send(b)
                    st[0] += 1
                    stats["bytes"] += 1
                except OSError:
                    drop(s)
    print("opened=%d closed_by_server=%d bytes=%d refused=%d" % (stats["opened"], stats["closed"], stats["bytes"],
                                                                 stats["refused"]), flush=True)
    for s in list(conns):
        s.close()


if __name__ == "__main__":
    main()
