#!/bin/sh
# `cmake --install` gives a gpusim that runs from its prefix alone: installed into a fresh
# folder, run from another working directory without GPUSIM_CONFIG_DIR, it finds its presets and
# workloads there (bin/../share/gpusim/configs) and the plotting scripts its commands call.
#   install_test.sh CMAKE BUILD_DIR
set -eu
cmake=$1
build=$2
prefix=$(mktemp -d "${TMPDIR:-/tmp}/gpusim-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT INT TERM
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
unset GPUSIM_CONFIG_DIR
cd "$prefix"

for script in plot_roofline.py plot_sweep.py plot_serve.py; do
  test -f "share/gpusim/scripts/$script" || { echo "not installed: share/gpusim/scripts/$script"; exit 1; }
done
# A preset only the installed tree has: the configs come from the prefix, not the source tree
# (the binary's fallback).
cp share/gpusim/configs/hw/h100-sxm5.yaml share/gpusim/configs/hw/installed-only.yaml
sed -i -e 's/^name: .*/name: installed-only/' -e '/^aliases:/d' share/gpusim/configs/hw/installed-only.yaml
bin/gpusim hw list > list.txt
grep -q '^installed-only ' list.txt || { echo "hw list does not read the installed configs:"; cat list.txt; exit 1; }
bin/gpusim run "$prefix/share/gpusim/configs/workloads/decode.yaml" --hw h100 > run.txt
grep -q '^total .* us' run.txt || { echo "run printed no total:"; cat run.txt; exit 1; }
echo "installed gpusim runs from $prefix"
