"""The kernels of one trace group, op by op: which autograd node or forward op launched
them, with the inner aten op's input shapes and dtypes (its cpu_op event, linked to the
kernel by its External id), summed per iteration.

    python3 bench/trace_ops.py PROFILE.json.gz [GROUP|all]

PROFILE: a two-iteration trace of bench/torch_measure.py --profile-dir (times halved to one
iteration). GROUP: one of bench/trace_groups.py's groups (default "copy/cast/reduce"), or
all. Per row: ms per iteration, kernels per iteration, mean us, the group, F(orward) or
B(ackward), the autograd node (backward) or outermost aten op (forward), the inner aten op
with its input dims and types, the kernel's name. Optimizer and scaler kernels left out.
Standard library only.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_classes as tc  # noqa: E402
import trace_groups as tg  # noqa: E402


def rows(path, want):
    per = collections.defaultdict(lambda: [0.0, 0.0])
    for e, chain in tc.gpu_activities(tc.load(path)):
        cls = tc.classify(chain)
        if cls in ("optimizer", "scaler"):
            continue
        group = tg.trace_group(cls, chain)
        if want != "all" and group != want:
            continue
        nodes = [c["name"].split("evaluate_function: ")[-1] for c in chain
                 if "evaluate_function:" in c["name"]]
        aten = [c for c in chain if c["name"].startswith("aten::")]
        inner = aten[-1] if aten else None
        key = (group, "B" if nodes else "F", nodes[-1] if nodes else
               (aten[0]["name"] if aten else "-"),
               inner["name"] if inner else "-", str(tc.dims(inner)) if inner else "",
               str(tc.types(inner)) if inner else "", e["name"][:60])
        per[key][0] += e["dur"] / 2e3
        per[key][1] += 0.5
    return per


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/trace_ops.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", metavar="PROFILE.json.gz", help="a two-iteration trace")
    p.add_argument("group", nargs="?", default="copy/cast/reduce", metavar="GROUP|all",
                   help="a bench/trace_groups.py group (default copy/cast/reduce), or all")
    return p.parse_args(argv)


def main():
    args = parse_args(sys.argv[1:])
    per = rows(args.profile, args.group)
    print("%8s %6s %8s  %s" % ("ms/iter", "kern", "mean us", "group | F/B node | op dims types"
                               " | kernel"))
    for k, (ms, n) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        print("%8.3f %6.1f %8.1f  %s | %s %s | %s %s %s | %s" % (
            ms, n, ms * 1e3 / n, k[0], k[1], k[2], k[3], k[4], k[5], k[6]))
    print("%8.3f %6.1f  total" % (sum(v[0] for v in per.values()),
                                  sum(v[1] for v in per.values())))


if __name__ == "__main__":
    main()
