#!/usr/bin/env python3
"""The docs of topod's counters come from its counter tables (topod/counters.c).

    countertable.py TOPOD            prints the `stats` block for docs/protocol.md
    countertable.py TOPOD --write    rewrites that block in docs/protocol.md
    countertable.py TOPOD --check    TAP: the tables are consistent; docs/metrics.md
                                     has a row for every family, with its type,
                                     labels and HELP text (the row's text starts
                                     with it; backticks aside) and no row for a
                                     family topod lacks; protocol.md's `stats`
                                     section holds the current block

The block sits between <!-- stats:begin --> and <!-- stats:end -->.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docblock  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PROTOCOL = os.path.join(ROOT, "docs", "protocol.md")
METRICS = os.path.join(ROOT, "docs", "metrics.md")
BEGIN, END = "<!-- stats:begin -->", "<!-- stats:end -->"


def tables(topod):
    out = subprocess.run([topod, "--counters"], check=True, capture_output=True, text=True).stdout
    families, counters = [], []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "family":
            families.append(dict(name=f[1], type=f[2], labels=[] if f[3] == "-" else f[3].split(), help=f[4]))
        else:
            counters.append(dict(key=f[1], family=f[2], value=f[3], kind=f[4], help=f[5]))
    return families, counters


def block(families, counters):
    helps = {f["name"]: f["help"] for f in families}
    labels = {f["name"]: f["labels"] for f in families}
    lines = [BEGIN, "", "| key | what | on /metrics |", "| --- | --- | --- |"]
    for c in counters:
        if c["key"] == "-":
            continue
        what = c["help"] if c["help"] != "-" else helps.get(c["family"], "")
        metric = ""
        if c["family"] != "-":
            label = c["value"]
            metric = "`%s`" % c["family"] if label in ("-", "plane") else \
                "`%s{%s=\"%s\"}`" % (c["family"], " ".join(labels.get(c["family"], [])), label)
            if label == "plane":
                metric += " (per plane)"
        lines.append("| `%s` | %s | %s |" % (c["key"], what, metric))
    lines += ["", "(Generated from topod's counter table by `tests/lib/countertable.py build/bin/topod --write`.)",
              "", END]
    return "\n".join(lines)


def doc_rows():
    """docs/metrics.md's table rows: name -> (type, labels, text)."""
    rows = {}
    for line in open(METRICS):
        m = re.match(r"^\| `(topod_[a-z_]+)` \| (\w+) \|(.*?)\| (.*) \|$", line.rstrip("\n"))
        if m:
            rows[m.group(1)] = (m.group(2), re.findall(r"`([a-z_]+)`", m.group(3)), m.group(4))
    return rows


def main():
    topod, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    families, counters = tables(topod)
    want = block(families, counters)
    m, doc = docblock.handle(PROTOCOL, BEGIN, END, want, mode)
    tap = docblock.Tap()
    check = tap.check

    # the tables themselves: what topod's C cannot check at compile time
    byname = {f["name"]: f for f in families}
    for c in counters:
        f = byname.get(c["family"])
        if c["family"] == "-":
            continue
        check(f is not None, "counter %s feeds family %s, which the family table has" % (c["key"], c["family"]))
        check(c["kind"] in ("uns", "int", "u64"), "counter %s on /metrics is an integer (%s)" % (c["key"], c["kind"]))
    for f in families:
        fed = [c for c in counters if c["family"] == f["name"]]
        values = sorted({c["value"] for c in fed} - {"-", "plane"})
        if values:
            check(len(f["labels"]) == 1, "family %s: its counters' label values have one label name" % f["name"])
    keys = [c["key"] for c in counters if c["key"] != "-"]
    check(len(keys) == len(set(keys)), "every stats key is one counter's")

    # docs/metrics.md
    rows = doc_rows()
    plain = lambda s: s.replace("`", "")
    for f in families:
        r = rows.get(f["name"])
        check(r is not None, "docs/metrics.md has a row for %s" % f["name"])
        if r is None:
            continue
        check(r[0] == f["type"], "%s: its type in docs/metrics.md is %s (%s)" % (f["name"], f["type"], r[0]))
        check(r[1] == f["labels"], "%s: its labels in docs/metrics.md are %s (%s)"
              % (f["name"], " ".join(f["labels"]) or "none", " ".join(r[1]) or "none"))
        check(plain(r[2]).startswith(plain(f["help"])),
              "%s: its text in docs/metrics.md starts with its HELP \"%s\" (has \"%s\")"
              % (f["name"], f["help"], r[2][:len(f["help"]) + 20]))
    for name in sorted(set(rows) - set(byname)):
        check(False, "docs/metrics.md documents %s, which topod's family table does not have" % name)

    # docs/protocol.md's stats section
    sec = re.search(r"^### `stats`\n(.*?)(?=^### )", doc, re.S | re.M)
    check(m is not None and m.group(0) == want,
          "docs/protocol.md's stats keys equal topod's table (regenerate: tests/lib/countertable.py "
          "build/bin/topod --write)")
    check(sec is not None and m is not None and want in sec.group(1),
          "the stats keys are in docs/protocol.md's `stats` section")
    return tap.status()


if __name__ == "__main__":
    sys.exit(main())
