#!/bin/bash
# Re-runs tools/export_model.py and tools/capture_conformance.py with real
# PyTorch into a temporary directory and diffs the results against the
# committed files (models/*.yaml, tests/data/conformance/*.csv).
# Comment lines (versions, dates, commands) are left out of the comparison.
# Exit 0 when everything matches, 1 on a difference, 2 when PyTorch is
# missing. TORCH_VENV: the virtual environment (default /root/venv-torch).
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
same() { # committed fresh: compare without comment lines
  if ! diff -u --label "$1" --label "fresh $(basename "$2")" \
      <(grep -v '^#' "$1") <(grep -v '^#' "$2") >"$TMP/diff" 2>&1; then
    echo "DIFFERENT: $1"; cat "$TMP/diff"; status=1
  else
    echo "same: $1"
  fi
}
for m in resnet50 mobilenet_v2 vgg16 bert-base gpt2 bert-base-squad; do
  f=$(echo "$m" | tr - _)
  "$PY" tools/export_model.py "tools/torch_models.py:$f" --name "$m" \
    --output "$TMP/$m.yaml" || { echo "export of $m failed"; exit 1; }
  same "models/$m.yaml" "$TMP/$m.yaml"
done
"$PY" tools/capture_conformance.py --out "$TMP" || { echo "capture failed"; exit 1; }
for c in buckets grad_ready saved_bytes; do
  same "tests/data/conformance/$c.csv" "$TMP/$c.csv"
done
exit $status
