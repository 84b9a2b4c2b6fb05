#!/usr/bin/env python3
"""CONTRIBUTING.md's "Adding a command" is the recipe: the files it names
are the only ones a new command touches. This keeps it complete against the
code: every file or folder it names exists; the rows of topod/cmd.c, read
from the source, are exactly the commands `topod --commands` lists; every
row's handler is defined in a file the recipe names for handlers, every
heavy row's estimator in topod/estimate.c (and declared in estimate.h), and
every admin row's handler in topod/server_admin.c. docs/protocol.md's
sections are t_protocol_doc's; the estimators' figures t_budget_estimate's."""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import BIN, ROOT, check, done  # noqa: E402

recipe = open(os.path.join(ROOT, "CONTRIBUTING.md")).read()
m = re.search(r"^## Adding a command\n(.*?)^## ", recipe, re.S | re.M)
check(m is not None, "CONTRIBUTING.md has the section \"Adding a command\"")
section = m.group(1) if m else ""
named = [w for w in re.findall(r"`([^`\s]+)`", section) if "/" in w]
missing = [w for w in named if not glob.glob(os.path.join(ROOT, w))]
check(len(named) >= 15 and not missing, "the %d files and folders the recipe names exist%s"
      % (len(named), (": missing " + " ".join(missing)) if missing else ""))

HANDLER_HOMES = ["topod/*_cmd.c", "topod/query.c"]
for h in HANDLER_HOMES + ["topod/server_admin.c", "topod/estimate.c", "topod/estimate.h"]:
    check(h in named, "the recipe names %s" % h)

# the rows, from the source: { "name", lo, hi, FLAGS, answer, "usage", "help", estimate, admin, "reply" }
src = open(os.path.join(ROOT, "topod", "cmd.c")).read()
table = src[src.index("cmd_table[] = {"):src.index("const size_t cmd_count")]
rows = []
for r in re.findall(r'^\t\{ ("[a-z]+".*?)\},?\n', table, re.S | re.M):
    name = re.match(r'"([a-z]+)"', r).group(1)
    head = re.match(r'"[a-z]+",\s*(-?\d+),\s*(-?\d+),\s*([A-Z_| 0-9]+),\s*(\w+),', r)
    tail = re.search(r',\s*(\w+),\s*(\w+),\s*(?:NULL|(?:"[^"]*"\s*)+)$', r.strip())
    if not head or not tail:
        check(False, "row %s: read as { name, lo, hi, flags, answer, usage, help, estimate, admin, reply }" % name)
        continue
    rows.append((name, head.group(3), head.group(4), tail.group(1), tail.group(2)))
listed = [ln.split("\t")[0] for ln in subprocess.run([os.path.join(BIN, "topod"), "--commands"], check=True,
                                                     capture_output=True, text=True).stdout.splitlines()]
check([r[0] for r in rows] == listed, "the %d rows read from topod/cmd.c are the commands topod lists" % len(rows))

sources = {}
for f in glob.glob(os.path.join(ROOT, "topod", "*.c")):
    sources[os.path.relpath(f, ROOT)] = open(f).read()


def home(fn):
    """The topod file defining function fn."""
    pat = re.compile(r"^(?:void|int) %s\(" % re.escape(fn), re.M)
    return [f for f, t in sources.items() if pat.search(t)]


def in_homes(path, homes):
    return any(glob.fnmatch.fnmatch(path, h) for h in homes)


bad = []
for name, flags, answer, est, admin in rows:
    heavy, is_admin = "CMD_HEAVY" in flags, "CMD_ADMIN" in flags
    if is_admin:
        ok = answer == "NULL" and est == "NULL" and home(admin) == ["topod/server_admin.c"]
    else:
        where = home(answer)
        ok = len(where) == 1 and in_homes(where[0], HANDLER_HOMES) and admin == "NULL"
        if heavy:
            ok = ok and home(est) == ["topod/estimate.c"] and re.search(
                r"\b%s\b" % est, open(os.path.join(ROOT, "topod", "estimate.h")).read()) is not None
        else:
            ok = ok and est == "NULL"
    if not ok:
        bad.append(name)
check(rows and not bad, "every row's handler, estimator and admin handler live where the recipe says%s"
      % ((": not " + " ".join(bad)) if bad else " (%d rows)" % len(rows)))
done()
