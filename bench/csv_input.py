"""The project's bad-input rule for the bench/ CSV readers: a value that is missing,
empty or not a number stops the reader with InputError naming the file, the line and
the key; each script's main() prints the message and exits 2.

Also the rows of one kind in bench/gpu_kernels.py's CSVs (kind_rows) and the check
that they come from one GPU (one_gpu).

A module, not a script: bench/host_pool.py, bench/ddp_host_pool.py,
bench/per_iter_summary.py, bench/conv_pass_fit.py and bench/conv_rates.py import it
from bench/ (their own directory is first on sys.path). Standard library only.
"""

import csv


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


def kind_rows(paths, kind):
    """(path, line, row) of every row of `kind` in bench/gpu_kernels.py CSVs (line: the
    file's line, the header being line 1); InputError for a file it cannot read."""
    for path in paths:
        try:
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        except OSError as e:
            raise InputError("cannot read %s: %s" % (path, e.strerror))
        for line, r in enumerate(rows, start=2):
            if r.get("kind") == kind:
                yield path, line, r


def one_gpu(gpus):
    """The one GPU of a set of `gpu` columns; InputError if there are more or none."""
    if len(gpus) != 1:
        raise InputError("rows from %d GPUs (%s): expected one" % (len(gpus),
                                                                   ", ".join(sorted(gpus))))
    return gpus.pop()
