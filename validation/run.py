#!/usr/bin/env python3
"""ddpsim against published measurements: the validation report (make validate).

Reads every validation/*.csv (one file per group), runs each row's ddpsim
command (cached: identical commands run once), picks the predicted number out
of the command's --format csv output and prints, per group, a table of
measured against predicted with the signed error (pred - meas) / meas, in
the unit the row was published in (a throughput's +10 % is an iteration
time's -9.1 %), then the median and worst absolute error per source, per
group and overall (excluding the rows used to fit constants; rows in %,
ratios, are summarised apart in points, pred - meas, as their relative
error is small by construction), the same split, for times and rates, by whether the
prediction is host-bound (the selected output row's host_exposed_ms a tenth
of its iter_ms or more, as ddpsim's summary flags it), and for rows that form a pair
(two bucket sizes) whether the predicted ordering matches the measured one
(signs of the two values, each side a tie where they differ by at most
TIE_REL of the larger: below the published values' last digit, above
ddpsim's float noise; a tie matches only a tie; a pair without two rows with a
prediction is not met; a pair whose measured difference is within the range of
its rows' repeated runs is marked so, which decides nothing);
rows that repeat one command (the same model and setup measured on several
machines or days) are listed with their spread: each stays a row of its own.
Rows whose prediction is host-bound and whose metric is a time or rate
(iter_ms, samples_per_s, speedup_vs_single, scaling_efficiency_pct) are also run at the measured hosts'
range (the command with --host-scale at sim/net/topo_compute.c's
ds_topo_host_factor_fastest and _slowest, as ddpsim's text summary does, and
the default's between them: a ratio of two host-bound runs need not move one
way with the host, so the range spans all three):
per row whether the measured value lies in that range, and per group and
overall how many non-fit rows do.
Rows with such a metric whose source names a results folder that has a
calibration file of its own (validation/host_calibs/host-<folder>.yaml, from
bench/host_pool.py --calib-dir; or host-<folder>-<csv>.yaml, a calibration
taken in the process that wrote the row's source CSV, bench/host_inproc.py's,
which is preferred) are also run with --calib that file: the prediction at
that lend's own measured host costs beside the pooled one, and per group the
median absolute error of each (validation/README.md).
Rows whose prediction used a compute rate no measurement of its own backs
(the output row's compute_rates column names a typical, an as_matmul, a
gpu_table_proxy, a calib_flops or a calibration file's other-GPU source
(calib_other_gpu, calib_flops_other_gpu): a placeholder, or another class's,
math's, memory's or GPU's measurement standing in; metrics no rate enters, peak
memory, excepted) are marked u, and each group's summary and the overall give
their count and errors apart, and the u rows by their least backed kind
(unmeasured()).
Last, the targets of issue #12, each with the numbers that decide it and
whether it is met, computed from the same rows (targets(): every target on
all non-fit rows with a prediction, approx ones included, and its numbers
without the approx rows beside); with --targets
only that summary is printed (the report is still computed, not shown).

A benchmark, not a test: it reports errors and asserts nothing. Exit status
0, or 1 when a command could not be run, its output had no row or several
rows matching a row's select, or no numeric column the metric names; 2 on an
unknown option or a malformed CSV (checked before any command runs: the
message names the file, line and column).
Python 3 standard library only; builds nothing (DDPSIM_BIN, default
bin/ddpsim).

Row columns (docs/validation.md): source, machine, software, measured, unit,
value, fit (yes|no), command (ddpsim arguments, or - when ddpsim cannot
express the measurement yet), metric (an output column, or an arithmetic
expression over columns such as 100*speedup_vs_single/world_size; a
world-size sweep's rows add scaling_efficiency_pct, each row over the
smallest world size's of its strategy, empty where undefined), select
(k=v;k=v: which output row; a term ops=PREFIX instead runs the command with
--schedule and adds ops_ms, ops_fwd_ms and ops_bwd_ms, the summed predicted
durations of the schedule's compute-stream fwd and bwd ops whose name starts
with PREFIX, e.g. one encoder layer's), pair (rows sharing an id are compared by sign),
expressible (yes | approx: the command only approximates the setup | no),
note.
"""

import ast
import contextlib
import csv
import glob
import io
import os
import re
import shlex
import statistics
import subprocess
import tempfile
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DDPSIM_BIN", "bin/ddpsim")
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
# metrics the host's speed moves (the host range applies; memory it does not)
TIMED = {"iter_ms", "samples_per_s", "speedup_vs_single", "scaling_efficiency_pct"}
# issue #12's targets: the thresholds "met" follows from
COLL_MIN_BYTES = 1 << 20  # collectives of 1 MiB and more
COLL_MEDIAN_PCT, COLL_WORST_PCT = 10.0, 20.0  # their median and worst |error|
ITER_PCT = 10.0  # every single-GPU training row within this |error|
DDP_POINTS = 2.0  # every DDP-over-single row (unit %) within this many points
# output columns no compute rate enters (a metric of these only is not marked u)
RATE_FREE = {"peak_mem_gib", "peak_mem_gib_gpu0", "peak_mem_gib_other", "gpu_mem_gib",
             "n_buckets", "bucket_mb", "first_bucket_mb", "world_size", "batch_per_gpu"}
PRECISION_RE = re.compile(r"\b(AMP|FP32|TF32|FP16|BF16)\b")
# a pair's two values tie where they differ by at most this share of the larger:
# 1 ppm, below the last published digit of every pair's values (3 decimals of
# ms: 0.001 / 451.8 = 2.2 ppm at the largest, so any published difference is a
# sign) and above what ddpsim's outputs resolve (two BERT caps 12 ns apart in
# 59.54 ms: 0.2 ppm, float noise of the schedule's sums, a tie)
TIE_REL = 1e-6
COLUMNS = ("source", "machine", "software", "measured", "unit", "value", "fit", "command",
           "metric", "select", "pair", "expressible", "note")
METRIC_RE = re.compile(r"^[A-Za-z_0-9.+\-*/() ]+$")


def metric_ok(expr):
    """Whether expr parses as names, numbers, + - * / and parentheses only."""
    if not METRIC_RE.match(expr):
        return False
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return False
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant,
               ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.UAdd)
    return all(isinstance(n, allowed) for n in ast.walk(tree))


class CsvError(Exception):
    """A malformed validation CSV: FILE:LINE: column C: what."""


def load_group(path):
    """A validation CSV's rows (dicts), each checked: every column, a finite
    non-zero value, fit yes|no, expressible yes|approx|no, select k=v terms,
    a metric of names, numbers and arithmetic only. Raises CsvError."""
    name = os.path.relpath(path, ROOT)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise CsvError("%s:1: header: no column %s (expected %s)"
                               % (name, ", ".join(missing), ",".join(COLUMNS)))
            rows = []
            for r in reader:
                line = reader.line_num

                def bad(col, what):
                    return CsvError("%s:%d: column %s: %s" % (name, line, col, what))
                if None in r:
                    raise bad("note", "%d fields, expected %d (an unquoted comma?)"
                              % (len(COLUMNS) + len(r[None]), len(COLUMNS)))
                for c in COLUMNS:
                    if r[c] is None:
                        raise bad(c, "missing (the row has fewer than %d fields)" % len(COLUMNS))
                try:
                    v = float(r["value"])
                except ValueError:
                    raise bad("value", "expected a number, got %r" % r["value"])
                if not (v == v and abs(v) != float("inf") and v != 0):
                    raise bad("value", "expected a finite non-zero number, got %r" % r["value"])
                if r["fit"].strip() not in ("yes", "no"):
                    raise bad("fit", "expected yes or no, got %r" % r["fit"])
                if r["expressible"].strip() not in ("yes", "approx", "no"):
                    raise bad("expressible", "expected yes, approx or no, got %r"
                              % r["expressible"])
                for term in filter(None, (t.strip() for t in r["select"].split(";"))):
                    if "=" not in term or not term.split("=", 1)[0].strip():
                        raise bad("select", "expected k=v terms separated by ;, got %r" % term)
                if r["command"].strip() not in ("", "-"):
                    if not metric_ok(r["metric"]):
                        raise bad("metric", "expected an output column or arithmetic over "
                                  "columns (names, numbers, + - * / and parentheses), got %r"
                                  % r["metric"])
                    try:
                        shlex.split(r["command"])
                    except ValueError as e:
                        raise bad("command", "%s: %r" % (e, r["command"]))
                r["_line"] = line
                rows.append(r)
            return rows
    except OSError as e:
        raise CsvError("%s: cannot read: %s" % (name, e.strerror))
    except UnicodeDecodeError as e:
        raise CsvError("%s: not UTF-8 (byte %d)" % (name, e.start))


def check_pairs(groups):
    """A pair id names rows of one file, all fit or all not: else CsvError."""
    where = {}
    for path, rows in groups:
        name = os.path.relpath(path, ROOT)
        for r in rows:
            pid = r["pair"].strip()
            if not pid:
                continue
            if pid in where and where[pid][0] != name:
                raise CsvError("%s:%d: column pair: %r is a pair of %s too (a pair's rows "
                               "are in one file)" % (name, r["_line"], pid, where[pid][0]))
            if pid in where and where[pid][1] != r["fit"].strip():
                raise CsvError("%s:%d: column fit: %r, where pair %r's other row says %r (a "
                               "pair is fit or not as a whole)" % (name, r["_line"],
                                                                  r["fit"].strip(), pid,
                                                                  where[pid][1]))
            where.setdefault(pid, (name, r["fit"].strip()))


def host_factors():
    """(fastest, slowest) host factor, from sim/net/topo_compute.c (one source)."""
    with open(os.path.join(ROOT, "sim", "net", "topo_compute.c")) as f:
        text = f.read()
    got = [re.search(r"ds_topo_host_factor_%s = ([0-9.]+);" % k, text) for k in ("fastest", "slowest")]
    if not all(got):
        sys.exit("validation/run.py: no ds_topo_host_factor_fastest/_slowest in "
                 "sim/net/topo_compute.c")
    return tuple(float(m.group(1)) for m in got)


def csv_rows(text):
    """The rows of ddpsim's CSV text (list of dicts), its # lines left out."""
    text = "\n".join(l for l in text.splitlines() if l and not l.startswith("#"))
    return list(csv.DictReader(io.StringIO(text)))


def run_command(cache, cmd, schedule=False):
    """Output rows of one ddpsim command (list of dicts), or an error string.
    With schedule, the steady-state schedule's rows (ddpsim --schedule's)
    instead, cached under (cmd, "schedule"); that run also caches its output
    rows under cmd, so a row reading both runs ddpsim once."""
    key = (cmd, "schedule") if schedule else cmd
    if key in cache:
        return cache[key]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "schedule.csv")
        args = [BIN] + shlex.split(cmd) + (["--schedule", path] if schedule else [])
        try:
            proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
        except OSError as exc:
            cache[key] = "cannot run %s: %s" % (BIN, exc)
            return cache[key]
        if proc.returncode != 0:
            cache[key] = "exit %d: %s" % (proc.returncode,
                                          (proc.stderr.strip().splitlines()[-1:] or [""])[0])
            return cache[key]
        cache[cmd] = csv_rows(proc.stdout)
        if schedule:
            with open(path) as f:
                cache[key] = csv_rows(f.read())
    return cache[key]


def ops_sums(sched, prefix):
    """{ops_ms, ops_fwd_ms, ops_bwd_ms}: the summed dur_us, in ms, of the
    schedule's compute-stream fwd and bwd ops whose name starts with prefix;
    None when no op matches."""
    got = {"fwd": 0.0, "bwd": 0.0}
    n = 0
    for r in sched:
        if r.get("stream") == "compute" and r.get("kind") in got and \
                (r.get("name") or "").startswith(prefix):
            got[r["kind"]] += float(r["dur_us"]) / 1000.0
            n += 1
    if n == 0:
        return None
    return {"ops_ms": got["fwd"] + got["bwd"], "ops_fwd_ms": got["fwd"],
            "ops_bwd_ms": got["bwd"]}


def same(a, b):
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def predict(cache, row, extra=""):
    """(predicted value, None, output row) or (None, reason, None); extra:
    options appended to the row's command."""
    cmd = row["command"].strip()
    if cmd in ("", "-"):
        return None, "not expressible", None
    want = [kv.split("=", 1) for kv in row["select"].split(";") if kv.strip()]
    ops = [v for k, v in want if k.strip() == "ops"]
    want = [(k, v) for k, v in want if k.strip() != "ops"]
    # an ops row's schedule first: its run caches the output rows too
    sched = run_command(cache, cmd + extra, schedule=True) if ops else None
    if isinstance(sched, str):
        return None, "FAILED " + sched, None
    out = run_command(cache, cmd + extra)
    if isinstance(out, str):
        return None, "FAILED " + out, None
    hits = [r for r in out if all(k in r and same(r[k], v) for k, v in want)]
    if not hits:
        return None, "FAILED no output row with %s" % row["select"], None
    if len(hits) > 1:
        # taking the first would pick one of several predictions silently
        return None, "FAILED %d output rows with %s (select must name one)" % (
            len(hits), row["select"]), None
    names = {}
    for k, v in hits[0].items():
        try:
            names[k] = float(v)
        except (TypeError, ValueError):
            pass
    if ops:
        sums = ops_sums(sched, ops[0])
        if sums is None:
            return None, "FAILED no compute op in the schedule named %s..." % ops[0], None
        names.update(sums)
    expr = row["metric"]
    for name in NAME_RE.findall(expr):
        if name not in names:
            return None, "FAILED no numeric column %s" % name, None
    try:
        value = eval(expr, {"__builtins__": {}}, names)  # columns and + - * / only
    except ZeroDivisionError:
        return None, "FAILED %s divides by zero" % expr, None
    if "compute_rates" in hits[0]:
        names["compute_rates"] = hits[0]["compute_rates"]
    return value, None, names


def host_bound(out):
    """Whether the prediction is host-bound, as ddpsim's summary says it
    (host_exposed_ms a tenth of iter_ms or more); None for an output
    without those columns (collectives)."""
    if not out or "host_exposed_ms" not in out or not out.get("iter_ms"):
        return None
    return out["host_exposed_ms"] >= 0.1 * out["iter_ms"]


# ddpsim's compute_rates sources (sim/train/rates.c ds_rate_used_source_name):
# a calibration file's source measured on another GPU than the run's is
# named with this suffix (calib_other_gpu, calib_flops_other_gpu), and
# ds_rates_unmeasured counts every one of them as unmeasured.
OTHER_GPU = "_other_gpu"
# The compute_rates sources no measurement of the rate's own class and math
# on this GPU backs, least backed first: a u row is counted under the first
# it used. One list, matched by unmeasured_source(), which also takes any
# other *_other_gpu source (tests/test_validation_unmeasured.c checks it
# against ds_rates_unmeasured for every source ddpsim names).
UNMEASURED_KINDS = ("typical", "gpu_table_proxy", "calib_flops" + OTHER_GPU,
                    "calib" + OTHER_GPU, "calib_flops", "as_matmul")


def unmeasured_source(source):
    """Whether one compute_rates source is unmeasured (UNMEASURED_KINDS)."""
    return source in UNMEASURED_KINDS or source.endswith(OTHER_GPU)


def unmeasured(out, row):
    """Whether the prediction used a compute rate no measurement of its
    own backs: ddpsim's compute_rates column (NAME=SOURCE;...) names a
    typical one (the topology's flops_efficiency / mem_efficiency),
    attention at matmul's rate (as_matmul) or a GPU table value the table
    marks a stand-in (gpu_table_proxy: another GPU's, math's or operation's
    measurement, e.g. A100's conv_tf32 at the f16 convolution's fraction,
    H100's values taken from the H200),
    a calibration file's flops_efficiency pricing a class it has no value
    for (calib_flops: its GEMMs, in one math), or a calibration file's value
    measured on another GPU than the run's (calib_other_gpu,
    calib_flops_other_gpu: that GPU's fraction of its peak standing in for
    this one's). None where no rate enters the
    metric (peak memory) or the output has no such column (collectives)."""
    if not out or "compute_rates" not in out:
        return None
    if not set(NAME_RE.findall(row["metric"])) - RATE_FREE:
        return None
    return bool(unmeasured_kinds(out))


def unmeasured_kinds(out):
    """The unmeasured sources (unmeasured_source())
    among the output row's compute_rates."""
    sources = [kv.split("=", 1)[-1] for kv in out.get("compute_rates", "").split(";") if kv]
    return set(s for s in sources if unmeasured_source(s))


def least_backed(kinds):
    """The least backed of unmeasured sources: the first in UNMEASURED_KINDS,
    else (a *_other_gpu source the list lacks) the first by name."""
    listed = [k for k in UNMEASURED_KINDS if k in kinds]
    return listed[0] if listed else sorted(kinds)[0]


def host_range(cache, row, factors, pred):
    """(low, high) over the predictions at the two host factors and the
    default's, pred (a ratio need not be monotone in the host), or None."""
    preds = [predict(cache, row, " --host-scale %g" % f)[0] for f in factors]
    if any(p is None for p in preds):
        return None
    return min(preds + [pred]), max(preds + [pred])


# One path in a row's source: its results folder and, where the path names a
# CSV in it (or below it), the CSV's name; one regex, so that a source naming
# two folders never pairs one folder with the other's CSV.
SOURCE_PATH_RE = re.compile(r"bench/results/(?P<folder>[^/\s]+)/"
                            r"(?:(?:(?!bench/results/)[^\s(,;])*/)?"
                            r"(?:(?P<csv>[^/\s(,;]+)\.csv)?")


def own_calib(row):
    """(path relative to ROOT, same process) of the calibration file of the
    lend that measured the row, or None when there is none: host-<lend>-
    <stem>.yaml where one was taken in the row's own process (<stem> its
    source CSV's name: bench/host_inproc.py writes its rows and its
    calibration together), same process True; else the lend's
    host-<lend>.yaml (its source's results folder), same process False."""
    paths = list(SOURCE_PATH_RE.finditer(row["source"]))
    if not paths:
        return None
    folder = paths[0].group("folder")  # the first folder named is the lend's
    names = [("host-%s.yaml" % folder, False)]
    csvs = [m.group("csv") for m in paths if m.group("folder") == folder and m.group("csv")]
    if csvs:
        names.insert(0, ("host-%s-%s.yaml" % (folder, csvs[0]), True))
    for name, same in names:
        path = os.path.join("validation", "host_calibs", name)
        if os.path.isfile(os.path.join(ROOT, path)):
            return path, same
    return None


def size_bytes(row):
    for kv in row["select"].split(";"):
        if kv.startswith("size_bytes="):
            return int(kv.split("=", 1)[1])
    return None


def short_source(src):
    return src.split(" (")[0]


def stats(errs):
    if not errs:
        return "n=0"
    a = [abs(e) for e in errs]
    return "n=%-3d median %6.1f %%  worst %6.1f %%" % (len(a), statistics.median(a), max(a))


def points(diffs):
    """'|predicted - measured| median M points, worst W points (n=N)'."""
    if not diffs:
        return "n=0"
    a = [abs(d) for d in diffs]
    return "|predicted - measured| median %.1f points, worst %.1f points (n=%d)" % (
        statistics.median(a), max(a), len(a))


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.2f" % v
    return "%.3f" % v


class Tally:
    """What targets() needs, gathered while the report runs: per group its
    non-fit rows with a prediction (row, error %, predicted - measured,
    approx, host-bound), its host-bound rows' count within the measured
    hosts' range, and its pairs (whether each has the measured sign, and
    whether its measured difference is within its repeated runs' range)."""

    def __init__(self):
        self.rows = {}  # group -> [(row, err, diff, approx, host-bound or None)]
        self.ranged = {}  # group -> (within, non-fit host-bound rows run at the range)
        # per pair of non-fit rows: (sign matches, approx, noise): noise is
        # whether the measured difference lies within the range of the pair's
        # repeated runs (repeat_range), None where neither row is repeated
        self.pairs = []

    def of(self, group):
        return self.rows.get(group, [])


def median_worst(values):
    """(median, worst) of |values|, or None when there are none."""
    a = [abs(v) for v in values]
    return (statistics.median(a), max(a)) if a else None


def errors_line(what, errs):
    """'WHAT: n=N median M %, worst W %' of |errs|."""
    mw = median_worst(errs)
    if mw is None:
        return "%s: n=0" % what
    return "%s: n=%d median %.1f %%, worst %.1f %%" % ((what, len(errs)) + mw)


def source_kind(row):
    """Who published a DDP row and whether it ran AMP: (its repository, the
    source's first word, or "this project"; True for AMP in its software)."""
    src = row["source"]
    who = "this project" if src.startswith("this project") else src.split()[0]
    return who, "AMP" in PRECISION_RE.findall(row["software"])


def sign(a, b):
    """1, 0 or -1 as a > b, a ties b, a < b: a tie where they differ by at
    most TIE_REL of the larger, the same rule for the measured values and the
    predicted ones; no tolerance for the measurement's noise is applied
    (docs/validation.md, "Targets")."""
    if abs(a - b) <= TIE_REL * max(abs(a), abs(b)):
        return 0
    return (a > b) - (a < b)


def repeat_key(r):
    """Rows measuring one configuration: the same command, metric, select and unit."""
    return (r["command"].strip(), r["metric"].strip(), r["select"].strip(), r["unit"].strip())


def repeat_range(repeats, rows, difference):
    """Whether a pair's measured difference is at most the larger range
    (max - min) of the measured runs of its two rows' configurations
    (repeats: repeat_key -> the group's rows), or None where neither
    configuration was measured more than once."""
    ranges = []
    for r in rows:
        vals = [float(m["value"]) for m in repeats.get(repeat_key(r), [])]
        if len(vals) > 1:
            ranges.append(max(vals) - min(vals))
    return difference <= max(ranges) if ranges else None


def met(ok):
    return "met yes" if ok else "met no"


def close(points):
    """How many DDP-over-single rows lie within DDP_POINTS of the measured."""
    return sum(1 for d in points if abs(d) <= DDP_POINTS)


def targets(t):
    """Lines stating issue #12's four targets with the numbers that decide
    them (docs/validation.md, "Targets"), from the rows in t (a Tally):
    every number is computed here, "met" from the thresholds above. One rule
    for all four: a target is decided on every non-fit row with a
    prediction, approx rows included (they are what ddpsim offers for those
    setups), and each also gives its numbers without the approx rows. Each
    target's line is indented 2, the numbers that decide it 6, a breakdown
    of them 8 (README.md shows the first two and, of the third, the lines
    without the approx rows: grep -v on 8 spaces and a letter but w)."""
    out = ["== targets (issue #12; non-fit rows with a prediction, approx rows included)"]

    # (1) collectives from 1 MiB
    big = [(e, a) for r, e, _, a, _ in t.of("collectives")
           if (size_bytes(r) or 0) >= COLL_MIN_BYTES]
    mw = median_worst([e for e, _ in big])
    out.append("  (1) collectives >= %d MiB: median <= %g %%, worst <= %g %%: %s"
               % (COLL_MIN_BYTES >> 20, COLL_MEDIAN_PCT, COLL_WORST_PCT,
                  met(mw is not None and mw[0] <= COLL_MEDIAN_PCT and mw[1] <= COLL_WORST_PCT)))
    out.append("      " + errors_line("all rows", [e for e, _ in big]))
    if any(a for _, a in big):
        out.append("        " + errors_line("without the approx rows", [e for e, a in big if not a]))

    # (2) every single-GPU training row within ITER_PCT, in its published unit
    train = t.of("training")
    errs = [e for _, e, _, _, _ in train]
    within = sum(1 for e in errs if abs(e) <= ITER_PCT)
    out.append("  (2) single-GPU training within %g %% (iteration or throughput, as published), "
               "every row: %s"
               % (ITER_PCT, met(errs and within == len(errs))))
    mw = median_worst(errs)
    if mw:
        out.append("      %d of %d rows within, median %.1f %%, worst %.1f %%"
                   % ((within, len(errs)) + mw))
    exact = [e for _, e, _, a, _ in train if not a]
    if len(exact) < len(train):
        out.append("        without the approx rows: %d of %d within, median %.1f %%, worst %.1f %%"
                   % ((sum(1 for e in exact if abs(e) <= ITER_PCT), len(exact))
                      + (median_worst(exact) or (0.0, 0.0))))
    hb = [e for _, e, _, _, b in train if b is True]
    if hb:
        gb = [e for _, e, _, _, b in train if b is False]
        out.append("        " + errors_line("predicted host-bound", hb) + "; "
                   + errors_line("GPU-bound", gb))
    if "training" in t.ranged:
        out.append("        host-bound rows within the measured hosts' range: %d of %d"
                   % t.ranged["training"])
    # forward and backward times of one step (phases.csv) are parts of an
    # iteration, timed apart, not the iteration or throughput the target
    # names: shown, not counted (the training group's steps without an
    # optimizer, ryujaehun's, are each a whole iteration of their loop: counted)
    phases = [e for _, e, _, _, _ in t.of("phases")]
    if phases:
        out.append("        " + errors_line("forward/backward phase rows (phases group, not counted)",
                                              phases))

    # (3) every DDP-over-single ratio (unit %) within DDP_POINTS points, per source
    ddp = [(r, d, a) for r, _, d, a, _ in t.of("ddp_scaling") if r["unit"].strip() == "%"]
    out.append("  (3) DDP over single within %g points, every row in %%: %s"
               % (DDP_POINTS, met(ddp and close(d for _, d, _ in ddp) == len(ddp))))
    kinds = [None]  # None: every row
    for r, _, _ in ddp:
        if source_kind(r) not in kinds:
            kinds.append(source_kind(r))
    by_kind = []  # (name, numbers) per source kind, aligned on the longest name
    for k in kinds:
        rows = [(r, d) for r, d, _ in ddp if k is None or source_kind(r) == k]
        ds = [d for _, d in rows]
        words = sorted(set(w for r, _ in rows for w in PRECISION_RE.findall(r["software"])))
        if not ds:
            continue
        numbers = ("%d of %d within, |points| median %.1f, worst %.1f (%+.1f to %+.1f)"
                   % ((close(ds), len(ds)) + median_worst(ds) + (min(ds), max(ds))))
        if k is None:
            out.append("      all rows: " + numbers)
            exact = [d for _, d, a in ddp if not a]
            if len(exact) < len(ddp):
                out.append("        without the approx rows: %d of %d within, |points| median %.1f, "
                           "worst %.1f" % ((close(exact), len(exact))
                                           + (median_worst(exact) or (0.0, 0.0))))
        else:
            by_kind.append(("%s %s:" % (k[0], "/".join(words) or "-"), numbers))
    width = max((len(name) for name, _ in by_kind), default=0)
    for name, numbers in by_kind:
        out.append("        %-*s %s" % (width, name, numbers))

    # (4) every bucket-size pair with the measured sign (a pair that cannot
    # be compared counts as not met)
    right = sum(1 for ok, _, _ in t.pairs if ok)
    out.append("  (4) bucket-size comparisons with the measured sign, every pair: %s"
               % met(t.pairs and right == len(t.pairs)))
    out.append("      %d of %d pairs" % (right, len(t.pairs)))
    exact = [ok for ok, a, _ in t.pairs if not a]
    if len(exact) < len(t.pairs):
        out.append("        without the approx pairs: %d of %d" % (sum(exact), len(exact)))
    # shown, not deciding: a pair whose measured difference is no larger
    # than the spread of the same commands measured again has a sign the
    # measurement does not resolve (each pair still counts above)
    if any(n is not None for _, _, n in t.pairs):
        parts = []
        for name, want in (("within it", True), ("beyond it", False), ("not repeated", None)):
            oks = [ok for ok, _, n in t.pairs if n is want]
            parts.append("%s %d of %d" % (name, sum(oks), len(oks)))
        out.append("        by the measured difference against the range of the pair's "
                   "repeated runs: " + ", ".join(parts))
    return out


USAGE = """usage: [DDPSIM_BIN=bin/ddpsim] python3 validation/run.py [--targets]

Runs the ddpsim command of every row of validation/*.csv (DDPSIM_BIN, default
bin/ddpsim; build it first with make) and prints each group's errors against
the published measurements, then issue #12's four targets.
  --targets   print only the targets' summary (every row still runs)
  -h, --help  this text
A row of your own: a line in one of those CSVs, or a CSV of your own in
validation/ with the same columns (validation/README.md), shows in the report.
Exit status: 0; 1 when a row's command failed or matched no output row; 2 on
an unknown option or a malformed CSV (its file, line and column named)."""


def main(argv):
    only_targets = False
    for a in argv:
        if a == "--targets":
            only_targets = True
        elif a in ("-h", "--help"):
            print(USAGE)
            return 0
        else:
            print("validation/run.py: unknown option '%s'\n%s" % (a, USAGE), file=sys.stderr)
            return 2
    tally = Tally()
    try:
        groups = [(path, load_group(path))
                  for path in sorted(glob.glob(os.path.join(ROOT, "validation", "*.csv")))]
        check_pairs(groups)
    except CsvError as e:
        print("validation/run.py: %s" % e, file=sys.stderr)
        return 2
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink if only_targets else sys.stdout):
        failed = report(tally, groups)
    if not only_targets:
        print()
    for line in targets(tally):
        print(line)
    if failed:
        print("\n%d row(s) failed to run or to match an output row" % failed)
        return 1
    return 0


def report(tally, groups):
    """Print the report (every group, then overall) of groups, [(path, rows)]
    as load_group read them, fill tally; return the number of rows that failed
    to run or to match an output row."""
    cache = {}
    failed = 0
    overall, overall_exact = [], []  # relative errors of the rows not in %
    overall_pts, overall_pts_exact = [], []  # rows in %: predicted - measured, points
    overall_rates = {True: [], False: []}  # non-fit rows by unmeasured(): see by_rates
    factors = host_factors()
    overall_in = [0, 0]  # host-bound non-fit rows: within the range, all
    print("ddpsim validation: %s against %d groups (validation/*.csv)" % (BIN, len(groups)))
    print("error = (predicted - measured) / measured in the unit the row was published in"
          " (a throughput's")
    print("    +10 % is an iteration time's -9.1 %: time error = -e / (1 + e));"
          " diff = predicted - measured")
    print("    in the row's unit; rows in % (ratios) are summarised in points (diff), apart"
          " from the relative")
    print("    errors of the other rows")
    print("~ = the command only approximates the measured setup; fit rows are excluded from summaries")
    print("u = the prediction used a compute rate no measurement of its own backs (ddpsim's"
          " compute_rates: the")
    print("    typical flops_efficiency / mem_efficiency, attention at matmul's rate, a GPU"
          " table stand-in, or")
    print("    a --calib file's flops_efficiency standing in for a class or its values"
          " measured on another GPU)")
    for path, rows in groups:
        group = os.path.splitext(os.path.basename(path))[0]
        srcs = []
        for r in rows:
            s = short_source(r["source"])
            if s not in srcs:
                srcs.append(s)
        print("\n== %s (%d rows)" % (group, len(rows)))
        for i, s in enumerate(srcs):
            print("  [%d] %s" % (i + 1, s))
        print("%-4s %-44s %-58s %-6s %10s %10s %9s %8s %-3s" % (
            "src", "machine", "measured", "unit", "measured", "predicted", "error%", "diff", "fit"))
        per_src = {s: [] for s in srcs}
        per_src_exact = {s: [] for s in srcs}
        per_src_pts = {s: [] for s in srcs}  # rows in %: predicted - measured, points
        per_src_big_exact = {}
        grp, grp_exact, grp_big, grp_big_exact, pts = [], [], [], [], []
        by_bound = {True: [], False: []}
        by_rates = {True: [], False: []}  # non-fit rows: used an unmeasured rate, or not
        by_kind = {}  # the u rows by their least backed kind (UNMEASURED_KINDS' order)
        ranged = []  # host-bound rows: (row, measured, predicted, low, high)
        owned = []  # rows of a calibrated lend: (row, measured, pooled, own, calib, same process)
        pairs = {}
        for r in rows:
            meas = float(r["value"])
            pred, why, out = predict(cache, r)
            s = short_source(r["source"])
            approx = r["expressible"].strip() == "approx"
            if why and why.startswith("FAILED"):
                failed += 1
            if pred is None:
                err_s, diff_s = why, ""
            else:
                err = 100.0 * (pred - meas) / meas
                err_s, diff_s = "%+8.1f%%" % err, "%+8.2f" % (pred - meas)
                hb = host_bound(out)
                if r["fit"].strip() != "yes" and r["unit"].strip() == "%":
                    # a ratio in %: its error is in points (pred - meas),
                    # not relative (a relative error of a ratio near 100 %
                    # is small by construction), so it stays out of the
                    # relative summaries below and has its own
                    pts.append(pred - meas)
                    per_src_pts[s].append(pred - meas)
                    overall_pts.append(pred - meas)
                    if not approx:
                        overall_pts_exact.append(pred - meas)
                    tally.rows.setdefault(group, []).append((r, err, pred - meas, approx, hb))
                elif r["fit"].strip() != "yes":
                    per_src[s].append(err)
                    grp.append(err)
                    overall.append(err)
                    # the host's speed moves times and rates, not memory
                    if hb is not None and TIMED.intersection(NAME_RE.findall(r["metric"])):
                        by_bound[hb].append(err)
                    um = unmeasured(out, r)
                    if um is not None:
                        by_rates[um].append(err)
                        overall_rates[um].append(err)
                    if um:
                        kinds = unmeasured_kinds(out)
                        kind = least_backed(kinds)
                        by_kind.setdefault(kind, []).append(err)
                    if not approx:
                        per_src_exact[s].append(err)
                        grp_exact.append(err)
                        overall_exact.append(err)
                    sz = size_bytes(r)
                    if sz is not None and sz >= 1 << 20:
                        grp_big.append(err)
                        if not approx:
                            grp_big_exact.append(err)
                            per_src_big_exact.setdefault(s, []).append(err)
                    tally.rows.setdefault(group, []).append((r, err, pred - meas, approx, hb))
                if host_bound(out) and TIMED.intersection(NAME_RE.findall(r["metric"])):
                    rng = host_range(cache, r, factors, pred)
                    if rng is None:
                        failed += 1
                    else:
                        ranged.append((r, meas, pred) + rng)
                calib = own_calib(r)
                if calib and TIMED.intersection(NAME_RE.findall(r["metric"])):
                    own = predict(cache, r, " --calib %s" % calib[0])[0]
                    if own is None:
                        failed += 1
                    else:
                        owned.append((r, meas, pred, own) + calib)
                if r["pair"].strip():
                    pairs.setdefault(r["pair"].strip(), []).append((r, meas, pred))
            print("%-4s %-44.44s %-58.58s %-6s %10s %10s %9s %8s %-3s%s" % (
                "[%d]" % (srcs.index(s) + 1), r["machine"], r["measured"], r["unit"], fmt(meas),
                fmt(pred), err_s if pred is not None else "", diff_s, r["fit"],
                (" ~" if approx else "") + (" u" if unmeasured(out, r) else "")
                + ("" if pred is not None else "  (" + why + ")")))
        print("-- %s summary (non-fit rows with a prediction)" % group)
        for i, s in enumerate(srcs):
            if per_src[s] or not per_src_pts[s]:
                print("  [%d] %-60.60s all: %s | exact: %s" % (i + 1, s, stats(per_src[s]),
                                                              stats(per_src_exact[s])))
            if per_src_pts[s]:
                print("  [%d] %-60.60s rows in %%: %s" % (i + 1, s, points(per_src_pts[s])))
        print("  group all   : %s" % stats(grp))
        print("  group exact : %s" % stats(grp_exact))
        if by_rates[True] or by_rates[False]:
            print("  u: used an unmeasured compute rate                         : %s"
                  % stats(by_rates[True]))
            print("     measured rates only                                     : %s"
                  % stats(by_rates[False]))
            words = {"typical": "a typical flops_/mem_efficiency",
                     "gpu_table_proxy": "a GPU table stand-in, no typical",
                     "calib_flops" + OTHER_GPU: "another GPU's --calib flops_efficiency",
                     "calib" + OTHER_GPU: "--calib's values of another GPU",
                     "calib_flops": "--calib's flops_efficiency standing in",
                     "as_matmul": "attention at matmul's rate only"}
            for kind in list(UNMEASURED_KINDS) + sorted(set(by_kind) - set(UNMEASURED_KINDS)):
                if kind in by_kind:
                    print("     u rows with %-43s: %s" % (words.get(kind, kind),
                                                          stats(by_kind[kind])))
        if by_bound[True]:
            print("  predicted host-bound (host exposed >= 10 %% of the iteration): %s"
                  % stats(by_bound[True]))
            print("  predicted GPU-bound                                        : %s"
                  % stats(by_bound[False]))
        if ranged:
            # a report, not a check: where the measured hosts' spread puts the row
            print("  host-bound rows at the measured hosts' range (host costs x%g to x%g):"
                  % factors)
            inside = 0
            for r, meas, pred, lo, hi in ranged:
                where = "within" if lo <= meas <= hi else "below" if meas < lo else "above"
                fit = r["fit"].strip() == "yes"
                if not fit:
                    inside += where == "within"
                print("    %-58.58s measured %s, predicted %s (%s to %s): %s%s" % (
                    r["measured"], fmt(meas), fmt(pred), fmt(lo), fmt(hi), where,
                    " (fit)" if fit else ""))
            n_ranged = sum(1 for x in ranged if x[0]["fit"].strip() != "yes")
            print("  host-bound rows: %d of %d within the measured hosts' range (non-fit)"
                  % (inside, n_ranged))
            overall_in[0] += inside
            overall_in[1] += n_ranged
            tally.ranged[group] = (inside, n_ranged)
        if owned:
            # a report, not a check: the pooled host costs against the lend's
            # own (measured by another process on that lend, or by the row's
            # own process: "own process")
            print("  rows measured on a lend with its own host calibration (--calib"
                  " validation/host_calibs/host-<lend>[-<source csv>].yaml):")
            errs = {}  # same process -> ([|pooled error|], [|own error|]), non-fit rows
            for r, meas, pred, own, calib, same in owned:
                e_pool, e_own = (100.0 * (p - meas) / meas for p in (pred, own))
                fit = r["fit"].strip() == "yes"
                if not fit:
                    errs.setdefault(same, ([], []))[0].append(abs(e_pool))
                    errs[same][1].append(abs(e_own))
                lend = SOURCE_PATH_RE.search(r["source"]).group("folder")
                print("    %-50.50s %-20s measured %s, pooled %s (%+.1f %%), "
                      "own %s %s (%+.1f %%)%s" % (r["measured"], lend, fmt(meas), fmt(pred),
                                                  e_pool, "process" if same else "lend",
                                                  fmt(own), e_own, " (fit)" if fit else ""))
            if errs:
                both = [sum((errs[k][i] for k in errs), []) for i in (0, 1)]
                print("  own-calibration rows (own lend or own process): n=%d, median |error| "
                      "pooled %.1f %%, own lend or own process %.1f %% (non-fit)"
                      % (len(both[0]), statistics.median(both[0]), statistics.median(both[1])))
                for same, what in ((False, "another process on the lend"),
                                   (True, "the row's own process")):
                    if same in errs and len(errs) > 1:
                        print("    calibrated in %-28s n=%d, median |error| pooled %.1f %%, "
                              "own %.1f %%" % (what + ":", len(errs[same][0]),
                                              statistics.median(errs[same][0]),
                                              statistics.median(errs[same][1])))
        if grp_big:
            print("  sizes >= 1 MiB, all  : %s" % stats(grp_big))
            print("  sizes >= 1 MiB, exact: %s" % stats(grp_big_exact))
            for i, src in enumerate(srcs):
                if src in per_src_big_exact:
                    print("    [%d] %-55.55s %s" % (i + 1, src, stats(per_src_big_exact[src])))
        if pts:
            print("  rows in %%: %s" % points(pts))
        repeats = {}
        for r in rows:
            if r["command"].strip() not in ("", "-"):
                repeats.setdefault(repeat_key(r), []).append(r)
        reps = [(k, m) for k, m in repeats.items() if len(m) > 1]
        if reps:
            # the same command measured on several machines or days: every run
            # is a row of its own and counts in the summaries (none preferred)
            print("  repeats (one command, several measured runs; each run a row of its own):")
            for key, members in reps:
                vals = [float(m["value"]) for m in members]
                pred, _, _ = predict(cache, members[0])
                errs = ("" if pred is None else ", errors %+.1f to %+.1f %%" % (
                    100.0 * (pred - max(vals)) / max(vals), 100.0 * (pred - min(vals)) / min(vals)))
                # a fit row among them is not validation: name each run, fit ones marked
                fits = [m["fit"].strip() == "yes" for m in members]
                runs = ("; runs %s" % ", ".join(
                    fmt(v) + (" (fit)" if f else "") for v, f in zip(vals, fits))
                    if any(fits) else "")
                print("    %-50.50s n=%d measured %s to %s (%.2fx), predicted %s%s%s" % (
                    members[0]["measured"], len(vals), fmt(min(vals)), fmt(max(vals)),
                    max(vals) / min(vals), fmt(pred), errs, runs))
        pair_rows = {}  # pair id -> its rows in the file, predicted or not
        for r in rows:
            if r["pair"].strip():
                pair_rows.setdefault(r["pair"].strip(), []).append(r)
        if pair_rows:
            match, n_pairs = 0, 0
            for pid, members in ((pid, pairs.get(pid, [])) for pid in pair_rows):
                n_pairs += 1
                nonfit = all(r["fit"].strip() != "yes" for r in pair_rows[pid])
                approx = any(r["expressible"].strip() == "approx" for r in pair_rows[pid])
                if len(pair_rows[pid]) != 2 or len(members) != 2:
                    # a pair that cannot be compared is a pair not shown
                    # right: it counts, as not met, in target (4)
                    print("  pair %-20s %d rows, %d with a prediction, need 2 and 2: not met"
                          % (pid, len(pair_rows[pid]), len(members)))
                    if nonfit:
                        tally.pairs.append((False, approx, None))
                    continue
                (ra, ma, pa), (rb, mb, pb) = members
                sm, sp = sign(ma, mb), sign(pa, pb)
                ok = sm == sp
                match += ok
                noise = repeat_range(repeats, pair_rows[pid], abs(ma - mb))
                if nonfit:  # the targets count pairs of non-fit rows only
                    tally.pairs.append((ok, approx, noise))
                rel = {1: ">", 0: "=", -1: "<"}
                print("  pair %-20s measured %s %s %s, predicted %s %s %s: sign %s%s" % (
                    pid, fmt(ma), rel[sm], fmt(mb), fmt(pa), rel[sp], fmt(pb),
                    "matches" if ok else "WRONG",
                    " (measured difference within its repeated runs' range)" if noise else ""))
            print("  pairs with the measured sign: %d of %d" % (match, n_pairs))
    print("\n== overall (every group, non-fit rows with a prediction)")
    print("  all   : %s  (rows not in %%)" % stats(overall))
    print("  exact : %s" % stats(overall_exact))
    print("  rows in %%, all  : %s" % points(overall_pts))
    print("  rows in %%, exact: %s" % points(overall_pts_exact))
    print("  rows with a compute rate (training, scaling, phases; not collectives or memory):")
    print("    u (an unmeasured compute rate): %s" % stats(overall_rates[True]))
    print("    measured compute rates only   : %s" % stats(overall_rates[False]))
    print("  host-bound rows: %d of %d within the measured hosts' range (host costs x%g to x%g)"
          % (overall_in[0], overall_in[1], factors[0], factors[1]))
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
