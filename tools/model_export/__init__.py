"""tools/export_model.py's parts: it exports a PyTorch model as a ddpsim model file.

export_model.py is the command (its docstring says what the file holds); this package
does the work, one module per responsibility, each importing only those above it:

  cli        the command line, checked before torch is imported, and ExportError
             (standard library only: a mistake is one line, exit 2, even without torch)
  ops        the aten op sets, CUDA autocast's cast policies, tensor helpers
  flops      FLOPs per aten op (convolutions by their groups, else FlopCounterMode's table)
  host       the host's work per layer (host_ops, host_dispatches, host_nodes, ...)
  legacy_ew  elementwise kernels off PyTorch's vectorised path (legacy_ew, amp_cast_ew)
  kernels    kernels beside a layer's math: GEMM alignment, grouped convolutions, cat,
             the backward's reductions and copies, the loss's copies, max-pool, layer norm
  attention  an unfused attention core's products and other kernels per pass
  bwd_bytes  the bytes a layer's backward kernels move and the gradient accumulations
  recorder   Layer and Recorder: the state of the one recorded forward and backward
  autocast   CUDA autocast's cast lists run under CPU autocast (host_view_nodes_amp)
  tracing    the dispatch and function modes that attribute each op to a layer, the
             factory, the recorded run (its channels-last twin, its rerun under autocast)
  writer     the model file: per-sample values, the header that says how each was counted

Importing this package imports nothing; its modules other than cli need torch.
"""
