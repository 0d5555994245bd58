#!/usr/bin/env bash
# Runs every test of the suite (ctest: unit, codegen, errors, tune, cli, report, export,
# example, bench) on a build in which every target is compiled with AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer (cmake/sanitize.cmake; clang-19), in
# build-sanitize/, apart from the main build.
#
#   scripts/sanitize.sh [CTEST_ARGS...]       e.g. -R codegen, or -L tune
#
# Any report fails: UBSan does not recover, ASan halts on the first error, LSan checks
# every process at exit. Reports go to build-sanitize/sanitizer-logs/ rather than stderr,
# so a report from a process whose stderr a test swallows (a measurement worker, a
# command in a shell pipeline, a test matched by PASS_REGULAR_EXPRESSION that ignores the
# exit status) still fails the run: the script prints every report and exits non-zero.
# Suppressions (third-party code only, each with its reason): tests/sanitize/*.supp.
# Environment: DIETCODE_SANITIZE_BUILD (build folder), JOBS (build and test jobs, default 2).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${DIETCODE_SANITIZE_BUILD:-$root/build-sanitize}
jobs=${JOBS:-2}
supp=$root/tests/sanitize

for tool in clang-19 clang++-19; do
  if ! command -v "$tool" >/dev/null; then
    echo "sanitize: $tool not found; install clang-19 and libclang-rt-19-dev (scripts/setup.sh)" >&2
    exit 2
  fi
done
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# The libtorch model peer is left out here: libtorch and its BLAS are not instrumented,
# and the encoder benchmark's test runs without it (it is a peer, not our code).
cmake -S "$root" -B "$build" -G Ninja -DDIETCODE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${launcher[@]}" \
  -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON >/dev/null
cmake --build "$build" -j "$jobs"

logs=$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
common="halt_on_error=1:print_stacktrace=1:log_path=$logs/report"
export ASAN_OPTIONS="$common:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="$common:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"

status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" || status=$?

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "sanitize: $(wc -l <<<"$reports") sanitizer report(s):" >&2
  for r in $reports; do
    echo "---- $r" >&2
    cat "$r" >&2
  done
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize: FAILED" >&2
  exit "$status"
fi
echo "sanitize: every test passed with no sanitizer report"
