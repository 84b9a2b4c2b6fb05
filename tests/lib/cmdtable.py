#!/usr/bin/env python3
"""The command list of docs/protocol.md comes from topod's command table.

    cmdtable.py TOPOD            prints the Markdown block for docs/protocol.md
    cmdtable.py TOPOD --write    rewrites the block in docs/protocol.md
    cmdtable.py TOPOD --check    TAP: the block is current, every command has
                                 a ### section (and every section a command),
                                 and its section names every key of the
                                 reply's head the table describes

The block sits between <!-- commands:begin --> and <!-- commands:end -->.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docblock  # noqa: E402

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "protocol.md")
BEGIN, END = "<!-- commands:begin -->", "<!-- commands:end -->"


def table(topod):
    out = subprocess.run([topod, "--commands"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, lo, hi, kind, usage, helptext, reply = line.split("\t")
        rows.append((name, int(lo), int(hi), kind, usage, helptext, reply))
    return rows


def block(rows):
    lines = [BEGIN, "",
             "| command | runs on | what it answers |", "| --- | --- | --- |"]
    for name, lo, hi, kind, usage, helptext, reply in rows:
        where = {"heavy": "worker pool", "admin": "admin socket"}.get(kind, "event loop")
        lines.append("| `%s` | %s | %s |" % (usage, where, helptext))
    lines += ["", "(Generated from topod's command table by `tests/lib/cmdtable.py build/bin/topod --write`.)", "", END]
    return "\n".join(lines)


def main():
    topod, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    rows = table(topod)
    want = block(rows)
    m, doc = docblock.handle(DOC, BEGIN, END, want, mode)
    tap = docblock.Tap()
    check = tap.check

    check(m is not None and m.group(0) == want,
          "docs/protocol.md's command list equals topod's table (regenerate: tests/lib/cmdtable.py build/bin/topod --write)")
    heads, text = set(), {}
    for sec in re.split(r"^### ", doc, flags=re.M)[1:]:
        for n in re.findall(r"`([a-z]+)", sec.split("\n", 1)[0]):
            heads.add(n)
            text[n] = text.get(n, "") + sec
    names = {r[0] for r in rows}
    for n in sorted(names):
        check(n in heads, "command %s has a section in docs/protocol.md" % n)
    # the reply's head as the table describes it: every key in the section
    for name, lo, hi, kind, usage, helptext, reply in rows:
        keys = [k.rstrip("?") for k in reply.split()] if reply != "-" else []
        missing = [k for k in keys if k + "=" not in text.get(name, "")]
        check(not missing, "%s: the %d keys of its reply's head are in its section%s"
              % (name, len(keys), (": not " + " ".join(missing)) if missing else ""))
    for h in sorted(heads - names):
        check(False, "docs/protocol.md documents %s, which topod's table does not have" % h)
    return tap.status()


if __name__ == "__main__":
    sys.exit(main())
