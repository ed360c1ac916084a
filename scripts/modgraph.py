#!/usr/bin/env python3
"""The import graph of svc-server's top-level modules and its cycles (issue 33 part 5).

Reads every .rs file under crates/svc-server/src, leaves out comments and `#[cfg(test)] mod tests { .. }`
blocks (kept with WITH_TESTS=1), and counts each `crate::<module>` path as an edge from the file's top-level module. Prints the
edges (with one example site each), the strongly connected components of more than one module, and
with `--why A B` every line that makes A depend on B.
"""
import os, re, sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "svc-server", "src")
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")


def strip_tests(text):
    if os.environ.get("WITH_TESTS"):
        return [(n, l) for n, l in enumerate(text.split("\n"), 1) if not l.strip().startswith("//")]
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        l = lines[i]
        if l.strip() == "#[cfg(test)]" and i + 1 < len(lines) and lines[i + 1].strip().startswith("mod ") and lines[i + 1].rstrip().endswith("{"):
            depth, i = 0, i + 1
            while i < len(lines):
                depth += lines[i].count("{") - lines[i].count("}")
                i += 1
                if depth <= 0:
                    break
            continue
        if not l.strip().startswith("//"):
            out.append((i + 1, l))
        i += 1
    return out


def graph():
    mods = set()
    for e in os.listdir(ROOT):
        if e in ("lib.rs", "main.rs"):
            continue
        if e.endswith(".rs"):
            mods.add(e[:-3])
        elif os.path.isdir(os.path.join(ROOT, e)) and e != "cli":
            mods.add(e)
    edges = defaultdict(list)  # (a, b) -> [(file, line, text)]
    for m in mods:
        files = [os.path.join(ROOT, m + ".rs")] if os.path.isfile(os.path.join(ROOT, m + ".rs")) else []
        d = os.path.join(ROOT, m)
        for dp, _, fs in os.walk(d):
            files += [os.path.join(dp, f) for f in fs if f.endswith(".rs")]
        for f in files:
            for n, l in strip_tests(open(f).read()):
                for t in PATH.findall(l):
                    if t != m and t in mods:
                        edges[(m, t)].append((os.path.relpath(f, ROOT), n, l.strip()))
    return mods, edges


def sccs(mods, edges):
    adj = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    index, low, stack, on, out, c = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = c[0]; c[0] += 1; stack.append(v); on.add(v)
        for w in sorted(adj[v]):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(mods):
        if v not in index:
            visit(v)
    return [s for s in out if len(s) > 1]


def main():
    mods, edges = graph()
    if len(sys.argv) == 4 and sys.argv[1] == "--why":
        for f, n, l in edges.get((sys.argv[2], sys.argv[3]), []):
            print(f"{f}:{n}: {l}")
        return
    comps = sccs(mods, edges)
    inside = {m for s in comps for m in s}
    print(f"{len(mods)} modules, {len(edges)} edges")
    for s in comps:
        print(f"SCC of {len(s)}: {' '.join(s)}")
        for (a, b), sites in sorted(edges.items()):
            if a in s and b in s:
                print(f"  {a} -> {b} ({len(sites)}): {sites[0][0]}:{sites[0][1]}")
    if not comps:
        print("no cycles")
    if "--all" in sys.argv:
        for (a, b), sites in sorted(edges.items()):
            print(f"{a} -> {b} ({len(sites)})")


main()
