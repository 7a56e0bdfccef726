#!/bin/bash
# The same-process host call (2026-11-27): whether a host calibration taken in
# the training run's own process predicts that run, what DDP at world size 1
# costs ResNet-50 fp32 b32 (~12 ms measured, +2.7 ms predicted) and which of its
# defaults that is, and the dense convolution width sweep. Python only:
#
#   run(command="bash bench/gpu_next5.sh", timeout_s=360)
#
# (the device's copy may have no .git: run.log then records the sha256 of the scripts, and
# GIT_COMMIT=<sha> before bash names the commit). Each process its own MASTER_PORT.
#
# Parts (BUDGET_S 340 s; limits 160, 85, 50 and 55 s, each cut to what is left of the
# budget; the estimates below from the 2026-11-27 H200 logs: ~8 s to start python, torch
# and NCCL, ~18 s for the first ResNet build and cuDNN autotuning, ~25-30 ms an iteration):
#   convwidth     ~160 s  gpu_kernels.py --only convwidth: dense convolutions at one GEMM M
#                         (batch 32 x 28 x 28), 1x1s over every (Cin, Cout) of 64-2048 and
#                         3x3s with Cin = Cout, queued behind a spin (timed at GPU time):
#                         does a convolution's rate at equal M follow min(Cin k^2, Cout)?
#                         (gpu-2026-11-27d-h200/notes-conv-call.md section 5). ~55 s a mode:
#                         fp32-tf32 (NCHW, the one needed most) first; the third mode may be
#                         cut at the limit (gpu_kernels keeps convwidth.csv.tmp's rows).
#   inproc-rn50    ~60 s  host_inproc.py: ResNet-50 fp32 b32, 3 rounds in ONE process of
#                         host_calibrate's phase measurement then plain, DDP cap 25,
#                         broadcast_buffers=False, gradient_as_bucket_view=True and both,
#                         in an order rotated per round; calibration files per round and
#                         pooled (inproc-rn50-r1..3.yaml, inproc-rn50-pooled.yaml).
#   inproc-rn101   ~40 s  the same for ResNet-101 fp32 b32, plain only: a second model's
#                         in-process calibration against its own run.
#   prof-ddp       ~35 s  torch_measure.py's torch.profiler traces (CPU + CUDA, 2 iterations,
#                         gzipped Chrome JSON and kernel tables) of ResNet-50 fp32 b32 plain
#                         and DDP cap 25 in one process: where DDP's extra ms go.
# Dry run on the CPU (every part starts; convwidth's and prof-ddp's smoke plans, the
# inproc parts' dry runs, which write calibration files marked DRY RUN):
#   PATH=/root/venv-torch/bin:$PATH WIDTH_ARGS="--device cpu --quick --warmup 1 --iters 2" \
#     INPROC_ARGS="--device cpu --batch 2 --rounds 2 --iters 1 --warmup 0 --calib-iters 1" \
#     PROF_ARGS="--device cpu --plan smoke --warmup 1 --iters 1" \
#     OUT=/tmp/gn5 nice bash bench/gpu_next5.sh
# (on the CPU the smoke plan has no resnet50-fp32-b32-ddp25 run: prof-ddp profiles the plain
# run only; gpu_kernels' --quick times the three modes at toy widths)
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-340}
NAME=next5
PART_TAIL=8
. "$R/bench/gpu_part.sh"
{
  header --smi-table bench/gpu_next5.sh bench/host_inproc.py bench/host_calibrate.py \
    bench/torch_measure.py bench/gpu_kernels.py bench/gpu_part.sh
  part convwidth 160 python3 bench/gpu_kernels.py --only convwidth \
    --modes fp32-tf32,fp32-tf32-nhwc,fp16-nhwc --out "$D/convwidth.csv" ${WIDTH_ARGS:-}
  part inproc-rn50 85 env MASTER_PORT=29541 python3 bench/host_inproc.py --model resnet50 --batch 32 --rounds 3 \
    --sleep-ms 60 --out "$D/inproc-rn50.csv" --calib-out "$D/inproc-rn50" ${INPROC_ARGS:-}
  part inproc-rn101 50 env MASTER_PORT=29542 python3 bench/host_inproc.py --model resnet101 --batch 32 --rounds 3 \
    --configs plain --sleep-ms 80 --out "$D/inproc-rn101.csv" --calib-out "$D/inproc-rn101" \
    ${INPROC_ARGS:-}
  part prof-ddp 55 env MASTER_PORT=29543 python3 bench/torch_measure.py \
    --only resnet50-fp32-b32,resnet50-fp32-b32-ddp25 --warmup 5 --iters 10 --out "$D/prof-ddp.csv" --profile-dir "$D/prof" ${PROF_ARGS:-}
  footer
} 2>&1 | tee "$D/run.log"
pack
