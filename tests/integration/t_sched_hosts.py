#!/usr/bin/env python3
"""`schedule form=hosts` through libtii on a real topod (no lab): a k=12 fat
tree snapshot (bench_build's d-mod-k LFTs, 1,458 hosts) delivered with
topo-snap, then t_sched_hosts_check.c (built here against libtii.a, and
with libtii's sources under ASan/UBSan for the smaller cases):

- 256 hosts x 16 ranks (4,096 ranks), tacs1 and xor: libtii's default
  host-level reply expands to a valid all-to-all (every ordered rank pair
  once, per-step counts as topod's, no rank twice in a step unless multi);
  the reply is under 1 MB (the rank-level one was 159 MB), and the
  rank-level form is refused with TOOBIG above 2,048 ranks;
- 128 hosts x 16 ranks (2,048, the largest rank-level reply) tacs1, and
  smaller uneven jobs for every algorithm but OPT: the host-level reply
  expands to exactly the rank-level reply (steps, flows in order, figures,
  predicted times);
- topod refuses TACS on more than 1,024 hosts with TOOBIG;
- the allgathers (kPrefix, kShift, both rings, agbest's answer): the same,
  their ring_time and variants included; kShift and the ring in the
  fabric's order (their ORDER line) at 256 x 16 expand to valid allgathers.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topodtest as tt  # noqa: E402
from topodtest import ROOT, Topod, check, done, note, send_snapshot  # noqa: E402

CC = os.environ.get("CC", "cc")
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
          "-I" + os.path.join(ROOT, "libtii"), "-I" + os.path.join(ROOT, "common")]
SRC = os.path.join(ROOT, "tests", "integration", "t_sched_hosts_check.c")

d = tt.tmpdir("t_sched_hosts-")
snap = os.path.join(d, "k18.snap")
subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "18", "1458", snap], check=True,
               capture_output=True)
t = Topod(d=d)
rc, out = send_snapshot("sink=unix:" + t.ingest, snap)
check(rc == 0 and t.wait_generation(1), "k=18 snapshot delivered (%s)" % out)
server = "127.0.0.1:%d" % t.port

plain = os.path.join(d, "check")
r = subprocess.run([CC] + CFLAGS + ["-O2", "-o", plain, SRC, os.path.join(ROOT, "build", "lib", "libtii.a"),
                    "-pthread"], capture_output=True, text=True)
check(r.returncode == 0 and not r.stderr.strip(), "the check program builds against libtii.a, no warnings")
asan = os.path.join(d, "check_asan")
libsrc = sorted(os.path.join(ROOT, "libtii", f) for f in os.listdir(os.path.join(ROOT, "libtii")) if f.endswith(".c"))
r2 = subprocess.run([CC] + CFLAGS + ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                                     "-fno-sanitize-recover=all", "-o", asan, SRC] + libsrc + ["-pthread"],
                    capture_output=True, text=True)
check(r2.returncode == 0 and not r2.stderr.strip(), "libtii + the check program build under ASan/UBSan")
if r.returncode or r2.returncode:
    note(r.stderr + r2.stderr)
    done()


def run(prog, *args):
    p = subprocess.run([prog, server] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
    for line in p.stdout.splitlines():
        if line.startswith("ok") or line.startswith("not ok"):
            print(line)
    if p.returncode or p.stderr.strip():
        check(False, "%s %s exits 0 (%d: %s)" % (os.path.basename(prog), " ".join(map(str, args)), p.returncode,
                                                  (p.stdout + p.stderr)[-400:]))
    return p


# 256 x 16: valid all-to-alls from the host-level reply, and its size.
for algo in ("tacs1", "xor"):
    run(plain, 256, 16, algo, "valid")
job = " ".join("h%04d*16" % h for h in range(256))
for algo, most in (("tacs1", 1 << 20), ("xor", 200 << 10)):
    with t.conn() as c:
        c.send(("schedule %s form=hosts %s\n" % (algo, job)).encode())
        head = c.readline()
        kv = tt.parse_kv(head[3:]) if head.startswith("OK ") else {}
        body = [c.readline() for _ in range(int(kv.get("lines", "0")))]
    size = len(head) + sum(len(l) for l in body)
    check(kv.get("form") == "hosts" and kv.get("ranks") == "4096" and kv.get("hosts") == "256" and size < most,
          "256 x 16 %s form=hosts: %d bytes of reply (< %d; the rank form was 159 MB), %s steps, %s host steps"
          % (algo, size, most, kv.get("steps"), kv.get("hsteps")))
p = run(plain, 256, 16, "tacs1", "ranks")
check("ask form=hosts" in p.stdout,
      "the rank-level form of 4,096 ranks is refused: %s" % p.stdout.strip()[:160])
with t.conn() as c:
    c.send(("schedule tacs1 %s\n" % " ".join("h%04d" % h for h in range(1030))).encode())
    head = c.readline()
check(head.startswith("ERR TOOBIG") and "1030 hosts" in head,
      "TACS on more than 1,024 hosts is refused before it is built: %s" % head.strip()[:120])

# Host-level == rank-level where the rank form is allowed.
run(plain, 128, 16, "tacs1", "equal")
for algo in ("xor", "tacs1", "tacs2", "allgather", "kshift", "agring", "ring", "agbest"):
    for hosts, rph in ((7, 3), (24, 5), (16, 4)):
        run(asan, hosts, rph, algo, "equal")
# The allgathers as asked (fallback=0: kShift is often predicted slower than
# the ring and answered by it), and at 256 x 16: the host-level reply (with
# its ORDER line) expands to a valid allgather.
for algo in ("allgather", "kshift", "agring"):
    for hosts, rph in ((7, 3), (24, 5), (16, 4)):
        run(asan, hosts, rph, algo, "equal0")
for algo in ("agring", "kshift"):
    run(plain, 256, 16, algo, "valid0")
t.stop()
done()
