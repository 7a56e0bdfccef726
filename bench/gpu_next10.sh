#!/bin/bash
# Issue #12's three open host questions (prepared 2026-11-27, branch gpuprep), one call of the
# device tool, Python only, on an H100 or H200. Read `status`'s budget_left_s first (L: the
# lend's device time left; a fresh machine's start, a minute or more, comes out of it, and
# timeout_s kills the whole command from outside), then:
#
#   run(command="GIT_COMMIT=<commit> BUDGET_S=<L-160> bash bench/gpu_next10.sh",
#       timeout_s=<L-130>)
#
# e.g. L 840: BUDGET_S=680, timeout_s=710 (every part at its defaults); L 420: prefix
# INPROC_ARGS='--rounds 6' STEP_ARGS='--reps 4' and BUDGET_S=260, timeout_s=290 (below).
# (the device's copy has no .git: GIT_COMMIT names the commit, run.log records the scripts'
# sha256). Parts in order of value, each under its own limit cut to what is left of BUDGET_S
# (default 420) less 10 s, a part with under PART_MIN_S (40 s: torch's import and a model's
# build alone take ~8-20 s) left skipped; ~335-345 s expected in all at the defaults (the
# estimates from the 27f/27g/27h H200 logs: ~8 s to start python and torch, ~15-20 s to build
# and warm a ResNet, ResNet-50 b32 ~20-27 ms an iteration, ResNet-101 ~45 ms; an H100's host
# may be slower: ResNet-101's part ~95 s):
#
#   inproc-rn50    ~70 s (limit 100)  Q1: does host_calibrate's --mode stream predict the
#   inproc-rn101 ~85-95 s (limit 130) free-running training better than the spin mode?
#                  host_inproc.py --configs plain --calib-modes spin,stream: in ONE process, 10
#                  (ResNet-101: 8) rounds of the spin calibration (10 iterations, each phase
#                  behind a 60/80 ms spin) and the stream one (30 consecutive iterations, phases
#                  kept where the GPU had drained), in an order rotated per round, then 30
#                  free-running training iterations (gpu_ms). Files: inproc-*.csv (calib rows
#                  with calib_mode spin / stream, train rows), inproc-*-rN.yaml/.csv (spin),
#                  inproc-*-stream-rN.yaml/.csv (stream, with *_lag_ms), *-pooled.yaml.
#   ddp-layers     ~55 s (limit 90)   Q3: DDP's per-iteration cost at world size 1 apart from
#                  its per-gradient cost: torch_ddp_host.py --layers 1,81,161 --width 512
#                  --reps 7 (plain, ddp-one, ddp-each at each count, reps interleaved over all
#                  nine); ddp-one - plain paired per rep, a line over the counts.
#   step-host      ~55 s (limit 90)   Q2: Adam's step host as a call + a cost per tensor, in one
#                  process: step_host.py (GPT-2 148, ResNet-50 161, BERT-base 201, ResNet-101
#                  314, SE-ResNeXt-101 446 tensors; Adam and SGD, each step behind a spin).
#   host-gpt2      ~35 s (limit 60)   Q2 as the pool takes it: host_calibrate.py on GPT-2 fp32
#   host-bert      ~25 s (limit 60)   b8 (never calibrated) and BERT-base fp32 b32 (26d's one
#                  Adam file, again), spin 100 ms, --count-launches: step_ms per iteration for
#                  bench/host_pool.py's Adam line (and GPT-2's forward / backward per unit).
#
# A small BUDGET_S cuts the last parts first (at the defaults, from the expected seconds):
# every part runs at BUDGET_S >= ~365; under that host-bert is skipped, under ~330 host-gpt2,
# under ~290 step-host is cut short and under ~275 skipped, under ~235 ddp-layers is cut.
# To keep the later parts, shrink the first ones: INPROC_ARGS, DDPHOST_ARGS, STEP_ARGS and
# HOST_ARGS are appended to their parts' options and argparse takes an option's last
# occurrence, so INPROC_ARGS='--rounds 6' runs both inproc parts at 6 rounds (~52 s and ~77 s)
# and STEP_ARGS='--reps 4' step-host at 4 reps (~45 s): at BUDGET_S 260 (L 420) Q1, Q3 and
# step-host then run whole (~230 s) and host-gpt2 / host-bert are skipped.
#
# A hard kill loses only the part it stops: the parts write to a folder outside $OUT, and
# after each part $OUT/next10.tar.gz is rewritten whole (bench/gpu_part.sh's snapshot); the
# live run.log is $OUT/next10-run.log until the final pack folds it into the tar.
#
# Dry run on the CPU (every part starts and writes its files; CPU times are not host costs):
#   PATH=/root/venv-torch/bin:$PATH OUT=/tmp/gn10 \
#     INPROC_ARGS="--device cpu --batch 2 --rounds 2 --iters 1 --warmup 0 --calib-iters 1 --calib-warmup 0" \
#     DDPHOST_ARGS="--device cpu --layers 1,4,8 --width 32 --iters 2 --reps 2" \
#     STEP_ARGS="--device cpu --models resnet50,mobilenet_v2 --reps 2 --iters 2 --warmup 1" \
#     HOST_ARGS="--device cpu --batch 1 --iters 1 --warmup 0" BUDGET_S=900 \
#     nice bash bench/gpu_next10.sh
# Analysis afterwards, on the CPU: bench/README.md ("The host-questions call, gpu_next10.sh").
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-420}
NAME=next10
PART_TAIL=10
PART_MIN_S=${PART_MIN_S:-40}
. "$R/bench/gpu_part.sh"
{
  header --smi-table bench/gpu_next10.sh bench/host_inproc.py bench/host_calibrate.py \
    bench/torch_measure.py bench/torch_ddp_host.py bench/step_host.py bench/host_sched.py \
    bench/host_pool.py bench/csv_input.py bench/kernel_timing.py bench/gpu_part.sh \
    tools/torch_models.py
  part inproc-rn50 100 env MASTER_PORT=29551 python3 bench/host_inproc.py --model resnet50 \
    --batch 32 --configs plain --calib-modes spin,stream --rounds 10 --iters 30 --sleep-ms 60 \
    --out "$D/inproc-rn50.csv" --calib-out "$D/inproc-rn50" ${INPROC_ARGS:-}
  part inproc-rn101 130 env MASTER_PORT=29552 python3 bench/host_inproc.py --model resnet101 \
    --batch 32 --configs plain --calib-modes spin,stream --rounds 8 --iters 30 --sleep-ms 80 \
    --out "$D/inproc-rn101.csv" --calib-out "$D/inproc-rn101" ${INPROC_ARGS:-}
  part ddp-layers 90 env MASTER_PORT=29553 python3 bench/torch_ddp_host.py --layers 1,81,161 \
    --width 512 --reps 7 --out "$D/ddp_host_layers.csv" ${DDPHOST_ARGS:-}
  part step-host 90 python3 bench/step_host.py --out "$D/step_host.csv" ${STEP_ARGS:-}
  part host-gpt2 60 python3 bench/host_calibrate.py --model gpt2 --batch 8 --sleep-ms 100 \
    --count-launches --out "$D/host-gpt2.csv" ${HOST_ARGS:-}
  part host-bert 60 python3 bench/host_calibrate.py --model bert-base --batch 32 --sleep-ms 100 \
    --count-launches --out "$D/host-bert-base.csv" ${HOST_ARGS:-}
  footer --smi
} 2>&1 | tee "$RUN_LOG"
pack
