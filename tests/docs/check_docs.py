#!/usr/bin/env python3
"""Keeps the repository self-contained: fails when a tracked file points to documents that are
not in the repository, or when a relative Markdown link in README.md or docs/ is broken.

Checked:
  - no tracked file (outside .git) names the design notes the project started from: a path
    with `shared/`, `DESIGN.md`, `STYLE.md`, `dcqcn.md`, `abi.md`, or `reference/<file>.md`.
    The project's own documents are docs/*.md; cite those, or the primary source (a paper, a
    specification section). bench/RESULTS.md, the results log, is kept as written.
  - every relative link `[text](target)` in README.md and docs/**/*.md names a file or folder
    that exists (the `#anchor` part is not checked).

Usage: check_docs.py [REPO]   (default: the repository this file is in)
Exit status 0 when clean, 1 with one line per problem otherwise.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
THIS = os.path.relpath(os.path.abspath(__file__), os.path.join(HERE, "..", ".."))
# The results log is history, kept as it was written.
EXEMPT = {THIS, "bench/RESULTS.md"}

# A reference to a file outside the repository.
EXTERNAL = re.compile(
    r"shared/"
    r"|(?<![\w-])(?:DESIGN|STYLE|dcqcn|abi)\.md\b"
    r"|(?<![\w-])reference/[\w.-]+\.md\b"
    r"|dcqcn-model/")

# [text](target) outside code; target without spaces, optional "title".
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def tracked_files(repo):
    """Tracked files (git ls-files), or every file outside .git and build* folders."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(repo):
            dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(root, n), repo) for n in names]
        return files


def external_references(repo, files):
    problems = []
    for rel in files:
        if rel in EXEMPT:
            continue
        path = os.path.join(repo, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            m = EXTERNAL.search(line)
            if m:
                problems.append(f"{rel}:{n}: points outside the repository ({m.group(0)!r}): "
                                "cite docs/ or the primary source instead")
    return problems


def strip_code(text):
    """The text with fenced code blocks and inline code spans blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return out


def broken_links(repo, files):
    problems = []
    docs = [f for f in files if f == "README.md" or
            (f.startswith("docs/") and f.endswith(".md"))]
    for rel in docs:
        with open(os.path.join(repo, rel), encoding="utf-8") as f:
            lines = strip_code(f.read())
        base = os.path.dirname(os.path.join(repo, rel))
        for n, line in enumerate(lines, 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # URL, mailto:, or an anchor in the same file
                path = target.split("#", 1)[0]
                if not os.path.exists(os.path.normpath(os.path.join(base, path))):
                    problems.append(f"{rel}:{n}: link to {target!r}: no such file")
    return problems


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
    files = tracked_files(repo)
    problems = external_references(repo, files) + broken_links(repo, files)
    for p in problems:
        print(p)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)")
        return 1
    print(f"check_docs: {len(files)} files, no reference outside the repository, links ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
