#!/usr/bin/env bash
# Builds and runs the whole test suite twice: a normal build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/). Installs missing
# Debian packages first; reuses existing builds.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpusim_install_deps

gpusim_build "$GPUSIM_ROOT/build"
ctest --test-dir "$GPUSIM_ROOT/build" --output-on-failure --parallel "$(nproc)"

gpusim_build "$GPUSIM_ROOT/build-asan" -DGPUSIM_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$GPUSIM_ROOT/build-asan" --output-on-failure --parallel "$(nproc)"

echo "gpusim: all tests passed (normal and sanitizer builds)"
