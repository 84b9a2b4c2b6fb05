#!/usr/bin/env python3
"""agsched.py - topocoll's Allgather by topod's allgather schedule
(TOPOCOLL_CHOICE=sched; docs/performance.md "Allgather schedules
in topod") in SMPI, against SMPI's Open MPI and MPICH selectors and
topocoll's ring in the fabric's order, and by prediction.

  python3 bench/coll/agsched.py OUT_DIR

ft2-mixed (bench/jobspeed's lab: ibsim + OpenSM + the plugin + topod), the
16-host contiguous job bench/coll/run.py times by default, and its hosts dealt
round-robin over the leaves (cyclic), one rank per host; per job and block
(64 KiB, 1 MiB) topod's `schedule agbest form=ranks bytes=B` in the file
form TOPOCOLL_ALLGATHER_SCHEDULE reads, and bench.c's Allgather under
smpirun with tests/lib/smpi.sh's settings (run.py's build and smpirun).
Prints a markdown table: T(MPI's own), T(ring), T(sched), their ratios,
SMPI over topod's prediction, T(sched) over the host-cable bound, and what
ran by prediction (9 = sched, coll.h's tc_variant).
"""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = sys.argv[1]
# bench/coll/run.py under another name: it imports bench/jobspeed/run.py as run
_sp = importlib.util.spec_from_file_location("collrun", os.path.join(ROOT, "bench", "coll", "run.py"))
R = importlib.util.module_from_spec(_sp)
_sp.loader.exec_module(R)
js = R.jobspeed
os.makedirs(OUT, exist_ok=True)
exe = R.build(OUT)
cfg = js.smpi_cfg()
spec = js.FABRICS["ft2-mixed"]
res = []
with js.Lab("ft2-mixed", spec, os.path.join(OUT, "lab")) as lab:
    leaves = js.leaves_of(lab.meta)
    for shape in ("contiguous", "cyclic"):
        hosts = js.shape_hosts("contiguous", 16, leaves, 1)
        if shape == "cyclic":
            hosts = R.dealt(hosts)
        w = os.path.join(OUT, shape)
        os.makedirs(w, exist_ok=True)
        platform, hostfile = os.path.join(w, "platform.xml"), os.path.join(w, "hosts")
        open(hostfile, "w").write("\n".join(hosts) + "\n")
        with open(platform, "w") as f:
            subprocess.run([js.TOPOQUERY, "-s", "127.0.0.1:%d" % lab.port, "simgrid"] + hosts, stdout=f, check=True)
        for B in (65536, 1048576):
            t = js.Topod(lab.port)
            head, lines = t.ask("schedule agbest form=ranks bytes=%d %s" % (B, " ".join(hosts)))
            t.close()
            sf = os.path.join(w, "agsched-%d.txt" % B)
            with open(sf, "w") as f:
                f.write("# %s\n" % head)
                for l in lines:
                    if l.startswith("STEP "):
                        f.write(" ".join(x for x in l.split()[6:] if ":" in x) + "\n")
            kv = dict(x.split("=", 1) for x in head.split()[1:] if "=" in x)
            print("%s %d: %s" % (shape, B, head), flush=True)
            for sel in ("ompi", "mpich"):
                row = dict(shape=shape, B=B, sel=sel, algo=kv.get("algo"), pred=float(kv["time_us"]),
                           ring_pred=float(kv["ring_time_us"]), bound=R.ag_bound(platform, hostfile, B) * 1e6)
                for way in ("model", "sched", "ring"):
                    env = dict(TOPOCOLL_TOPOLOGY=platform, TOPOCOLL_MODEL="smpi-" + sel,
                               TOPOCOLL_ALLGATHER_SCHEDULE=sf, TOPOCOLL_VERBOSE="1")
                    if way != "model":
                        env["TOPOCOLL_CHOICE"] = way
                    with open(os.path.join(w, "smpi-%d-%s-%s.log" % (B, sel, way)), "w") as logf:
                        got = R.smpirun(cfg + ["--cfg=smpi/coll-selector:" + sel] + js.shared_block_cfg(B * 16 + 64),
                                        env, platform, hostfile, 16, [exe, "allgather", str(B), "1"], logf, 1200)
                    g = [x for x in got if x["op"] == "allgather"]
                    if g:
                        row["native_" + way] = g[0]["native"] * 1e6
                        row[way] = g[0]["topo"] * 1e6
                        row["var_" + way] = g[0]["variant"]
                res.append(row)
                print(row, flush=True)
print("| job | block | MPI | topod's answer | T(MPI own) us | T(ring) us | T(sched) us | own/sched | ring/sched | SMPI/predicted | sched/bound | by prediction ran |")
for r in res:
    if "sched" not in r:
        print("| %s | %d | %s | failed |" % (r["shape"], r["B"], r["sel"]))
        continue
    s = r["sched"]
    print("| %s 16 | %s | %s | %s (%.0f us; ring in rank order %.0f) | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %s |" % (
        r["shape"], R.fmt_bytes(r["B"]), r["sel"], r["algo"], r["pred"], r["ring_pred"], r["native_sched"], r["ring"], s,
        r["native_sched"] / s, r["ring"] / s, s / r["pred"], s / r["bound"], r.get("var_model", "?")))
