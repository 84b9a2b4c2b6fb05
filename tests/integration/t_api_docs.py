#!/usr/bin/env python3
"""Every public libtii call (each TII_API function in libtii/tii.h, the
versioned entry points behind its #define redirects included) is described
in docs/libtii.md and in man/tii.3 (issue 38: three were in neither), and
every call those two name exists in tii.h."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, check, done  # noqa: E402

h = open(os.path.join(ROOT, "libtii", "tii.h")).read()
fns = sorted(set(re.findall(r"TII_API[^;(]*?\b(tii_[a-z0-9_]+)\s*\(", h)))
redirects = dict(re.findall(r"^#define (tii_[a-z0-9_]+) (tii_[a-z0-9_]+)$", h, re.M))
md = open(os.path.join(ROOT, "docs", "libtii.md")).read()
man = open(os.path.join(ROOT, "man", "tii.3")).read().replace("\\-", "-").replace("\\_", "_")
check(len(fns) > 70 and "tii_open" in fns, "tii.h declares %d public calls" % len(fns))
for name, text in (("docs/libtii.md", md), ("man/tii.3", man)):
    missing = [f for f in fns if not re.search(r"\b%s\b" % f, text)]
    check(not missing, "%s describes every public call%s" % (name, "; missing: %s" % missing if missing else ""))
    named = set(re.findall(r"\b(tii_[a-z][a-z0-9_]*)\s*\(", text))
    unknown = sorted(n for n in named if n not in fns and n not in redirects)
    check(not unknown, "%s names no call tii.h lacks%s" % (name, "; unknown: %s" % unknown if unknown else ""))
done()
