#!/usr/bin/env bash
# Issue #14's table: one ring all-reduce of S bytes (default 25 MiB) over N
# ranks on one switch (12.5 GB/s, 1 us links, as ../shared/peers), per flow
# and aggregated, with SimGrid 3.32 (SMPI, logical ring "lr", pure max-min
# model "ideal") run live beside it when SIMGRID=1 and smpirun is installed.
#
#   bench/ring_table.sh BUILD/bench [N ...]     (default N: 8 256 1024)
#   DDPSIM_BIN (default bin/ddpsim), BYTES (default 26214400), SIMGRID=1
#
# Prints one CSV row per (N, execution): the predicted time, the CPU
# seconds of the whole `ddpsim collective` run, of its simulation alone
# (bench_ring: the same ring in rank order, no set-up), SimGrid's
# prediction and wall seconds, and the ratio SimGrid wall / ddpsim CPU.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/star_topo.sh"
dir=${1:?usage: bench/ring_table.sh BUILD/bench [N ...]}
shift
sizes=${*:-8 256 1024}
bin=${DDPSIM_BIN:-$here/bin/ddpsim}
bytes=${BYTES:-26214400}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "N,bytes,model,ddpsim_us,ddpsim_cpu_s,sim_only_cpu_s,peak_rss_kb,simgrid_us,simgrid_wall_s,simgrid_wall_over_ddpsim_cpu"
for n in $sizes; do
  star_topo "$n" "$tmp/star$n.yaml"
  sg_us=- sg_wall=-
  if [ "${SIMGRID:-0}" = 1 ] && command -v smpirun >/dev/null 2>&1; then
    PLATFORMS=cluster$n SIZES=$bytes MODELS=ideal OPS=noop SURVEY=0 MEMTEST=0 ITERS=1 \
      OUTDIR="$tmp/sg" "$here/../shared/peers/simgrid/run.sh" >"$tmp/sg.csv" 2>"$tmp/sg.err" || true
    row=$(grep ":ideal:noop,$n,$bytes," "$tmp/sg.csv" | tail -n1)
    if [ -n "$row" ]; then
      sg_us=$(echo "$row" | awk -F, '{printf "%.3f", $4 * 1e6}')
      sg_wall=$(echo "$row" | cut -d, -f5)
    fi
  fi
  for model in flow aggregate; do
    /usr/bin/time -f "%U %M" -o "$tmp/time" "$bin" collective --topo "$tmp/star$n.yaml" \
      -b "$bytes" -e "$bytes" --coll-model "$model" \
      --format csv >"$tmp/out"
    read -r cpu rss <"$tmp/time"
    us=$(tail -n1 "$tmp/out" | cut -d, -f8)
    sim=$(DS_GPUS="$here/topologies/gpus.yaml" "$dir/bench_ring" "$tmp/star$n.yaml" "$n" "$bytes" "$model" |
      sed -n 's/.*sim_cpu_s=\([0-9.]*\).*/\1/p')
    ratio=$(awk -v w="$sg_wall" -v c="$cpu" 'BEGIN {if (w == "-" || c + 0 == 0) print "-"; else printf "%.0f", w / c}')
    echo "$n,$bytes,$model,$us,$cpu,$sim,$rss,$sg_us,$sg_wall,$ratio"
  done
done
