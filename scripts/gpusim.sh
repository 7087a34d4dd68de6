#!/usr/bin/env bash
# Builds gpusim if needed (installing missing Debian packages first), then runs it:
#   scripts/gpusim.sh run configs/workloads/decode.yaml --hw h100
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpusim_install_deps
gpusim_build "$GPUSIM_ROOT/build"
exec "$GPUSIM_ROOT/build/src/gpusim" "$@"
