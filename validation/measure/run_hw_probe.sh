#!/usr/bin/env bash
# run_hw_probe.sh: build and run the gpusim hardware probes on the local NVIDIA GPU.
#
# Usage (from the repository root, on the GPU machine):
#   OUT=/some/dir bash validation/measure/run_hw_probe.sh [gpu_tag]
# gpu_tag defaults to h100 / h200 / gpu from the nvidia-smi device name.
# Outputs in $OUT:
#   run_log_<tag>.txt                   full stdout/stderr of this script
#   provenance_<tag>.txt                nvidia-smi, clocks, nvcc, torch, date
#   device_probe_<tag>.json             device_probe.cu results
#   occupancy_reference_<tag>.csv       <cuda_occupancy.h> grid (real device props)
#   occupancy_runtime_check_<tag>.csv   runtime occupancy API vs header, real kernels
#   hw_probe_<tag>.json                 hw_probe.py (PyTorch) results
# Never changes clocks, power limits or any other GPU setting.
set -u
OUT="${OUT:-/tmp/hw_probe_out}"
mkdir -p "$OUT"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
TAG="${1:-}"
if [ -z "$TAG" ]; then
  case "$NAME" in
    *H100*) TAG=h100 ;;
    *H200*) TAG=h200 ;;
    *) TAG=gpu ;;
  esac
fi

exec > >(tee "$OUT/run_log_${TAG}.txt") 2>&1
echo "== run_hw_probe.sh tag=$TAG device='$NAME' start $(date -u +%Y-%m-%dT%H:%M:%SZ)"

# ---- 1. provenance
{
  echo "### date -u"; date -u
  echo "### nvidia-smi --query-gpu"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,power.limit,pci.bus_id --format=csv
  echo "### nvidia-smi -q -d CLOCK"; nvidia-smi -q -d CLOCK
  echo "### nvidia-smi -q -d PERFORMANCE"; nvidia-smi -q -d PERFORMANCE
  echo "### nvidia-smi -q -d POWER"; nvidia-smi -q -d POWER
  echo "### nvidia-smi"; nvidia-smi
  echo "### nvcc --version"; nvcc --version
  echo "### torch"
  python3 -c 'import torch; print("torch.__version__", torch.__version__); print("torch.version.cuda", torch.version.cuda); print("device", torch.cuda.get_device_name(0))'
  echo "### python3"; python3 --version; which python3
  echo "### uname -a"; uname -a
  echo "### nproc"; nproc
} > "$OUT/provenance_${TAG}.txt" 2>&1
echo "== provenance written"
head -5 "$OUT/provenance_${TAG}.txt"

# ---- 2. device_probe.cu
BIN=/tmp/device_probe
echo "== building device_probe"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$HERE" -o "$BIN" "$HERE/device_probe.cu" 2>&1 | grep -E "error|warning|Used|Function properties for _Z" ; then :; fi
if [ -x "$BIN" ]; then
  echo "== SASS check (load instructions)"
  cuobjdump -sass "$BIN" 2>/dev/null | grep -E "Function :|LDG|LDS|FFMA" | awk '{$1=$1};1' | sed 's/\/\*[0-9a-f]*\*\/ *//g' | sort | uniq -c | sort -rn | head -30 || true
  echo "== running device_probe"
  timeout 150 "$BIN" "$TAG" "$OUT"; echo "device_probe rc=$?"
else
  echo "device_probe build FAILED"
fi

# ---- 3. hw_probe.py
echo "== running hw_probe.py"
PYTHONUNBUFFERED=1 timeout 270 python3 "$HERE/hw_probe.py" --gpu "$TAG" --out "$OUT"; echo "hw_probe rc=$?"

echo "== end $(date -u +%Y-%m-%dT%H:%M:%SZ)"
ls -la "$OUT"
sync; sleep 1
