#!/bin/sh
# `cmake --install` gives a gpusim that runs from its prefix alone: installed into a fresh
# folder, run from another working directory without GPUSIM_CONFIG_DIR, it finds its presets and
# workloads there (bin/../share/gpusim/configs) and the plotting scripts its commands call.
# With a Python interpreter and the package folder (relative to the prefix), the installed Python
# package is checked the same way.
#   install_test.sh CMAKE BUILD_DIR [PYTHON PACKAGE_DIR]
set -eu
cmake=$1
build=$2
python=${3:-}
package_dir=${4:-}
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
if [ -n "$python" ]; then
  test -f "$package_dir/gpusim/__init__.py" || { echo "Python package not installed in $package_dir"; exit 1; }
  PYTHONPATH="$prefix/$package_dir" "$python" - "$prefix" <<'END'
import os, sys
import gpusim
prefix = sys.argv[1]
assert gpusim.__file__.startswith(prefix), f"imported {gpusim.__file__}, not the installed package"
assert os.path.realpath(gpusim.config_dir()) == os.path.realpath(os.path.join(prefix, "share/gpusim/configs")), gpusim.config_dir()
assert "installed-only" in gpusim.hw.list(), gpusim.hw.list()
r = gpusim.run(os.path.join(gpusim.config_dir(), "workloads", "decode.yaml"), hw="h100")
assert r.total_us > 0 and len(r.kernels) > 100
END
fi
echo "installed gpusim runs from $prefix"
