"""User-facing text cites the works topod follows by author and year
(docs/bibliography.md), never by the project's private shorthand "seed":
README.md, docs/, the man pages, the installed headers (what `make install`
puts in INCLUDEDIR), the pictures in docs/ (their text), every program's
--help and topoquery's help per command. A random-number seed (`--seed`, `random:SEED`, "seeded")
is not jargon and is allowed.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from topodtest import BIN, ROOT, check, done  # noqa: E402

JARGON = re.compile(r"\bseed(?:'s|s)?\b", re.I)
# a random-number seed, or a placeholder for one
ALLOWED = re.compile(r"((?i:random[^.\n]{0,40}\bseed|--seed|\bseed=|\bseeded\b|seed \(default|\bseed of\b|"
                     r"random:seed|fixed seed)|\bSEED\b)")


def offending(text):
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        if JARGON.search(line) and not ALLOWED.search(line):
            bad.append("%d: %s" % (n, line.strip()[:100]))
    return bad


files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + \
    sorted(glob.glob(os.path.join(ROOT, "man", "*.[0-9]")))
for f in files:
    if f.endswith("bibliography.md"):
        continue
    bad = offending(open(f, encoding="utf-8", errors="replace").read())
    check(not bad, "%s cites by author and year%s" % (os.path.relpath(f, ROOT),
                                                        ("; 'seed' at " + "; ".join(bad[:3])) if bad else ""))

# The headers `make install` installs, read from its rule (a header added
# there is checked without editing this test).
mk = open(os.path.join(ROOT, "Makefile")).read()
inst = re.search(r"install -m 644 ((?:\S+\.h\s+)+)\$\(DESTDIR\)\$\(INCLUDEDIR\)", mk)
headers = inst.group(1).split() if inst else []
check("libtii/tii.h" in headers, "the installed headers, from the Makefile: %s" % headers)
pics = sorted(glob.glob(os.path.join(ROOT, "docs", "*.svg")))
for f in [os.path.join(ROOT, h) for h in headers] + pics:
    text = open(f, encoding="utf-8", errors="replace").read()
    if f.endswith(".svg"):
        text = "\n".join(re.findall(r">([^<]+)<", text))  # what the picture shows
    bad = offending(text)
    check(not bad, "%s cites by author and year%s" % (os.path.relpath(f, ROOT),
                                                        ("; 'seed' at " + "; ".join(bad[:3])) if bad else ""))

helps = [["topod", "--help"], ["topoquery", "--help"], ["topo-snap", "--help"], ["topo-collect", "--help"],
         ["topo-routeopt", "--help"]]
r = subprocess.run([os.path.join(BIN, "topoquery"), "--help"], capture_output=True, text=True)
cmds = sorted(set(re.findall(r"^  ([a-z]+)\b", r.stdout + r.stderr, re.M)))
helps += [["topoquery", "help", c] for c in cmds]
bad_all = []
for h in helps:
    r = subprocess.run([os.path.join(BIN, h[0])] + h[1:], capture_output=True, text=True, timeout=30)
    bad = offending(r.stdout + r.stderr)
    if bad:
        bad_all.append("%s: %s" % (" ".join(h), bad[0]))
check(len(helps) > 10 and not bad_all, "%d help texts cite by author and year%s" % (
    len(helps), ("; " + "; ".join(bad_all[:3])) if bad_all else ""))
done()
