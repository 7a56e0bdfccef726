#!/bin/bash
# The host-mode call: settles why host-bound runs on the lent H200s vary up to
# 1.5x (bench/results/gpu-2026-11-27-h200/notes-host.md, "What the next call
# settles"). Run by the device tool from the repository root, Python only (no
# binaries carried; torch 2.11 on the device):
#
#   run(command="bash bench/gpu_next2.sh", timeout_s=400)
#
# Two questions, two kinds of part:
#  (a) host_calibrate's blocked phases: the driver's launch queue depth
#      (launch_queue.py) against the launches per phase (--count-launches),
#      and SE-ResNeXt's backward measured with pauses that drain the queue;
#  (b) the host's slow iterations in training: every timed iteration of
#      torch_measure (--per-iter: GPU gap, enqueue, the process's CPU and
#      run-queue time, steal) in fresh processes, unpinned and pinned to two
#      CPUs, and the same for host_calibrate's phases; the machine's CPUs,
#      governor, load, cgroup quota and throttling before and after.
# Each part under its own timeout, cut to what is left of BUDGET_S (330 s),
# so the tar below always runs. Expected on an H200 (today's run.log: a
# host_calibrate ~30 s, torch_measure of four models 30 s):
#   m. machine (uname, nproc, lscpu, loadavg, MHz, governor, cgroup, top)  ~3 s
#   q. launch_queue.py (6 probes behind a 300 ms spin)                    ~10 s
#   s. host_calibrate SE-ResNeXt-101 --pauses 8 --count-launches          ~35 s
#   r. host_calibrate ResNet-101 --count-launches                          ~30 s
#   t1, t2. torch_measure --per-iter, ResNet-101 and SE-ResNeXt, 60 iters,
#      two fresh processes                                            ~30 s each
#   p1, p2. the same under taskset -c 2,3                             ~30 s each
#   rp. host_calibrate ResNet-101 under taskset -c 2,3                     ~30 s
#   x. torch_measure --per-iter with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ~30 s
# Everything lands in $OUT/next2.tar.gz.
# A dry run here, on the CPU at toy sizes (torch_measure finds no run of those
# names in the smoke plan and writes only its header; launch_queue finds no GPU):
#   PATH=/root/venv-torch/bin:$PATH \
#     HOST_ARGS="--device cpu --batch 1 --iters 1 --warmup 0" \
#     TORCH_ARGS="--device cpu --plan smoke" OUT=/tmp/gn2 bash bench/gpu_next2.sh
set -u
R=$PWD
BUDGET_S=${BUDGET_S:-330}
# two CPUs for the pinned runs (the main thread and autograd's), not CPU 0
if [ "$(nproc)" -ge 4 ]; then PIN=${PIN:-2,3}; else PIN=${PIN:-0}; fi
RUNS=resnet101-fp32-b32,se_resnext101_32x4d-fp32-b32

NAME=next2
PART_TAIL=8
. "$R/bench/gpu_part.sh"

# the machine's state now: load, clocks, steal, cgroup throttling, busiest processes
state() {
  echo "== $(date -u +%T) loadavg $(cat /proc/loadavg)"
  head -1 /proc/stat
  grep -h MHz /proc/cpuinfo | sort | uniq -c | sort -rn | head -4
  for f in /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.stat \
           /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.stat; do
    [ -r "$f" ] && { echo "-- $f"; cat "$f"; }
  done
  ps -eo pid,pcpu,psr,comm --sort=-pcpu | head -6
}

machine() {
  uname -a; nproc; lscpu
  cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
  cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq 2>&1
  lscpu -e 2>&1 | head -40
  cat /proc/self/status | grep -i -e cpus_allowed_list -e mems_allowed_list
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv 2>&1
  nvidia-smi topo -m 2>&1 | head -8
  python3 -c "import torch, os; print(torch.__version__, 'threads', torch.get_num_threads(), 'affinity', sorted(os.sched_getaffinity(0)))"
  state
}

{
  date -u
  git -C "$R" log -1 --format='commit %H %s' 2>/dev/null || echo "commit: no .git here"
  export -f machine state
  part machine 30 bash -c machine
  part launch-queue 40 python3 bench/launch_queue.py --out "$D/launch_queue.csv"
  part host-se-pauses 70 python3 bench/host_calibrate.py --model se_resnext101_32x4d \
    --pauses 8 --count-launches --out "$D/host-se-pauses.csv" ${HOST_ARGS:-}
  part host-resnet101 60 python3 bench/host_calibrate.py --model resnet101 --count-launches \
    --out "$D/host-resnet101.csv" ${HOST_ARGS:-}
  for i in 1 2; do
    part torch-t$i 60 python3 bench/torch_measure.py --only $RUNS --iters 60 \
      --out "$D/torch-t$i.csv" --per-iter "$D/iters-t$i.csv" ${TORCH_ARGS:-}
    state
  done
  for i in 1 2; do
    part torch-p$i 60 taskset -c "$PIN" python3 bench/torch_measure.py --only $RUNS --iters 60 \
      --out "$D/torch-p$i.csv" --per-iter "$D/iters-p$i.csv" ${TORCH_ARGS:-}
    state
  done
  part host-resnet101-pinned 60 taskset -c "$PIN" python3 bench/host_calibrate.py \
    --model resnet101 --out "$D/host-resnet101-pinned.csv" ${HOST_ARGS:-}
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
    part torch-x 60 python3 bench/torch_measure.py --only $RUNS --iters 60 \
      --out "$D/torch-x.csv" --per-iter "$D/iters-x.csv" ${TORCH_ARGS:-}
  state
  echo "total $((SECONDS - START)) s"
  date -u
} 2>&1 | tee "$D/run.log"
pack
