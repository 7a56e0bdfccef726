#!/bin/bash
# Issue #12's transformer host question, this lend's host for the pooled defaults, and the
# real backend once more (prepared 2026-11-28, the second session of the day), one call of
# the device tool on an H100 or H200, with ddpsim and ddpreal built here and carried as
# bench/gpu_next11.sh's header says (.devcarry):
#
#   run(command="GIT_COMMIT=<commit> BUDGET_S=<min(L-160, 560)> bash bench/gpu_next12.sh",
#       carry=[".devcarry"], timeout_s=<BUDGET_S+30>)
#
# The question: ddpsim charges a forward 30.7 us per aten op dispatched (host_dispatch,
# pooled over five lends from ResNet-50's spin runs), and over-predicts BERT's forward host
# (BERT-large `model.half()` +18.7 % on 2026-11-28's H200: 44.1 ms of predicted forward host;
# BERT-base AMP's fit rows 65.3 ms predicted, 38.3/42.4 measured). Hugging Face's BERT and
# GPT-2 forwards synchronise (the mask check), so bench/host_calibrate.py's spin never
# measured a transformer's dispatch; DeepLearningExamples' own BERT (tools/torch_models.py's
# *-squad-dle) builds its mask arithmetically and does not. So, on one host:
#
#   gpu-check       scripts/gpu-check.sh with the carried binaries (the real backend after
#                   stop 33's realfix: barrier, local rank, the results gather)
#   host-rn50       host_calibrate.py ResNet-50 fp32 b32: the CNN's rate on this host
#   host-bl-dle     host_calibrate.py BERT-large (DLE) fp32 b32, 3 pauses a phase (its
#                   launches may fill the queue)
#   host-bb-dle     host_calibrate.py BERT-base (DLE) fp32 b32, 1 pause
#   host-bb-dle-amp the same under autocast fp16 (the AMP fit rows' casts)
#   bert-large-dle  torch_measure.py --plan bert-large-dle: DLE's BERT-large as the
#                   published rows ran it, TF32 / model.half() / autocast, b32
#   bert-large      torch_measure.py --plan bert-large (Hugging Face's, as 2026-11-28's run):
#                   the same lend's host for an own-calibration prediction
#   ddp-layers      torch_ddp_host.py --layers 1,81,161 --calib-out: DDP's host on a sixth
#                   lend (bench/ddp_host_pool.py pools it)
#
# Each part under its own limit cut to what is left of BUDGET_S less 10 s, a part with
# under PART_MIN_S (40 s) left skipped (bench/gpu_part.sh).
#
# Dry run on the CPU (no GPU: gpu-check says it skipped; toy sizes; the BERT-large
# torch_measure plans not run):
#   PATH=/root/venv-torch/bin:$PATH OUT=/tmp/gn12 DRY=1 BUDGET_S=900 nice bash bench/gpu_next12.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-420}
NAME=next12
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
  header --smi-table bench/gpu_next12.sh bench/host_calibrate.py bench/torch_measure.py \
    bench/torch_ddp_host.py bench/host_sched.py bench/gpu_part.sh scripts/gpu-check.sh \
    tools/torch_models.py .devcarry/bin/ddpsim .devcarry/bin/ddpreal
  gpu_check_part 60
  part host-rn50 50 python3 bench/host_calibrate.py --model resnet50 --batch 32 \
    --count-launches --out "$D/host-rn50.csv" --calib-out "$D/host-rn50.yaml" $HOST
  part host-bl-dle 70 python3 bench/host_calibrate.py --model bert-large-squad-dle --batch 32 \
    --pauses 3 --count-launches --out "$D/host-bl-dle.csv" --calib-out "$D/host-bl-dle.yaml" $HOST
  part host-bb-dle 50 python3 bench/host_calibrate.py --model bert-base-squad-dle --batch 32 \
    --pauses 1 --count-launches --out "$D/host-bb-dle.csv" --calib-out "$D/host-bb-dle.yaml" $HOST
  part host-bb-dle-amp 50 python3 bench/host_calibrate.py --model bert-base-squad-dle --batch 32 \
    --amp fp16 --pauses 1 --count-launches --out "$D/host-bb-dle-amp.csv" \
    --calib-out "$D/host-bb-dle-amp.yaml" $HOST
  [ "${DRY:-0}" = 1 ] || part bert-large-dle 80 env MASTER_PORT=29571 python3 bench/torch_measure.py \
    --plan bert-large-dle --out "$D/bert-large-dle.csv" --per-iter "$D/bert-large-dle-iters.csv" $TORCH
  [ "${DRY:-0}" = 1 ] || part bert-large 80 env MASTER_PORT=29572 python3 bench/torch_measure.py \
    --plan bert-large --out "$D/bert-large.csv" --per-iter "$D/bert-large-iters.csv" $TORCH
  part ddp-layers 90 env MASTER_PORT=29573 python3 bench/torch_ddp_host.py --layers 1,81,161 \
    --width 512 --reps 7 --out "$D/ddp_host_layers.csv" --calib-out "$D/ddp_host_layers-calib.yaml" $DDPHOST
  footer --smi
} 2>&1 | tee "$RUN_LOG"
pack
