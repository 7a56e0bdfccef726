#!/bin/bash
# Re-runs tools/export_model.py and tools/capture_conformance.py with real
# PyTorch into a temporary directory and diffs the results against the
# committed files (models/*.yaml, tests/data/conformance/*.csv, and the
# exporter's toys tests/data/*-model.yaml from tests/data/*_toy.py).
# Comment lines (versions, dates, commands) are left out of the comparison.
# The models: tools/torch_models.py's MODELS, in its order (the order of the
# committed CSVs' rows), which must name exactly the shipped models/*.yaml;
# arguments MODEL... check only those (their files and their CSV rows).
# Exit 0 when everything matches, 1 on a difference, 2 when PyTorch is
# missing or a model is unknown. TORCH_VENV: the virtual environment
# (default /root/venv-torch).
set -u
cd "$(dirname "$0")/.." || exit 2
VENV=${TORCH_VENV:-/root/venv-torch}
PY=$VENV/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch, torchvision, transformers' 2>/dev/null; then
  echo "conformance.sh: no torch, torchvision and transformers in $VENV; install them with" >&2
  echo "  python3 -m venv $VENV && $VENV/bin/pip install torch torchvision transformers" >&2
  echo "(or set TORCH_VENV to a virtual environment that has them)" >&2
  exit 2
fi
TMP=$(mktemp -d /tmp/ddpsim-conformance-XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT
status=0
# the one list: MODELS, one name a line
"$PY" -c 'import sys; sys.path.insert(0, "tools"); import torch_models
print("\n".join(torch_models.MODELS))' >"$TMP/models" || exit 2
ls models/*.yaml | sed 's|^models/||; s|\.yaml$||' | sort >"$TMP/shipped"
if ! diff -u --label "tools/torch_models.py MODELS" --label "models/*.yaml" \
    <(sort "$TMP/models") "$TMP/shipped"; then
  echo "DIFFERENT: MODELS and the shipped model files"; status=1
fi
if [ $# -gt 0 ]; then
  for m in "$@"; do
    grep -qxF -- "$m" "$TMP/models" || { echo "conformance.sh: $m is not in MODELS" >&2; exit 2; }
  done
  printf '%s\n' "$@" >"$TMP/models"
fi
mapfile -t list <"$TMP/models"
same() { # committed fresh [label]: compare without comment lines
  if ! diff -u --label "${3:-$1}" --label "fresh $(basename "$2")" \
      <(grep -v '^#' "$1") <(grep -v '^#' "$2") >"$TMP/diff" 2>&1; then
    echo "DIFFERENT: ${3:-$1}"; cat "$TMP/diff"; status=1
  else
    echo "same: ${3:-$1}"
  fi
}
for m in "${list[@]}"; do
  f=$(echo "$m" | tr - _)
  "$PY" tools/export_model.py "tools/torch_models.py:$f" --name "$m" \
    --output "$TMP/$m.yaml" || { echo "export of $m failed"; exit 1; }
  same "models/$m.yaml" "$TMP/$m.yaml"
done
# the exporter's toys (tests/data; C tests pin what their files say), whole runs only
if [ $# -eq 0 ]; then
  for toy in shared-ids:shared_ids_toy view-nodes:view_nodes_toy; do
    "$PY" tools/export_model.py "tests/data/${toy#*:}.py" --name "${toy%%:*}" \
      --output "$TMP/${toy%%:*}-model.yaml" || { echo "export of ${toy%%:*} failed"; exit 1; }
    same "tests/data/${toy%%:*}-model.yaml" "$TMP/${toy%%:*}-model.yaml"
  done
fi
models=$(IFS=,; echo "${list[*]}")
"$PY" tools/capture_conformance.py --models "$models" --out "$TMP/fresh" ||
  { echo "capture failed"; exit 1; }
for c in buckets grad_ready saved_bytes; do
  committed=tests/data/conformance/$c.csv
  if [ $# -eq 0 ]; then
    same "$committed" "$TMP/fresh/$c.csv"
  else # the committed rows of these models, in file order
    awk -F, -v models="$models" '
      BEGIN { n = split(models, m, ","); for (i = 1; i <= n; i++) keep[m[i]] = 1 }
      /^#/ || !seen++ || ($1 in keep)' "$committed" >"$TMP/$c.csv"
    same "$TMP/$c.csv" "$TMP/fresh/$c.csv" "$committed ($models)"
  fi
done
exit $status
