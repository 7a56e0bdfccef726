#!/bin/bash
# bench/gpu_next12.sh's follow-up, in the same session's remaining device time: its run
# (bench/results/gpu-2026-11-28c-h200) found the host's cost per aten op dispatched differs
# by model on one host (ResNet-50 31.8 us, DLE BERT-large 15.5, DLE BERT-base 13.4). Here,
# on one fresh host, the spin method (bench/host_calibrate.py) on seven models, so a cost
# per kind of dispatch can be fitted on some and checked on the others; and DDP's host
# once more (a seventh lend). Carried binaries as gpu_next11.sh's header; then
#
#   run(command="GIT_COMMIT=<commit> BUDGET_S=<min(L-160, 560)> bash bench/gpu_next12b.sh",
#       carry=[".devcarry"], timeout_s=<BUDGET_S+30>)
#
# Dry run: PATH=/root/venv-torch/bin:$PATH OUT=/tmp/gn12b DRY=1 BUDGET_S=900 nice bash bench/gpu_next12b.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-420}
NAME=next12b
PART_TAIL=12
PART_MIN_S=${PART_MIN_S:-40}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
. "$R/bench/gpu_part.sh"
if [ "${DRY:-0}" = 1 ]; then
  DDPHOST="--device cpu --layers 1,4,8 --width 32 --iters 2 --reps 2"
  HOST="--device cpu --batch 1 --iters 1 --warmup 0"
  TORCH="--device cpu --iters 1 --warmup 0"
else
  DDPHOST="" HOST="" TORCH=""
fi
{
  header --smi-table bench/gpu_next12b.sh bench/host_calibrate.py bench/torch_ddp_host.py \
    bench/host_sched.py bench/gpu_part.sh tools/torch_models.py
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
