#!/usr/bin/env bash
# Benchmarks (not tests): engine events per second, wall time and peak
# memory of one simulated DDP run of GPT-2 (25 MiB buckets) at growing world
# sizes on the 4096-GPU cluster topology, and of `ddpsim collective` sweeps
# of every all-reduce algorithm at 8 and 64 GPUs, docs/sweeps.md's bucket
# sweep, `ddpsim analyze` of a 512-rank ResNet-50 trace, and
# bench/ring_table.sh.
# Usage: bench/run.sh BUILD/bench
# (make bench). Prints one line per measurement; record results with the
# command in bench/README.md.
set -eu
dir=${1:?usage: bench/run.sh BUILD/bench [bench_engine args]}
shift
bin=${DDPSIM_BIN:?DDPSIM_BIN must name the ddpsim binary}
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(nproc) cores; $("$bin" --version)"
"$dir/bench_engine" "$@"
for n in 8 64 512 4096; do
  for model in flow aggregate; do
    # The per-flow ring costs O(N^2) flows per all-reduce: measure it only
    # where it finishes in reasonable time.
    if [ "$model" = flow ] && [ "$n" -gt 64 ]; then continue; fi
    /usr/bin/time -f "%e %M" -o /tmp/ddpsim-bench.$$ \
      "$bin" --topo cluster-512x8-h100 --model gpt2 --bucket-mb 25 --world-size "$n" \
      --coll-model "$model" --format csv >/tmp/ddpsim-bench-out.$$
    read -r wall rss_kb </tmp/ddpsim-bench.$$
    iter=$(tail -n1 /tmp/ddpsim-bench-out.$$ | cut -d, -f11)
    echo "ddp_gpt2 world=$n coll_model=$model wall_s=$wall peak_rss_mib=$((rss_kb / 1024)) iter_ms=$iter"
  done
done
# ddpsim collective: one all-reduce per size, 4 B to 8 GiB by factors of 2
# (32 sizes), every algorithm, on the first 8 and 64 GPUs of the same
# cluster (nvls: one node only). Last: size, time (us), busbw of 8 GiB.
for g in 8 64; do
  for algo in ring tree nvls direct reduce-broadcast hierarchical auto; do
    if [ "$algo" = nvls ] && [ "$g" -gt 8 ]; then continue; fi
    /usr/bin/time -f "%e %M" -o /tmp/ddpsim-bench.$$ \
      "$bin" collective --topo cluster-512x8-h100 -g "$g" -b 4 -e 8G -f 2 --algo "$algo" \
      --format csv >/tmp/ddpsim-bench-out.$$
    read -r wall rss_kb </tmp/ddpsim-bench.$$
    last=$(tail -n1 /tmp/ddpsim-bench-out.$$ | cut -d, -f5,8,10)
    echo "ddpsim_collective g=$g algo=$algo sizes=32 wall_s=$wall peak_rss_mib=$((rss_kb / 1024)) last: $last"
  done
done
# docs/sweeps.md's bucket sweep: BERT-base on 2node-ib, 16 bucket caps x
# world sizes 4, 8, 16 (48 configurations) in one process; at 16 ranks and
# small buckets NCCL's choice is the per-flow tree (most of the time).
/usr/bin/time -f "%e %U %M" -o /tmp/ddpsim-bench.$$ \
  "$bin" --topo 2node-ib --model bert-base --bucket-mb 1:200:log16 --world-size 4,8,16 \
  --iters 20 --format csv --jobs 1 >/tmp/ddpsim-bench-out.$$
read -r wall user rss_kb </tmp/ddpsim-bench.$$
echo "bucket_sweep bert-base 2node-ib configs=48 jobs=1 wall_s=$wall user_s=$user peak_rss_mib=$((rss_kb / 1024))"
# ddpsim analyze of one big trace: ResNet-50 DDP on 512 GPUs of
# cluster-64x8-h100 (1.12 M rows, 110 MB); the per-rank metrics and the
# timeline's lanes were once a pass over the ops per rank (revana finding 6).
"$bin" --topo cluster-64x8-h100 --world-size 512 --model resnet50 \
  --trace /tmp/ddpsim-bench-trace.$$.csv >/dev/null
/usr/bin/time -f "%e %U %M" -o /tmp/ddpsim-bench.$$ \
  "$bin" analyze /tmp/ddpsim-bench-trace.$$.csv >/tmp/ddpsim-bench-out.$$
read -r wall user rss_kb </tmp/ddpsim-bench.$$
echo "analyze resnet50 world=512 rows=$(grep -c '^[0-9]' /tmp/ddpsim-bench-trace.$$.csv) wall_s=$wall user_s=$user peak_rss_mib=$((rss_kb / 1024))"
rm -f /tmp/ddpsim-bench-trace.$$.csv
# Issue #14's table: a 25 MiB ring all-reduce on one switch at 8, 256 and
# 1024 ranks, per flow and aggregated (SIMGRID=1: SimGrid beside it).
"$(dirname "$0")/ring_table.sh" "$dir"
rm -f /tmp/ddpsim-bench.$$ /tmp/ddpsim-bench-out.$$
