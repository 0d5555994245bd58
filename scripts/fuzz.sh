#!/usr/bin/env bash
# Fuzzes the loaders of user files (fuzz/README.md): builds the libFuzzer targets with
# clang-19 (cmake/fuzz.cmake) in build-fuzz/, apart from the main build, and runs each for
# a fixed time from its seed corpus in fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 30
#
# Exits non-zero if any target found a crash, a sanitizer report, a leak, a timeout or an
# out-of-memory; the input is saved as build-fuzz/fuzz/crashes/<target>-<kind>-<sha1> and
# the log's tail is printed. Reproduce with: build-fuzz/fuzz/fuzz_<target> <that file>.
# Environment: DIETCODE_FUZZ_BUILD (build folder), JOBS (build jobs, default 2),
# FUZZ_FLAGS (extra libFuzzer flags, e.g. -use_value_profile=1).
set -euo pipefail

seconds=${1:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [SECONDS_PER_TARGET]  (a positive integer, got '$seconds')" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DIETCODE_FUZZ_BUILD:-$root/build-fuzz}
targets=(module_file workload_spec decision_tree records safetensors)

for tool in clang-19 clang++-19; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz: $tool not found; install clang-19 and libclang-rt-19-dev (scripts/setup.sh)" >&2
    exit 2
  fi
done

cmake -S "$root" -B "$build" -G Ninja -DDIETCODE_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build "$build" --target fuzz -j "${JOBS:-2}"

mkdir -p "$build/fuzz/crashes" "$build/fuzz/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  # New inputs go to the first folder (in the build), so the checked-in seeds stay as they are.
  work="$build/fuzz/corpus/$t"
  log="$build/fuzz/logs/$t.log"
  mkdir -p "$work"
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
  if "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
       -rss_limit_mb=2048 -dict="$root/fuzz/dietcode.dict" -print_final_stats=1 \
       -artifact_prefix="$build/fuzz/crashes/$t-" ${FUZZ_FLAGS:-} \
       "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "fuzz_$t: ok, ${runs:-?} inputs in ${seconds}s, corpus $(ls "$work" | wc -l) + seeds"
  else
    echo "fuzz_$t: FAILED (full log: $log)"
    tail -n 60 "$log"
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} failed; inputs in $build/fuzz/crashes/:" >&2
  ls -1 "$build/fuzz/crashes" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a crash"
