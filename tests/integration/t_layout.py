#!/usr/bin/env python3
"""t_layout.py - the house's layout holds (issue 18; analysis/README.md).

  - analysis/ is a library: it includes only its own headers, common/ and
    snapshot/ (never topod/, libevent or the worker pool), holds no mutable
    file-scope state, does no I/O, and libtopoanalysis.a needs no symbol
    that only topod's objects define;
  - every analysis/*.c is described in analysis/README.md;
  - topod/ defines no route, hierarchy, load, schedule, placement or
    sharing function (those prefixes belong to the library);
  - no function in the project is over 150 lines outside tests/, none in
    analysis/ over 120.

Each check prints what broke, so a failure names the file and line.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.chdir(ROOT)
failed = 0


def check(ok, what, detail=""):
    global failed
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failed += 1
        for line in detail.splitlines()[:20]:
            print("#   " + line)


def tracked(pattern_dirs, exts=(".c", ".h")):
    out = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if f.endswith(exts) and any(f.startswith(d) for d in pattern_dirs)]


ANALYSIS = sorted(f for f in os.listdir("analysis") if f.endswith((".c", ".h")))
ALLOWED_DIRS = ["analysis", "common", "snapshot"]

# 1. includes
bad = []
for f in ANALYSIS:
    for n, line in enumerate(open(os.path.join("analysis", f)), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == '"':
            if not any(os.path.exists(os.path.join(d, name)) for d in ALLOWED_DIRS):
                bad.append(f"analysis/{f}:{n}: {name} is not in analysis/, common/ or snapshot/")
        elif name.startswith(("event2/", "event.h", "evhttp")):
            bad.append(f"analysis/{f}:{n}: <{name}>: no libevent in the library")
check(not bad, "analysis/ includes only its own, common/ and snapshot/ headers", "\n".join(bad))

# 2. no mutable file-scope state, no I/O


def mutable_decl(code):
    """A file-scope object definition that can change: not a function, a
    type, an extern or a const object (const T x; T *const x)."""
    if not code[:1].isalpha():   # continuation lines and blocks start with blanks
        return False
    c = code.strip()
    if not c or c.startswith(("#", "/*", "*", "typedef", "extern", "struct", "enum", "union", "}")):
        return c.startswith("struct") and re.match(r"struct\s+\w+\s+\**\w+\s*(\[[^]]*\])*\s*[=;,]", c)
    c = re.sub(r"^static\s+", "", c)
    if "(" in c.split("=")[0] or not re.match(r"[A-Za-z_][\w\s*]*\w\s*(\[[^]]*\])*\s*[=;,]", c):
        return False
    head = c.split("=")[0]
    if re.search(r"\*\s*const\b", head):
        return False
    return not (head.startswith("const ") and "*" not in head)


state, io = [], []
IO = re.compile(r"\b(fopen|fread|fwrite|fclose|open|read|write|printf|fprintf|puts|perror|getenv|exit|abort|"
                r"socket|connect|mmap_file|pthread_create|pthread_detach)\s*\(")
for f in ANALYSIS:
    if not f.endswith(".c"):
        continue
    depth = 0
    for n, line in enumerate(open(os.path.join("analysis", f)), 1):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line.split("//")[0])
        if depth == 0 and re.match(r"(static\s+)?(_Thread_local|__thread)\b", code.strip()):
            state.append(f"analysis/{f}:{n}: {line.strip()}")
        elif depth == 0 and mutable_decl(code):
            state.append(f"analysis/{f}:{n}: {line.strip()}")
        if IO.search(code) and not re.search(r"\bsnprintf\s*\(|\bvsnprintf\s*\(", code):
            io.append(f"analysis/{f}:{n}: {line.strip()}")
        depth += code.count("{") - code.count("}")
check(not state, "analysis/ holds no mutable file-scope state", "\n".join(state))
# A mutex inside a caller-owned context (place_ctx: Scotch's process-wide
# generator, the entry-table cache) is allowed; a thread of its own is not.
check(not io, "analysis/ does no I/O and starts no thread", "\n".join(io))

# 3. the archive needs nothing that only topod defines
lib = "build/lib/libtopoanalysis.a"
if os.path.exists(lib):
    undef = set(subprocess.run(["nm", "-u", "--format=posix", lib], capture_output=True, text=True).stdout.split("\n"))
    undef = {l.split()[0] for l in undef if l and not l.endswith(":") and len(l.split()) >= 2}
    defined_lib = {l.split()[0] for l in subprocess.run(["nm", "--defined-only", "--format=posix", lib],
                                                        capture_output=True, text=True).stdout.split("\n")
                   if l and not l.endswith(":")}
    topod_objs = [os.path.join(dp, f) for dp, _, fs in os.walk("build/obj/std/topod") for f in fs if f.endswith(".o")]
    topod_defs = set()
    for o in topod_objs:
        for l in subprocess.run(["nm", "--defined-only", "--format=posix", o], capture_output=True,
                                text=True).stdout.split("\n"):
            parts = l.split()
            if len(parts) >= 2 and parts[1] in "TDBR":
                topod_defs.add(parts[0])
    needs = sorted((undef - defined_lib) & topod_defs)
    check(bool(topod_objs) and not needs, "libtopoanalysis.a needs no symbol defined by topod/",
          "\n".join(needs) or "no topod objects found to compare with")
else:
    check(False, "libtopoanalysis.a is built", lib + " missing: run make first")

# 4. the README describes every source
readme = open("analysis/README.md").read()
missing = [f for f in ANALYSIS if f.endswith(".c") and f not in readme]
check(not missing, "analysis/README.md describes every analysis/*.c", " ".join(missing))

# 5. topod keeps only the service
PREFIX = re.compile(r"^(?:static\s+)?[a-z].*\b((route|hier|load|sched|place|share|pattern|fabric_index)_\w+)\s*\(")
defs = []
for f in tracked(["topod/"], (".c",)):
    if f.endswith("namemap_file.c"):
        continue  # reads the name-map file for route_namemap_parse: the service's I/O
    lines = open(f).read().split("\n")
    for n, line in enumerate(lines, 1):
        m = PREFIX.match(line)
        if m and n < len(lines) and lines[n].startswith("{"):
            defs.append(f"{f}:{n}: {m.group(1)}")
check(not defs, "topod/ defines no route/hier/load/sched/place/share/pattern function", "\n".join(defs))


# 6. function lengths (every function here opens with '{' in column 0)
def functions(path):
    sig, start = None, None
    for n, line in enumerate(open(path, errors="replace"), 1):
        if re.match(r"^[A-Za-z_].*\(", line):
            sig = (n, line)
        elif line.startswith("{") and sig:
            start = sig
        elif line.startswith("}") and start:
            name = re.sub(r"\(.*", "", start[1]).split()[-1].lstrip("*")
            yield name, start[0], n - start[0] + 1
            start = None


long_lib, long_all = [], []
for f in tracked(["analysis/", "topod/", "clients/", "libtii/", "snapshot/", "osm_plugin/", "profiler/", "coll/",
                  "bench/", "common/"], (".c",)):
    for name, line, length in functions(f):
        if f.startswith("analysis/") and length > 120:
            long_lib.append(f"{f}:{line}: {name} {length} lines")
        if length > 150:
            long_all.append(f"{f}:{line}: {name} {length} lines")
check(not long_lib, "no function in analysis/ over 120 lines", "\n".join(long_lib))
check(not long_all, "no function outside tests/ over 150 lines", "\n".join(long_all))

sys.exit(1 if failed else 0)
