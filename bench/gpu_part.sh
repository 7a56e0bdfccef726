# Sourced by the device scripts (gpu_next.sh, gpu_next2.sh, gpu_h100.sh, gpu_next5-9.sh): one call of
# the device tool runs several parts, each under its own timeout cut to what is left
# of the script's budget, so a part that fails or overruns loses only itself and the
# tar is always written before the tool's own limit.
#
# The sourcing script sets BUDGET_S (seconds for all parts) and NAME (the folder
# its files go to, and the tar's name); optional: PART_RESERVE_S (seconds kept for
# packing, 10), PART_MIN_S (a part with less left is skipped, 20), PART_TAIL (lines
# of each part's log echoed, 4). Sourcing sets TOP ($OUT, where the tar goes), D
# ($TOP/$NAME, created), START (the budget counts from here) and a trap that packs
# what there is if the script is stopped.

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

# pack: $TOP/$NAME.tar.gz of $D, then $D removed (the device returns at most 8 files)
pack() {
  (cd "$TOP" && tar czf "$NAME.tar.gz" "$NAME" && rm -rf "$NAME")
}

export PYTHONUNBUFFERED=1
TOP=${OUT:-/tmp/out}
D=$TOP/$NAME
mkdir -p "$D"
START=$SECONDS
trap 'echo "stopped: packing what there is"; pack; exit 1' TERM INT
