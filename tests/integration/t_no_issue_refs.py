#!/usr/bin/env python3
"""Source comments cite the documentation, or say why in plain words, never
the project's internal issue numbers ("(issue 27)", "issue 34 item 3"):
an issue number tells a reader of the code nothing. Every .c and .h file
of the product (topod/, libtii/, clients/, analysis/, snapshot/,
osm_plugin/, common/, profiler/, coll/, bench/) is read; only its comments
are checked. An external tracker cited with '#' ("Open MPI issue #1293")
is allowed. The benchmarks' scripts (bench/**/*.py, *.sh: their comments
and the help they print) and the man pages are read whole: a user reads
them.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, check, done  # noqa: E402

DIRS = ["topod", "libtii", "clients", "analysis", "snapshot", "osm_plugin", "common", "profiler", "coll", "bench"]
# "issue 27", "Issue 27's", "issues 19 and 27", "issue\n * 34" (wrapped);
# not "issue #1293" (an external tracker's number).
CITE = re.compile(r"\bissues?(?:[ \t]|\n[ \t]*(?:\*|//)?)+(?:no\.?\s*)?\d", re.I)


def comments(text):
    """(line, text) of every comment of C source text; strings and
    character constants skipped."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((line, text[i:j]))
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, min(j + 1, n))
            i = j + 1
        else:
            i += 1
    return out


def citations(text):
    """file-relative "LINE: excerpt" of every comment citing an issue number."""
    bad = []
    for line, com in comments(text):
        for m in CITE.finditer(com):
            at = line + com.count("\n", 0, m.start())
            bad.append("%d: %s" % (at, " ".join(com[max(0, m.start() - 30):m.end() + 20].split())))
    return bad


# the rule itself, so that a broken pattern cannot pass everything
samples = {
    "/* hosts balanced (issue 27) */": 1,
    "/* appended (issue 34, item 3): what */": 1,
    "// Issue 27's fields\n": 1,
    "/* the promise (see the\n * issue\n * 34 notes) */": 1,
    "/* issues 19 and 27 */": 1,
    "/* what ompi issue 1293 asks for */": 1,
    "/* what Open MPI issue #1293 asks for */": 0,
    "/* an issue with the 2 cables */": 0,
    'puts("issue 27"); /* a string, not a comment */': 0,
    "/* docs/protocol.md, `pick trade` */ int issue = 3;": 0,
}
wrong = [s for s, want in samples.items() if (len(citations(s)) > 0) != (want > 0)]
check(not wrong, "the rule flags issue numbers in comments and nothing else%s" % (
    "; wrong on: %r" % wrong if wrong else ""))
found = citations("int a; /* one */\n\n/* x\n * (issue 9) */\n")
check(found[:1] == ["4: /* x * (issue 9) */"], "a citation is reported at its own line: %s" % found)

total = 0
for d in DIRS:
    files = []
    for base, subdirs, names in os.walk(os.path.join(ROOT, d)):
        subdirs[:] = sorted(s for s in subdirs if s != "build")
        files += [os.path.join(base, f) for f in sorted(names) if f.endswith((".c", ".h"))]
    bad = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            bad += ["%s:%s" % (os.path.relpath(f, ROOT), b) for b in citations(fh.read())]
    total += len(files)
    check(files and not bad, "%s/: %d .c/.h files, no comment cites an issue number%s" % (
        d, len(files), ("; " + "; ".join(bad[:10]) + ("; ..." if len(bad) > 10 else "")) if bad else ""))
check(total > 100, "%d source files read" % total)


def text_citations(text):
    """file-relative "LINE: excerpt" of every citation anywhere in text."""
    return ["%d: %s" % (text.count("\n", 0, m.start()) + 1, " ".join(text[max(0, m.start() - 30):m.end() + 20].split()))
            for m in CITE.finditer(text)]


check(text_citations("a\nsee issue 34 item 4\n") == ["2: a see issue 34 item 4"] and not text_citations("issue #7"),
      "the whole-text rule flags a citation at its line")
for d, ends in (("bench", (".py", ".sh")), ("man", (".1", ".3", ".5", ".7", ".8"))):
    files, bad = [], []
    for base, subdirs, names in os.walk(os.path.join(ROOT, d)):
        subdirs[:] = sorted(s for s in subdirs if s != "build")
        files += [os.path.join(base, f) for f in sorted(names) if f.endswith(ends)]
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            bad += ["%s:%s" % (os.path.relpath(f, ROOT), b) for b in text_citations(fh.read())]
    check(files and not bad, "%s/: %d %s files, none cites an issue number%s" % (
        d, len(files), "/".join(ends), ("; " + "; ".join(bad[:10])) if bad else ""))
done()
