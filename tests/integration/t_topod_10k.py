#!/usr/bin/env python3
"""Job start: 10,000 clients connect to one topod at once (loopback only),
each asks one `hops` on the k=24 fabric, and every one gets its answer.

topod's defaults must allow it: it raises its descriptor limit and sizes
--max-conns from it, and its accept queue is long enough. Prints the time
from the first connect to the last answer. Bounded: gives up after 60 s.
"""
import errno
import os
import resource
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import Topod, check, done, note, tmpdir, parse_kv  # noqa: E402
from bigfab import k24  # noqa: E402

N = int(os.environ.get("T10K_CLIENTS", "10000"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < N + 200:
    print("skip - the descriptor hard limit (%d) is below %d clients" % (hard, N))
    sys.exit(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

d = tmpdir()
t = Topod("--load", k24(d))   # defaults only: no --max-conns
with t.conn() as c:
    n = int(parse_kv(c.ask("hosts")[3:])["lines"])
    hosts = [c.readline().split()[0] for _ in range(n)]
st = parse_kv(t.admin_ask("stats")[3:])
note("topod chose max_conns=%s" % st["max_conns"])
check(int(st["max_conns"]) >= N, "topod's default max-conns (%s) admits %d clients" % (st["max_conns"], N))

sel = selectors.DefaultSelector()
state = {}
t0 = time.monotonic()
for i in range(N):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    r = s.connect_ex(("127.0.0.1", t.port))
    if r not in (0, errno.EINPROGRESS):
        print("# connect %d: %s" % (i, os.strerror(r)))
        s.close()
        continue
    req = ("hops %s %s\n" % (hosts[i % n], hosts[(i * 7 + 1) % n])).encode()
    state[s] = [req, b""]
    sel.register(s, selectors.EVENT_WRITE)
answers = {}
last = t0
deadline = t0 + 60
while state and time.monotonic() < deadline:
    for key, ev in sel.select(timeout=1):
        s = key.fileobj
        req, buf = state[s]
        if ev & selectors.EVENT_WRITE:
            try:
                s.send(req)
            except OSError as e:
                answers[s.fileno()] = "send: %s" % e
                sel.unregister(s)
                del state[s]
                s.close()
                continue
            sel.modify(s, selectors.EVENT_READ)
            continue
        try:
            chunk = s.recv(4096)
        except OSError as e:
            chunk = b""
            buf = ("recv: %s" % e).encode()
        buf += chunk
        if b"\n" in buf or not chunk:
            answers[s.fileno()] = buf.split(b"\n")[0].decode(errors="replace")
            last = time.monotonic()
            sel.unregister(s)
            del state[s]
            s.close()
        else:
            state[s][1] = buf
elapsed = last - t0
ok = sum(1 for a in answers.values() if a.startswith("OK gen=") and "hops=" in a)
busy = sum(1 for a in answers.values() if a.startswith("ERR BUSY"))
note("%d clients: %d answered OK, %d ERR BUSY, %d other, %d unanswered; last answer %.2f s after the first connect"
     % (N, ok, busy, len(answers) - ok - busy, len(state), elapsed))
others = [a for a in answers.values() if not a.startswith("OK")][:3]
check(ok == N, "all %d concurrent clients get their answer (%d OK, examples of others: %r)" % (N, ok, others))
for s in list(state):
    s.close()
done()
