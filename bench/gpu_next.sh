#!/bin/bash
# The next lent GPU's one call: the questions left open on 2026-11-26
# (bench/README.md, "The next GPU call", says what each part answers). Run by
# the device tool from the repository root, Python only (no binaries carried):
#
#   run(command="bash bench/gpu_next.sh", timeout_s=560)
#
# Parts, in priority order, each under its own timeout so one failure or
# overrun loses only itself; every timeout is also cut to what is left of
# BUDGET_S (default 470 s, about 8 minutes), so the tar below always runs
# before the device tool's own limit. Expected on an H200 (H100 about 1.15x,
# from bench/results/gpu-2026-11-26-h200/h100/run.log against call 1):
#   d. nvidia-smi -q (first: it takes a second and reads the idle clocks)    ~2 s
#   f. gpu_kernels.py --only gemm (80 GEMMs of the transformers' shapes)   ~5-20 s
#   h. host_calibrate.py, ResNet-50, ResNeXt-101 32x4d, BERT-base b32       ~30-60 s
#   a. gpu_kernels.py --only elementwise (384 cases, one profile each)  ~70-170 s
#   b. torch_measure.py SE-ResNeXt-101 fp32 b32, profiled                 ~45 s
#      (bench/results/gpu-2026-11-26b-h200/run4.log: 31.0 s + start-up)
#   g. torch_measure.py BERT-base-squad TF32 b24, profiled                ~40 s
#   e. torch_measure.py, six runs' peak memory (peak_alloc_gib)    ~60-90 s
#   c. gpu_kernels.py --only conv at batch 32, 128, 64         73 + 122 + 67 s
#      (bench/results/gpu-2026-11-26b-h200/run*.log, H200)
# Everything lands in $OUT/next.tar.gz (the device returns at most 8 files).
# A dry run here, on the CPU at toy sizes (the torch_measure part finds no
# run of that name in the smoke plan and writes only its header):
#   PATH=/root/venv-torch/bin:$PATH KERNELS_ARGS="--device cpu --quick" \
#     HOST_ARGS="--device cpu --batch 2 --iters 1 --warmup 0" \
#     TORCH_ARGS="--device cpu --plan smoke" OUT=/tmp/gn bash bench/gpu_next.sh
set -u
export PYTHONUNBUFFERED=1
R=$PWD
BUDGET_S=${BUDGET_S:-470}
TOP=${OUT:-/tmp/out}
D=$TOP/next
mkdir -p "$D"
START=$SECONDS

# part NAME LIMIT_S CMD...: CMD under timeout, its output in $D/NAME.log
part() {
  local name=$1 limit=$2 left t0 rc
  shift 2
  left=$((BUDGET_S - (SECONDS - START) - 10))
  if [ "$left" -lt 20 ]; then
    echo "$name: skipped, ${left} s of the budget left"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$D/$name.log" 2>&1
  rc=$?
  echo "$name: rc $rc after $((SECONDS - t0)) s (limit $limit s)"
  grep -v -e '^USDT:' -e 'UserWarning' -e '_warn_once' "$D/$name.log" | tail -4
}

pack() {
  cd "$TOP" && tar czf next.tar.gz next && rm -rf next
}
trap 'echo "stopped: packing what there is"; pack; exit 1' TERM INT

{
  date -u
  git -C "$R" log -1 --format='commit %H %s' 2>/dev/null || echo "commit: no .git here"
  part nvidia-smi-q 30 nvidia-smi -q
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.max.mem \
    --format=csv 2>&1
  part gemm 60 python3 bench/gpu_kernels.py --only gemm --out "$D/gemm.csv" ${KERNELS_ARGS:-}
  for m in resnet50 resnext101_32x4d bert-base; do
    part host-$m 60 python3 bench/host_calibrate.py --model $m --out "$D/host-$m.csv" \
      ${HOST_ARGS:-}
  done
  part elementwise 220 python3 bench/gpu_kernels.py --only elementwise \
    --out "$D/elementwise.csv" ${KERNELS_ARGS:-}
  part se-fp32 100 python3 bench/torch_measure.py --only se_resnext101_32x4d-fp32-b32 \
    --out "$D/torch.csv" --profile-dir "$D/prof" ${TORCH_ARGS:-}
  part tf32-prof 90 python3 bench/torch_measure.py --only bert-base-squad-tf32-b24 \
    --profile-all --out "$D/tf32.csv" --profile-dir "$D/prof" ${TORCH_ARGS:-}
  part memory 110 python3 bench/torch_measure.py \
    --only gpt2-bf16-b8,gpt2-fp32-b8,bert-base-amp-b32,bert-base-fp32-b32,resnet50-amp-b128,resnet50-fp32-b32 \
    --out "$D/memory.csv" ${TORCH_ARGS:-}
  for b in 32 128 64; do
    part conv-b$b 170 python3 bench/gpu_kernels.py --only conv --batch $b \
      --out "$D/conv-b$b.csv" ${KERNELS_ARGS:-}
  done
  # the clocks and throttle reasons after the load
  nvidia-smi -q -d CLOCK,PERFORMANCE > "$D/nvidia-smi-after.txt" 2>&1
  echo "total $((SECONDS - START)) s"
  date -u
} 2>&1 | tee "$D/run.log"
pack
