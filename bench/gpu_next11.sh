#!/bin/bash
# The real backend after the splits, the bucket-size pairs measured in one process, and
# issue #12's host questions (prepared 2026-11-28), one call of the device tool on an H100
# or H200, with ddpsim and ddpreal built here (Debian 12) and carried with the shared
# libraries the device image lacks, as bench/results/gpu-2026-11-23-h100/README.md did:
#
#   rm -rf .devcarry && mkdir -p .devcarry/bin .devcarry/lib && make -j2 &&
#   cp build/release/ddpsim build/release/ddpreal .devcarry/bin/ &&
#   for l in libcsv.so.3 libgsl.so.27 libgslcblas.so.0 libmpi.so.40 libopen-rte.so.40 \
#       libopen-pal.so.40 libhwloc.so.15 libevent_core-2.1.so.7 libevent_pthreads-2.1.so.7 \
#       libyaml-0.so.2; do cp -L /lib/x86_64-linux-gnu/$l .devcarry/lib/; done &&
#   cp -L /usr/local/cuda/lib64/libcudart.so.13 .devcarry/lib/
#
# (.devcarry is in .git/info/exclude) and, with L = `status`'s budget_left_s:
#
#   run(command="GIT_COMMIT=<commit> BUDGET_S=<min(L-160, 560)> bash bench/gpu_next11.sh",
#       carry=[".devcarry"], timeout_s=<BUDGET_S+30>)
#
# Parts in order of value, each under its own limit cut to what is left of BUDGET_S less
# 10 s, a part with under PART_MIN_S (40 s) left skipped (bench/gpu_part.sh):
#
#   gpu-check     scripts/gpu-check.sh with the carried binaries: 1- and 2-rank ResNet-50
#                 replays (spin, gemm), `ddpreal collective` sweeps, `ddpreal calibrate`:
#                 the real backend's first run since calibrate.cu and exec.c were split
#   buckets-rn50  host_inproc.py ResNet-50 fp32 b32, configs plain, ddp-cap1, ddp (25),
#                 ddp-cap100 rotated per round in ONE process (the bucket pairs whose
#                 separate runs spread 6.3 ms, validation/ddp_scaling.csv torch-h200-rn50-*),
#                 with the spin and stream calibrations (gpu_next10.sh's Q1)
#   buckets-bert  the same for BERT-base fp32 b32 (the pair measured 0.25 ms apart), spin only
#   ddp-layers    torch_ddp_host.py --layers 1,81,161 (gpu_next10.sh's Q3)
#   step-host     step_host.py --reps 4 (gpu_next10.sh's Q2)
#   bert-large    torch_measure.py --plan bert-large (validation/notes-dlebert.md)
#   inproc-rn101  host_inproc.py ResNet-101, plain, spin + stream, 6 rounds (Q1's second model)
#   host-gpt2     host_calibrate.py GPT-2 fp32 b8 (Adam's step for host_pool.py)
#
# Dry run on the CPU (no GPU: gpu-check says it skipped; toy sizes; bert-large not run):
#   PATH=/root/venv-torch/bin:$PATH OUT=/tmp/gn11 DRY=1 BUDGET_S=900 nice bash bench/gpu_next11.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-420}
NAME=next11
PART_TAIL=12
PART_MIN_S=${PART_MIN_S:-40}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
. "$R/bench/gpu_part.sh"
if [ "${DRY:-0}" = 1 ]; then
  INPROC="--device cpu --batch 2 --rounds 2 --iters 1 --warmup 0 --calib-iters 1 --calib-warmup 0"
  DDPHOST="--device cpu --layers 1,4,8 --width 32 --iters 2 --reps 2"
  STEP="--device cpu --models resnet50,mobilenet_v2 --reps 2 --iters 2 --warmup 1"
  HOST="--device cpu --batch 1 --iters 1 --warmup 0"
  TORCH="--device cpu --iters 1 --warmup 0"
else
  INPROC="" DDPHOST="" STEP="" HOST="" TORCH=""
fi
{
  header --smi-table bench/gpu_next11.sh bench/host_inproc.py bench/host_calibrate.py \
    bench/torch_measure.py bench/torch_ddp_host.py bench/step_host.py bench/host_sched.py \
    bench/gpu_part.sh scripts/gpu-check.sh tools/torch_models.py .devcarry/bin/ddpsim \
    .devcarry/bin/ddpreal
  gpu_check_part 90
  part buckets-rn50 120 env MASTER_PORT=29561 python3 bench/host_inproc.py --model resnet50 \
    --batch 32 --configs plain,ddp-cap1,ddp,ddp-cap100 --calib-modes spin,stream --rounds 8 \
    --iters 30 --sleep-ms 60 --out "$D/buckets-rn50.csv" --calib-out "$D/inproc-rn50" $INPROC
  part buckets-bert 110 env MASTER_PORT=29562 python3 bench/host_inproc.py --model bert-base \
    --batch 32 --configs plain,ddp-cap1,ddp,ddp-cap100 --calib-modes spin --rounds 5 \
    --iters 20 --sleep-ms 100 --out "$D/buckets-bert.csv" --calib-out "$D/inproc-bert" $INPROC
  part ddp-layers 90 env MASTER_PORT=29563 python3 bench/torch_ddp_host.py --layers 1,81,161 \
    --width 512 --reps 7 --out "$D/ddp_host_layers.csv" $DDPHOST
  part step-host 60 python3 bench/step_host.py --reps 4 --out "$D/step_host.csv" $STEP
  [ "${DRY:-0}" = 1 ] || part bert-large 80 env MASTER_PORT=29564 python3 bench/torch_measure.py --plan bert-large \
    --out "$D/bert-large.csv" $TORCH
  part inproc-rn101 100 env MASTER_PORT=29565 python3 bench/host_inproc.py --model resnet101 \
    --batch 32 --configs plain --calib-modes spin,stream --rounds 6 --iters 30 --sleep-ms 80 \
    --out "$D/inproc-rn101.csv" --calib-out "$D/inproc-rn101" $INPROC
  part host-gpt2 60 python3 bench/host_calibrate.py --model gpt2 --batch 8 --sleep-ms 100 \
    --count-launches --out "$D/host-gpt2.csv" $HOST
  footer --smi
} 2>&1 | tee "$RUN_LOG"
pack
