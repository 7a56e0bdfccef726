"""Export a PyTorch model as a ddpsim model file (models/*.yaml format).

The command line of tools/export_model.py and its one error type. Standard library
only: the flags and the factory file are checked before torch is imported (which takes
seconds, or fails where torch is missing). The first line above is --help's description.
"""

import argparse
import os
import sys


class ExportError(Exception):
    pass


def make_parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("factory", help="module:function or file.py[:function]")
    ap.add_argument("--batch", type=int, default=2, help="batch of the recorded run (2)")
    ap.add_argument("--attention", choices=("eager", "fused"), default="eager")
    ap.add_argument("--name", required=True, help="the model's name in the file")
    ap.add_argument("--output", "-o", help="file to write (default: standard output)")
    ap.add_argument("--default-batch", type=int, help="default_batch to write (factory's or 32)")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), help="optimizer (factory's or sgd)")
    ap.add_argument("--sample", help="what one sample is (factory's or 'one sample')")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (2)")
    return ap


def factory_file(spec):
    """FACTORY's (path, function) for file.py[:function], else None."""
    if ".py" not in spec:
        return None
    path, _, fn = spec.partition(".py")
    return path + ".py", fn.lstrip(":") or "build"


def check_args(argv):
    """The flags and the factory file, checked before torch is imported (which
    takes seconds, or fails where torch is missing): one line and exit 2 for a
    mistake, as argparse's own (usage, --help) are."""
    ap = make_parser()
    args = ap.parse_args(argv[1:])
    if args.batch < 1:
        ap.error("--batch must be positive")
    f = factory_file(args.factory)
    if f and not os.path.isfile(f[0]):
        sys.stderr.write("export_model.py: %s: no such file (FACTORY is module:function or "
                         "file.py[:function])\n" % f[0])
        sys.exit(2)
    return args


INSTALL = ("this tool needs PyTorch; install it into a virtual environment outside the "
           "repository:\n  python3 -m venv /root/venv-torch\n"
           "  /root/venv-torch/bin/pip install torch torchvision transformers\n"
           "then run it with /root/venv-torch/bin/python3")
