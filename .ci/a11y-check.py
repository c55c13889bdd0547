#!/usr/bin/env python3
"""Asks the AT-SPI registry, as a screen reader does, whether the hookscope window exposes its
"Copy URL" button. Exit 0 when it does; 1 with what was seen otherwise."""
import sys
import time

import pyatspi


def walk(node, depth=0, out=None):
    out = [] if out is None else out
    try:
        out.append((depth, node.getRoleName(), node.name))
        for i in range(node.childCount):
            walk(node.getChildAtIndex(i), depth + 1, out)
    except Exception as error:  # a node that went away while walking
        out.append((depth, "error", str(error)))
    return out


deadline = time.time() + 20
names, app = [], None
while time.time() < deadline:
    desktop = pyatspi.Registry.getDesktop(0)
    apps = [desktop.getChildAtIndex(i) for i in range(desktop.childCount)]
    names = [a.name for a in apps if a is not None]
    app = next((a for a in apps if a is not None and "hookscope" in (a.name or "").lower()), None)
    if app is not None:
        nodes = walk(app)
        found = [n for n in nodes if n[1] in ("push button", "button") and n[2] == "Copy URL"]
        if found:
            print(f"a screen reader sees the '{found[0][2]}' {found[0][1]} among {len(nodes)} accessible nodes")
            sys.exit(0)
    time.sleep(0.5)
print("no 'Copy URL' button on the accessibility bus; applications seen:", names, file=sys.stderr)
if app is not None:
    for node in walk(app)[:40]:
        print(node, file=sys.stderr)
sys.exit(1)
