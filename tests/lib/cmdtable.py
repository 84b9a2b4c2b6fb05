#!/usr/bin/env python3
"""The command list of docs/protocol.md comes from topod's command table.

    cmdtable.py TOPOD            prints the Markdown block for docs/protocol.md
    cmdtable.py TOPOD --write    rewrites the block in docs/protocol.md
    cmdtable.py TOPOD --check    TAP: the block is current, and every command
                                 has a ### section (and every section a command)

The block sits between <!-- commands:begin --> and <!-- commands:end -->.
"""
import os
import re
import subprocess
import sys

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "protocol.md")
BEGIN, END = "<!-- commands:begin -->", "<!-- commands:end -->"


def table(topod):
    out = subprocess.run([topod, "--commands"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, lo, hi, kind, usage, helptext = line.split("\t")
        rows.append((name, int(lo), int(hi), kind, usage, helptext))
    return rows


def block(rows):
    lines = [BEGIN, "",
             "| command | runs on | what it answers |", "| --- | --- | --- |"]
    for name, lo, hi, kind, usage, helptext in rows:
        where = {"heavy": "worker pool", "admin": "admin socket"}.get(kind, "event loop")
        lines.append("| `%s` | %s | %s |" % (usage, where, helptext))
    lines += ["", "(Generated from topod's command table by `tests/lib/cmdtable.py build/bin/topod --write`.)", "", END]
    return "\n".join(lines)


def main():
    topod, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    rows = table(topod)
    want = block(rows)
    doc = open(DOC).read()
    m = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), doc, re.S)
    if mode == "--write":
        if not m:
            sys.exit("no %s ... %s block in %s" % (BEGIN, END, DOC))
        open(DOC, "w").write(doc[:m.start()] + want + doc[m.end():])
        return 0
    if mode != "--check":
        print(want)
        return 0
    bad = 0

    def check(ok, what):
        nonlocal bad
        print("%s - %s" % ("ok" if ok else "not ok", what))
        bad += not ok

    check(m is not None and m.group(0) == want,
          "docs/protocol.md's command list equals topod's table (regenerate: tests/lib/cmdtable.py build/bin/topod --write)")
    heads = set()
    for h in re.findall(r"^### (.*)$", doc, re.M):
        heads.update(re.findall(r"`([a-z]+)", h))
    names = {r[0] for r in rows}
    for n in sorted(names):
        check(n in heads, "command %s has a section in docs/protocol.md" % n)
    for h in sorted(heads - names):
        check(False, "docs/protocol.md documents %s, which topod's table does not have" % h)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
