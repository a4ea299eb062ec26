# Shared by scripts/demo and scripts/test: look for what the build needs, install with apt-get only
# what is really missing (saying what and why), configure and build. Sourced, not run.
#
#   braid_check_deps demo|test   finds the tools; installs what is missing; stops if it cannot
#   braid_build [target...]      configures $braid_build (same options for both scripts) and builds
#
# Needed by both: cmake >= 3.25 on PATH, a C++17 compiler, ninja or make, hwloc's headers and library.
# Needed by the tests: GoogleTest, pkg-config (the install tier). Optional, named when left out:
# mpirun (the multiproc tier's Open MPI cases), clang-format (the format check), nvcc (the CUDA parts
# and the gpu tier). A tool found on PATH is used as it is: nothing installs a second copy.

braid_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
braid_build=${BRAID_BUILD_DIR:-$braid_root/build}

braid_say() { echo "braid: $*"; }

# True when PMIx's header is there (pkg-config, or Debian's place for it).
braid_have_pmix() {
  pkg-config --exists pmix 2>/dev/null || [ -f /usr/include/pmix.h ] ||
    ls /usr/lib/*/pmix2/include/pmix.h >/dev/null 2>&1
}

# True when `cmake` on PATH is 3.25 or newer.
braid_cmake_new_enough() {
  local v major minor
  v=$(cmake --version 2>/dev/null | head -1 | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] || return 1
  read -r major minor <<<"$v"
  [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 25 ]; }
}

braid_have_cxx17() {
  local cxx=${CXX:-$(command -v c++ || command -v g++ || true)}
  [ -n "$cxx" ] || return 1
  printf '#include <optional>\nint main() { std::optional<int> x; return x.value_or(0); }\n' |
    "$cxx" -std=c++17 -x c++ - -o /dev/null 2>/dev/null
}

# A header in the compiler's usual include folders (or CPATH's).
braid_have_header() {
  local d
  for d in /usr/include /usr/local/include ${CPATH:+${CPATH//:/ }}; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}

# A library `lib<name>.so` or `.a` where the linker looks by default.
braid_have_library() {
  ldconfig -p 2>/dev/null | grep -q "lib$1\.so " && return 0
  compgen -G "/usr/lib/lib$1.*" >/dev/null || compgen -G "/usr/lib/*/lib$1.*" >/dev/null ||
    compgen -G "/usr/local/lib/lib$1.*" >/dev/null || compgen -G "/usr/local/lib64/lib$1.*" >/dev/null
}

braid_have_hwloc() {
  command -v pkg-config >/dev/null && pkg-config --exists hwloc && return 0
  braid_have_header hwloc.h && braid_have_library hwloc
}

braid_have_gtest() {
  braid_have_header gtest/gtest.h && { braid_have_library gtest || [ -d /usr/src/googletest ]; }
}

braid_find_nvcc() {
  # nvcc is found on PATH or at the CUDA toolkit's usual place; without it the CPU parts build alone.
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  command -v "${CUDACXX:-nvcc}" >/dev/null
}

# Installs Debian packages; false if that cannot be done here (not root and no sudo, no apt-get, no
# package registry).
# ctest jobs for the gpu tier: 4 test processes per GPU (scripts/test says why), at most nproc.
braid_gpu_jobs() {
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "${gpus:-0}" -ge 1 ] || gpus=1
  local jobs=$((4 * gpus)) cores
  cores=$(nproc)
  [ "$jobs" -le "$cores" ] || jobs=$cores
  echo "$jobs"
}

braid_apt_install() {
  local sudo=""
  command -v apt-get >/dev/null || return 1
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || return 1
    sudo="sudo"
  fi
  # Bounded: where no registry answers, this fails within a minute or two instead of hanging.
  local apt=(apt-get -o Acquire::Retries=0 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20)
  $sudo env DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "$@" ||
    { $sudo "${apt[@]}" update && $sudo env DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "$@"; }
}

braid_check_deps() {
  local what=$1 required=() optional=() why=()
  braid_cmake_new_enough || {
    if command -v cmake >/dev/null; then
      braid_say "$(command -v cmake) is $(cmake --version | head -1); braid needs 3.25 or newer on PATH (not installing a second cmake beside it)"
      return 1
    fi
    required+=(cmake) why+=("cmake: none on PATH")
  }
  braid_have_cxx17 || { required+=(g++) why+=("g++: no C++17 compiler (c++, g++ or \$CXX)"); }
  command -v ninja >/dev/null || command -v make >/dev/null || { required+=(make) why+=("make: neither ninja nor make"); }
  braid_have_hwloc || { required+=(libhwloc-dev) why+=("libhwloc-dev: no hwloc.h and libhwloc (topology discovery)"); }
  if [ "$what" = test ]; then
    braid_have_gtest || { required+=(libgtest-dev) why+=("libgtest-dev: no GoogleTest (every test tier)"); }
    command -v pkg-config >/dev/null || { required+=(pkg-config) why+=("pkg-config: the install tier builds with it"); }
    command -v mpirun >/dev/null || { optional+=(openmpi-bin libopenmpi-dev) why+=("openmpi-bin: no mpirun (the multiproc tier's Open MPI cases)"); }
    braid_have_pmix || { optional+=(libpmix-dev) why+=("libpmix-dev: no pmix.h (braid meets under a bare mpirun or srun through PMIx)"); }
    command -v clang-format >/dev/null || { optional+=(clang-format) why+=("clang-format: the format check"); }
    command -v ip >/dev/null || { optional+=(iproute2) why+=("iproute2: no ip (the multihost tier's namespaces)"); }
    command -v gnuplot >/dev/null || { optional+=(gnuplot-nox) why+=("gnuplot-nox: no gnuplot (braid-plot's check)"); }
  fi
  if [ ${#required[@]} -gt 0 ] || [ ${#optional[@]} -gt 0 ]; then
    braid_say "missing:"
    printf '  %s\n' "${why[@]}"
    braid_say "installing with apt-get: ${required[*]} ${optional[*]}"
    if ! braid_apt_install "${required[@]}" "${optional[@]}"; then
      # The optional ones alone may be what failed (say, a package this distribution lacks).
      if [ ${#required[@]} -gt 0 ] && { [ ${#optional[@]} -eq 0 ] || ! braid_apt_install "${required[@]}"; }; then
        braid_say "could not install ${required[*]} (no package registry, or not root): install them, or what provides them, and run again"
        return 1
      fi
    fi
  fi
  if [ "$what" = test ]; then
    command -v mpirun >/dev/null || braid_say "skipped: the Open MPI cases of the multiproc tier (no mpirun)"
    braid_have_pmix || braid_say "skipped: the bare-mpirun (PMIx) cases of the multiproc tier (no pmix.h)"
    command -v clang-format >/dev/null || braid_say "skipped: the format check (no clang-format)"
    command -v gnuplot >/dev/null || braid_say "skipped: braid-plot's check (no gnuplot)"
  fi
  if braid_find_nvcc; then
    braid_say "CUDA: $(command -v "${CUDACXX:-nvcc}") ($("${CUDACXX:-nvcc}" --version | tail -2 | head -1))"
  else
    braid_say "no nvcc (on PATH or /usr/local/cuda/bin): the CUDA parts and the gpu tier are not built"
  fi
  braid_say "cmake $(cmake --version | head -1 | sed 's/cmake version //') at $(command -v cmake)"
}

# Both scripts configure the one build folder with the same options (tests on wherever GoogleTest is
# found), so running one after the other never reconfigures it away from the other; the demo builds
# only what it runs.
braid_build() {
  local generator=() tests=OFF
  braid_have_gtest && tests=ON
  if [ ! -f "$braid_build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  cmake -S "$braid_root" -B "$braid_build" "${generator[@]}" -DBRAID_WERROR=ON -DBRAID_BUILD_TESTS=$tests
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$braid_build" -j "$(nproc)" "${targets[@]}"
}
