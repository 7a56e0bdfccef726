#!/bin/bash
# For the next lend (prepared 2026-11-28, a session without one): one call of the device
# tool on an H100 or H200, with ddpsim and ddpreal built here and carried as
# bench/gpu_next11.sh's header says (.devcarry), then
#   run(command="GIT_COMMIT=<commit> BUDGET_S=<min(L-160, 560)> bash bench/gpu_next13.sh",
#       carry=[".devcarry"], timeout_s=BUDGET_S+30)
#
#   gpu-check   scripts/gpu-check.sh with the carried binaries: the cuda device's
#               all-reduce now runs in place (real/dev_cuda.cu, 4eeb9b8), not yet run on a
#               GPU; gpu-check's replays count wrong elements
#   host-*      bench/gpu_next12b.sh's seven spin runs (bench/host_calibrate.py) on another
#               host: the cost per kind of dispatch (host_views_fit.py) rests on one host,
#               2026-11-28c's (bench/results/gpu-2026-11-28c-h200/notes-hostkinds.md)
#   ddp-layers  torch_ddp_host.py once more: DDP's host on another lend (ddp_host_pool.py)
#
# Dry run: PATH=/root/venv-torch/bin:$PATH OUT=/tmp/gn13 DRY=1 BUDGET_S=900 nice bash bench/gpu_next13.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-420}
NAME=next13
PART_TAIL=12
PART_MIN_S=${PART_MIN_S:-40}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
. "$R/bench/gpu_part.sh"
if [ "${DRY:-0}" = 1 ]; then
  DDPHOST="--device cpu --layers 1,4,8 --width 32 --iters 2 --reps 2"
  HOST="--device cpu --batch 1 --iters 1 --warmup 0"
else
  DDPHOST="" HOST=""
fi
{
  header --smi-table bench/gpu_next13.sh bench/host_calibrate.py bench/torch_ddp_host.py \
    bench/host_sched.py bench/gpu_part.sh scripts/gpu-check.sh tools/torch_models.py \
    .devcarry/bin/ddpsim .devcarry/bin/ddpreal
  gpu_check_part 60
  for m in resnet50:0 bert-large-squad-dle:3 bert-base-squad-dle:1 mobilenet_v2:0 vgg16:0 \
      resnext50_32x4d:1 resnet101:1; do
    part "host-${m%%:*}" 50 python3 bench/host_calibrate.py --model "${m%%:*}" --batch 32 \
      --pauses "${m##*:}" --count-launches --out "$D/host-${m%%:*}.csv" \
      --calib-out "$D/host-${m%%:*}.yaml" $HOST
  done
  part ddp-layers 90 env MASTER_PORT=29583 python3 bench/torch_ddp_host.py --layers 1,81,161 \
    --width 512 --reps 7 --out "$D/ddp_host_layers.csv" --calib-out "$D/ddp_host_layers-calib.yaml" $DDPHOST
  footer --smi
} 2>&1 | tee "$RUN_LOG"
pack
