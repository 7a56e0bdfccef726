#!/bin/sh
# GPU checks of the real backend (make gpu-check): build, replay a 1-rank
# and a 2-rank (shared GPU) ResNet-50 schedule on the cuda device with spin
# and gemm compute, sweep all-reduce with `ddpreal collective` on 1 and
# 2 ranks, and run `ddpreal calibrate` (calib.yaml). Everything goes under
# the results directory ($1, default bench/results/gpu-DATE); a short table
# is printed at the end.
#
# Without a usable GPU (no nvidia-smi, or it fails) it says it skipped and
# why, and exits 0. DDPSIM / DDPREAL name other binaries (default bin/);
# GPU_CHECK_NO_MAKE=1 skips the build; each command is ended after
# GPU_CHECK_TIMEOUT seconds (default 600).
set -eu

cd "$(dirname "$0")/.."
OUTDIR=${1:-bench/results/gpu-$(date +%F)}
DDPSIM=${DDPSIM:-bin/ddpsim}
DDPREAL=${DDPREAL:-bin/ddpreal}

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: skipped: nvidia-smi not found (no NVIDIA driver on this machine)"
  exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: skipped: nvidia-smi -L failed (no usable GPU): $(nvidia-smi -L 2>&1 | head -n1)"
  exit 0
fi

if [ "${GPU_CHECK_NO_MAKE:-0}" != 1 ]; then
  make --no-print-directory all
fi
if [ ! -x "$DDPREAL" ]; then
  echo "gpu-check: $DDPREAL was not built (is real/main.c there? see make info)" >&2
  exit 1
fi

mkdir -p "$OUTDIR"
nvidia-smi -L | tee "$OUTDIR/gpus.txt"
nvidia-smi > "$OUTDIR/nvidia-smi.txt" 2>&1 || true

fail=0
TIMEOUT=
if command -v timeout >/dev/null 2>&1; then TIMEOUT="timeout ${GPU_CHECK_TIMEOUT:-600}"; fi
# run NAME CMD...: runs CMD, output to $OUTDIR/NAME.log, remembers failures
run() {
  name=$1
  shift
  echo "+ $*" > "$OUTDIR/$name.log"
  if $TIMEOUT "$@" >> "$OUTDIR/$name.log" 2>&1; then
    echo "ok    $name"
  else
    echo "FAIL  $name (see $OUTDIR/$name.log)"
    tail -n 5 "$OUTDIR/$name.log" | sed 's/^/      /'
    fail=1
  fi
}

# The schedules, predicted on GPU_CHECK_TOPO (default dgx-h100: the GPU the
# lent machines have, so gemm replays measure the roofline's predictions).
TOPO=${GPU_CHECK_TOPO:-dgx-h100}
run sched1 "$DDPSIM" --topo "$TOPO" --model resnet50 --world-size 1 \
  --schedule "$OUTDIR/s1.csv" --trace "$OUTDIR/p1.csv"
run sched2 "$DDPSIM" --topo "$TOPO" --model resnet50 --world-size 2 \
  --schedule "$OUTDIR/s2.csv" --trace "$OUTDIR/p2.csv"

for c in spin gemm; do
  run "replay1-$c" "$DDPREAL" --device cuda --compute "$c" --schedule "$OUTDIR/s1.csv" \
    --trace "$OUTDIR/t1-$c.csv" --iters 10 --warmup 2
  run "replay2-$c" "$DDPREAL" --device cuda --compute "$c" --share-gpus \
    --schedule "$OUTDIR/s2.csv" --trace "$OUTDIR/t2-$c.csv" --iters 10 --warmup 2
done

run coll1 "$DDPREAL" collective -b 8 -e 256M -f 4 -g 1
run coll2 "$DDPREAL" collective -b 8 -e 256M -f 4 -g 2 --share-gpus
run coll1-csv "$DDPREAL" collective -b 8 -e 256M -f 4 -g 1 --format csv
run coll2-csv "$DDPREAL" collective -b 8 -e 256M -f 4 -g 2 --share-gpus --format csv

# Calibration (real/README.md): fits of the compute model and the all-reduce
# on this GPU, from the 1-rank schedule's GEMM sizes.
run calibrate "$DDPREAL" calibrate --schedule "$OUTDIR/s1.csv" --out "$OUTDIR/calib.yaml"

echo
echo "replays (summary lines of ddpreal):"
for f in "$OUTDIR"/replay*.log; do
  [ -f "$f" ] || continue
  printf '  %-16s %s\n' "$(basename "$f" .log)" \
    "$(grep -i -E 'p50|iter|wrong' "$f" | grep -v '^+' | head -n 2 | tr '\n' ' ')"
done
# Rank 0's compute stream in a measured trace: measured over predicted
# (the schedule's dur_us) compute time, and the median gap between one
# compute op's end and the next one's start in the same iteration (the
# executor's per-op cost on the device timeline).
compute_summary() {
  awk -F, '!/^#/ && $1 != "id" && $2 == 0 && $3 == "compute" {
      meas += $18 - $17; pred += $13
      if ($16 == it && have) print $17 - last > gaps
      it = $16; last = $18; have = 1; n++ }
    END { if (pred > 0) printf "ops %d  measured/predicted compute %.3f", n, meas / pred }' \
    gaps="$OUTDIR/gaps.tmp" "$1"
  if [ -s "$OUTDIR/gaps.tmp" ]; then
    printf '  median gap %s us\n' "$(sort -g "$OUTDIR/gaps.tmp" |
      awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
  else
    echo
  fi
  rm -f "$OUTDIR/gaps.tmp"
}
echo
echo "compute on rank 0 (trace rows; predicted = the schedule's dur_us on $TOPO):"
for f in "$OUTDIR"/t1-*.csv "$OUTDIR"/t2-*.csv; do
  [ -f "$f" ] || continue
  printf '  %-10s ' "$(basename "$f" .csv)"
  compute_summary "$f"
done

echo
echo "collectives (largest size; busbw GB/s, #wrong):"
for f in "$OUTDIR"/coll1-csv.log "$OUTDIR"/coll2-csv.log; do
  [ -f "$f" ] || continue
  awk -F, -v n="$(basename "$f" .log)" \
    '/^allreduce|^broadcast|^reduce|^allgather|^reducescatter/ { last = $0 }
     END { split(last, c, ","); if (last != "")
       printf "  %-10s nranks %s size %s B time %s us busbw %s wrong %s\n",
              n, c[4], c[5], c[6], c[8], c[9] }' "$f"
done
if [ -f "$OUTDIR/calib.yaml" ]; then
  echo
  echo "calibration ($OUTDIR/calib.yaml):"
  grep -v '^#' "$OUTDIR/calib.yaml" | sed 's/^/  /'
fi
echo
echo "results in $OUTDIR"
exit $fail
