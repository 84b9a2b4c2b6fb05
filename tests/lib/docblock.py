"""docblock.py - a generated block in a document, between two markers.

cmdtable.py and countertable.py each keep one such block of
docs/protocol.md equal to what topod prints: `--write` regenerates it,
`--check` compares it (and whatever else the script checks, as TAP
lines through Tap), no argument prints it.
"""
import re
import sys


def handle(path, begin, end, want, mode):
    """The block's match in path (None when the markers are missing) and
    the document, or exits: after writing the block (--write) or printing
    what it should hold (no mode)."""
    doc = open(path).read()
    m = re.search(re.escape(begin) + r".*?" + re.escape(end), doc, re.S)
    if mode == "--write":
        if not m:
            sys.exit("no %s ... %s block in %s" % (begin, end, path))
        open(path, "w").write(doc[:m.start()] + want + doc[m.end():])
        sys.exit(0)
    if mode != "--check":
        print(want)
        sys.exit(0)
    return m, doc


class Tap:
    """ok / not ok lines, and the exit status they make."""

    def __init__(self):
        self.bad = 0

    def check(self, ok, what):
        print("%s - %s" % ("ok" if ok else "not ok", what))
        self.bad += not ok

    def status(self):
        return 1 if self.bad else 0
