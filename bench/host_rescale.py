#!/usr/bin/env python3
"""Give a calibration file written by bench/host_calibrate.py --calib-out (or
bench/host_inproc.py, which writes the same files) before 2026-11-28c the host
unit ddpsim now requires: `unit: launching` in its host section, with dispatch
and node rescaled to it.

Until 2026-11-28c those files divided the forward's median by every dispatch
and the backward's by every node, views included; ddpsim charges per dispatch
that launches a kernel (host_dispatches less host_views) and per node that
launches one (host_nodes less host_view_nodes; under --amp less
host_view_nodes_amp where the model file has them), and its loader refuses a host
section with dispatch or node and no unit (sim/train/calib.c). Such a file's
comments say what was divided:

    # model: resnet50, batch 32, fp32
    # dispatch: median 9.533 ms of 30 unblocked iterations / 282 dispatches
    # node: median 12.341 ms of 30 unblocked iterations / 337 nodes

and this rewrites each key as that median over the model file's charged count
(9.533 ms / 227 = 41.996us; 12.341 ms / 319 = 38.687us), after checking that
the comment's count is the model file's total (host_dispatches; host_nodes,
with host_amp_nodes under fp16/bf16) and that the key's value is the median
over it; then adds the unit and a comment saying what changed. A file already
over a charged count (written or rescaled between 2026-11-28c and 28d, when a
node was free by its name) or one bench/host_pool.py --calib-dir wrote (write
it again: python3 bench/host_pool.py --calib-dir DIR CSV...) is an error, as
is a key without its comment, a count other than the model file's or a value
that fits neither (file, line, key; exit 2), and no file is changed. A file
that already has a unit is left as it is (said so). The counts are
models/<model>.yaml's as they stand. Standard library only.

    python3 bench/host_rescale.py FILE... [--check]

--check changes nothing: it prints what it would write and exits 1 when a
file still needs it (0 when every file has its unit).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError  # noqa: E402
from host_pool import (HOST_UNIT, model_text, model_total,  # noqa: E402
                       model_view_nodes_total)

# bench/host_pool.py --calib-dir's header: such a file is written again, not rescaled
POOLED = "# bench/host_pool.py --calib-dir: the pooled host costs of one lend"
KEY = re.compile(r"^  (dispatch|node|unit): *(\S+)")
NOTE = re.compile(r"^#\s+(dispatch|node): median ([0-9.]+) ms of .* / (\d+) (dispatches|nodes)$")
MODEL = re.compile(r"^#\s+model: ([A-Za-z0-9_.-]+), batch \d+, (\w+)$")


def charged_counts(model, key, amp, path, line):
    """(every dispatch or node, the charged ones) of models/<model>.yaml."""
    _, text = model_text(model, "%s:%d" % (path, line))

    def total(name):
        return model_total(text, name)
    if key == "dispatch":
        every = total("host_dispatches")
        return every, every - total("host_views")
    every = total("host_nodes") + (total("host_amp_nodes") if amp else 0)
    return every, every - model_view_nodes_total(text, amp)


def us(text, path, line, key):
    m = re.fullmatch(r"([0-9.]+)us", text)
    if not m:
        raise InputError("%s:%d: key '%s': expected a time in us, got '%s'"
                         % (path, line, key, text))
    return float(m.group(1))


def rescale(path):
    """The file's new text, or None where it has its unit already; the
    comment lines say what changed."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    model = amp = None
    notes, keys, host = {}, {}, None
    for i, text in enumerate(lines, start=1):
        m = MODEL.match(text)
        if m:
            model, amp = m.group(1), m.group(2) in ("fp16", "bf16")
        m = NOTE.match(text)
        if m:
            notes[m.group(1)] = (float(m.group(2)), int(m.group(3)), i)
        if text == "host:":
            host = i
        m = KEY.match(text)
        if m and host is not None:
            keys[m.group(1)] = (m.group(2), i)
    if "unit" in keys:
        return None
    if host is None or not ("dispatch" in keys or "node" in keys):
        raise InputError("%s: no host section with dispatch or node" % path)
    if lines[0] == POOLED:
        raise InputError("%s: written by bench/host_pool.py --calib-dir: write it again from "
                         "the CSVs its comments name (python3 bench/host_pool.py --calib-dir "
                         "DIR CSV...)" % path)
    if model is None:
        raise InputError("%s: no '# model: NAME, batch B, PRECISION' comment" % path)
    said = []
    for key in ("dispatch", "node"):
        if key not in keys:
            continue
        value, line = keys[key]
        old = us(value, path, line, key)
        if key not in notes:
            raise InputError("%s:%d: key '%s': no '# %s: median M ms of ... / N' comment to "
                             "rescale from; rescale it by hand (x every / charged of the "
                             "model file's counts) and add 'unit: %s'"
                             % (path, line, key, key, HOST_UNIT))
        ms, count, note_line = notes[key]
        every, charged = charged_counts(model, key, amp, path, note_line)
        if count != every:
            raise InputError("%s:%d: key '%s': the comment's count %d is not models/%s.yaml's "
                             "%d" % (path, note_line, key, count, model, every))
        # the comment's ms has 3 decimals, the value 3: what rounding allows
        tol = 0.5 / charged + 0.0006
        if abs(old - ms * 1e3 / count) <= tol:
            lines[line - 1] = "  %s: %.3fus" % (key, old * count / charged)
            said.append("# %s rescaled by bench/host_rescale.py to the unit '%s': %s x %d / %d "
                        "(%.3f ms / %d), was per every %s (/ %d)"
                        % (key, HOST_UNIT, value, count, charged, ms, charged, key, count))
        else:
            raise InputError("%s:%d: key '%s': %s is not %.3f ms / %d (a value rescaled "
                             "already, over another count: rescale it by hand, x %d / %d of "
                             "the old count, and add 'unit: %s')"
                             % (path, line, key, value, ms, count, count, charged, HOST_UNIT))
    lines.insert(host, "  unit: %s" % HOST_UNIT)
    first = next(i for i, t in enumerate(lines) if not t.startswith("#"))
    said.append("# unit: %s added by bench/host_rescale.py (ddpsim refuses a host section "
                "without it)" % HOST_UNIT)
    lines[first:first] = said
    return "\n".join(lines)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    if not paths:
        print(__doc__.split("\n\n")[-2].strip(), file=sys.stderr)
        return 2
    try:
        texts = [(p, rescale(p)) for p in paths]
    except InputError as e:
        print("host_rescale: %s" % e, file=sys.stderr)
        return 2
    pending = 0
    for path, text in texts:
        if text is None:
            print("%s: has its unit, unchanged" % path)
            continue
        pending += 1
        news = [t for t in text.split("\n") if KEY.match(t) or "rescaled" in t]
        if check:
            print("%s: would write %s" % (path, "; ".join(n.strip() for n in news)))
            continue
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
        print("%s: %s" % (path, "; ".join(n.strip() for n in news)))
    return 1 if check and pending else 0


if __name__ == "__main__":
    sys.exit(main())
