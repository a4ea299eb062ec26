# Shared by scripts/demo and scripts/test: install what is missing, configure and build.
# Sourced, not run.

braid_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
braid_build=${BRAID_BUILD_DIR:-$braid_root/build}

# Debian packages braid builds and tests with.
braid_packages=(cmake g++ make pkg-config libgtest-dev libhwloc-dev hwloc openmpi-bin libopenmpi-dev)

braid_install_deps() {
  local missing=()
  for p in "${braid_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y "${missing[@]}" || { $sudo apt-get update && $sudo apt-get install -y "${missing[@]}"; }
}

braid_build() {
  # nvcc is found on PATH or at the CUDA toolkit's usual place; without it the CPU parts build alone.
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  cmake -S "$braid_root" -B "$braid_build" -DBRAID_WERROR=ON "$@"
  cmake --build "$braid_build" -j "$(nproc)"
}
