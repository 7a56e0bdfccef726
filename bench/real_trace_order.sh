#!/usr/bin/env bash
# Replays a two-rank schedule with ddpreal's cpu device RUNS times beside
# LOAD busy loops and asks `ddpsim analyze` about each measured trace:
# counts the traces it refuses. Before the fix of real/replay.c's placement
# every rank's iteration was placed at rank 0's start of it, so a rank 0
# descheduled after the barrier moved the other ranks' iterations late and
# analyze refused the trace: "column 'end_us': iteration K ends ... before
# iteration K-1" (found by fuzzing, about 1 run in 5 under a load of 15).
#
#   bench/real_trace_order.sh [RUNS [LOAD [ITERS]]]  (defaults 20 13 20; LOAD 0: none)
#   DDPSIM=... DDPREAL=... to try other binaries (default bin/ddpsim, bin/ddpreal)
#   RANK_NICE=N runs the ranks under nice -n N (default 0)
#   STOP_MS=N deschedules rank 0 by hand: a helper stops it (SIGSTOP) for N
#   ms at random moments, 0 to 200 ms apart, until it exits (default 0:
#   off). It stands in for the scheduler taking the core from rank 0,
#   including while it waits in the barrier between iterations, without
#   waiting for the machine's load to do so by chance.
#
# Prints one line per refused trace, then "refused: N of RUNS"; exit 1 if any.
# The busy loops are this script's children, ended by their PIDs on exit.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-20}
load=${2:-13}
iters=${3:-20}
stop_ms=${STOP_MS:-0}
ddpsim=${DDPSIM:-$here/bin/ddpsim}
ddpreal=${DDPREAL:-$here/bin/ddpreal}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$here"
"$ddpsim" --topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml \
  --world-size 2 --schedule "$tmp/s.csv" >/dev/null
# Every rank runs through this wrapper; with STOP_MS > 0 rank 0 is stopped
# and continued by a background loop that ends when rank 0 does.
stop_s=$(awk -v ms="$stop_ms" 'BEGIN { print ms / 1000 }')
{
  echo '#!/usr/bin/env bash'
  echo "if [ \"\$OMPI_COMM_WORLD_RANK\" = 0 ] && [ $stop_ms -gt 0 ]; then"
  echo '  self=$$'
  echo '  ( while kill -0 $self 2>/dev/null; do'
  echo '      sleep "0.$(printf %03d $((RANDOM % 200)))"'
  echo '      kill -STOP $self 2>/dev/null || break'
  echo "      sleep $stop_s"
  echo '      kill -CONT $self 2>/dev/null || break'
  echo '    done ) &'
  echo 'fi'
  echo "exec \"$ddpreal\" \"\$@\""
} >"$tmp/rank.sh"
chmod +x "$tmp/rank.sh"
for _ in $(seq "$load"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
refused=0
for r in $(seq "$runs"); do
  if ! nice -n "${RANK_NICE:-0}" mpirun --oversubscribe -np 2 "$tmp/rank.sh" --device cpu \
      --schedule "$tmp/s.csv" --trace "$tmp/m$r.csv" --iters "$iters" --warmup 1 \
      >"$tmp/out$r" 2>&1; then
    echo "run $r: ddpreal failed: $(tail -1 "$tmp/out$r")"
    refused=$((refused + 1))
    continue
  fi
  if ! "$ddpsim" analyze "$tmp/m$r.csv" >"$tmp/an$r" 2>&1; then
    echo "run $r: $(grep -m1 'end_us' "$tmp/an$r" || tail -1 "$tmp/an$r")"
    refused=$((refused + 1))
  fi
done
echo "refused: $refused of $runs (load: $load busy loops on $(nproc) cores, ranks at nice" \
  "${RANK_NICE:-0}, rank 0 stopped ${stop_ms} ms at random, --iters $iters)"
[ "$refused" -eq 0 ]
