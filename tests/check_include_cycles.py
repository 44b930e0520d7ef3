#!/usr/bin/env python3
"""Include-cycle check over src/ (docs/ARCHITECTURE.md: a module depends only on modules below it).

A module is a stem: src/<dir>/<name> with its files <name>.h, .c, .cu and .cuh. Module A depends
on module B when a file of A includes a header of B (by the path under src/, else relative to the
file's folder, as check_layers.py resolves it). Two checks fail:
  - a header that includes itself through other headers (directly or transitively);
  - a cycle of modules: plan.c including placement.h while placement.h includes plan.h is a
    circle the header graph alone does not see, and the planner could no longer be read (or
    tested) one file at a time from the bottom up.
One edge is not a dependency: an implementation header <name>_impl.h including the interface
<name>.h it extends (its module sits above the interface's module by construction). Cycles that
still exist are listed in tests/include_cycles_allow.txt (one per line, its modules in sorted
order); an allowed cycle that no longer exists fails too (the list only shrinks).
Usage: check_include_cycles.py REPO_ROOT
"""
import os
import re
import sys

SOURCE = re.compile(r"\.(c|h|cu|cuh)$")
HEADER = re.compile(r"\.(h|cuh)$")


def includes(src):
    """{file under src/: [included files under src/]}."""
    out = {}
    for dirpath, _, names in os.walk(src):
        for n in sorted(names):
            if not SOURCE.search(n):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, src)
            deps = []
            with open(path, errors="replace") as f:
                for line in f:
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    target = m.group(1)
                    if not os.path.exists(os.path.join(src, target)):
                        target = os.path.relpath(os.path.join(dirpath, m.group(1)), src)
                    if os.path.isfile(os.path.join(src, target)):
                        deps.append(os.path.normpath(target))
            out[rel] = deps
    return out


def cycles(graph):
    """The strongly connected components of graph with more than one node (or a self edge),
    each sorted, found by Tarjan's algorithm without recursion."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph[v]:
                    found.append(tuple(sorted(comp)))
    return sorted(found)


def stem(rel):
    return SOURCE.sub("", rel)


def extends(a, b):
    """a is <name>_impl.h and b the <name>.h it extends."""
    return stem(a) == stem(b) + "_impl" and HEADER.search(a) is not None


def main(root):
    src = os.path.join(root, "src")
    inc = includes(src)
    headers = {f: [d for d in deps if HEADER.search(d)] for f, deps in inc.items()
               if HEADER.search(f)}
    modules = {}
    for f, deps in inc.items():
        edges = modules.setdefault(stem(f), set())
        edges.update(stem(d) for d in deps
                     if HEADER.search(d) and stem(d) != stem(f) and not extends(f, d))
    allowed = set()
    with open(os.path.join(root, "tests", "include_cycles_allow.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(tuple(sorted(line.split())))
    failures = []
    for comp in cycles(headers):
        failures.append("headers include each other: " + " -> ".join(comp))
    module_cycles = cycles(modules)
    for comp in module_cycles:
        if comp in allowed:
            continue
        edges = [f"{a} -> {b}" for a in comp for b in sorted(modules[a]) if b in comp]
        failures.append("modules include each other: " + ", ".join(edges) +
                        " (move what the lower one needs from the upper one into a module of its "
                        "own above both)")
    for comp in sorted(allowed - set(module_cycles)):
        failures.append(f"tests/include_cycles_allow.txt: '{' '.join(comp)}' is no longer a "
                        f"cycle: remove the line")
    print(f"check_include_cycles: {len(inc)} files, {len(modules)} modules, "
          f"{len(allowed & set(module_cycles))} cycles still allowed")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
