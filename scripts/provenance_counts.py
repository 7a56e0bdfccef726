#!/usr/bin/env python3
"""Counts the rows of docs/provenance.md's audit table by their before and after columns.

Usage: scripts/provenance_counts.py [docs/provenance.md]

A row whose first cell names a file under sim/ counts as code, any other as data.
Prints a markdown table: rows, cited (yes) before and after, vague and unexplained after
(unexplained: not yes after). Standard library only.
"""
import sys


def rows(path):
    text = open(path, encoding="utf-8").read()
    _, _, table = text.partition("\n## The table\n")
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith(("| file:line", "| ---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            sys.exit("%s: a row of %d cells, not 6: %s" % (path, len(cells), line))
        yield ("code" if cells[0].startswith("`sim/") else "data"), cells[3], cells[4]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "docs/provenance.md"
    counts = {}
    for kind, before, after in rows(path):
        for key in (kind, "all"):
            c = counts.setdefault(key, [0, 0, 0, 0, 0])
            c[0] += 1
            c[1] += before == "yes"
            c[2] += after == "yes"
            c[3] += after == "vague"
            c[4] += after != "yes"
    print("| | rows | cited before | cited after | vague after | unexplained |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key, name in (("code", "`sim/` C files"), ("data", "data files"), ("all", "all")):
        print("| %s | %s |" % (name, " | ".join(str(v) for v in counts.get(key, [0] * 5))))


if __name__ == "__main__":
    main()
