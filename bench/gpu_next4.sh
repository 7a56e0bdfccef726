#!/bin/bash
# The wide-convolution call (2026-11-27, the session's last device time): the
# check of a per-pass t0 + FLOPs / rate convolution model fitted on ResNet-50's
# shapes (bench/results/gpu-2026-11-27d-h200): ResNeXt's dense 3x3 layers at
# full width timed the same way (queued, cold; bench/conv_wide_queued.py), and
# host_calibrate in two more fresh processes (the spread of one host's
# calibration, for the range ddpsim prints for host-bound runs). Python only:
#
#   run(command="bash bench/gpu_next4.sh", timeout_s=240)
#
# Parts (BUDGET_S 200 s): wide-b32 ~35 s, wide-b128 ~35 s, host-r1/r2 ~35 s each.
# Dry run on the CPU:
#   PATH=/root/venv-torch/bin:$PATH WIDE_ARGS="--device cpu --quick --warmup 1 --iters 2" \
#     HOST_ARGS="--device cpu --batch 1 --iters 1 --warmup 0" OUT=/tmp/gn4 bash bench/gpu_next4.sh
# (on the CPU host_calibrate writes no calibration and exits 1, as designed: no spin runs)
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-200}
NAME=next4
PART_TAIL=6
. "$R/bench/gpu_part.sh"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv 2>&1
  for b in 32 128; do
    part wide-b$b 60 python3 bench/conv_wide_queued.py --batch $b --out "$D/wide-b$b.csv" ${WIDE_ARGS:-}
  done
  for i in 1 2; do
    part host-r$i 45 python3 bench/host_calibrate.py --model resnet50 --batch 32 \
      --out "$D/host-resnet50-r$i.csv" --calib-out "$D/host-resnet50-r$i.yaml" ${HOST_ARGS:-}
  done
  echo "total $((SECONDS - START)) s"
} 2>&1 | tee "$D/run.log"
pack
