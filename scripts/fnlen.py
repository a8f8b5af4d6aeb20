#!/usr/bin/env python3
"""Lists the longest Rust functions under the given folders (lines from `fn` to its closing brace).

Usage: scripts/fnlen.py [--top N] DIR...   A rough brace counter: strings and chars holding braces
are skipped, which is enough for this tree."""
import re, sys, pathlib

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')
STRIP = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])\'|//.*$')

def functions(path):
    lines = path.read_text(errors="replace").splitlines()
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            code = STRIP.sub("", lines[j])
            if not opened and ";" in code and "{" not in code:
                break  # a declaration without a body
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                yield (j - i + 1, f"{path}:{i + 1}", m.group(7))
                break
            j += 1
        i += 1

def main():
    args = sys.argv[1:]
    top = 10
    if args[:1] == ["--top"]:
        top, args = int(args[1]), args[2:]
    found = [f for d in args for p in sorted(pathlib.Path(d).rglob("*.rs")) for f in functions(p)]
    for n, where, name in sorted(found, reverse=True)[:top]:
        print(f"{n:5} {name:32} {where}")

if __name__ == "__main__":
    main()
