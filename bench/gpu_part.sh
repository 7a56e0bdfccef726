# Sourced by the device scripts (gpu_next.sh, gpu_next2-7.sh, gpu_next9-12.sh, gpu_next12b.sh,
# gpu_h100.sh): one call of the device tool runs several parts, each under its own timeout
# cut to what is left of the script's budget, so a part that fails or overruns loses only
# itself.
#
# The sourcing script sets BUDGET_S (seconds for all parts) and NAME (the folder
# its files go to, and the tar's name); optional: PART_RESERVE_S (seconds kept for
# packing, 10), PART_MIN_S (a part with less left is skipped, 20), PART_TAIL (lines
# of each part's log echoed, 4). Sourcing sets TOP ($OUT, where the tar goes), D
# (the working folder $WORK/$NAME, outside $OUT), RUN_LOG ($TOP/$NAME-run.log, a live copy
# of run.log a script may tee to), START (the budget counts from here) and a trap that
# packs what there is if the script is stopped by a signal it can catch.
#
# A hard kill (the device tool's timeout_s kills the whole command from outside; no trap
# runs) must not lose the call: $OUT holds at every moment one complete $NAME.tar.gz of the
# parts finished so far (snapshot after each part, written to $NAME.tar.gz.part in $OUT and
# renamed over the last one, so a kill in the middle of tar leaves the previous tar whole),
# at most that tar's .part, and RUN_LOG where the script tees to it. The working files stay
# in $D until the final pack: never a folder of loose files in $OUT, of which the tool
# would return only a few.

# part NAME LIMIT_S CMD...: CMD under timeout, its output in $D/NAME.log
part() {
  local name=$1 limit=$2 left t0 rc
  shift 2
  left=$((BUDGET_S - (SECONDS - START) - ${PART_RESERVE_S:-10}))
  if [ "$left" -lt "${PART_MIN_S:-20}" ]; then
    echo "$name: skipped, ${left} s of the budget left"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$D/$name.log" 2>&1
  rc=$?
  echo "$name: rc $rc after $((SECONDS - t0)) s (limit $limit s)"
  grep -v -e '^USDT:' -e 'UserWarning' -e '_warn_once' -e 'set_sync_debug_mode' \
    "$D/$name.log" | tail -"${PART_TAIL:-4}"
  snapshot
}

# header [--smi-table] FILES...: run.log's first lines: the date, the GPU (name, driver,
# clocks, memory used; --smi-table adds nvidia-smi's table head), the commit (GIT_COMMIT,
# else the checkout's HEAD: the device's copy may have no .git) and the sha256 of FILES
# (paths relative to $R, the repository root the sourcing script sets)
header() {
  local table=0
  if [ "${1:-}" = --smi-table ]; then
    table=1
    shift
  fi
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,memory.used --format=csv 2>&1
  if [ "$table" = 1 ]; then
    nvidia-smi 2>&1 | head -15
  fi
  echo "commit: ${GIT_COMMIT:-$(git -C "$R" rev-parse HEAD 2>/dev/null || echo 'no .git here')}"
  (cd "$R" && sha256sum "$@")
}

# footer [--smi]: run.log's last lines: with --smi the GPU after the parts (name, clock,
# memory used), then the version lines the parts printed (their logs' '# ' lines), the
# date and the seconds since START
footer() {
  if [ "${1:-}" = --smi ]; then
    nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv 2>&1
  fi
  echo "versions (the parts' own lines):"
  grep -h '^# ' "$D"/*.log 2>/dev/null | sort -u
  date -u
  echo "total $((SECONDS - START)) s"
}

# gpu_check: scripts/gpu-check.sh on the carried binaries (.devcarry/bin/ddpsim and
# ddpreal, .devcarry/lib; NV, the torch venv's nvidia folder, from the sourcing script),
# its files in $D/gpucheck. A shell function, so part cannot run it itself:
# gpu_check_part LIMIT_S runs it as the part gpu-check.
gpu_check() {
  LD_LIBRARY_PATH=$R/.devcarry/lib:$NV/nccl/lib:$NV/cu13/lib:/usr/local/cuda/lib64 \
    DDPSIM_DATA_DIR=$R DDPSIM=$R/.devcarry/bin/ddpsim DDPREAL=$R/.devcarry/bin/ddpreal \
    GPU_CHECK_NO_MAKE=1 GPU_CHECK_TIMEOUT=60 DDPREAL_TIMEOUT_S=60 sh scripts/gpu-check.sh "$D/gpucheck"
}
gpu_check_part() {
  part gpu-check "$1" bash -c "$(declare -f gpu_check); R=$R NV=$NV D=$D gpu_check"
}

# snapshot: $TOP/$NAME.tar.gz of $D as it is now (RUN_LOG, where there is one, as its
# run.log), written beside it as .part and renamed over it: the rename is atomic in one
# folder, so a kill leaves the last whole tar
snapshot() {
  [ -f "$RUN_LOG" ] && cp "$RUN_LOG" "$D/run.log"
  tar czf "$TOP/$NAME.tar.gz.part" -C "$WORK" "$NAME"
  # GNU tar's 1: a file changed while read (a part the trap caught still writing): the
  # archive is whole; 2: it is not, keep the last one
  [ $? -le 1 ] && mv -f "$TOP/$NAME.tar.gz.part" "$TOP/$NAME.tar.gz"
}

# pack: the last snapshot, then $WORK and RUN_LOG removed: $OUT holds the one tar (the
# device returns at most 8 files)
pack() {
  snapshot && rm -rf "$WORK" && rm -f "$RUN_LOG"
}

export PYTHONUNBUFFERED=1
TOP=${OUT:-/tmp/out}
mkdir -p "$TOP"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX")
D=$WORK/$NAME
RUN_LOG=$TOP/$NAME-run.log
rm -f "$TOP/$NAME.tar.gz" "$TOP/$NAME.tar.gz.part" "$RUN_LOG"  # an earlier run's: not this one's
mkdir -p "$D"
START=$SECONDS
trap 'echo "stopped: packing what there is"; pack; exit 1' TERM INT
