"""The project's bad-input rule for the bench/ CSV readers: a value that is missing,
empty or not a number stops the reader with InputError naming the file, the line and
the key; each script's main() prints the message and exits 2.

Also the rows of one kind in bench/gpu_kernels.py's CSVs (kind_rows) and the check
that they come from one GPU (one_gpu), and the rows of bench/torch_ddp_host.py's CSVs
(DDP_HOST_COLUMNS, ddp_host_rows), which torch_ddp_host.py --from-csv and
bench/ddp_host_pool.py both read (each then checks the rows against each other).

A module, not a script: bench/host_pool.py, bench/ddp_host_pool.py,
bench/torch_ddp_host.py, bench/per_iter_summary.py, bench/conv_pass_fit.py and
bench/conv_rates.py import it from bench/ (their own directory is first on sys.path).
Standard library only.
"""

import csv
import math


class InputError(Exception):
    """Bad input: the message names the file, line and key (the caller exits 2)."""


def num(r, key, path, line, default=None):
    """Row r's key (a csv.DictReader row read from `path`, at `line`) as a float.
    A key the row lacks: `default` where one is given, else InputError (no column);
    an empty value: `default` where given, else InputError; not a number: InputError."""
    if key not in r:
        if default is not None:
            return default
        raise InputError("%s:%d: no column %s" % (path, line, key))
    v = r[key]
    if v in ("", None):
        if default is not None:
            return default
        raise InputError("%s:%d: %s is empty" % (path, line, key))
    try:
        return float(v)
    except ValueError:
        raise InputError("%s:%d: %s %r is not a number" % (path, line, key, v))


def read_rows(path):
    """A CSV's rows as csv.DictReader gives them (the first, rows[0], is the file's line
    2); InputError for a file it cannot read."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))


def kind_rows(paths, kind):
    """(path, line, row) of every row of `kind` in bench/gpu_kernels.py CSVs (line: the
    file's line, the header being line 1); InputError for a file it cannot read."""
    for path in paths:
        for line, r in enumerate(read_rows(path), start=2):
            if r.get("kind") == kind:
                yield path, line, r


def one_gpu(gpus):
    """The one GPU of a set of `gpu` columns; InputError if there are more or none."""
    if len(gpus) != 1:
        raise InputError("rows from %d GPUs (%s): expected one" % (len(gpus),
                                                                   ", ".join(sorted(gpus))))
    return gpus.pop()


# bench/torch_ddp_host.py's CSV: one row a configuration and layer count; reps_ms the
# per-rep medians (ms, space-separated), interleaved rep by rep across the rows
DDP_HOST_COLUMNS = ["config", "layers", "width", "buckets", "iter_ms_median", "reps_ms", "gpu",
                    "torch"]


def whole(r, key, path, line):
    """Row r's key as an int: InputError as num(), or where it is not a whole number."""
    v = num(r, key, path, line)
    if not math.isfinite(v) or v != int(v):
        raise InputError("%s:%d: %s %r is not a whole number" % (path, line, key, r[key]))
    return int(v)


def ddp_host_rows(path):
    """The rows of a bench/torch_ddp_host.py CSV, in the file's order: dicts of line (the
    file's line, the header being line 1), config, layers, width and buckets (ints),
    iter_ms_median, reps_ms (a list of ms), gpu and torch ('' where the column is absent).
    InputError for a file it cannot read or a row with a value missing or not a number;
    the rows are not checked against each other."""
    out = []
    for line, r in enumerate(read_rows(path), start=2):
        for key in ("config", "reps_ms"):
            if not r.get(key):
                raise InputError("%s:%d: %s is empty or missing" % (path, line, key))
        try:
            reps = [float(v) for v in r["reps_ms"].split()]
        except ValueError:
            raise InputError("%s:%d: reps_ms %r is not a list of numbers"
                             % (path, line, r["reps_ms"]))
        out.append({"line": line, "config": r["config"],
                    "layers": whole(r, "layers", path, line),
                    "width": whole(r, "width", path, line),
                    "buckets": whole(r, "buckets", path, line),
                    "iter_ms_median": num(r, "iter_ms_median", path, line),
                    "reps_ms": reps, "gpu": r.get("gpu") or "", "torch": r.get("torch") or ""})
    return out
