#!/bin/bash
# One lent GPU's measurements for issue #12, run by the device tool from the
# repository root with binaries built on the development VM carried in
# .devcarry/{bin,lib} (bench/results/gpu-2026-11-23-h100/README.md says how):
#   1. bench/torch_measure.py: real PyTorch training (ResNet-50, BERT-base,
#      BERT-base-squad, GPT-2) and DDP's reducer at world size 1 per bucket cap;
#   2. `ddpreal calibrate` on ResNet-50's and BERT-base's schedules (GEMMs in
#      both math modes, the convolution proxy, memory, NCCL launch, interference);
#   3. a gemm replay of ResNet-50's schedule.
# Everything lands in $OUT/m.tar.gz (the device returns at most 8 files).
set -u
R=$PWD
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$R/.devcarry/lib:$NV/nccl/lib:$NV/cu13/lib:/usr/local/cuda/lib64
export DDPREAL_TIMEOUT_S=60 DDPSIM_DATA_DIR=$R PYTHONUNBUFFERED=1
B=$R/.devcarry/bin
D=${OUT:-/tmp/out}/m
mkdir -p "$D"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  case "$gpu" in *H200*) topo=validation/topologies/nd-h200-v5.yaml ;; *) topo=dgx-h100 ;; esac
  echo "topology: $topo"
  timeout ${TORCH_S:-270} python3 bench/torch_measure.py --out "$D/torch.csv" --profile-dir "$D/prof"
  echo "torch_measure: rc $?"
  for m in resnet50 bert-base; do
    $B/ddpsim --topo $topo --model $m --world-size 1 --schedule "$D/s-$m.csv" \
      --trace "$D/p-$m.csv" --format csv > /dev/null
    timeout ${CALIB_S:-80} $B/ddpreal calibrate --schedule "$D/s-$m.csv" --out "$D/calib-$m.yaml" \
      > "$D/calibrate-$m.log" 2>&1
    echo "calibrate $m: rc $?"; tail -5 "$D/calibrate-$m.log"
  done
  timeout 40 $B/ddpreal --device cuda --compute gemm --schedule "$D/s-resnet50.csv" \
    --trace "$D/t-resnet50.csv" --iters 5 --warmup 2
  echo "replay: rc $?"
  date -u
} 2>&1 | tee "$D/run.log"
cd "${OUT:-/tmp/out}" && tar czf m.tar.gz m && rm -rf m
