#!/usr/bin/env python3
"""csvcols COL[,COL...]: the named columns of the CSV on stdin, in that order.

For docs that paste some columns of a `--format csv` output (docs-check
markers, scripts/docs_check.py). Fields are copied as printed; standard
library only."""
import csv
import sys

if len(sys.argv) != 2:
    sys.exit("usage: csvcols.py COL[,COL...] < table.csv")
want = sys.argv[1].split(",")
rows = csv.reader(line for line in sys.stdin if not line.startswith("#"))
header = next(rows)
missing = [c for c in want if c not in header]
if missing:
    sys.exit("csvcols.py: no column %s (columns: %s)" % (", ".join(missing), ",".join(header)))
idx = [header.index(c) for c in want]
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(want)
for r in rows:
    out.writerow([r[i] for i in idx])
