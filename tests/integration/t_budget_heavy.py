#!/usr/bin/env python3
# test: serial - asserts a 64-host hopsmatrix within 100 ms while its schedules hold both workers
"""Issue 21 items 9 and 10 against the real topod on the k=24 fat tree
(3,456 hosts), loopback only, about a minute on 2 cores:

  9. eight concurrent 4,096-rank schedules (tacs1, form=hosts) on eight
     workers: topod's RSS stays within --max-request-memory (before: no
     bound; the same run with the budget off is printed for the figure);
     a request that could never fit is answered ERR TOOBIG with its figure.
 10. two 1,024-rank route schedules (~55 s each) hold both workers and two
     more wait: a 64-host hopsmatrix is answered within 100 ms (the light
     lane), and every schedule is answered ERR TIMEOUT at its deadline
     (--request-timeout 4): the running ones cancelled, the queued ones
     never run.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import Topod, check, done, note, parse_kv, read_reply, tmpdir  # noqa: E402
from bigfab import k24, rss_kib  # noqa: E402

d = tmpdir()
snap = k24(d)


def hosts_of(t):
    with t.conn() as c:
        n = int(parse_kv(c.ask("hosts")[3:])["lines"])
        return [c.readline().split()[0] for _ in range(n)]


def ask_all(t, reqs):
    """Sends each request on its own connection at once; returns
    [(head, seconds)] in request order, reading replies as they come."""
    out = [None] * len(reqs)

    def one(i):
        s = socket.create_connection(("127.0.0.1", t.port))
        t0 = time.time()
        s.sendall((reqs[i] + "\n").encode())
        head, _, _ = read_reply(s)
        out[i] = (head, time.time() - t0)
        s.close()

    ths = [threading.Thread(target=one, args=(i,)) for i in range(len(reqs))]
    for th in ths:
        th.start()
    return ths, out


def storm_of_schedules(budget):
    t = Topod("--load", snap, "-t", "8", "--max-request-memory", budget)
    hosts = hosts_of(t)
    time.sleep(0.3)
    base = rss_kib(t.p.pid)
    req = "schedule tacs1 form=hosts " + " ".join(h + "*4" for h in hosts[:1024])
    ths, out = ask_all(t, [req] * 8)
    peak, most = base, 0
    while any(th.is_alive() for th in ths):
        peak = max(peak, rss_kib(t.p.pid))
        st = parse_kv(t.admin_ask("stats")[3:])
        most = max(most, int(st["heavy_running"]))
        time.sleep(0.02)
    for th in ths:
        th.join()
    t.stop()
    return base, peak, most, out


# 9: before (no budget), then with 160 MiB (128 for heavy jobs: two at once)
base0, peak0, most0, out0 = storm_of_schedules("0")
note("budget off: RSS %d -> %d MiB, %d running at once" % (base0 >> 10, peak0 >> 10, most0))
base, peak, most, out = storm_of_schedules("160M")
ok = all(h.startswith("OK gen=") for h, _ in out)
check(ok and (peak - base) <= 160 * 1024 and most <= 2,
      "eight concurrent 4,096-rank tacs1 schedules, 8 workers, --max-request-memory 160M: all answered, RSS %d -> "
      "peak %d MiB (+%d, budget 160), at most %d running; budget off: +%d MiB, %d running"
      % (base >> 10, peak >> 10, (peak - base) >> 10, most, (peak0 - base0) >> 10, most0))

# 10: the light lane and deadlines
t = Topod("--load", snap, "-t", "2", "--request-timeout", "4", "--max-request-memory", "96M")
hosts = hosts_of(t)
big = t.ask("schedule xor " + " ".join(h + "*2" for h in hosts[:1024]))
check(big.startswith("ERR TOOBIG") and "88 MiB" in big and "64 MiB" in big,
      "a 2,048-rank schedule with its flows under --max-request-memory 96M (64 for one heavy request): %s" % big[:120])
route = "schedule route " + " ".join(hosts[:1024])
t0 = time.time()
ths, out = ask_all(t, [route] * 4)
time.sleep(0.5)
small = "hopsmatrix " + " ".join(hosts[:64])
lat = []
with t.conn() as c:
    for _ in range(20):
        s0 = time.perf_counter()
        r = c.ask(small)
        for _ in range(64):
            c.readline()
        lat.append((time.perf_counter() - s0) * 1000)
        assert r.startswith("OK"), r
st = parse_kv(t.admin_ask("stats")[3:])
check(max(lat) < 100 and int(st["heavy_running"]) >= 1 and int(st["heavy_queued"]) >= 2 and
      int(st["heavy_light_done"]) >= 20,
      "a 64-host hopsmatrix while 1,024-rank route schedules hold the workers (%s running, %s waiting, %s light done): worst of 20 "
      "%.1f ms on the light lane (was over 30 s)" % (st["heavy_running"], st["heavy_queued"], st["heavy_light_done"], max(lat)))
for th in ths:
    th.join()
el = time.time() - t0
heads = [h for h, _ in out]
for _ in range(100):  # the worker books a job after handing its reply over
    st = parse_kv(t.admin_ask("stats")[3:])
    if st["heavy_running"] == "0":
        break
    time.sleep(0.02)
nexp, ncan = int(st["heavy_expired"]), int(st["heavy_cancelled"])
check(all(h.startswith("ERR TIMEOUT") for h in heads) and el < 8 and nexp + ncan == 4 and ncan >= 1,
      "four 1,024-rank route schedules (~55 s each) with --request-timeout 4: all ERR TIMEOUT within %.1f s, "
      "%d cancelled running, %d expired queued: %s | %s" % (el, ncan, nexp, heads[0][:64], heads[-1][:64]))
check(t.ask("hops %s %s" % (hosts[0], hosts[3000])).startswith("OK") and
      parse_kv(t.admin_ask("stats")[3:])["heavy_reserved"] == "0",
      "afterwards: topod answers, nothing reserved")
t.stop()
done()
