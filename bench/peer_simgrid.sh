#!/usr/bin/env bash
# ddpsim beside SimGrid (../shared/peers/): the same ring all-reduce on the
# same platform -- N ranks, each behind a 12.5 GB/s, 1 us link (per
# direction) to one non-blocking switch -- compared with SimGrid 3.32's
# recorded results (peers/simgrid/results/simgrid.csv, logical ring "lr").
#
#   bench/peer_simgrid.sh [SIMGRID_CSV]      (DDPSIM_BIN: default bin/ddpsim)
#
# Prints one CSV row per (N, bytes): SimGrid's simulated time under its pure
# max-min model ("ideal") and its calibrated SMPI model, ddpsim's, the ratios
# ddpsim/ideal and ddpsim/SMPI, and both wall times (SimGrid's from its
# recorded run on a 2-core Debian 12 machine, ddpsim's measured here).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/star_topo.sh"
csv=${1:-$here/../shared/peers/simgrid/results/simgrid.csv}
bin=${DDPSIM_BIN:-$here/bin/ddpsim}
[ -r "$csv" ] || { echo "peer_simgrid: cannot read $csv" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "N,bytes,simgrid_ideal_s,simgrid_smpi_s,ddpsim_s,ratio_ideal,ratio_smpi,simgrid_wall_s,ddpsim_wall_s"
for n in 4 8 64 256 1024; do
  # The nvswitch template: one 12.5 GBps, 1 us link each way between every
  # GPU and the switch, as SimGrid's cluster (SPLITDUPLEX) platform.
  star_topo "$n" "$tmp/star$n.yaml"
  for bytes in 1048576 26214400 104857600 1073741824; do
    ideal=$(awk -F, -v n=$n -v b=$bytes '$1 ~ /cluster:lr:ideal:noop/ && $2 == n && $3 == b {print $4; exit}' "$csv")
    smpi=$(awk -F, -v n=$n -v b=$bytes '$1 ~ /cluster:lr:SMPI:noop/ && $2 == n && $3 == b {print $4; exit}' "$csv")
    sg_wall=$(awk -F, -v n=$n -v b=$bytes '$1 ~ /cluster:lr:ideal:noop/ && $2 == n && $3 == b {print $5; exit}' "$csv")
    [ -n "$ideal" ] || continue
    /usr/bin/time -f "%e" -o "$tmp/wall" "$bin" collective --topo "$tmp/star$n.yaml" \
      -b "$bytes" -e "$bytes" --format csv >"$tmp/out"
    t_us=$(tail -n1 "$tmp/out" | cut -d, -f8)
    awk -v n=$n -v b=$bytes -v i="$ideal" -v s="$smpi" -v t="$t_us" -v sw="$sg_wall" -v w="$(cat "$tmp/wall")" \
      'BEGIN {d = t / 1e6; printf "%d,%d,%.9f,%.9f,%.9f,%.6f,%.4f,%s,%s\n", n, b, i, s, d, d / i, d / s, sw, w}'
  done
done
