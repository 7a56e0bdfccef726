#!/usr/bin/env python3
"""Export a PyTorch model as a ddpsim model file (models/*.yaml format).

Runs one real forward and backward on CPU at a small batch and writes, per
sample:
  layers      every leaf module call (a module with no children) in the
              order it runs, plus the work no module owns (residual adds,
              functional activations, the attention product and softmax of
              an unfused attention, mask arithmetic) as one layer per run of
              such operations inside a parent module, named
              <parent>.core when it multiplies activations (attention),
              else <parent>.<first op> (add, relu, ...); a module called k>1 times gives layers
              NAME, NAME/2, ... NAME/k.
  params      each parameter tensor once (a tied weight under its first
              registered name) in the layer that first uses it, in that
              module's registration order: name, numel, shape.
  class       conv | matmul | attention | memory, from the layer's ops.
  fwd_flops   torch.utils.flop_counter's formulas (FlopCounterMode's table)
  bwd_flops   for each aten op, attributed to layers by our own dispatch
              mode (forward: the running layer; backward: the layer whose
              forward made the autograd node being run). Convolutions are
              counted here from shapes and groups, 2*out_elems*(C_in/groups)
              *kh*kw per pass (forward; input gradient; weight gradient),
              because FlopCounterMode ignores groups in the weight-gradient
              pass (MobileNetV2's depthwise convolutions ~10x too much).
  fwd_bytes   module layers: bytes of the tensors passed in and returned
              (parameters and buffers excluded: the simulator adds weights);
              op layers: bytes read and written by each op (views free).
  act_bytes   bytes autograd saves for backward (saved_tensors_hooks),
              unique storages counted once, attributed to the layer whose
              forward saved them first; parameters and buffers excluded.
              Dropout runs as aten.native_dropout, which keeps a bool mask
              (1 byte/element) as CUDA does; CPU's dropout would keep a
              float noise tensor. Max-pool indices are int64 on CPU and GPU.
              Fused attention (scaled_dot_product_attention) runs without
              dropout: CPU then takes its flash kernel, which saves q, k, v,
              out and logsumexp as CUDA's flash attention does; with dropout
              CPU falls back to the math path and saves the SxS matrices.
  host_ops    the host's work for the layer (host_count_* below): top-level
              ATen ops its forward dispatches from Python (a torch function call
              that reaches the dispatcher; its nested ops are its own cost),
              the aten ops those calls dispatch, nested ones included
              (host_dispatches: the forward's cost is per dispatch, nearly the
              same in every model, bench/host_kinds.py),
              autograd nodes its backward runs (AccumulateGrad of its
              parameters included), those that launch nothing (host_view_nodes)
              and, from a rerun under CUDA's autocast lists, those that launch
              nothing there (host_view_nodes_amp: model_export/autocast.py);
              under CUDA autocast, the cast dispatches
              autocast adds (host_amp_casts) and the ToCopyBackward0 nodes those
              casts add to the backward (host_amp_nodes); and, only where
              there are any, the forward's host-device syncs (host_syncs:
              .item() and bool(tensor) as _local_scalar_dense, nonzero and
              the other data-sized outputs, copies to the host).
  legacy_ew   the elementwise ops (copies included) PyTorch runs on its
              non-vectorised CUDA kernel, per pass: their bytes and their
              operand-elements, strided and transposed apart (legacy_kind);
              nhwc_legacy_ew the same from a second run in channels-last
              (4-d inputs).
  attn_products, attn_rest  an unfused attention core's kernels per pass: its
              batched products (GEMMs: kernels, FLOPs, bytes) and its other
              vectorised kernels (kernels, bytes), so that each is priced at its
              own rate (sim/train/compute.h).
  grad_ready  parameter names in the order their gradients were accumulated
              in the backward (post-accumulate-grad hooks: the order in
              which DDP's reducer hooks on the same AccumulateGrad nodes
              fire).
  registration  parameter names in model.parameters()'s order, written
              only where the layers' forward order lists them otherwise
              (BERT's token-type embeddings run before the position ones).
Every quantity is divided by the batch and rounded to an integer.

Usage:
  export_model.py FACTORY [--batch 2] [--attention eager|fused] --name NAME
                  [--output FILE]
FACTORY is `module:function` (torchvision.models:resnet50) or
`path/to/file.py[:function]` (function defaults to build). The function
returns a model, or (model, example_input) or (model, example_input, meta);
it is passed `batch` and `attention` when it takes them. Without an example
input a batch of 3x224x224 images is used.

Needs torch (and torchvision / transformers for those models): exit 2 with
install instructions when missing. Standard library + torch only.
"""

import os
import shlex
import sys

from model_export.cli import INSTALL, ExportError, check_args

if __name__ == "__main__":
    check_args(sys.argv)

# torch first, here, so that a machine without it gets INSTALL (exit 2), not a
# traceback from the package's modules, which import these too.
try:
    import torch
    import torch.nn.functional  # noqa: F401
    import torch.overrides  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401
    import torch.utils.flop_counter  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write("export_model.py: %s\n%s\n" % (e, INSTALL))
    sys.exit(2)

# call, loss_of and versions too: tools/capture_conformance.py uses them as export_model.*
from model_export.tracing import (build, call, load_factory, loss_of,  # noqa: E402,F401
                                  record, record_amp, record_nhwc_legacy, versions)
from model_export.writer import emit  # noqa: E402

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)


def main(argv):
    args = check_args(argv)
    torch.set_num_threads(args.threads)
    sys.path.insert(0, TOOLS)
    try:
        factory = load_factory(args.factory)
        model, x, meta, default_input = build(factory, args.batch, args.attention)
        if default_input:
            sys.stderr.write("export_model.py: note: %s returned no example input: a batch of "
                             "%d 3x224x224 images is used\n" % (args.factory, args.batch))
        try:
            rec, fc_fwd, fc_bwd = record(model, x, meta.get("loss", "classify"))
        except (RuntimeError, TypeError, ValueError, IndexError) as e:
            if not default_input:
                raise
            # the guessed image batch does not fit this model: no traceback
            # from deep inside its forward, but what to do about it
            raise ExportError("%s: the model's forward failed on the default input, a batch "
                              "of 3x224x224 images (%s: %s): return (model, example_input) "
                              "from the factory" % (args.factory, type(e).__name__,
                                                    str(e).splitlines()[0] if str(e) else ""))
        record_nhwc_legacy(rec, x, factory, args, meta)
        record_amp(rec, x, factory, args, meta)
        command = "python3 " + " ".join(shlex.quote(a) for a in
                                        ["tools/export_model.py"] + argv[1:])
        text, s = emit(rec, args, meta, x, fc_fwd, fc_bwd, command)
    except ExportError as e:
        sys.stderr.write("export_model.py: %s\n" % e)
        return 2
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    sys.stderr.write("%s: %d layers, %d tensors, %d parameters; per sample fwd %d bwd %d FLOPs "
                     "(FlopCounterMode %d / %d), act %d bytes\n"
                     % (args.name, s["layers"], s["tensors"], s["numel"], s["fwd"], s["bwd"],
                        s["fc_fwd"], s["fc_bwd"], s["act"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
