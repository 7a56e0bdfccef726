#!/usr/bin/env bash
# Runs every Criterion test binary in the given directory and prints one
# closing line "N passed, N failed" over all of them. Exit 1 if any failed.
# Only the binaries of tests/*.c run: a test file split or renamed leaves
# its old binary in a build folder that is not clean, and that binary, no
# longer rebuilt, fails against the new command (stop 48: test_calib).
set -u
dir=${1:?usage: run_tests.sh BUILD/tests}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0 bad_bins=()
for t in "$dir"/test_*; do
  [ -x "$t" ] && [ -f "tests/$(basename "$t").c" ] || continue
  out=$("$t" --jobs 2 2>&1); rc=$?
  printf '%s\n' "$out" | grep -E '^\[(====|----|FAIL)' || true
  line=$(printf '%s\n' "$out" | grep -E 'Synthesis: Tested: [0-9]+' | tail -n1)
  p=$(printf '%s' "$line" | sed -nE 's/.*Passing: ([0-9]+).*/\1/p')
  f=$(printf '%s' "$line" | sed -nE 's/.*Failing: ([0-9]+).*/\1/p')
  c=$(printf '%s' "$line" | sed -nE 's/.*Crashing: ([0-9]+).*/\1/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
    bad_bins+=("$(basename "$t")")
    [ -z "$line" ] && { printf '%s\n' "$out" | tail -n 20; failed=$((failed + 1)); }
  fi
  : "${c:=0}"
done
[ ${#bad_bins[@]} -gt 0 ] && echo "failing test binaries: ${bad_bins[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
