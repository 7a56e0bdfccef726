#!/usr/bin/env python3
"""md_table: a markdown table of ddpsim runs, one row per run, for docs
that tabulate predictions (docs-check markers, scripts/docs_check.py).

Usage:
    scripts/md_table.py --head 'A|B|C' [--align '---|---:|---:'] \\
        --cells '{iter_ms:.3f}|{r1_iter_ms:.3f}' \\
        --row 'LABEL' 'DDPSIM ARGS' [--row 'LABEL' 'ARGS' ...]

Each row runs `bin/ddpsim ARGS --format csv` (from the repository root) and
prints `| LABEL | cell | ... |`. A cell is a Python format string over the
run's CSV columns: `{col}` is the first row's (the first configuration),
`{rK_col}` row K's (several strategies or a sweep in one run; ARGS may
also be several runs separated by ' ;; ', whose rows follow each other);
numeric columns are numbers, the others strings. LABEL may hold `|` to fill several
leading columns. Standard library only."""

import csv
import io
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def value(text):
    try:
        return float(text)
    except ValueError:
        return text


def fields(args):
    rows = []
    for one in args.split(" ;; "):
        cmd = [os.path.join(ROOT, "bin", "ddpsim")] + shlex.split(one) + ["--format", "csv"]
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit("md_table.py: ddpsim %s: exit %d: %s" % (one, p.returncode,
                                                             p.stderr.decode().strip()))
        got = list(csv.DictReader(io.StringIO(p.stdout.decode())))
        if not got:
            sys.exit("md_table.py: ddpsim %s printed no rows" % one)
        rows += got
    out = {}
    for k, row in enumerate(rows):
        for col, text in row.items():
            out["r%d_%s" % (k, col)] = value(text)
            if k == 0:
                out[col] = value(text)
    return out


def main(argv):
    head = align = cells = None
    rows = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--head", "--align", "--cells") and i + 1 < len(argv):
            if a == "--head":
                head = argv[i + 1]
            elif a == "--align":
                align = argv[i + 1]
            else:
                cells = argv[i + 1]
            i += 2
        elif a == "--row" and i + 2 < len(argv):
            rows.append((argv[i + 1], argv[i + 2]))
            i += 3
        else:
            sys.exit("md_table.py: unexpected argument %r (see the file's usage)" % a)
    if head is None or cells is None or not rows:
        sys.exit("md_table.py: needs --head, --cells and at least one --row")
    heads = head.split("|")
    print("| " + " | ".join(heads) + " |")
    print("| " + " | ".join(align.split("|") if align else ["---"] * len(heads)) + " |")
    for label, args in rows:
        f = fields(args)
        try:
            text = [c.format(**f) for c in cells.split("|")]
        except (KeyError, ValueError) as e:
            sys.exit("md_table.py: cell format %r on ddpsim %s: %s" % (cells, args, e))
        print("| " + label + " | " + " | ".join(text) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
