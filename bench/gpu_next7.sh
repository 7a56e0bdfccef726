#!/bin/bash
# The width sweep at 14 x 14 (2026-11-27, branch tf32tiles): a TF32 tile model fitted on
# the queued rows (27d rn50conv, 27f convwidth at 28 x 28) misses the ResNeXt fp32 traces'
# forwards (ResNeXt-101 32x4d -14 %, 32x8d +26 %; gpu-2026-11-27f-h200/notes-convwidth.md)
# at exactly the shapes no queued row has: 1x1s at 14 x 14 (196 positions an image), where
# the 32x4d trace runs cuDNN's GEMM on NCHW at ~0.30 of the TF32 peak (512 <-> 1024, 45 us
# a call) and the 32x8d trace transposes its 1024 -> 1024 1x1s and runs the implicit GEMM
# at ~0.70. The same sweep at 14 x 14 times both layouts of every (Cin, Cout) there: which
# kernel cuDNN's benchmark picks in NCHW, at what rate, against transposes + the NHWC
# kernel. Python only:
#
#   run(command="bash bench/gpu_next7.sh", timeout_s=150)
#
# (the device's copy may have no .git: run.log then records the sha256 of the scripts, and
# GIT_COMMIT=<sha> before bash names the commit).
#
# Parts (BUDGET_S 115 s): convwidth14 ~70 s: gpu_kernels.py --only convwidth --width-side 14,
# modes fp32-tf32 (NCHW, first: the one needed), fp32-tf32-nhwc, fp16-nhwc (the 28 x 28
# sweep took 71.5 s for the three modes, gpu-2026-11-27f-h200/convwidth.log; 14 x 14's calls
# are ~4x shorter; a mode cut at the limit keeps convwidth14.csv.tmp's rows).
# Dry run on the CPU (every part starts; --quick times toy widths):
#   PATH=/root/venv-torch/bin:$PATH WIDTH_ARGS="--device cpu --quick --warmup 1 --iters 2" \
#     OUT=/tmp/gn7 nice bash bench/gpu_next7.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-115}
NAME=next7
PART_TAIL=8
. "$R/bench/gpu_part.sh"
{
  header bench/gpu_next7.sh bench/gpu_kernels.py bench/gpu_part.sh
  part convwidth14 100 python3 bench/gpu_kernels.py --only convwidth --width-side 14 \
    --modes fp32-tf32,fp32-tf32-nhwc,fp16-nhwc --out "$D/convwidth14.csv" ${WIDTH_ARGS:-}
  [ -f "$D/convwidth14.csv.tmp" ] && echo "convwidth14: cut; its rows kept in convwidth14.csv.tmp"
  footer
} 2>&1 | tee "$D/run.log"
pack
