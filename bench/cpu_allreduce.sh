#!/usr/bin/env bash
# MPI all-reduce on CPU ranks, measured through ddpreal's own cpu device (the
# calls a replay makes: in-place MPI_Iallreduce of floats, polled), and the
# link_lat / link_bw of an nvswitch-template topology whose plain ring
# all-reduce takes those times (docs/topologies.md, "CPU ranks under MPI").
#
#   bench/cpu_allreduce.sh [NP] [ITERS] [FIT_BYTES]
#
# NP ranks (default 2), ITERS measured iterations (default 30) of one
# schedule: a warm-up all-reduce of 8 B (it absorbs the ranks' arrival after
# the barrier; not reported), then 8 B to 32 MiB by 4x, back to back on the
# comm stream. Per size: rank 0's median and min over the iterations, and
# nccl-tests' busbw (2(N-1)/N S / t). The fit is ddpsim's plain ring on that
# template, t = 2(N-1) 2L + 2(N-1)/N S/B (a hop is two links): L from the
# median of the rows of at most 2 KiB, B from the row of FIT_BYTES (default
# 8 MiB: take the size of your buckets; MPI is no ring and its time per byte
# changes with the size, so one B fits one size range).
# Needs bin/ddpreal (make) and Open MPI's mpirun; as root it passes
# --allow-run-as-root. Timings: this machine's, now; run it more than once.
set -euo pipefail
np=${1:-2}
iters=${2:-30}
fit_bytes=${3:-8388608}
usage="usage: bench/cpu_allreduce.sh [NP [ITERS [FIT_BYTES]]]"
case "$np$iters" in *[!0-9]*) echo "$usage: NP and ITERS are whole numbers" >&2; exit 2 ;; esac
if [ "$np" -lt 2 ] || [ "$iters" -lt 1 ]; then
  echo "$usage: NP >= 2 (one rank has no all-reduce to time), ITERS >= 1" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/cpu_allreduce.XXXXXX)
trap 'rm -rf "$dir"' EXIT
sizes="8 32 128 512 2048 8192 32768 131072 524288 2097152 8388608 33554432"
{
  echo '# ddpsim-schedule v2'
  echo 'id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps'
  n=0
  for ((r = 0; r < np; r++)); do
    c=0
    for b in 8 $sizes; do
      echo "$n,$r,comm,allreduce,ar$b,-1,$c,$c,-1,,$b,0,0,"
      n=$((n + 1)); c=$((c + 1))
    done
  done
  echo "# end: $n rows"
} > "$dir/s.csv"
as_root=()
[ "$(id -u)" = 0 ] && as_root=(--allow-run-as-root)
mpirun "${as_root[@]}" -np "$np" "$root/bin/ddpreal" --device cpu \
  --schedule "$dir/s.csv" --trace "$dir/m.csv" --iters "$iters" --warmup 2 >&2
# trace columns: 1 id, 2 rank, 11 bytes, 17 start_us, 18 end_us; op 0 is the warm-up
grep -v '^#' "$dir/m.csv" | awk -F, -v np="$np" -v fit="$fit_bytes" '
  NR > 1 && $2 == 0 && $1 > 0 { t[$11] = t[$11] " " ($18 - $17); n[$11]++ }
  END {
    printf "# %d ranks, rank 0, %d iterations\n", np, n[8]
    printf "%12s %12s %12s %10s\n", "size(B)", "median(us)", "min(us)", "busbw(GB/s)"
    m = split("'"$sizes"'", sz, " ")
    small = ""
    for (k = 1; k <= m; k++) {
      s = sz[k]; c = split(t[s], v, " ")
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
      med[s] = c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
      printf "%12d %12.1f %12.1f %10.3f\n", s, med[s], v[1], 2 * (np - 1) / np * s / med[s] / 1e3
      if (s <= 2048) small = small " " med[s]
    }
    c = split(small, v, " ")
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
    lat = (c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2) / (4 * (np - 1))
    if (!(fit in med)) { printf "FIT_BYTES %s is not a measured size\n", fit; exit 2 }
    left = med[fit] - 4 * (np - 1) * lat
    if (left <= 0) { printf "FIT_BYTES %s took no longer than the latency term (%.1f us): fit at a larger size\n", fit, med[fit]; exit 2 }
    bw = 2 * (np - 1) / np * fit / left / 1e3
    printf "nvswitch template: link_lat %.2fus (median of the rows <= 2 KiB / %d), link_bw %.3fGBps (the %d B row)\n",
           lat, 4 * (np - 1), bw, fit
  }'
