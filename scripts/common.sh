# Shared by scripts/gpusim.sh and scripts/test.sh: install missing Debian packages, then
# configure and build into a reusable build folder. Source it; do not run it.
set -euo pipefail

GPUSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPUSIM_PACKAGES=(g++ cmake ninja-build pkg-config
  libboost-graph-dev libboost-program-options-dev libyaml-cpp-dev libfmt-dev
  libtbb-dev nlohmann-json3-dev libdeflate-dev libsqlite3-dev libsimdjson-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin libjemalloc-dev python3-matplotlib
  python3-dev python3-pybind11 python3-pytest python3-pandas)

# Installs only what is missing, so a second run neither needs the network nor root.
gpusim_install_deps() {
  local missing=()
  for p in "${GPUSIM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "gpusim: installing missing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

# gpusim_build DIR [extra cmake args...]: configures once, then rebuilds incrementally.
gpusim_build() {
  local dir="$1"
  shift
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    # CI holds the code to warnings as errors; a user's build only warns.
    local werror=OFF
    [ -n "${CI:-}" ] && werror=ON
    # The Python package is built for (and tested with) Debian's interpreter, which has the
    # packages above, whatever python3 comes first on PATH.
    cmake -S "$GPUSIM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSIM_WERROR=$werror \
      -DGPUSIM_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 "$@" >&2
  fi
  cmake --build "$dir" --parallel "$(nproc)" >&2
}
