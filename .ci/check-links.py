#!/usr/bin/env python3
"""Checks the docs' relative links: every Markdown link and image `[text](target)` /
`![alt](target)` in README.md, ARCHITECTURE.md, BENCHMARKS.md and docs/*.md whose target is not
a URL (http:, https:, mailto:) must name a file that exists, and its `#anchor`, if any, a heading
of that file (GitHub's slugs). README.md must stay within 250 lines. Prints one line per broken
link (file:line: target — reason) and exits 1, or prints "links: N checked, all resolve".
Standard library only."""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
README_MAX_LINES = 250

# `[text](target)` or `![alt](target)`, the target up to the first space or `)`; an optional
# title ("…") after a space is ignored. Text may hold one level of brackets or backticks.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEMES = ("http:", "https:", "mailto:")


def sources():
    names = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
    docs = os.path.join(ROOT, "docs")
    if os.path.isdir(docs):
        names += sorted(
            os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md")
        )
    return [n for n in names if os.path.isfile(os.path.join(ROOT, n))]


def without_code_spans(line):
    """The line with inline code spans blanked out, so a `[a](b)` inside backticks is no link."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            n = len(line[i:]) - len(line[i:].lstrip("`"))
            ticks = line[i:i + n]
            end = line.find(ticks, i + n)
            if end < 0:
                out.append(line[i:])
                break
            out.append(" " * (end + n - i))
            i = end + n
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def prose_lines(text):
    """(line number, line) for each line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lowercase, markup removed, punctuation other than `-` and
    `_` dropped, each space a `-`."""
    text = heading.strip().lower()
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


ANCHORS = {}


def anchors(path):
    """The anchors of a Markdown file's headings; duplicates get -1, -2, …"""
    if path not in ANCHORS:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        ANCHORS[path] = found
    return ANCHORS[path]


def check(path, target):
    """Why `target`, linked from `path`, does not resolve; None when it does."""
    file_part, _, anchor = target.partition("#")
    resolved = path
    if file_part:
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part.split("?")[0]))
        if not os.path.exists(resolved):
            return "no such file"
    if not anchor:
        return None
    if os.path.isdir(resolved) or not resolved.endswith(".md"):
        return "an anchor into a file that is not Markdown"
    if anchor not in anchors(resolved):
        return f"no heading #{anchor} in {os.path.relpath(resolved, ROOT)}"
    return None


def main():
    broken, checked = [], 0
    for name in sources():
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if name == "README.md":
            lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            if lines > README_MAX_LINES:
                broken.append(
                    f"README.md:{lines}: README.md — {lines} lines, over the limit of "
                    f"{README_MAX_LINES}: move the detail to docs/"
                )
        # The prose with code blanked out, line for line, so that a link whose text wraps onto
        # the next line is still found and its line number is still right.
        prose = ["" for _ in text.split("\n")]
        for number, line in prose_lines(text):
            prose[number - 1] = without_code_spans(line)
        prose = "\n".join(prose)
        for m in LINK.finditer(prose):
            target = m.group(1)
            if target.lower().startswith(SCHEMES):
                continue
            checked += 1
            reason = check(path, target)
            if reason:
                number = prose.count("\n", 0, m.start()) + 1
                broken.append(f"{name}:{number}: {target} — {reason}")
    if broken:
        print("\n".join(broken))
        return 1
    print(f"links: {checked} checked, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
