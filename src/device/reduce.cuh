// Element arithmetic on the GPU, bit for bit what the host executor does (exec/host_reduce.h has
// the rules): integers wrap, the narrow floats are widened to float, combined and rounded back
// (fp8 saturating), max/min ignore NaN and order -0 below +0, avg divides in the element's math type.
//
// Data moves in 16-byte packs (Simple) or 8-byte words (LL); Pack<F, Bytes> views such a unit as
// elements of format F.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "device/float_minmax.h"

namespace braid::device {

// ---- Formats: storage bits <-> math type ------------------------------------------------------

template <class Bits, class M>
struct Plain {
  using Storage = Bits;
  using Math = M;
  static __device__ __forceinline__ Math load(Storage s) { return static_cast<Math>(s); }
  static __device__ __forceinline__ Storage store(Math m) { return static_cast<Storage>(m); }
};

struct HalfFmt {
  using Storage = uint16_t;
  using Math = float;
  static __device__ __forceinline__ float load(uint16_t s) { return __half2float(__ushort_as_half(s)); }
  static __device__ __forceinline__ uint16_t store(float m) { return __half_as_ushort(__float2half_rn(m)); }
};

struct Bf16Fmt {
  using Storage = uint16_t;
  using Math = float;
  static __device__ __forceinline__ float load(uint16_t s) { return __bfloat162float(__ushort_as_bfloat16(s)); }
  static __device__ __forceinline__ uint16_t store(float m) { return __bfloat16_as_ushort(__float2bfloat16_rn(m)); }
};

/// fp8 through cuda_fp8.h: its float constructor rounds with saturation (__NV_SATFINITE).
template <class Nv>
struct Fp8Fmt {
  using Storage = uint8_t;
  using Math = float;
  static __device__ __forceinline__ float load(uint8_t s) {
    Nv v;
    v.__x = s;
    return static_cast<float>(v);
  }
  static __device__ __forceinline__ uint8_t store(float m) { return Nv(m).__x; }
};
using E4m3Fmt = Fp8Fmt<__nv_fp8_e4m3>;
using E5m2Fmt = Fp8Fmt<__nv_fp8_e5m2>;

// ---- Operations on the math type --------------------------------------------------------------

template <class T>
struct Wrap {  // integer sum/product without signed overflow: in an unsigned type at least int wide
  using type = unsigned;
};
template <>
struct Wrap<int64_t> {
  using type = unsigned long long;
};
template <>
struct Wrap<uint64_t> {
  using type = unsigned long long;
};

template <class T>
constexpr bool isFloating() {
  return std::is_floating_point_v<T>;
}

struct SumOp {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (isFloating<T>()) {
      return a + b;
    } else {
      using W = typename Wrap<T>::type;
      return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    }
  }
};

struct ProdOp {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (isFloating<T>()) {
      return a * b;
    } else {
      using W = typename Wrap<T>::type;
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    }
  }
};

struct MaxOp {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (isFloating<T>()) {
      return floatMinMax<true>(a, b);
    } else {
      return a > b ? a : b;
    }
  }
};

struct MinOp {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (isFloating<T>()) {
      return floatMinMax<false>(a, b);
    } else {
      return a < b ? a : b;
    }
  }
};

/// The avg post-division: in the math type, by a divisor of a type wide enough (integers truncate).
template <class Math>
__device__ __forceinline__ Math divideBy(Math x, int divisor) {
  if constexpr (isFloating<Math>()) {
    return x / static_cast<Math>(divisor);
  } else if constexpr (std::is_signed_v<Math>) {
    if constexpr (sizeof(Math) <= 4) {
      return static_cast<Math>(static_cast<int>(x) / divisor);
    } else {
      return static_cast<Math>(static_cast<long long>(x) / static_cast<long long>(divisor));
    }
  } else {
    if constexpr (sizeof(Math) <= 4) {
      return static_cast<Math>(static_cast<unsigned>(x) / static_cast<unsigned>(divisor));
    } else {
      return static_cast<Math>(static_cast<unsigned long long>(x) / static_cast<unsigned long long>(divisor));
    }
  }
}

// ---- Units of data as elements ----------------------------------------------------------------

/// `Unit` (uint4 or uint64_t) viewed as elements of F.
template <class F, class Unit>
union Pack {
  static constexpr int kElems = sizeof(Unit) / sizeof(typename F::Storage);
  Unit u;
  typename F::Storage e[kElems];
};

/// acc = acc (op) x, element-wise.
template <class F, class Op, class Unit>
__device__ __forceinline__ Unit reduceUnit(Unit acc, Unit x) {
  Pack<F, Unit> a, b;
  a.u = acc;
  b.u = x;
#pragma unroll
  for (int i = 0; i < Pack<F, Unit>::kElems; ++i) a.e[i] = F::store(Op::apply(F::load(a.e[i]), F::load(b.e[i])));
  return a.u;
}

// Not unrolled: a division expands to a long sequence, and avg is rare enough.
template <class F, class Unit>
__device__ __noinline__ Unit divideUnit(Unit acc, int divisor) {
  Pack<F, Unit> a;
  a.u = acc;
#pragma unroll 1
  for (int i = 0; i < Pack<F, Unit>::kElems; ++i) a.e[i] = F::store(divideBy(F::load(a.e[i]), divisor));
  return a.u;
}

}  // namespace braid::device
