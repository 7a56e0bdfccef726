#!/bin/bash
# The next lent GPU's one call: the questions left open at the end of
# 2026-11-26 (bench/README.md, "The next GPU call", says what each part
# answers). Run by the device tool from the repository root, Python only (no
# binaries carried):
#
#   run(command="bash bench/gpu_next.sh", timeout_s=560)
#
# Parts, in priority order, each under its own timeout so one failure or
# overrun loses only itself; every timeout is also cut to what is left of
# BUDGET_S (default 470 s, about 8 minutes), so the tar below always runs
# before the device tool's own limit. Expected on an H200 (an H100 about
# 1.15x; from bench/results/gpu-2026-11-26d-h200/run.log's kinds):
#   d. nvidia-smi -q (first: it takes a second and reads the idle clocks)    ~2 s
#   i. gpu_kernels.py --only bmm (the attention products, 72 rows)      ~10-20 s
#   c. gpu_kernels.py --only castreduce (casts, bias sums, the mask add; 58 rows)  ~25-35 s
#   l. gpu_kernels.py --only layernorm (forward, backward and each kernel
#      at BERT's, GPT-2's and SQuAD's rows, fp32/fp16/bf16/autocast)    ~10-20 s
#   j. gpu_kernels.py --only rn50conv at batch 32 and 128 (timed plain, as run) ~20 + 60 s
#   h. host_calibrate.py: ResNet-50, ResNet-101, ResNeXt-101 32x4d,
#      SE-ResNeXt-101 32x4d, batch 32 (a spin per phase)              ~30 s each
#   k. torch_measure.py, the same four fp32 b32 runs on this host, so the
#      host constants pair with iteration times of the same machine    ~50 s
#   f. gpu_kernels.py --only gemm (the linears at real shapes; on an H100
#      its own values where today's are the H200's)                      ~10 s
# Everything lands in $OUT/next.tar.gz (the device returns at most 8 files).
# A dry run here, on the CPU at toy sizes (the torch_measure part finds no
# run of that name in the smoke plan and writes only its header):
#   PATH=/root/venv-torch/bin:$PATH KERNELS_ARGS="--device cpu --quick" \
#     HOST_ARGS="--device cpu --batch 2 --iters 1 --warmup 0" \
#     TORCH_ARGS="--device cpu --plan smoke" OUT=/tmp/gn bash bench/gpu_next.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-470}

NAME=next
. "$R/bench/gpu_part.sh"

{
  date -u
  git -C "$R" log -1 --format='commit %H %s' 2>/dev/null || echo "commit: no .git here"
  part nvidia-smi-q 30 nvidia-smi -q
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.max.mem \
    --format=csv 2>&1
  part bmm 60 python3 bench/gpu_kernels.py --only bmm --out "$D/bmm.csv" ${KERNELS_ARGS:-}
  part castreduce 60 python3 bench/gpu_kernels.py --only castreduce --out "$D/castreduce.csv" \
    ${KERNELS_ARGS:-}
  part layernorm 60 python3 bench/gpu_kernels.py --only layernorm --out "$D/layernorm.csv" \
    ${KERNELS_ARGS:-}
  for b in 32 128; do
    part rn50conv-b$b 120 python3 bench/gpu_kernels.py --only rn50conv --batch $b \
      --rn50-timing plain --out "$D/rn50conv-b$b.csv" ${KERNELS_ARGS:-}
  done
  for m in resnet50 resnet101 resnext101_32x4d se_resnext101_32x4d; do
    part host-$m 60 python3 bench/host_calibrate.py --model $m --out "$D/host-$m.csv" \
      ${HOST_ARGS:-}
  done
  part torch 120 python3 bench/torch_measure.py \
    --only resnet50-fp32-b32,resnet101-fp32-b32,resnext101_32x4d-fp32-b32,se_resnext101_32x4d-fp32-b32 \
    --out "$D/torch.csv" ${TORCH_ARGS:-}
  part gemm 60 python3 bench/gpu_kernels.py --only gemm --out "$D/gemm.csv" ${KERNELS_ARGS:-}
  # the clocks and throttle reasons after the load
  nvidia-smi -q -d CLOCK,PERFORMANCE > "$D/nvidia-smi-after.txt" 2>&1
  echo "total $((SECONDS - START)) s"
  date -u
} 2>&1 | tee "$D/run.log"
pack
