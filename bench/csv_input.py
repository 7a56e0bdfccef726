"""The project's bad-input rule for the bench/ CSV readers: a value that is missing,
empty or not a number stops the reader with InputError naming the file, the line and
the key; each script's main() prints the message and exits 2.

A module, not a script: bench/host_pool.py, bench/per_iter_summary.py and
bench/conv_pass_fit.py import it from bench/ (their own directory is first on
sys.path). Standard library only.
"""


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
