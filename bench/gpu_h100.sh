#!/bin/bash
# The kernel microbenchmarks of 2026-11-27's H200 call (bench/results/gpu-2026-11-27-h200),
# repeated on an H100 SXM, so the values gpus.yaml gives H100 by the same-chip rule
# (tools/gen_gpus.py: H200's rates on the same GH100 chip and clocks) are checked on the
# H100 itself, with its own HBM3 (3.35 TB/s against H200's 4.8). One call of the
# device tool, kind nvidia-h100-x1, python3 only (no binaries carried):
#
#   run(command="bash bench/gpu_h100.sh", kind="nvidia-h100-x1", timeout_s=370)
#
# Parts, each under its own timeout cut to what is left of BUDGET_S (default 340 s);
# expected on an H100 (from the H200 call's run.log, about 1.15x):
#   d. nvidia-smi (name, driver, clocks)                                ~1 s
#   j. gpu_kernels.py --only rn50conv --batch 128 (ResNet-50's convolutions, timed plain, as run)  ~35-40 s
#   i. gpu_kernels.py --only bmm (the attention core's products)        ~10 s
#   f. gpu_kernels.py --only gemm (the transformers' linears)           ~7 s
#   c. gpu_kernels.py --only castreduce                                 ~15 s
#   l. gpu_kernels.py --only layernorm                                  ~15 s
#   k. torch_measure.py for the three H100 rows furthest off in validation/
#      (bert-base-squad-tf32-b24 -14.0 %, resnet50-amp-b128-nhwc -24.5 %,
#      bert-base-amp-b32 -14.8 %; measured 2026-11-26 on another H100): a repeat
#      on a second machine says how much of each is the machine             ~40 s
#   m. the machine's CPUs and load (uname, nproc, lscpu, /proc/loadavg)
#   p. host_phases.py for SE-ResNeXt-101 and ResNeXt-101 32x4d (each phase's host
#      time and the calls that synchronise: is the 1.5x "slow mode" of some H200
#      runs a synchronisation inside backward?)                            ~40 s
#   q. host_calibrate.py for SE-ResNeXt-101, twice in fresh processes (on the H200
#      its backward took the spin's whole 300 ms: blocked on the GPU?)     ~60 s
#   r. torch_measure.py for ResNeXt-101 32x4d and SE-ResNeXt-101 fp32 b32, twice in
#      fresh processes (H200 runs of one model came out up to 1.5x apart)  ~50 s
# Everything lands in $OUT/h100.tar.gz. Dry run here (CPU, toy sizes):
#   PATH=/root/venv-torch/bin:$PATH KERNELS_ARGS="--device cpu --quick" \
#     TORCH_ARGS="--device cpu --plan smoke" HOST_ARGS="--device cpu --batch 2 --iters 1 --warmup 0" \
#     PHASES_ARGS="--batch 2 --iters 1" OUT=/tmp/gh bash bench/gpu_h100.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-340}

NAME=h100
PART_RESERVE_S=5
PART_MIN_S=10
PART_TAIL=2
. "$R/bench/gpu_part.sh"

{
  date -u
  git -C "$R" log -1 --format='commit %H %s' 2>/dev/null || echo "commit: no .git here"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.max.mem \
    --format=csv 2>&1
  part rn50conv-b128 60 python3 bench/gpu_kernels.py --only rn50conv --batch 128 \
    --rn50-timing plain --out "$D/rn50conv-b128.csv" ${KERNELS_ARGS:-}
  for k in bmm gemm castreduce layernorm; do
    part $k 40 python3 bench/gpu_kernels.py --only $k --out "$D/$k.csv" ${KERNELS_ARGS:-}
  done
  part torch 70 python3 bench/torch_measure.py \
    --only bert-base-squad-tf32-b24,resnet50-amp-b128-nhwc,bert-base-amp-b32 \
    --out "$D/torch.csv" ${TORCH_ARGS:-}
  { uname -a; nproc; lscpu; cat /proc/loadavg; } > "$D/cpu.txt" 2>&1
  part phases 60 python3 bench/host_phases.py --models se_resnext101_32x4d,resnext101_32x4d \
    --iters 10 --out "$D/phases.csv" ${PHASES_ARGS:-}
  for i in 1 2; do
    part host-se-$i 40 python3 bench/host_calibrate.py --model se_resnext101_32x4d \
      --out "$D/host-se-$i.csv" ${HOST_ARGS:-}
  done
  for i in 1 2; do
    part torch2-$i 40 python3 bench/torch_measure.py \
      --only resnext101_32x4d-fp32-b32,se_resnext101_32x4d-fp32-b32 \
      --out "$D/torch2-$i.csv" ${TORCH_ARGS:-}
  done
  cat /proc/loadavg >> "$D/cpu.txt"
  nvidia-smi -q -d CLOCK,PERFORMANCE > "$D/nvidia-smi-after.txt" 2>&1
  echo "total $((SECONDS - START)) s"
  date -u
} 2>&1 | tee "$D/run.log"
pack
