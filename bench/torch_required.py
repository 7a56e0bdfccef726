"""PyTorch for the bench tools that need it, or what to do without it.

`torch = import_torch(__file__)` as a tool's first import: on a machine
without PyTorch the tool exits 2 with how to install it (as
tools/export_model.py says), not a traceback.
"""
import os
import sys


def import_torch(tool_path):
    try:
        import torch
    except ImportError as e:  # depends on the machine
        sys.stderr.write("%s: %s\nthis tool needs PyTorch; install it into a virtual environment "
                         "outside the repository:\n  python3 -m venv /root/venv-torch\n"
                         "  /root/venv-torch/bin/pip install torch torchvision transformers\n"
                         "then run it with /root/venv-torch/bin/python3\n"
                         % (os.path.basename(tool_path), e))
        sys.exit(2)
    return torch
