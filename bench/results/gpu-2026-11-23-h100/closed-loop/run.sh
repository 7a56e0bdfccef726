#!/bin/bash
# Closed loop on the GPU: predict (shipped factors) -> replay with real GEMMs
# -> calibrate (fp32 math, as the gemm device runs) -> predict again with
# --calib -> compare both predictions with the replay.
set -u
R=$PWD
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$R/.devcarry/lib:$NV/nccl/lib:$NV/cu13/lib:/usr/local/cuda/lib64
export DDPREAL_TIMEOUT_S=60 DDPSIM_DATA_DIR=$R
B=$R/.devcarry/bin
D=$OUT/loop
mkdir -p "$D"
cd "$D"
{
  date -u
  for m in resnet50 bert-base; do
    $B/ddpsim --topo dgx-h100 --model $m --world-size 1 --schedule s-$m.csv --trace p-$m.csv --format csv
    $B/ddpreal --device cuda --compute gemm --schedule s-$m.csv --trace t-$m.csv --iters 5 --warmup 2
    $B/ddpreal calibrate --schedule s-$m.csv --out calib-$m.yaml --fp32-math fp32
    $B/ddpsim --topo dgx-h100 --model $m --world-size 1 --calib calib-$m.yaml --schedule s2-$m.csv \
      --trace pc-$m.csv --format csv
    echo "== $m: shipped factors vs gemm replay"
    $B/ddpsim analyze p-$m.csv t-$m.csv | head -12
    echo "== $m: calibrated ($m's own fit) vs gemm replay"
    $B/ddpsim analyze pc-$m.csv t-$m.csv | head -12
  done
  echo "== bert-base predicted with resnet50's calibration"
  $B/ddpsim --topo dgx-h100 --model bert-base --world-size 1 --calib calib-resnet50.yaml \
    --trace px-bert.csv --format csv
  $B/ddpsim analyze px-bert.csv t-bert-base.csv | head -12
} 2>&1 | tee "$OUT/loop.log"
cd "$OUT" && tar czf loop.tar.gz loop
