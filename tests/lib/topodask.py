#!/usr/bin/env python3
"""topodask.py PORT REQUEST [REQUEST ...]

Sends the requests, in order, on one connection to the topod on
127.0.0.1:PORT (so that `plane NAME` applies to those after it) and prints
the last reply whole: its head line and the lines= it announces. For shell
tests; exit 1 if the connection fails.
"""
import socket
import sys


def ask_all(port, reqs):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        f = s.makefile("rb")
        out = []
        for r in reqs:
            s.sendall((r + "\n").encode())
            head = f.readline().decode().rstrip("\n")
            n = 0
            for w in head.split():
                if w.startswith("lines="):
                    n = int(w[6:])
            out = [head] + [f.readline().decode().rstrip("\n") for _ in range(n)]
        f.close()
        return out


if __name__ == "__main__":
    try:
        print("\n".join(ask_all(int(sys.argv[1]), sys.argv[2:])))
    except OSError as e:
        print("topodask: %s" % e, file=sys.stderr)
        sys.exit(1)
