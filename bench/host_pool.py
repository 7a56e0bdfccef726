#!/usr/bin/env python3
"""Pool bench/host_calibrate.py runs into one host_dispatch and one host_node
(sim/net/topo_compute.c's defaults): per file and phase, the median of the
iterations whose spin outlasted the phase (its *_free flag 1; a phase with
none is left out and said so), then forward total ms over total kernel-launching dispatches
(the CSV's dispatches less the views of models/<model>.yaml: its host_views,
the dispatches that launch no kernel, which cost the host nothing measurable)
and backward total ms over total nodes that launch a kernel (host_nodes less the
model file's host_view_nodes, the nodes that launch nothing, free likewise), per folder (a host) and over all;
then each folder's host factor: the mean of its dispatch and node ratios to
the pool's (sim/net/topo_compute.c's ds_topo_host_factor_fastest and _slowest are the
smallest and largest, the hosts' range that ddpsim's summary prints for a
host-bound run).
Per folder whose models' view shares differ by 0.2 or more it also prints the evidence
for that rule: each file's forward per dispatch and per kernel-launching
dispatch, their spread over the folder's files (max/min, coefficient of
variation), and a least-squares fit fwd_ms = a x kernel dispatches + b x
views over the folder's files (relative residuals), b being what a view costs.
An AMP CSV's forward is left out (said so): its ms include autocast's
casts, which neither its dispatches nor the model file's host_dispatches
count and which ddpsim charges at host_cast, not host_dispatch; its backward
is pooled over host_nodes with host_amp_nodes (the casts' ToCopyBackward0,
which ddpsim charges at host_node).
The phase times are host_calibrate's own: with --pauses the pauses are
already subtracted. Standard library only.
With --calib-dir DIR it also writes, per folder, DIR/host-<lend>.yaml: a
calibration file (bin/ddpsim --calib) whose host: section holds that folder's
pooled dispatch and node, <lend> being the folder's first component under
bench/results (a lend's results folder; the host_calibrate runs may lie in a
subfolder of it); a folder without both figures writes none (said so).
Last, the optimizer step (host_step_call and host_step_param, sim/net/
topo_compute.c): per file the median of its step_ms over the iterations whose
step_free is 1, over the model's parameter tensors (a `tensors` column where
the CSV has one, else models/<model>.yaml's params entries, what
model.parameters() yields); per optimizer (the model file's `optimizer:`),
per folder and pooled as total ms over total tensors, then over the files'
medians a least-squares line ms = call + tensors x per-tensor, with both
fits' residuals per file.

    python3 bench/host_pool.py [--calib-dir DIR]
        bench/results/gpu-2026-11-26d-h200/call2/host-resnet50.csv ...
"""

import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, num  # noqa: E402

PHASES = (("fwd", "dispatches", "dispatch"), ("bwd", "nodes", "node"))
VIEWS = {}  # CSV path -> (model, views, dispatches) of its model file, from phase_terms
WHY = {}  # (CSV path, phase) -> why phase_terms left a phase out other than blocked
# the host section's unit, which ddpsim requires beside dispatch and node
# (sim/train/calib.c): per dispatch and per node that launch a kernel
HOST_UNIT = "launching"
MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def phase_terms(path):
    """[(phase, median ms, units, free iterations, iterations)] of one CSV."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames or ()
            rows = [(reader.line_num, r) for r in reader]
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    for key, count, _ in PHASES:
        for column in (key + "_ms", key + "_free", count):
            if column not in fields:
                raise InputError("%s:1: no column %s" % (path, column))
    if not rows:
        raise InputError("%s: no rows" % path)
    terms = []
    for key, count, _ in PHASES:
        free = [ms for ms, flag in ((num(r, key + "_ms", path, line),
                                     num(r, key + "_free", path, line)) for line, r in rows)
                if flag == 1]
        line, first = rows[0]
        units = num(first, count, path, line)
        if units != int(units) or units < 1:
            raise InputError("%s:%d: %s %r is not a count" % (path, line, count, first[count]))
        if key == "fwd":
            views = model_views(first.get("model", ""), int(units), path)
            VIEWS[path] = (first.get("model", ""), views, int(units))
            units -= views
            if first.get("amp", ""):
                # autocast's casts launch kernels too, but neither the CSV's
                # dispatches nor the model file's host_dispatches count them
                # (host_amp_casts does) and ddpsim charges them host_cast
                # apiece, not host_dispatch: the forward's ms over the
                # dispatches alone would fold them into host_dispatch, and
                # an AMP run would pay them twice (host_calibrate.py
                # --calib-out leaves dispatch out under --amp likewise)
                WHY[path, key] = ("--amp: the forward also runs autocast's casts, which "
                                  "ddpsim charges at host_cast, not host_dispatch")
                free = []
        else:
            units -= model_view_nodes(first.get("model", ""), int(units),
                                      bool(first.get("amp", "")), path)
        terms.append((key, statistics.median(free) if free else None, int(units), len(free),
                      len(rows)))
    return terms


def model_text(model, path):
    """(models/<model>.yaml's path, its text); a file that cannot be read is
    the CSV's error (path names the CSV)."""
    name = os.path.join(MODELS, model + ".yaml")
    try:
        with open(name) as f:
            return name, f.read()
    except OSError as e:
        raise InputError("%s: model %s: cannot read %s: %s" % (path, model, name, e.strerror))


def model_total(text, key):
    """A per-layer count summed over a model file's text (0 where absent)."""
    return sum(int(v) for v in re.findall(r"^    %s: (\d+)$" % key, text, re.M))


def model_view_nodes_total(text, amp):
    """A model file's nodes that launch nothing, summed: under autocast its
    host_view_nodes_amp where it has them (an add of a half and an fp32 input
    casts a gradient inside its node), else host_view_nodes, as ddpsim charges
    (sim/train/host.c)."""
    if amp and re.search(r"^    host_view_nodes_amp: ", text, re.M):
        return model_total(text, "host_view_nodes_amp")
    return model_total(text, "host_view_nodes")


def model_views(model, dispatches, path):
    """The forward's dispatches that launch no kernel (host_views summed over
    models/<model>.yaml's layers; 0 for a file without them), after checking
    that the file's host_dispatches sum to the CSV's count."""
    name, text = model_text(model, path)
    total, views = model_total(text, "host_dispatches"), model_total(text, "host_views")
    if total != dispatches:
        raise InputError("%s: model %s: %s dispatches %d, the CSV's %d%s" % (
            path, model, name, total, dispatches,
            other_unit(dispatches, total, views, "dispatches", "views", "kernel-launching")))
    return views


def other_unit(got, total, less, what, which, kind):
    """The note for a CSV whose count is the model file's less its views: the
    column counts all of them (host_calibrate.py --out's and, since
    2026-11-28d, host_inproc.py's per-round CSVs'); a host_inproc.py run
    between 2026-11-28c and 28d wrote the charged ones there."""
    if not less or got != total - less:
        return ""
    return (" (%d less the %d %s: the %s ones; the CSV's %s column counts every one, "
            "views included, as bench/host_calibrate.py --out writes it: write %d there)"
            % (total, less, which, kind, what, total))


def model_view_nodes(model, nodes, amp, path, check=True):
    """The backward's nodes that launch nothing (host_view_nodes, under
    autocast host_view_nodes_amp where the file has them, summed over
    models/<model>.yaml's layers; 0 for a file without them),
    after checking that the file's host_nodes (with host_amp_nodes under
    autocast) sum to the CSV's count."""
    name, text = model_text(model, path)

    def total(key):
        return model_total(text, key)
    every = total("host_nodes") + (total("host_amp_nodes") if amp else 0)
    if check and every != nodes:
        raise InputError("%s: model %s: %s nodes %d, the CSV's %d%s" % (
            path, model, name, every, nodes,
            other_unit(nodes, every, model_view_nodes_total(text, amp), "nodes",
                       "nodes that launch nothing", "kernel-launching")))
    return model_view_nodes_total(text, amp)


def print_kinds(files):
    """Per folder: each file's forward per dispatch and per kernel-launching
    dispatch, their spread, and the least-squares view cost (docstring)."""
    by_folder = {}
    for path, terms in files:
        fwd = next(t for t in terms if t[0] == "fwd")
        if fwd[1] is not None:
            model, views, dispatches = VIEWS[path]
            by_folder.setdefault(os.path.dirname(path), []).append(
                (os.path.basename(path), model, fwd[1], dispatches, views))
    for folder, rows in by_folder.items():
        shares = [v / d for _, _, _, d, v in rows]
        if max(shares) - min(shares) < 0.2:
            continue  # views a like share of every model (CNNs: 15-20 %): nothing to tell
        print("%s: forward per dispatch / per kernel-launching dispatch:" % folder)
        for name, model, ms, d, v in rows:
            print("  %-40s %8.3f ms: %4d dispatches %6.2f us, %4d kernel-launching %6.2f us "
                  "(%d views)" % (name, ms, d, ms * 1e3 / d, d - v, ms * 1e3 / (d - v), v))
        for label, rates in (("per dispatch", [ms * 1e3 / d for _, _, ms, d, _ in rows]),
                             ("per kernel-launching dispatch",
                              [ms * 1e3 / (d - v) for _, _, ms, d, v in rows])):
            print("  %s: max/min %.2f, coefficient of variation %.1f %%" % (
                label, max(rates) / min(rates),
                100 * statistics.pstdev(rates) / statistics.mean(rates)))
        # minimise sum ((a k + b v) / ms - 1)^2: normal equations in (a, b)
        xs = [((d - v) / ms, v / ms) for _, _, ms, d, v in rows]
        s11 = sum(x * x for x, _ in xs)
        s12 = sum(x * y for x, y in xs)
        s22 = sum(y * y for _, y in xs)
        t1, t2 = sum(x for x, _ in xs), sum(y for _, y in xs)
        det = s11 * s22 - s12 * s12
        if det > 0:
            a, b = (t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det
            print("  least squares: %.2f us a kernel-launching dispatch + %.2f us a view"
                  % (a * 1e3, b * 1e3))


def model_params(model, path):
    """(parameter tensors, optimizer) of models/<model>.yaml: its params
    entries (6-space list items under a layer's params:, each tensor once,
    as model.parameters() yields them) and its optimizer: line."""
    name, text = model_text(model, path)
    tensors = len(re.findall(r"^      - \{name: .*numel:", text, re.M))
    opt = re.search(r"^optimizer: (\w+)", text, re.M)
    if not tensors or not opt:
        raise InputError("%s: model %s: %s has no params or no optimizer" % (path, model, name))
    return tensors, opt.group(1)


def step_term(path):
    """(model, optimizer, median step ms or None, tensors, free, iterations)
    of one CSV: the step phase's median over its step_free iterations."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or ()
        rows = [(reader.line_num, r) for r in reader]
    for column in ("model", "step_ms", "step_free"):
        if column not in fields:
            raise InputError("%s:1: no column %s" % (path, column))
    line, first = rows[0]
    tensors, opt = model_params(first["model"], path)
    if "tensors" in first:
        tensors = int(num(first, "tensors", path, line))
    free = [ms for ms, flag in ((num(r, "step_ms", path, line), num(r, "step_free", path, line))
                                for line, r in rows) if flag == 1]
    return (first["model"], opt, statistics.median(free) if free else None, tensors, len(free),
            len(rows))


def line_fit(points):
    """Least squares y = a + b x over (x, y) points: (a, b); (None, None)
    with fewer than two distinct x."""
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        return None, None
    mx, my = statistics.mean(xs), statistics.mean(y for _, y in points)
    b = (sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs))
    return my - b * mx, b


def print_steps(paths):
    """The step's host per parameter tensor, per optimizer (main's last part)."""
    terms = [(p, step_term(p)) for p in paths]
    for opt in sorted(set(t[1] for _, t in terms)):
        mine = [(p, t) for p, t in terms if t[1] == opt and t[2] is not None]
        for p, t in terms:
            if t[1] == opt and t[2] is None:
                print("  %-40s step: left out (the spin ended first in all %d iterations)"
                      % (os.path.basename(p), t[5]))
        if not mine:
            continue
        print("step (%s):" % opt)
        for p, t in mine:
            print("  %-40s step: %.3f ms / %d tensors = %.2f us (median of %d free of %d)"
                  % (os.path.basename(p), t[2], t[3], t[2] * 1e3 / t[3], t[4], t[5]))
        by_folder = {}
        for p, t in mine:
            by_folder.setdefault(os.path.dirname(p), []).append(t)
        for label, ts in list(by_folder.items()) + [("pooled", [t for _, t in mine])]:
            ms, n = sum(t[2] for t in ts), sum(t[3] for t in ts)
            print("%s: step (%s) %.3f ms / %d tensors = %.3f us" % (label, opt, ms, n, ms * 1e3 / n))
        per = sum(t[2] for _, t in mine) / sum(t[3] for _, t in mine)
        a, b = line_fit([(t[3], t[2]) for _, t in mine])
        if a is None:
            print("step (%s): one tensor count only, no line" % opt)
            continue
        print("step (%s) line over the %d files' medians: %.3f ms a call + %.3f us a tensor"
              % (opt, len(mine), a, b * 1e3))
        sq = [0.0, 0.0]
        for p, t in mine:
            r1, r2 = t[2] - per * t[3], t[2] - a - b * t[3]
            sq[0] += r1 * r1
            sq[1] += r2 * r2
            print("  %-40s residual: per tensor %+.3f ms, line %+.3f ms"
                  % (os.path.basename(p), r1, r2))
        print("step (%s) rms residual: per tensor %.3f ms, line %.3f ms"
              % (opt, (sq[0] / len(mine)) ** 0.5, (sq[1] / len(mine)) ** 0.5))


def pooled(terms, key):
    ms = sum(t[1] for t in terms if t[0] == key and t[1] is not None)
    units = sum(t[2] for t in terms if t[0] == key and t[1] is not None)
    return ms, units


def lend_name(folder):
    """The lend a folder of runs belongs to: its first component under a
    results directory (bench/results/gpu-2026-11-26d-h200/call2 ->
    gpu-2026-11-26d-h200), else the folder's own name."""
    parts = os.path.normpath(folder).split(os.sep)
    if "results" in parts[:-1]:
        return parts[parts.index("results") + 1]
    return os.path.basename(os.path.abspath(folder))


def write_calib(calib_dir, folder, paths, dispatch_us, node_us):
    """DIR/host-<lend>.yaml with the folder's pooled figures, written to a
    temporary file first and renamed (a reader never sees half a file)."""
    out = os.path.join(calib_dir, "host-%s.yaml" % lend_name(folder))
    text = ("# bench/host_pool.py --calib-dir: the pooled host costs of one lend\n"
            "# (%s): forward ms over kernel-launching dispatches (the\n"
            "# model files' host_dispatches less host_views) and backward ms over\n"
            "# nodes that launch a kernel (host_nodes less host_view_nodes):\n"
            "# each file's median over the iterations whose spin outlasted\n"
            "# the phase, of these runs:\n"
            "%s"
            "schema_version: 1\n"
            "host:\n"
            "  unit: %s\n"
            "  dispatch: %.3fus\n"
            "  node: %.3fus\n") % (folder, "".join("#   %s\n" % p for p in paths),
                                   HOST_UNIT, dispatch_us, node_us)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return out


def main():
    args = sys.argv[1:]
    calib_dir = None
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if args[:1] == ["--calib-dir"]:
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        calib_dir, args = args[1], args[2:]
        if not os.path.isdir(calib_dir):
            print("host_pool: --calib-dir %s: not a directory" % calib_dir, file=sys.stderr)
            return 2
    if not args:  # nothing to pool: the usage, a usage error
        print(__doc__, file=sys.stderr)
        return 2
    by_host, every = {}, []
    try:
        files = [(path, phase_terms(path)) for path in args]
    except InputError as e:
        print("host_pool: %s" % e, file=sys.stderr)
        return 2
    for path, terms in files:
        for t in terms:
            by_host.setdefault(os.path.dirname(path), []).append(t)
            every.append(t)
            name = os.path.basename(path)
            if t[1] is None:
                print("  %-40s %s: left out (%s)"
                      % (name, t[0], WHY.get((path, t[0]), "the spin ended first in all %d "
                                                          "iterations" % t[4])))
            else:
                print("  %-40s %s: %.3f ms / %d (median of %d free of %d)"
                      % (name, t[0], t[1], t[2], t[3], t[4]))
    per_unit = {}
    for label, terms in list(by_host.items()) + [("pooled", every)]:
        parts = []
        for key, _, unit in PHASES:
            ms, units = pooled(terms, key)
            if units:
                per_unit[label, key] = ms / units
            parts.append("%s %.3f ms / %d = %.2f us" % (unit, ms, units, ms * 1e3 / units)
                         if units else "%s none" % unit)
        print("%s: %s" % (label, "; ".join(parts)))
    print_kinds(files)
    for label in by_host:
        ratios = [per_unit[label, key] / per_unit["pooled", key] for key, _, _ in PHASES
                  if (label, key) in per_unit and ("pooled", key) in per_unit]
        if ratios:
            print("%s: host factor %.3f (mean of %s over the pool)"
                  % (label, sum(ratios) / len(ratios), " and ".join("%.4f" % r for r in ratios)))
    try:
        print_steps(args)
    except InputError as e:
        print("host_pool: %s" % e, file=sys.stderr)
        return 2
    if calib_dir is not None:
        lends = [lend_name(label) for label in by_host]
        twice = sorted(set(l for l in lends if lends.count(l) > 1))
        if twice:
            print("host_pool: --calib-dir: several folders of lend %s" % ", ".join(twice),
                  file=sys.stderr)
            return 2
        for label in by_host:
            if (label, "fwd") not in per_unit or (label, "bwd") not in per_unit:
                print("%s: no calibration file (dispatch or node left out)" % label)
                continue
            paths = [p for p, _ in files if os.path.dirname(p) == label]
            print("wrote %s" % write_calib(calib_dir, label, paths, per_unit[label, "fwd"] * 1e3,
                                           per_unit[label, "bwd"] * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
