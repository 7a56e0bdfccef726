#!/usr/bin/env bash
# Same answers before and after a change to the simulator's engine,
# network or executor: runs a set of configurations (DDP, DP and PS with
# traces, jitter, alpha-beta, aggregated, `ddpsim collective` sweeps of
# every all-reduce kind, 256 and 1024 ranks on one switch, per-flow rings of
# 2 to 1024 ranks on one switch, with chunks, protocols, all-gather and
# reduce-scatter, and on shipped machines and 8 to 1024 GPUs of
# cluster-512x8-h100) and a matrix of training runs (training_matrix
# below: topologies x strategies x algorithms x collective models, with
# jitter, stragglers, hooks, DDP's options and traces) with two binaries
# and compares every output byte for byte.
#
#   bench/same_answers.sh OLD_BIN NEW_BIN
#   QUICK=1 bench/same_answers.sh OLD_BIN NEW_BIN   (the training matrix only)
#
# Prints one line per output that differs, then the count; exit 1 if any.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/star_topo.sh"
old=${1:?usage: bench/same_answers.sh OLD_BIN NEW_BIN}
new=${2:?usage: bench/same_answers.sh OLD_BIN NEW_BIN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 2 3 8 64 256 1024; do
  star_topo "$n" "$tmp/star$n.yaml"
done
# the same switch with no link latency (every flow's delivery is its send)
sed 's/link_lat: 1us/link_lat: 0us/; s/name: star64/name: star64lat0/' "$tmp/star64.yaml" >"$tmp/star64lat0.yaml"
cp "$here/topologies/gpus.yaml" "$tmp/"
# Training runs where ranks run in lockstep (sim/train/exec_cohort.c's cohorts) or
# are told apart: every strategy, algorithm and collective model on one
# and several nodes, stragglers (a cohort of their own), jitter (every rank
# alone), comm hooks and DDP's options, traces of every op. One output
# (summary, and the trace where named) per line.
training_matrix() {
  local i=0 topo args
  for topo in dgx-a100 dgx-h100 2node-ib "cluster-64x8-h100 --world-size 64" \
    "cluster-64x8-h100" "cluster-512x8-h100 --world-size 128" "cluster-512x8-h100 --world-size 1024"; do
    for args in "" "--algo ring" "--algo tree" "--algo ring --coll-model flow" \
      "--algo tree --coll-model flow" "--coll-model flow" "--coll-model aggregate" \
      "--straggler 3:1.5" "--straggler 1:1.25,5:1.25 --algo ring" "--jitter 0.05 --samples 2" \
      "--strategy single,dp,ddp,ps" "--comm-hook fp16" "--comm-hook powersgd:2 --algo ring" \
      "--iters 3 --static-graph --grad-as-bucket-view" "--no-sync 2 --bucket-mb 5" \
      "--net alpha-beta --algo ring" "--algo nvls" "--algo direct" "--algo hierarchical" \
      "--algo reduce-broadcast" "--proto LL128 --algo ring"; do
      i=$((i + 1))
      case "$topo" in
      # per flow past 64 ranks and the all-to-all algorithms take minutes
      *1024*|"cluster-64x8-h100") case "$args" in *flow*|*direct*|*reduce-broadcast*|*single*) continue ;; esac ;;
      esac
      echo "t$i --topo $topo --model gpt2 --format csv $args"
    done
  done
  echo "tr1 --topo dgx-a100 --model resnet50 --format csv --trace TRACE"
  echo "tr2 --topo 2node-ib --model bert-base --straggler 2:1.5 --format csv --trace TRACE"
  echo "tr3 --topo 2node-ib --model gpt2 --coll-model flow --algo ring --format csv --trace TRACE"
  echo "tr4 --topo cluster-512x8-h100 --world-size 64 --model gpt2 --format csv --trace TRACE"
  echo "tr5 --topo dgx-h100 --model gpt2 --jitter 0.1 --format csv --trace TRACE"
  # dp drives one node's GPUs from one process: 8 of 2node-ib's 16 (all 16 are refused)
  echo "tr6 --topo 2node-ib --world-size 8 --model resnet50 --strategy dp --format csv --trace TRACE"
  echo "tr7 --topo cluster-64x8-h100 --world-size 128 --model resnet50 --comm-hook bf16 --format csv --trace TRACE"
  echo "tr8 --topo dgx-a100 --model bert-base --straggler 0:1.1 --algo tree --coll-model flow --format csv --trace TRACE"
}
runs() {
  local b=$1 o=$2
  mkdir -p "$o"
  run() {
    local name=$1 rc=0
    shift
    (cd "$here" && "$b" "$@") >"$o/$name.out" 2>&1 || rc=$?
    echo "rc=$rc" >>"$o/$name.out"
  }
  local name line
  training_matrix | while read -r name line; do
    # shellcheck disable=SC2086
    run "$name" ${line//TRACE/$o/$name.trace.csv}
  done
  [ -n "${QUICK:-}" ] && return
  run ddp2ib --topo 2node-ib --model gpt2 --coll-model flow --format csv --trace "$o/ddp2ib.trace.csv"
  run ddp2ib_auto --topo 2node-ib --model gpt2 --format csv --trace "$o/ddp2ib_auto.trace.csv"
  run ddp64 --topo cluster-512x8-h100 --model gpt2 --world-size 64 --coll-model flow --algo ring --format csv --trace "$o/ddp64.trace.csv"
  run ddp64_auto --topo cluster-512x8-h100 --model gpt2 --world-size 64 --format csv
  run ddp_dgx --topo dgx1-v100 --model resnet50 --strategy single,dp,ddp,ps --format csv
  run ps_dgx --topo dgx1-v100 --model resnet50 --strategy ps --format csv --trace "$o/ps_dgx.trace.csv"
  run dp_ib --topo 2node-ib --model bert-base --strategy dp --world-size 8 --format csv --trace "$o/dp_ib.trace.csv"
  run ddp_pcie --topo pcie-8gpu --model bert-base --jitter 0.1 --samples 3 --format csv
  run ddp_ab --topo 2node-ib --model resnet50 --net alpha-beta --coll-model flow --format csv
  run ddp512agg --topo cluster-512x8-h100 --model gpt2 --world-size 512 --coll-model aggregate --algo ring --format csv
  run col64 collective --topo cluster-512x8-h100 -g 64 -b 4 -e 1G -f 4 --algo ring --coll-model flow --format csv
  run col64agg collective --topo cluster-512x8-h100 -g 64 -b 4 -e 1G -f 4 --algo ring --coll-model aggregate --format csv
  run col64auto collective --topo cluster-512x8-h100 -g 64 -b 4 -e 1G -f 4 --algo auto --coll-model flow --format csv
  run col16tree collective --topo cluster-512x8-h100 -g 16 -b 4 -e 1G -f 16 --algo tree --coll-model flow --format csv
  run col16direct collective --topo cluster-512x8-h100 -g 16 -b 4 -e 1G -f 16 --algo direct --format csv
  run col16hier collective --topo cluster-512x8-h100 -g 16 -b 4 -e 1G -f 16 --algo hierarchical --format csv
  run col8chunks collective --topo dgx-h100 -b 4 -e 1G -f 4 --algo ring --ring-chunks 4 --coll-model flow --format csv
  run col256 collective --topo "$tmp/star256.yaml" -b 25M -e 25M --coll-model flow --format csv
  run col1024 collective --topo "$tmp/star1024.yaml" -b 25M -e 25M --coll-model flow --format csv
  # per-flow rings on one switch (the symmetric fold) and across nodes
  for n in 2 3 8 64 256 1024; do
    run "ring$n" collective --topo "$tmp/star$n.yaml" -b 4 -e 1G -f 64 --coll-model flow --format csv
  done
  run ring64lat0 collective --topo "$tmp/star64lat0.yaml" -b 4 -e 1G -f 32 --coll-model flow --format csv
  run ring64chunks collective --topo "$tmp/star64.yaml" -b 4 -e 1G -f 16 --ring-chunks 3 --coll-model flow --format csv
  run ring64ll128 collective --topo "$tmp/star64.yaml" -b 4 -e 1G -f 16 --algo ring --proto LL128 --coll-model flow --format csv
  run ring64simple collective --topo "$tmp/star64.yaml" -b 4 -e 1G -f 16 --algo ring --proto Simple --coll-model flow --format csv
  run ring64ag collective --topo "$tmp/star64.yaml" --op allgather -b 4 -e 1G -f 16 --coll-model flow --format csv
  run ring64rs collective --topo "$tmp/star64.yaml" --op reducescatter -b 4 -e 1G -f 16 --proto LL --algo ring --coll-model flow --format csv
  run ring64ab collective --topo "$tmp/star64.yaml" --net alpha-beta -b 4 -e 1G -f 16 --ring-chunks 2 --coll-model flow --format csv
  run ring256auto collective --topo "$tmp/star256.yaml" -b 4 -e 1G -f 64 --algo auto --coll-model flow --format csv
  run ringdgx collective --topo dgx-h100 -b 4 -e 1G -f 16 --algo ring --coll-model flow --format csv
  run ringdgx1 collective --topo dgx1-v100 -b 4 -e 1G -f 16 --algo ring --coll-model flow --format csv
  run ringpcie collective --topo pcie-8gpu -b 4 -e 1G -f 16 --algo ring --coll-model flow --format csv
  run ring2ib collective --topo 2node-ib -b 4 -e 1G -f 16 --algo ring --coll-model flow --format csv
  for g in 8 64 512; do
    run "ringcl$g" collective --topo cluster-512x8-h100 -g $g -b 1M -e 1G -f 32 --algo ring --coll-model flow --format csv
  done
  run ringcl1024 collective --topo cluster-512x8-h100 -g 1024 -b 1G -e 1G --algo ring --coll-model flow --format csv
  run col1024agg collective --topo cluster-512x8-h100 -g 1024 -b 1G -e 1G --algo ring --coll-model aggregate --format csv
}
runs "$old" "$tmp/old"
runs "$new" "$tmp/new"
# Each binary finds the shipped topologies and models beside its own
# tree, and writes their paths into traces' `# inputs:` line and some
# messages: two checkouts differ there alone, so those folders are
# compared as one.
same_data_paths() {
  sed -E 's#[^ =,;(]*/(topologies|models)/#<data>/\1/#g' "$1"
}
n=0 diff=0
for f in "$tmp"/old/*; do
  n=$((n + 1))
  g="$tmp/new/$(basename "$f")"
  cmp -s "$f" "$g" || cmp -s <(same_data_paths "$f") <(same_data_paths "$g") ||
    { echo "differs: $(basename "$f")"; diff=$((diff + 1)); }
done
echo "same_answers: $((n - diff)) of $n outputs identical"
[ "$diff" -eq 0 ]
