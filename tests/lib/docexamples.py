"""The command examples of README.md, docs/*.md and man/*.[0-9], as a user
would copy them into a shell (tests/integration/t_doc_examples.sh).

An example is a line of a fenced code block (Markdown) or an .EX block
(man) that starts with one of our client programs or with `echo ... | nc`
to topod; in a block where some lines start with "$ ", only those are
commands (the others are their output). A trailing backslash joins the next
line. Comments after "  #" are kept: bash ignores them.

  python3 docexamples.py list ROOT          one JSON object per example
  python3 docexamples.py run ROOT WORKDIR   runs them (TAP lines)

NOT_RUN lists the examples that cannot run on a lab fabric, with the
reason; the runner fails when one of them is no longer in the docs (so the
list cannot go stale) and runs every other example, expecting exit 0.
"""
import glob
import json
import os
import re
import subprocess
import sys

PROGRAMS = re.compile(r"^(topoquery|topo-snap|topo-routeopt|echo [^|]*\|\s*nc)\b")

# substring of the command -> why it is not run here
NOT_RUN = {
    "$(scontrol show hostnames $SLURM_NODELIST)": "needs a Slurm job's environment (t_slurm.sh runs Slurm)",
    'pick trade $(echo "$alloc" | wc -w) $alloc $idle': "needs a Slurm job's allocation and sinfo (t_pick_balance.sh "
                                                        "runs pick trade on a lab fabric)",
    'diff "2026-11-22 02:00" "2026-11-22 03:00"': "times of the guide's cluster, not of a lab started now",
    "diff G1 G2": "G1 and G2 stand for two generations topoquery history lists",
    "profile topoprof.json [other.json]": "a synopsis, not an example",
    "topo-snap info|nodes|links|lfts FILE": "a synopsis, not an example",
    "topo-snap diff A B": "a synopsis, not an example",
    "topo-snap send sink=unix:/run/topod/ingest.sock FILE": "a synopsis, not an example",
    "topo-snap from-text ibnetdiscover.out ibroute.out out.snap": "needs infiniband-diags dumps (t_fabrics.sh)",
    "topoquery: depth: cannot connect": "an error message, not a command",
}


def man_lines(path):
    ex = False
    for i, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        if line.startswith(".EX"):
            ex = True
            yield i, None
            continue
        if line.startswith(".EE"):
            ex = False
            yield i, None
            continue
        if ex:
            # roff escapes a user types without: \- is -, \(dq is "
            yield i, line.rstrip("\n").replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\")


def md_lines(path):
    inb = False
    for i, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            inb = not inb
            yield i, None
            continue
        if inb:
            yield i, line.rstrip("\n")


def blocks(path, lines):
    """Lists of (line number, text) per code block."""
    cur = None
    for i, text in lines(path):
        if text is None:
            if cur:
                yield cur
            cur = [] if cur is None else None
            continue
        if cur is not None:
            cur.append((i, text))


def examples(root):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    mans = sorted(glob.glob(os.path.join(root, "man", "*.[0-9]")))
    out = []
    for path in files + mans:
        for blk in blocks(path, man_lines if path in mans else md_lines):
            prompted = any(t.startswith("$ ") for _, t in blk)
            k = 0
            while k < len(blk):
                i, t = blk[k]
                k += 1
                if prompted:
                    if not t.startswith("$ "):
                        continue
                    t = t[2:]
                t = t.strip()
                while t.endswith("\\") and k < len(blk):
                    t = t[:-1] + " " + blk[k][1].strip()
                    k += 1
                if PROGRAMS.match(t):
                    out.append({"file": os.path.relpath(path, root), "line": i, "cmd": t})
    return out


def main():
    mode, root = sys.argv[1], sys.argv[2]
    ex = examples(root)
    if mode == "list":
        for e in ex:
            print(json.dumps(e))
        return 0
    work = sys.argv[3]
    failed = 0
    for key, why in NOT_RUN.items():
        if not any(key in e["cmd"] for e in ex):
            print("not ok - NOT_RUN entry %r matches no documented example any more" % key)
            failed += 1
    ran = 0
    for e in ex:
        where = "%s:%d" % (e["file"], e["line"])
        skip = [why for key, why in NOT_RUN.items() if key in e["cmd"]]
        if skip:
            print("# not run: %s: %s (%s)" % (where, e["cmd"], skip[0]))
            continue
        r = subprocess.run(["bash", "-c", e["cmd"]], cwd=work, capture_output=True, text=True, timeout=120)
        ran += 1
        ok = r.returncode == 0 and not r.stderr.strip()
        print("%s - %s runs as written: %s" % ("ok" if ok else "not ok", where, e["cmd"][:100]))
        if not ok:
            failed += 1
            print("# exit %d; stderr: %s; stdout: %s" % (r.returncode, r.stderr.strip()[:300], r.stdout[:200]))
    print("%s - %d documented examples ran (of %d found)" % ("ok" if ran >= 20 else "not ok", ran, len(ex)))
    return 1 if failed or ran < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
