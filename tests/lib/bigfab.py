"""The k=24 fat tree (3,456 hosts, 720 switches) as a snapshot file, made once
per test run by bench_build (tests/unit/testfab.h's analytic d-mod-k LFTs)."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def k24(d):
    path = os.path.join(d, "k24.snap")
    if not os.path.exists(path):
        subprocess.run([os.path.join(ROOT, "build", "bench", "bench_build"), "24", "1024", path],
                       check=True, capture_output=True)
    return path


def rss_kib(pid):
    """VmRSS of a process, KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
