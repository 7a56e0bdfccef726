#!/bin/bash
# The session's last H200 call, 2026-11-27 (375 s of device time left: one call), three
# questions in priority order, Python only:
#   convwidth14   bench/gpu_next7.sh's part: the width sweep at 14 x 14 (gpu_kernels.py
#                 --width-side 14), TF32 NCHW first: the 1x1s where a TF32 tile fit misses
#                 ResNeXt's fp32 forwards (gpu-2026-11-27f-h200/notes-convwidth.md);
#   ddp-host-view bench/torch_ddp_host.py --buffers 53 --view: DDP's per-gradient host cost
#                 split between what gradient_as_bucket_view drops and what stays, and the
#                 per-buffer cost again (gpu-2026-11-27g-h200/notes-ddp-buffers.md);
#   spin-*        bench/spin_bias.py, as many as the budget allows (first written for a
#                 gpu_next8.sh that never ran and was removed: they run here): is
#                 host_calibrate's spin bias the model's or the process's?
#
#   run(command="GIT_COMMIT=<commit> bash bench/gpu_next9.sh", timeout_s=300)
#
# Parts (BUDGET_S 280 s): convwidth14 ~75 s, ddp-host-view ~55 s, spin-rn50-r2 ~45 s,
# spin-rnx ~60 s, spin-mnv2 ~40 s (the last is skipped if the budget runs out).
# Dry run on the CPU:
#   PATH=/root/venv-torch/bin:$PATH WIDTH_ARGS="--device cpu --quick --warmup 1 --iters 2" \
#     DDPHOST_ARGS="--device cpu --layers 8 --width 32 --buffers 2 --iters 2 --reps 1" \
#     SPIN_ARGS="--device cpu --batch 2 --cycles 1 --block 1 --warmup 1" OUT=/tmp/gn9 \
#     bash bench/gpu_next9.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-280}
NAME=next9
PART_TAIL=8
. "$R/bench/gpu_part.sh"
{
  header bench/gpu_next9.sh bench/gpu_kernels.py bench/torch_ddp_host.py \
    bench/spin_bias.py bench/host_calibrate.py bench/torch_measure.py bench/gpu_part.sh
  part convwidth14 100 python3 bench/gpu_kernels.py --only convwidth --width-side 14 \
    --modes fp32-tf32,fp32-tf32-nhwc,fp16-nhwc --out "$D/convwidth14.csv" ${WIDTH_ARGS:-}
  [ -f "$D/convwidth14.csv.tmp" ] && echo "convwidth14: cut; its rows kept in convwidth14.csv.tmp"
  part ddp-host-view 65 env MASTER_PORT=29546 python3 bench/torch_ddp_host.py --layers 161 \
    --width 512 --buffers 53 --view --out "$D/ddp_host_161x512_b53_view.csv" ${DDPHOST_ARGS:-}
  part spin-rn50-r2 55 python3 bench/spin_bias.py --model resnet50 --batch 32 --sleep-ms 60 \
    --out "$D/spin-rn50-r2.csv" ${SPIN_ARGS:-}
  part spin-rnx 65 python3 bench/spin_bias.py --model resnext101_32x4d --batch 32 --sleep-ms 120 \
    --cycles 6 --out "$D/spin-rnx.csv" ${SPIN_ARGS:-}
  part spin-mnv2 45 python3 bench/spin_bias.py --model mobilenet_v2 --batch 32 --sleep-ms 60 \
    --out "$D/spin-mnv2.csv" ${SPIN_ARGS:-}
  footer
} 2>&1 | tee "$D/run.log"
pack
