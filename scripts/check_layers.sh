#!/usr/bin/env bash
# Checks that includes only go down the layers of docs/architecture.md:
#   base < traces < sim/net < sim/coll < sim/train < analysis < sim/cli < sim/cmd
# and that real/ (the replay) includes only base/, traces/ and itself: the
# simulator and the replay meet only in the schedule and trace files.
# Within that order, sim/net and sim/coll skip traces/, and analysis/ skips
# sim/: the "May include" line of each folder's README (allowed(), below).
# Prints each include that goes up, sideways or past its README; exit 1 if
# there is one.
set -eu
cd "$(dirname "$0")/.."
rank() {
  case "$1" in
    base/*) echo 0 ;; traces/*) echo 1 ;; sim/net/*) echo 2 ;; sim/coll/*) echo 3 ;;
    sim/train/*) echo 4 ;; analysis/*) echo 5 ;; sim/cli/*) echo 6 ;; sim/cmd/*) echo 7 ;;
    real/*) echo real ;;
    *) echo none ;;
  esac
}
# the layers a folder's README says it may include, beyond going down
allowed() {
  case "$1" in
    sim/net/*) echo "0 2" ;; sim/coll/*) echo "0 2 3" ;; analysis/*) echo "0 1 5" ;;
    *) echo any ;;
  esac
}
bad=0
for f in base/* traces/* sim/*/* analysis/* real/*; do
  case "$f" in *.c|*.h|*.cu) ;; *) continue ;; esac
  from=$(rank "$f")
  while IFS= read -r inc; do
    [ -n "$inc" ] || continue
    case "$inc" in */*) to_path=$inc ;; *) to_path=$(dirname "$f")/$inc ;; esac
    to=$(rank "$to_path")
    [ "$to" = none ] && continue
    if [ "$from" = real ]; then
      case "$to" in 0|1|real) continue ;; esac
    elif [ "$to" != real ] && [ "$to" -le "$from" ]; then
      ok=$(allowed "$f")
      case " $ok " in " any "|*" $to "*) continue ;; esac
      echo "$f includes $inc: $(dirname "$f")/README.md's \"May include\" leaves out layer $to" >&2
      bad=1
      continue
    fi
    echo "$f includes $inc: layer $from may not include layer $to" >&2
    bad=1
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done
[ "$bad" = 0 ] && echo "layers: every include goes down"
exit "$bad"
