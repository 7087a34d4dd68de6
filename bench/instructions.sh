#!/usr/bin/env bash
# Instructions per simulated kernel, counted by valgrind's callgrind: a measure of simulation
# cost that does not drift with the load of a shared machine, as wall time does.
#   bench/instructions.sh [WORKLOAD.yaml] [--hw NAME]     (default: configs/workloads/generate.yaml on h100)
# Needs a build (build/src/gpusim) and valgrind (apt-get install valgrind). Prints the total,
# the kernels simulated and the instructions per kernel; callgrind's file stays in /tmp for
# callgrind_annotate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workload="${1:-$root/configs/workloads/generate.yaml}"
shift || true
hw=(--hw h100)
[ $# -gt 0 ] && hw=("$@")
command -v valgrind > /dev/null || { echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
out="$(mktemp /tmp/gpusim-callgrind.XXXXXX)"
log="$(mktemp)"
valgrind --tool=callgrind --callgrind-out-file="$out" "$root/build/src/gpusim" run "$workload" "${hw[@]}" \
  --format json > "$log.json" 2> "$log"
total=$(grep -oE "Collected : [0-9]+" "$log" | grep -oE "[0-9]+")
kernels=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(p['kernels'] for p in r['phases']) if r.get('phases') else len(r['kernels']))" "$log.json")
echo "instructions: $total"
echo "kernels simulated: $kernels"
echo "instructions per kernel: $((total / kernels))"
echo "callgrind file: $out"
rm -f "$log" "$log.json"
