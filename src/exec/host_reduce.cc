#include "exec/host_reduce.h"

#include <cstring>
#include <type_traits>

#include "device/float_minmax.h"

namespace braid::exec {
namespace {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// ---- Narrow formats <-> float ------------------------------------------------------------------
// Straight-line code: every candidate result is computed and the right one picked with a bit
// mask, not with ?:. GCC does not if-convert a branch that holds a floating-point operation (it
// might trap), and a branch in the loop body keeps the loop from vectorizing.

inline uint32_t pick(bool cond, uint32_t ifTrue, uint32_t ifFalse) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (ifTrue & mask) | (ifFalse & ~mask);
}

// A binary floating-point format narrower than float, with kExpBits exponent and kManBits
// mantissa bits. kHasInf: the top binade holds inf and NaNs (float16, E5M2); otherwise it is
// finite except for the all-ones NaN (E4M3FN). Towards the format, a magnitude whose float bits
// exceed kOverflowAbove becomes kOverflowBits (inf for float16, the largest finite value for the
// saturating fp8 conversions), and every NaN becomes kNanBits.
template <int kExpBits, int kManBits, bool kHasInf, uint32_t kOverflowAbove, uint32_t kOverflowBits, uint32_t kNanBits>
struct MiniFloat {
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr int kShift = 23 - kManBits;  // mantissa bits that float has and the format lacks
  static constexpr uint32_t kSignBit = 1u << (kExpBits + kManBits);
  static constexpr uint32_t kTopBinade = ((1u << kExpBits) - 1u) << kManBits;
  // As float bits: the exponent rebias, the format's smallest normal and smallest subnormal, and
  // a power of two whose last mantissa bit weighs as much as that smallest subnormal.
  static constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kBias) << 23;
  static constexpr uint32_t kMinNormal = static_cast<uint32_t>(128 - kBias) << 23;
  static constexpr uint32_t kMinSubnormal = static_cast<uint32_t>(128 - kBias - kManBits) << 23;
  static constexpr uint32_t kSubnormalMagic = kMinSubnormal + (23u << 23);

  static float toFloat(uint32_t bits) {
    const uint32_t sign = (bits & kSignBit) << (31 - kExpBits - kManBits);
    const uint32_t magnitude = bits & (kSignBit - 1u);
    // Normal: exponent and mantissa move into float's fields; the exponent is rebiased.
    const uint32_t normal = (magnitude << kShift) + kRebias;
    // Inf and NaN: exponent all ones, the mantissa (NaN payload) moves along.
    const uint32_t special = (magnitude << kShift) | 0x7f800000u;
    const bool isSpecial = kHasInf ? magnitude >= kTopBinade : magnitude == kSignBit - 1u;
    // Subnormal and zero: magnitude times the smallest subnormal, exact in float.
    const uint32_t subnormal = bitsOf(static_cast<float>(static_cast<int32_t>(magnitude)) * floatOf(kMinSubnormal));
    uint32_t r = pick(isSpecial, special, normal);
    r = pick(magnitude < (1u << kManBits), subnormal, r);
    return floatOf(r | sign);
  }

  static uint32_t fromFloat(float f) {
    const uint32_t x = bitsOf(f);
    const uint32_t sign = (x >> 31) << (kExpBits + kManBits);
    const uint32_t u = x & 0x7fffffffu;
    // Normal: rebias, then round the kShift dropped bits to nearest even. A carry out of the
    // mantissa lands in the exponent, which is the right result (the next binade's first value).
    const uint32_t normal = (u - kRebias + ((1u << (kShift - 1)) - 1u) + ((u >> kShift) & 1u)) >> kShift;
    // Subnormal: after adding the magic number, float's last mantissa bit is the format's smallest
    // subnormal, so the FPU's own round-to-nearest-even does the rounding (up to kMinNormal).
    const uint32_t subnormal = bitsOf(floatOf(u) + floatOf(kSubnormalMagic)) - kSubnormalMagic;
    uint32_t r = pick(u < kMinNormal, subnormal, normal);
    r = pick(u > kOverflowAbove, kOverflowBits, r);
    return pick(u > 0x7f800000u, kNanBits, r | sign);
  }
};

// float16 as __float2half_rn: 65520 = 65504 + half a step ties to even, which is inf (0x7c00).
using HalfFormat = MiniFloat<5, 10, true, 0x477fefffu, 0x7c00u, 0x7fffu>;
// fp8 as cuda_fp8.hpp's default __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...).
// E4M3: 464 = 448 + half a step ties to 448 (even); above it, and inf, saturate to 448.
using E4m3Format = MiniFloat<4, 3, false, 0x43e80000u, 0x7eu, 0x7fu>;
// E5M2: 61440 = 57344 + half a step would tie up to 65536, so it and above saturate to 57344.
using E5m2Format = MiniFloat<5, 2, true, 0x476fffffu, 0x7bu, 0x7fu>;

inline float bf16BitsToFloat(uint16_t h) { return floatOf(static_cast<uint32_t>(h) << 16); }

inline uint16_t floatToBf16Bits(float f) {
  const uint32_t x = bitsOf(f);
  // bfloat16 is float's upper half, so rounding the low 16 bits to nearest even covers normals,
  // subnormals and overflow to inf alike; the sign bit cannot carry out.
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(pick((x & 0x7fffffffu) > 0x7f800000u, 0x7fffu, rounded));
}

// ---- Element formats: storage bits and the type arithmetic runs in -----------------------------

template <typename T>
struct Native {
  using Bits = T;
  using Math = T;
  static Math load(Bits v) { return v; }
  static Bits store(Math v) { return v; }
};

template <typename Format, typename StorageBits>
struct Narrow {
  using Bits = StorageBits;
  using Math = float;
  static Math load(Bits v) { return Format::toFloat(v); }
  static Bits store(Math v) { return static_cast<Bits>(Format::fromFloat(v)); }
};

using Half = Narrow<HalfFormat, uint16_t>;
using E4m3 = Narrow<E4m3Format, uint8_t>;
using E5m2 = Narrow<E5m2Format, uint8_t>;

struct Bf16 {
  using Bits = uint16_t;
  using Math = float;
  static Math load(Bits v) { return bf16BitsToFloat(v); }
  static Bits store(Math v) { return floatToBf16Bits(v); }
};

// ---- The operations ----------------------------------------------------------------------------

// Integer sum and product run in an unsigned type at least as wide as int: wraparound without
// undefined behaviour, and no promotion of small types to signed int in between.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct SumOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

using device::floatMinMax;  // shared with the GPU kernels (device/float_minmax.h)

struct MaxOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      return floatMinMax<true>(a, b);
    }
  }
};

struct MinOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      return floatMinMax<false>(a, b);
    }
  }
};

// ---- The loops ---------------------------------------------------------------------------------
// Elements go through small local blocks: memcpy in (any alignment, and dst may equal a or b since
// a block is fully read before it is written), a loop of fixed count that the compiler vectorizes
// even at -O2, memcpy out. The last partial block runs the same loop with a run-time count.

constexpr size_t kBlock = 64;

template <typename Fmt, typename Op>
[[gnu::always_inline]] inline void reduceBlock(unsigned char* dst, const unsigned char* a, const unsigned char* b,
                                               size_t count) {
  using Bits = typename Fmt::Bits;
  Bits x[kBlock];
  Bits y[kBlock];
  std::memcpy(x, a, count * sizeof(Bits));
  std::memcpy(y, b, count * sizeof(Bits));
  for (size_t j = 0; j < count; ++j) x[j] = Fmt::store(Op::apply(Fmt::load(x[j]), Fmt::load(y[j])));
  std::memcpy(dst, x, count * sizeof(Bits));
}

template <typename Fmt, typename Op>
void reduceLoop(void* dst, const void* a, const void* b, size_t n) {
  constexpr size_t kSize = sizeof(typename Fmt::Bits);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) reduceBlock<Fmt, Op>(d + i * kSize, x + i * kSize, y + i * kSize, kBlock);
  if (i < n) reduceBlock<Fmt, Op>(d + i * kSize, x + i * kSize, y + i * kSize, n - i);
}

template <typename Fmt>
void reduceAs(void* dst, const void* a, const void* b, size_t n, braidRedOp_t op) {
  switch (op) {
    case braidSum:
    case braidAvg: return reduceLoop<Fmt, SumOp>(dst, a, b, n);
    case braidProd: return reduceLoop<Fmt, ProdOp>(dst, a, b, n);
    case braidMax: return reduceLoop<Fmt, MaxOp>(dst, a, b, n);
    case braidMin: return reduceLoop<Fmt, MinOp>(dst, a, b, n);
    default: return;
  }
}

// The divisor in the type the division runs in: float/double for the floating formats, and for
// integers a type wide enough to hold any divisor (int8 data divided by 256 ranks must give 0).
template <typename Math>
using DivisorType =
    std::conditional_t<std::is_floating_point_v<Math>, Math,
                       std::conditional_t<std::is_signed_v<Math>, std::conditional_t<(sizeof(Math) <= 4), int, int64_t>,
                                          std::conditional_t<(sizeof(Math) <= 4), unsigned, uint64_t>>>;

template <typename Fmt>
[[gnu::always_inline]] inline void divideBlock(unsigned char* dst, const unsigned char* src, size_t count,
                                               int divisor) {
  using Bits = typename Fmt::Bits;
  using Math = typename Fmt::Math;
  const auto d = static_cast<DivisorType<Math>>(divisor);
  Bits x[kBlock];
  std::memcpy(x, src, count * sizeof(Bits));
  for (size_t j = 0; j < count; ++j) x[j] = Fmt::store(static_cast<Math>(Fmt::load(x[j]) / d));
  std::memcpy(dst, x, count * sizeof(Bits));
}

template <typename Fmt>
void divideAs(void* dst, const void* src, size_t n, int divisor) {
  constexpr size_t kSize = sizeof(typename Fmt::Bits);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) divideBlock<Fmt>(d + i * kSize, s + i * kSize, kBlock, divisor);
  if (i < n) divideBlock<Fmt>(d + i * kSize, s + i * kSize, n - i, divisor);
}

template <typename Fmt>
void premultiplyAs(void* dst, const void* src, size_t n, const void* scalar) {
  using Bits = typename Fmt::Bits;
  constexpr size_t kSize = sizeof(Bits);
  Bits sBits;
  std::memcpy(&sBits, scalar, kSize);
  const auto factor = Fmt::load(sBits);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  Bits x[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t count = n - i < kBlock ? n - i : kBlock;
    std::memcpy(x, s + i * kSize, count * kSize);
    for (size_t j = 0; j < count; ++j) x[j] = Fmt::store(ProdOp::apply(Fmt::load(x[j]), factor));
    std::memcpy(d + i * kSize, x, count * kSize);
  }
}

// Calls f(Fmt{}) with the element format of `type`; nothing for an invalid type.
template <class F>
void withFormat(braidDataType_t type, F&& f) {
  switch (type) {
    case braidInt8: return f(Native<int8_t>{});
    case braidUint8: return f(Native<uint8_t>{});
    case braidInt32: return f(Native<int32_t>{});
    case braidUint32: return f(Native<uint32_t>{});
    case braidInt64: return f(Native<int64_t>{});
    case braidUint64: return f(Native<uint64_t>{});
    case braidFloat16: return f(Half{});
    case braidFloat32: return f(Native<float>{});
    case braidFloat64: return f(Native<double>{});
    case braidBfloat16: return f(Bf16{});
    case braidFloat8e4m3: return f(E4m3{});
    case braidFloat8e5m2: return f(E5m2{});
    default: return;
  }
}

}  // namespace

void premultiplyElems(void* dst, const void* src, size_t n, braidDataType_t type, const void* scalar) {
  withFormat(type, [&](auto fmt) { premultiplyAs<decltype(fmt)>(dst, src, n, scalar); });
}

void reduceElems(void* dst, const void* a, const void* b, size_t n, braidDataType_t type, braidRedOp_t op) {
  withFormat(type, [&](auto fmt) { reduceAs<decltype(fmt)>(dst, a, b, n, op); });
}

void divideElems(void* dst, const void* src, size_t n, braidDataType_t type, int divisor) {
  withFormat(type, [&](auto fmt) { divideAs<decltype(fmt)>(dst, src, n, divisor); });
}

float halfToFloat(uint16_t bits) { return HalfFormat::toFloat(bits); }
uint16_t floatToHalf(float value) { return static_cast<uint16_t>(HalfFormat::fromFloat(value)); }
float bf16ToFloat(uint16_t bits) { return bf16BitsToFloat(bits); }
uint16_t floatToBf16(float value) { return floatToBf16Bits(value); }
float fp8e4m3ToFloat(uint8_t bits) { return E4m3Format::toFloat(bits); }
uint8_t floatToFp8e4m3(float value) { return static_cast<uint8_t>(E4m3Format::fromFloat(value)); }
float fp8e5m2ToFloat(uint8_t bits) { return E5m2Format::toFloat(bits); }
uint8_t floatToFp8e5m2(float value) { return static_cast<uint8_t>(E5m2Format::fromFloat(value)); }

namespace {

template <class T>
T loadAs(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void storeAs(T v, void* p) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace

double elementToDouble(const void* p, braidDataType_t type) {
  switch (type) {
    case braidInt8: return loadAs<int8_t>(p);
    case braidUint8: return loadAs<uint8_t>(p);
    case braidInt32: return loadAs<int32_t>(p);
    case braidUint32: return loadAs<uint32_t>(p);
    case braidInt64: return static_cast<double>(loadAs<int64_t>(p));
    case braidUint64: return static_cast<double>(loadAs<uint64_t>(p));
    case braidFloat32: return loadAs<float>(p);
    case braidFloat64: return loadAs<double>(p);
    case braidFloat16: return halfToFloat(loadAs<uint16_t>(p));
    case braidBfloat16: return bf16ToFloat(loadAs<uint16_t>(p));
    case braidFloat8e4m3: return fp8e4m3ToFloat(loadAs<uint8_t>(p));
    case braidFloat8e5m2: return fp8e5m2ToFloat(loadAs<uint8_t>(p));
    default: return 0;
  }
}

void elementFromDouble(double value, void* p, braidDataType_t type) {
  // Integers go through int64 (truncation toward zero), then wrap by conversion to the narrower
  // unsigned type, which is defined behaviour.
  uint64_t wrapped = static_cast<uint64_t>(static_cast<int64_t>(value));
  switch (type) {
    case braidInt8:
    case braidUint8: storeAs(static_cast<uint8_t>(wrapped), p); break;
    case braidInt32:
    case braidUint32: storeAs(static_cast<uint32_t>(wrapped), p); break;
    case braidInt64:
    case braidUint64: storeAs(wrapped, p); break;
    case braidFloat32: storeAs(static_cast<float>(value), p); break;
    case braidFloat64: storeAs(value, p); break;
    case braidFloat16: storeAs(floatToHalf(static_cast<float>(value)), p); break;
    case braidBfloat16: storeAs(floatToBf16(static_cast<float>(value)), p); break;
    case braidFloat8e4m3: storeAs(floatToFp8e4m3(static_cast<float>(value)), p); break;
    case braidFloat8e5m2: storeAs(floatToFp8e5m2(static_cast<float>(value)), p); break;
    default: break;
  }
}

}  // namespace braid::exec
