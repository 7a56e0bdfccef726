#!/bin/bash
# One lent GPU's measurements for issue #12, run by the device tool from the
# repository root with binaries built on the development VM carried in
# .devcarry/{bin,lib} (bench/results/gpu-2026-11-23-h100/README.md says how):
#   1. bench/torch_measure.py: real PyTorch training (ResNet-50/101, ResNeXt-50/101,
#      SE-ResNeXt-101, BERT-base, BERT-base-squad, GPT-2) and DDP's reducer at
#      world size 1 per bucket cap;
#   2. `ddpreal calibrate` on ResNet-50's and BERT-base's schedules (GEMMs in
#      both math modes, the convolution proxy, memory, NCCL launch, interference);
#   3. a gemm replay of ResNet-50's schedule.
# Everything lands in $OUT/m.tar.gz (the device returns at most 8 files).
# Time: the full torch_measure.py plan (34 runs) needs about 305 s of runs on an
# H100 and 265 s on an H200, plus about 10 s of start-up (each run's seconds: 27 runs
# in 209 s in bench/results/gpu-2026-11-26-h200/h100/run.log, the ResNeXt and SE
# runs' 84 s on an H200 in ../gpu-2026-11-26b-h200/run*.log, times the H100's 1.16x
# on the runs both logs share), hence TORCH_S 360 (270 would stop it in the first
# SE-ResNeXt run on an H100, losing it and the rest); the rest takes about 15 s. Worst case
# 360 + 2 x 80 + 40 = 560 s: run it with timeout_s=600. Its traces (18 runs
# profiled, 0.3-1.2 MB each) keep m.tar.gz near 10 MB, under the 16 MiB a file.
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
  timeout ${TORCH_S:-360} python3 bench/torch_measure.py --out "$D/torch.csv" --profile-dir "$D/prof"
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
