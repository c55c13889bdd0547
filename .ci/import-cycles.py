#!/usr/bin/env python3
"""Fails when the library's modules import each other in a cycle.

Reads every `crate::a::b` path in `src/` (the library: not `ui/`, `cli/` or `bin/`), tests and
comments aside, maps it to the module file it names, and looks for strongly connected
components in that graph. An import of a module's own parent folder is not counted: a folder's
`mod.rs` and its files are one unit (ARCHITECTURE.md, "The layers")."""
import collections
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def module_of(path):
    parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


files = []
for folder, _, names in os.walk(ROOT):
    rel = os.path.relpath(folder, ROOT)
    if rel.split(os.sep)[0] in ("ui", "cli", "bin"):
        continue
    files += [os.path.join(folder, n) for n in names if n.endswith(".rs") and n not in ("lib.rs", "main.rs")]
modules = {module_of(f) for f in files}
edges = collections.defaultdict(set)
for path in files:
    module = module_of(path)
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]\nmod tests")
    text = text[:cut] if cut >= 0 else text
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    for found in re.findall(r"crate::([a-z_]+(?:::[a-z_]+)?)", text):
        target = found if found in modules else found.split("::")[0]
        if target in modules and target != module and not module.startswith(target + "::"):
            edges[module].add(target)
    for parent, group in re.findall(r"crate::([a-z_]+)::\{([^}]*)\}", text):
        for item in group.split(","):
            target = parent + "::" + item.strip().split("::")[0]
            if target in modules and target != module:
                edges[module].add(target)

index, low, stack, on_stack, cycles = {}, {}, [], set(), []
sys.setrecursionlimit(10000)


def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in edges.get(node, ()):
        if nxt not in index:
            visit(nxt)
            low[node] = min(low[node], low[nxt])
        elif nxt in on_stack:
            low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
        component = []
        while True:
            top = stack.pop()
            on_stack.discard(top)
            component.append(top)
            if top == node:
                break
        if len(component) > 1:
            cycles.append(sorted(component))


for module in sorted(modules):
    if module not in index:
        visit(module)
if cycles:
    for cycle in cycles:
        print("import cycle:", " -> ".join(cycle), file=sys.stderr)
    sys.exit(1)
print(f"no import cycle among {len(modules)} library modules")
