#!/bin/bash
# The second H200 call of 2026-11-27 (after gpu_next5.sh, bench/results/gpu-2026-11-27f-h200):
# a calibration taken in the training run's own process (host_inproc) predicted ResNet-50
# fp32 b32 20 % slow and ResNet-101 18 % fast. Two questions, Python only:
#   spin-rn50, spin-rn101  bench/spin_bias.py: the host's time per phase behind a spin
#                          (host_calibrate's way), after a synchronize without one, and in
#                          consecutive training iterations, alternated in one process;
#   inproc-rn50            host_inproc's DDP ablation again with 6 rounds of 30 iterations
#                          (the first call's 3 rounds of 20 varied by up to 5 ms a config);
#   ddp-host               bench/torch_ddp_host.py --buffers 53: the reducer's per-gradient
#                          and per-bucket host costs and DDP's per-buffer broadcast cost,
#                          unprofiled, on this host (notes-ddp1.md asks for it).
#
#   run(command="GIT_COMMIT=<commit> bash bench/gpu_next6.sh", timeout_s=310)
#
# Parts (BUDGET_S 290 s): spin-rn50 ~35 s, spin-rn101 ~45 s, inproc-rn50 ~80 s, ddp-host ~45 s.
# Dry run on the CPU:
#   PATH=/root/venv-torch/bin:$PATH SPIN_ARGS="--device cpu --batch 2 --cycles 1 --block 1 --warmup 1" \
#     INPROC_ARGS="--device cpu --batch 2 --rounds 1 --iters 2 --warmup 1 --calib-iters 1 --calib-warmup 0" \
#     DDPHOST_ARGS="--device cpu --layers 8 --width 32 --buffers 2 --iters 2 --reps 1" \
#     OUT=/tmp/gn6 bash bench/gpu_next6.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-290}
NAME=next6
PART_TAIL=8
. "$R/bench/gpu_part.sh"
{
  header bench/gpu_next6.sh bench/spin_bias.py bench/host_inproc.py \
    bench/host_calibrate.py bench/torch_measure.py bench/torch_ddp_host.py \
    bench/gpu_part.sh
  part spin-rn50 60 python3 bench/spin_bias.py --model resnet50 --batch 32 --sleep-ms 60 \
    --out "$D/spin-rn50.csv" ${SPIN_ARGS:-}
  part spin-rn101 70 python3 bench/spin_bias.py --model resnet101 --batch 32 --sleep-ms 80 \
    --out "$D/spin-rn101.csv" ${SPIN_ARGS:-}
  part inproc-rn50 100 env MASTER_PORT=29544 python3 bench/host_inproc.py --model resnet50 \
    --batch 32 --rounds 6 --iters 30 --sleep-ms 60 --out "$D/inproc-rn50.csv" \
    --calib-out "$D/inproc-rn50" ${INPROC_ARGS:-}
  part ddp-host 60 env MASTER_PORT=29545 python3 bench/torch_ddp_host.py --layers 161 --width 512 \
    --buffers 53 --out "$D/ddp_host_161x512_b53.csv" ${DDPHOST_ARGS:-}
  footer
} 2>&1 | tee "$D/run.log"
pack
