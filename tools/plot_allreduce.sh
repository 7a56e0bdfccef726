#!/usr/bin/env bash
# Predicted vs measured all-reduce on 8x A100 (NVSwitch).
#
#   tools/plot_allreduce.sh --table    prints the markdown table of docs/collectives.md
#   tools/plot_allreduce.sh            writes docs/allreduce_8xa100.png, by ddpsim itself:
#     bin/ddpsim collective --topo dgx-a100 --algo auto -b 1K -e 8G -f 2 \
#       --plot docs/allreduce_8xa100.png --reference tests/data/nccl_allreduce_8xa100_azure.csv
#
# Predicted: bin/ddpsim collective --topo dgx-a100 --algo auto (with and without
# the measured extra effects); measured: tests/data/nccl_allreduce_8xa100_azure.csv
# (nccl-tests, NCCL 2.18.5). DDPSIM_BIN overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DDPSIM_BIN:-bin/ddpsim}
meas=tests/data/nccl_allreduce_8xa100_azure.csv
if [ "${1:-}" != "--table" ]; then
  exec "$bin" collective --topo dgx-a100 --algo auto -b 1K -e 8G -f 2 \
    --plot docs/allreduce_8xa100.png --reference "$meas"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" collective --topo dgx-a100 --algo auto -b 1K -e 8G -f 2 --format csv > "$tmp/pred.csv"
"$bin" collective --topo dgx-a100 --algo auto -b 1K -e 8G -f 2 --nccl-extra none \
  --format csv > "$tmp/bare.csv"
# size, measured time, measured busbw (one line per size, in order)
grep -v '^#' "$meas" | tail -n +2 | awk -F, '{print $5, $8, $6}' > "$tmp/meas.txt"
# size, proto, sim time, sim busbw, nccl model time, sim time without extras
tail -n +2 "$tmp/pred.csv" | awk -F, '{print $5, $3, $8, $10, $14}' > "$tmp/p.txt"
tail -n +2 "$tmp/bare.csv" | awk -F, '{print $8, $10}' > "$tmp/b.txt"
paste -d' ' "$tmp/meas.txt" "$tmp/p.txt" "$tmp/b.txt" > "$tmp/all.txt"

echo "| size | proto | measured (us) | simulated (us) | error | NCCL model (us) | model error | sim, no extras (us) |"
echo "| ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: |"
awk '{ s=$1; if (s>=1073741824) l=sprintf("%g GiB", s/1073741824);
       else if (s>=1048576) l=sprintf("%g MiB", s/1048576); else l=sprintf("%g KiB", s/1024);
       printf "| %s | %s | %.1f | %.1f | %+.1f%% | %.1f | %+.1f%% | %.1f |\n",
         l, $5, $2, $6, 100*($6-$2)/$2, $8, 100*($8-$2)/$2, $9 }' "$tmp/all.txt"
