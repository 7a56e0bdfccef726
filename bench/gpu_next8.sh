#!/bin/bash
# The third H200 call of 2026-11-27: is host_calibrate's spin bias (bench/spin_bias.py;
# bench/results/gpu-2026-11-27g-h200: ResNet-50 fp32 b32 x1.248 of streaming training's host
# time per forward + backward, ResNet-101 x1.032) a property of the model or of that
# process? ResNet-50 again in two fresh processes, and two more host-bound models
# (MobileNetV2 and ResNeXt-101 32x4d, fp32 b32) in one each. Python only:
#
#   run(command="GIT_COMMIT=<commit> bash bench/gpu_next8.sh", timeout_s=230)
#
# Parts (BUDGET_S 210 s): spin-rn50-r2/-r3 ~45 s each, spin-mnv2 ~40 s, spin-rnx ~60 s.
# Dry run on the CPU:
#   PATH=/root/venv-torch/bin:$PATH SPIN_ARGS="--device cpu --batch 2 --cycles 1 --block 1 --warmup 1" \
#     OUT=/tmp/gn8 bash bench/gpu_next8.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-210}
NAME=next8
PART_TAIL=6
. "$R/bench/gpu_part.sh"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,memory.used --format=csv 2>&1
  echo "commit: ${GIT_COMMIT:-$(git -C "$R" rev-parse HEAD 2>/dev/null || echo 'no .git here')}"
  (cd "$R" && sha256sum bench/gpu_next8.sh bench/spin_bias.py bench/host_calibrate.py \
    bench/torch_measure.py bench/gpu_part.sh)
  for r in 2 3; do
    part spin-rn50-r$r 55 python3 bench/spin_bias.py --model resnet50 --batch 32 --sleep-ms 60 \
      --out "$D/spin-rn50-r$r.csv" ${SPIN_ARGS:-}
  done
  part spin-mnv2 50 python3 bench/spin_bias.py --model mobilenet_v2 --batch 32 --sleep-ms 60 \
    --out "$D/spin-mnv2.csv" ${SPIN_ARGS:-}
  part spin-rnx 70 python3 bench/spin_bias.py --model resnext101_32x4d --batch 32 --sleep-ms 120 \
    --cycles 6 --out "$D/spin-rnx.csv" ${SPIN_ARGS:-}
  echo "versions (the parts' own lines):"
  grep -h '^# ' "$D"/*.log 2>/dev/null | sort -u
  date -u
  echo "total $((SECONDS - START)) s"
} 2>&1 | tee "$D/run.log"
pack
