#!/usr/bin/env python3
"""Issue 38 item 2: every error code topod can send is in protocol.md's
table and in libtii's, and every analysis code maps to one of them.

Read from the sources, not from a list kept beside them:
  - the codes topod sends: the code argument of every query_error() and
    ingest_refuse() call and every "ERR CODE" literal in topod/*.c (the
    HTTP server's JSON errors are its own table: http.c, docs/metrics.md),
    and the codes qctx_route_code() returns for analysis codes;
  - protocol.md's "Errors" table (its first column);
  - libtii's map_err() table (libtii/request.c);
  - the analyses' enum an_err (analysis/an_err.h);
  - the codes the fake server of the tests sends (tests/lib/fake_topod.py).
Codes the table marks "ingest only" are answered to producers, which
libtii is not, so libtii need not know them.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from topodtest import ROOT, check, done  # noqa: E402

CODE = re.compile(r'"(?:ERR )?([A-Z][A-Z_]{2,})[" \\%]')


def calls(src, name):
    """The argument text of every call name(...), strings and nesting kept."""
    for m in re.finditer(r"\b%s\s*\(" % name, src):
        i, depth, out = m.end(), 1, []
        while i < len(src) and depth:
            ch = src[i]
            if ch == '"':
                j = i + 1
                while src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
                out.append(src[i:j + 1])
                i = j + 1
                continue
            depth += ch == "("
            depth -= ch == ")"
            out.append(ch)
            i += 1
        yield "".join(out)


def first_arg_codes(args):
    """Codes in a call's second argument (query_error(out, CODE, ...)):
    string literals before the first literal that is a format."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', args)
    return [p for p in parts if re.fullmatch(r"[A-Z][A-Z_]{2,}", p)]


sent = {}
for name in sorted(os.listdir(os.path.join(ROOT, "topod"))):
    if not name.endswith(".c") or name.startswith("http"):
        continue
    src = open(os.path.join(ROOT, "topod", name)).read()
    for fn in ("query_error", "ingest_refuse"):
        for a in calls(src, fn):
            for c in first_arg_codes(a):
                sent.setdefault(c, set()).add(name)
    for c in re.findall(r'"ERR ([A-Z][A-Z_]{2,})[ "\\%]', src):
        sent.setdefault(c, set()).add(name)
    for a in re.findall(r'snprintf\([^;]*"ERR %s[^;]*;', src):  # ERR %s with its codes as literals
        for c in re.findall(r'"([A-Z][A-Z_]{2,})"', a):
            sent.setdefault(c, set()).add(name)
src = open(os.path.join(ROOT, "topod", "query.c")).read()
m = re.search(r"const char \*qctx_route_code\(int err\)\n\{(.*?)\n\}", src, re.S)
route_map = dict(re.findall(r"case (AN_E_[A-Z_]+): return \"([A-Z_]+)\";", m.group(1))) if m else {}
default = re.search(r'default: return "([A-Z_]+)"', m.group(1)).group(1) if m else None
for c in list(route_map.values()) + [default]:
    sent.setdefault(c, set()).add("query.c (qctx_route_code)")
check(len(sent) >= 35 and {"USAGE", "NOROUTE", "HELD", "AUTH", "TIMEOUT", "NOLID"} <= set(sent),
      "the codes topod sends, read from its sources: %d (%s)" % (len(sent), " ".join(sorted(sent))))

doc = open(os.path.join(ROOT, "docs", "protocol.md")).read()
sec = doc.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
documented, ingest_only = set(), set()
for row in re.findall(r"^\| ([^|]+) \|([^\n]*)", sec, re.M):
    cs = set(re.findall(r"`([A-Z][A-Z_]+)`", row[0]))
    documented |= cs
    if "ingest only" in row[1]:
        ingest_only |= cs
missing = {c: sorted(f) for c, f in sent.items() if c not in documented}
check(len(documented) > 30 and not missing, "every code topod sends is in protocol.md's Errors table%s"
      % ("; missing: %s" % missing if missing else " (%d listed, %d ingest only)" % (len(documented), len(ingest_only))))
stale = documented - set(sent)
check(not stale, "every code in the table is one topod sends%s" % ("; never sent: %s" % sorted(stale) if stale else ""))

req = open(os.path.join(ROOT, "libtii", "request.c")).read()
m = re.search(r"static int map_err\(.*?\n\}", req, re.S)
known = set(re.findall(r'\{ "([A-Z_]+)", TII_E_[A-Z_]+, [01] \}', m.group(0))) if m else set()
lack = sorted(c for c in sent if c not in known and c not in ingest_only)
check(len(known) > 20 and not lack, "libtii maps every code a client can get%s" % ("; unknown to it: %s" % lack if lack
                                                                                  else " (%d)" % len(known)))
extra = sorted(known - set(sent) - {"UNKNOWN"})
check(not extra, "libtii knows no code topod does not send%s" % ("; extra: %s" % extra if extra else ""))

an = open(os.path.join(ROOT, "analysis", "an_err.h")).read()
an_codes = [c for c in re.findall(r"\b(AN_E_[A-Z_]+) = -\d+", an)]
unmapped = [c for c in an_codes if c not in route_map and c != "AN_E_CHECK"]
check(len(an_codes) >= 15 and not unmapped and default == "INTERNAL",
      "each of the %d analysis codes maps to one protocol code in qctx_route_code (AN_E_CHECK and the unknown: "
      "%s)%s" % (len(an_codes), default, "; unmapped: %s" % unmapped if unmapped else ""))
bad = sorted(c for c in route_map.values() if c not in documented)
check(not bad, "those protocol codes are all documented%s" % ("; not: %s" % bad if bad else ""))

fake = open(os.path.join(ROOT, "tests", "lib", "fake_topod.py")).read()
fcodes = set(re.findall(r'ERR ([A-Z][A-Z_]{2,}) ', fake))
# the fake's deliberate lies (hostile replies) use codes topod never sends
fbad = sorted(c for c in fcodes if c not in documented and c not in ("BOGUS", "WHATEVER"))
check(fcodes and not fbad, "the fake server's codes %s are topod's%s" % (sorted(fcodes), "; not: %s" % fbad if fbad
                                                                          else ""))
done()
