#!/usr/bin/env bash
# Builds and runs the whole test suite twice: a normal build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/). Installs missing
# Debian packages first; reuses existing builds.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpusim_install_deps

gpusim_build "$GPUSIM_ROOT/build"
ctest --test-dir "$GPUSIM_ROOT/build" --output-on-failure --parallel "$(nproc)"
# Accuracy against the measured suites; fails when a suite exceeds validation/thresholds.yaml.
"$GPUSIM_ROOT/build/src/gpusim" validate --doc "$GPUSIM_ROOT/build/validation.md" > "$GPUSIM_ROOT/build/validate.log" ||
  { cat "$GPUSIM_ROOT/build/validate.log"; echo "gpusim: validation thresholds exceeded" >&2; exit 1; }
grep -E "MAPE calibration|held-out achieved-occupancy" "$GPUSIM_ROOT/build/validate.log"

# The sanitizer build is for finding memory and UB errors, not for speed or profiling: -O1 with
# line tables only compiles in about half the time of -O2 -g, and the benchmarks are left out
# (they are not run here). Debug also keeps assert() on.
gpusim_build "$GPUSIM_ROOT/build-asan" -DGPUSIM_SANITIZE=ON -DGPUSIM_BUILD_BENCHMARKS=OFF \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$GPUSIM_ROOT/build-asan" --output-on-failure --parallel "$(nproc)"

echo "gpusim: all tests passed (normal and sanitizer builds)"
