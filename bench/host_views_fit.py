#!/usr/bin/env python3
"""Which count explains a host's forward across models: bench/host_calibrate.py
runs of several models on one host (one folder per device call), each file's
forward median over its unblocked iterations (bench/host_pool.py's
phase_terms), fitted as

    fwd_ms = f_folder x (sum over kinds of cost_kind x count_kind)

with one factor per folder (a call's host speed; their geometric mean 1) and
the costs shared, minimising the squared relative residuals. Three rules:
  one      every dispatch alike (the CSV's dispatches, host_dispatches);
  kernel   only the dispatches that launch a kernel (host_dispatches less
           the model file's host_views): views cost nothing;
  split    kernel-launching dispatches and views, a cost each.
Prints each rule's costs, per file residual, rms, and leave-one-model-out:
each model's files predicted by the costs fitted without that model (its
folders' factors fitted on the other models). With --backward the same for
the backward: nodes (the model files' host_nodes) and view nodes (their
host_view_nodes, the nodes that launch nothing) in place of dispatches and views.
Standard library only.

    python3 bench/host_views_fit.py [--backward] bench/results/gpu-2026-11-28c-h200/host-rn50.csv ...
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_pool  # noqa: E402
from csv_input import InputError  # noqa: E402

RULES = {
    "one": lambda d, v: [d],
    "kernel": lambda d, v: [d - v],
    "split": lambda d, v: [d - v, v],
}


def solve(a, b):
    """Least squares a x = b (normal equations, Gauss-Jordan; a few unknowns)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] +
         [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [x - f * y for x, y in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit(rows, rule):
    """rows: (folder, model, ms, dispatches, views). Returns (costs in ms,
    {folder: factor})."""
    folders = sorted(set(r[0] for r in rows))
    f = {k: 1.0 for k in folders}
    for _ in range(200):
        a = [[x * f[r[0]] / r[2] for x in RULES[rule](r[3], r[4])] for r in rows]
        costs = solve(a, [1.0] * len(rows))
        for k in folders:
            w = [sum(c * x for c, x in zip(costs, RULES[rule](r[3], r[4]))) / r[2]
                 for r in rows if r[0] == k]
            f[k] = sum(w) / sum(x * x for x in w)
        g = math.exp(sum(math.log(x) for x in f.values()) / len(f))
        f = {k: x / g for k, x in f.items()}
    return costs, f


def predict(costs, f, r, rule):
    return f[r[0]] * sum(c * x for c, x in zip(costs, RULES[rule](r[3], r[4])))


def main(paths, backward=False):
    rows = []
    for p in paths:
        terms = host_pool.phase_terms(p)
        phase = next(t for t in terms if t[0] == ("bwd" if backward else "fwd"))
        model, views, dispatches = host_pool.VIEWS[p]
        if backward:  # phase_terms' units are the nodes less the view nodes
            views = host_pool.model_view_nodes(model, 0, False, None, check=False)
            dispatches = phase[2] + views
        if phase[1] is None:
            print("  %s: %s left out (the spin ended first)" % (p, phase[0]))
            continue
        rows.append((os.path.dirname(p), model, phase[1], dispatches, views))
    models = sorted(set(r[1] for r in rows))
    for rule in RULES:
        costs, f = fit(rows, rule)
        res = [predict(costs, f, r, rule) / r[2] - 1 for r in rows]
        lomo = []
        for m in models:
            rest = [r for r in rows if r[1] != m]
            if len(set(r[1] for r in rest)) < len(RULES[rule](1, 0)) + 1:
                continue
            c2, f2 = fit(rest, rule)
            for r in rows:
                if r[1] == m and r[0] in f2:
                    lomo.append((r, predict(c2, f2, r, rule) / r[2] - 1))
        rms = math.sqrt(sum(e * e for e in res) / len(res))
        lrms = math.sqrt(sum(e * e for _, e in lomo) / len(lomo)) if lomo else float("nan")
        print("%s: %s; folder factors %s" % (
            rule, " + ".join("%.2f us" % (c * 1e3) for c in costs),
            " ".join("%.3f" % f[k] for k in sorted(f))))
        print("  in-sample rms %.1f %%, leave-one-model-out rms %.1f %% (worst %.0f %%)" % (
            100 * rms, 100 * lrms, 100 * max(abs(e) for _, e in lomo) if lomo else float("nan")))
        for r, e in zip(rows, res):
            held = next((x for q, x in lomo if q is r), None)
            print("    %-45s %-22s %7.3f ms: fit %+5.1f %%, held out %s" % (
                r[0][-45:], r[1], r[2], 100 * e,
                "%+5.1f %%" % (100 * held) if held is not None else "-"))
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    back = argv[:1] == ["--backward"]
    if len(argv) - back < 2:
        sys.exit(__doc__)
    try:
        sys.exit(main(argv[back:], back))
    except InputError as e:
        print("host_views_fit: %s" % e, file=sys.stderr)
        sys.exit(2)
