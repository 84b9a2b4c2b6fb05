#!/usr/bin/env python3
"""`delaymatrix` on the real topod with the 2sw4hca fixtures (4x SDR cables:
8 Gb/s of data, 1e9 B/s): exact nanoseconds, -1 where a route fails, the
diagonal, the default size, and bad `bytes=` refused with ERR USAGE while the
connection keeps serving."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def table(c, line):
    head = c.ask(line)
    if not head.startswith("OK"):
        return head, []
    n = int(tt.parse_kv(head[3:])["lines"])
    return head, [c.readline().split() for _ in range(n)]


for lfts, broken in (("2sw4hca.lfts", False), ("2sw4hca-unreach.lfts", True)):
    td = tt.Topod("--topology", os.path.join(FIX, "2sw4hca.topo"), "--lfts", os.path.join(FIX, lfts),
                  ingest=False, admin=False, d=tt.tmpdir("t_delay_topod-"))
    with td.conn() as c:
        head, rows = table(c, "delaymatrix bytes=1000000 Hca1 Hca3 Hca2 Hca4")
        kv = tt.parse_kv(head[3:]) if head.startswith("OK") else {}
        tt.check(kv.get("n") == "4" and kv.get("bytes") == "1000000" and kv.get("unit") == "ns" and len(rows) == 4,
                 "%s: OK n=4 bytes=1000000 unit=ns and 4 rows: %s" % (lfts, head))
        if not broken:
            # one leaf: 1 switch, 2 cables = 300 ns; across: 2 switches, 3 cables = 500 ns;
            # 1e6 B at 1e9 B/s = 1,000,000 ns
            tt.check(rows and rows[0] == ["0", "1000300", "1000500", "1000500"] and rows[3][3] == "0",
                     "exact ns: leaf-mates 1,000,300, across the two switches 1,000,500: %s" % rows[:1])
        else:
            tt.check(rows and rows[0][3] == "-1" and rows[3][3] == "0" and rows[0][1] == "1000300",
                     "an unreachable host: -1 to it, 0 on its diagonal, the other pairs timed: %s" % rows)
        head, rows = table(c, "delaymatrix Hca1 Hca3")
        tt.check(" bytes=1048576 " in head and rows and rows[0][1] == str(300 + 1048576),
                 "without bytes=: 1 MiB (%s, %s)" % (head, rows[:1]))
        head, rows = table(c, "delaymatrix bytes=0 Hca1 Hca1 Hca2")
        _, hops = table(c, "hopsmatrix Hca1 Hca1 Hca2")
        tt.check(rows and rows[0] == ["0", "0", "500"] and rows[1] == ["0", "0", "500"] and
                 hops and hops[0] == ["0", "0", "2"],
                 "bytes=0: latencies alone; a repeated host is the same host: 0 ns, as hopsmatrix's "
                 "0 hops: %s, hops %s" % (rows, hops))
        for bad in ("bytes=", "bytes=x1", "bytes=-1", "bytes=9007199254740993", "bytes=1e6"):
            r = c.ask("delaymatrix %s Hca1 Hca2" % bad)
            tt.check(r.startswith("ERR USAGE"), "%s refused: %s" % (bad, r))
        r = c.ask("delaymatrix bytes=10")
        tt.check(r.startswith("ERR USAGE"), "no hosts: %s" % r)
        r = c.ask("delaymatrix Hca1 nosuch")
        tt.check(r.startswith("ERR NOTFOUND"), "an unknown host: %s" % r)
        tt.check(c.ask("ping") == "OK pong", "the connection still serves")
    td.stop()
tt.done()
