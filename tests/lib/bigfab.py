"""The k=24 fat tree (3,456 hosts, 720 switches), or another k, as a snapshot
file, made once per test run by bench_build (tests/unit/testfab.h's analytic
d-mod-k LFTs)."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fattree(d, k):
    """bench_build's k-ary fat tree as a snapshot file in d."""
    path = os.path.join(d, "k%d.snap" % k)
    if not os.path.exists(path):
        subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), str(k), "64", path],
                       check=True, capture_output=True)
    return path


def k24(d):
    return fattree(d, 24)


def rss_kib(pid):
    """VmRSS of a process, KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
