// Floating max/min as braid defines them, for the host executor and the GPU kernels alike:
// NaN-ignoring (fmax semantics), and for equal operands the AND (max) or OR (min) of their bits,
// which only matters for +-0: max(-0, +0) = +0, min(-0, +0) = -0 in either operand order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "algo/common.h"

namespace braid::device {

template <bool kMax, typename T>
BRAID_HOST_DEVICE inline T floatMinMax(T a, T b) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U ua, ub;
  memcpy(&ua, &a, sizeof(a));
  memcpy(&ub, &b, sizeof(b));
  const U equalBits = kMax ? (ua & ub) : (ua | ub);
  T equal;
  memcpy(&equal, &equalBits, sizeof(equal));
  T r = (kMax ? a > b : a < b) ? a : b;
  r = a == b ? equal : r;
  r = a != a ? b : r;
  return b != b ? a : r;
}

}  // namespace braid::device
