#!/bin/bash
# The convolution-pass call: ResNet-50's convolutions timed per pass without the
# host's floor, so ddpsim can take a rate per pass and a fixed cost per
# convolution kernel (bench/results/gpu-2026-11-27-h200/notes-rn50conv.md, sections
# 2 and 4: the 2026-11-27 rows timed calls back to back, none under 28 us). Run by
# the device tool from the repository root, Python only (no binaries carried;
# torch 2.11 on the device):
#
#   run(command="bash bench/gpu_next3.sh", timeout_s=400)
#
# Each part under its own timeout, cut to what is left of BUDGET_S (320 s), so the
# tar below always runs; the batch-128 parts only take what is left beyond
# TORCH_RESERVE_S (120 s, the three training runs' limits), so they are the ones
# skipped when the earlier parts run long. Expected on an H200, from
# gpu-2026-11-27-h200/run.log (rn50conv b32, three modes timed plain: 63 s in the
# first process that loads cuDNN's kernels, b128 33 s) plus ~0.1 s of profiler per
# pass (castreduce: 58 profiled rows in 7 s) and gpu-2026-11-27c-h200/run.log
# (torch_measure: ~5 s to start, ~13 s a model at 60 iterations):
#   m. machine: nvidia-smi clocks, power, temperature                       ~2 s
#   a. gpu_kernels.py --only rn50conv --batch 32, TF32 NCHW and channels-last,
#      queued (23 shapes x 3 passes x 2 modes, each with its kernels)  ~55-70 s
#   b. the same, fp16 channels-last (autocast's convolutions as the AMP
#      fit row, ResNeXt-101 AMP b128, runs them)                         ~25 s
#   c. TF32 NCHW and channels-last at batch 128                     ~35 s
#   d. fp16 channels-last at batch 128                                   ~20 s
#   t1-t3. torch_measure.py --only resnet50-fp32-b32 --iters 60 --per-iter,
#      three fresh processes (the fit row's process-to-process spread) ~18 s each
#   f. conv_pass_fit.py on a-d's CSVs (standard library)                   ~1 s
#   then nvidia-smi -q -d CLOCK,PERFORMANCE after the load
# About 210 s in all. Everything lands in $OUT/next3.tar.gz (`next3/run.log`: each
# part's exit status and seconds; `next3/PART.log` its output; the CSVs).
# A dry run here, on the CPU at toy sizes (three shapes; torch_measure's smoke plan
# runs resnet50-fp32-b32 at batch 2, slower on a loaded CPU than on the device: 90 s
# each; the analysis needs the peaks given: no GPU):
#   PATH=/root/venv-torch/bin:$PATH KERNELS_ARGS="--device cpu --quick" \
#     BUDGET_S=500 TORCH_LIMIT_S=90 \
#     TORCH_ARGS="--device cpu --plan smoke --iters 3 --warmup 1" \
#     FIT_ARGS="--peak-fp32 1 --peak-tf32 1 --peak-fp16 1" OUT=/tmp/gn3 bash bench/gpu_next3.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-320}
TORCH_LIMIT_S=${TORCH_LIMIT_S:-40}   # each training run's
TORCH_RESERVE_S=${TORCH_RESERVE_S:-$((3 * TORCH_LIMIT_S))}

NAME=next3
PART_TAIL=4
. "$R/bench/gpu_part.sh"

# part_early NAME LIMIT CMD...: a part that leaves TORCH_RESERVE_S for the training runs
part_early() {
  local name=$1 limit=$2 left
  left=$((BUDGET_S - (SECONDS - START) - ${PART_RESERVE_S:-10} - TORCH_RESERVE_S))
  if [ "$left" -lt "${PART_MIN_S:-20}" ]; then
    echo "$name: skipped, ${left} s left before the training runs' reserve"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  part "$@"
}

conv() {  # conv NAME LIMIT BATCH MODES: rn50conv queued, its CSV $D/NAME.csv
  local name=$1 limit=$2 batch=$3 modes=$4
  part_early "$name" "$limit" python3 bench/gpu_kernels.py --only rn50conv --batch "$batch" \
    --modes "$modes" --rn50-timing queued --out "$D/$name.csv" ${KERNELS_ARGS:-}
}

# the machine: GPU, driver, clocks (the idle ones: read first), power, temperature; CPUs
machine() {
  nvidia-smi --format=csv --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.max.mem,clocks.mem,power.limit,temperature.gpu \
    2>&1 || echo "no nvidia-smi"
  uname -r; nproc; cat /proc/loadavg
  python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"
}

{
  date -u
  git -C "$R" log -1 --format='commit %H %s' 2>/dev/null || echo "commit: no .git here"
  export -f machine
  part machine 30 bash -c machine
  conv rn50conv-tf32-b32 110 32 fp32-tf32,fp32-tf32-nhwc
  conv rn50conv-half-b32 60 32 fp16-nhwc
  conv rn50conv-tf32-b128 80 128 fp32-tf32,fp32-tf32-nhwc
  conv rn50conv-half-b128 60 128 fp16-nhwc
  for i in 1 2 3; do
    part torch-r$i "$TORCH_LIMIT_S" python3 bench/torch_measure.py --only resnet50-fp32-b32 --iters 60 \
      --out "$D/torch-r$i.csv" --per-iter "$D/iters-r$i.csv" ${TORCH_ARGS:-}
  done
  csvs=$(ls "$D"/rn50conv-*.csv 2>/dev/null)
  if [ -n "$csvs" ]; then
    # shellcheck disable=SC2086  # one argument per CSV
    timeout 20 python3 bench/conv_pass_fit.py $csvs ${FIT_ARGS:-} > "$D/conv_pass_fit.txt" 2>&1
    echo "conv-pass-fit: rc $?"
    tail -12 "$D/conv_pass_fit.txt"
  fi
  nvidia-smi -q -d CLOCK,PERFORMANCE > "$D/nvidia-smi-after.txt" 2>&1
  echo "total $((SECONDS - START)) s"
  date -u
} 2>&1 | tee "$D/run.log"
pack
