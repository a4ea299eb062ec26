// The independent reference for host_reduce: narrow values decoded from their format definitions
// into double, combined in double, and rounded back by searching the sorted list of every
// representable value, so no bit trick is shared with the code under test; plus the drivers that
// run the code under test in several buffer layouts. Shared by host_reduce_test.cc (reductions)
// and host_reduce_convert_test.cc (conversions).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "exec/host_reduce.h"

namespace braid::exec {
namespace {

constexpr braidDataType_t kAllTypes[] = {braidInt8,    braidUint8,    braidInt32,      braidUint32,
                                         braidInt64,   braidUint64,   braidFloat16,    braidFloat32,
                                         braidFloat64, braidBfloat16, braidFloat8e4m3, braidFloat8e5m2};
constexpr braidRedOp_t kAllOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

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
inline uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  return u;
}
inline double doubleOf(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
}

// ---- Narrow floating formats, from their definitions ------------------------------------------

struct Format {
  braidDataType_t type;
  int expBits;
  int manBits;
  bool hasInf;       // top binade is inf/NaN (IEEE style); else only all-ones is NaN (E4M3FN)
  bool saturates;    // overflow gives the largest finite value (fp8 SATFINITE), not inf
  uint32_t nanBits;  // the one NaN the conversions produce
  int width() const { return 1 + expBits + manBits; }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
};

constexpr Format kHalf{braidFloat16, 5, 10, true, false, 0x7fff};
constexpr Format kBf16{braidBfloat16, 8, 7, true, false, 0x7fff};
constexpr Format kE4m3{braidFloat8e4m3, 4, 3, false, true, 0x7f};
constexpr Format kE5m2{braidFloat8e5m2, 5, 2, true, true, 0x7f};
constexpr const Format* kFormats[] = {&kHalf, &kBf16, &kE4m3, &kE5m2};

inline const Format* formatOf(braidDataType_t type) {
  for (const Format* f : kFormats) {
    if (f->type == type) return f;
  }
  return nullptr;
}

// sign * 2^(e - bias) * 1.mantissa, or subnormal, inf, NaN.
inline double decode(const Format& f, uint32_t bits) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const uint32_t expAllOnes = (1u << f.expBits) - 1;
  const uint32_t manAllOnes = (1u << f.manBits) - 1;
  const uint32_t e = (bits >> f.manBits) & expAllOnes;
  const uint32_t m = bits & manAllOnes;
  double magnitude;
  if (e == expAllOnes && f.hasInf) {
    magnitude = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == expAllOnes && m == manAllOnes) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    magnitude = std::ldexp(static_cast<double>(m), 1 - bias - f.manBits);
  } else {
    magnitude = std::ldexp(1.0 + static_cast<double>(m) / (1 << f.manBits), static_cast<int>(e) - bias);
  }
  return (bits & f.signBit()) ? -magnitude : magnitude;
}

// Round to nearest, ties to even, by search: the finite non-negative values in pattern order are
// increasing, and a pattern is even when its index is. One more entry past the largest finite
// value marks where the next binade would begin; rounding to it is overflow.
class Rounder {
 public:
  explicit Rounder(const Format& f) : f_(f) {
    for (uint32_t bits = 0; std::isfinite(decode(f, bits)); ++bits) values_.push_back(decode(f, bits));
    values_.push_back(2 * values_.back() - values_[values_.size() - 2]);
  }

  uint32_t maxFinite() const { return static_cast<uint32_t>(values_.size() - 2); }
  const std::vector<double>& values() const { return values_; }

  uint32_t encode(double v) const {
    if (std::isnan(v)) return f_.nanBits;
    const uint32_t sign = std::signbit(v) ? f_.signBit() : 0;
    const double a = std::fabs(v);
    size_t index = values_.size() - 1;
    if (a < values_.back()) {
      const size_t hi = std::upper_bound(values_.begin(), values_.end(), a) - values_.begin();
      const size_t lo = hi - 1;
      const double below = a - values_[lo];  // exact: neighbours are within a factor of two
      const double above = values_[hi] - a;
      index = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
    }
    if (index > maxFinite()) {
      const uint32_t inf = ((1u << f_.expBits) - 1) << f_.manBits;
      return sign | (f_.saturates ? maxFinite() : inf);
    }
    return sign | static_cast<uint32_t>(index);
  }

 private:
  Format f_;
  std::vector<double> values_;
};

inline const Rounder& rounderFor(const Format& f) {
  static const Rounder half(kHalf), bf16(kBf16), e4m3(kE4m3), e5m2(kE5m2);
  switch (f.type) {
    case braidFloat16: return half;
    case braidBfloat16: return bf16;
    case braidFloat8e4m3: return e4m3;
    default: return e5m2;
  }
}

inline float implToFloat(const Format& f, uint32_t bits) {
  switch (f.type) {
    case braidFloat16: return halfToFloat(static_cast<uint16_t>(bits));
    case braidBfloat16: return bf16ToFloat(static_cast<uint16_t>(bits));
    case braidFloat8e4m3: return fp8e4m3ToFloat(static_cast<uint8_t>(bits));
    default: return fp8e5m2ToFloat(static_cast<uint8_t>(bits));
  }
}

inline uint32_t implFromFloat(const Format& f, float v) {
  switch (f.type) {
    case braidFloat16: return floatToHalf(v);
    case braidBfloat16: return floatToBf16(v);
    case braidFloat8e4m3: return floatToFp8e4m3(v);
    default: return floatToFp8e5m2(v);
  }
}

// ---- Reference for every type and op, on raw element bits (little-endian host) ---------------

inline bool isInt(braidDataType_t t) { return t <= braidUint64; }

__int128 intValue(braidDataType_t t, uint64_t bits) {
  switch (t) {
    case braidInt8: return static_cast<int8_t>(bits);
    case braidUint8: return static_cast<uint8_t>(bits);
    case braidInt32: return static_cast<int32_t>(bits);
    case braidUint32: return static_cast<uint32_t>(bits);
    case braidInt64: return static_cast<int64_t>(bits);
    default: return static_cast<uint64_t>(bits);
  }
}

inline uint64_t sizeMask(braidDataType_t t) {
  const size_t size = core::typeSize(t);
  return size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
}

// fmax/fmin semantics with -0 < +0, written out case by case.
inline double refMinMax(double a, double b, bool isMax) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) {
    const bool aWins = isMax ? !std::signbit(a) : std::signbit(a);
    return aWins ? a : b;
  }
  return (a > b) == isMax ? a : b;
}

inline double refCombine(double a, double b, braidRedOp_t op) {
  switch (op) {
    case braidProd: return a * b;
    case braidMax: return refMinMax(a, b, true);
    case braidMin: return refMinMax(a, b, false);
    default: return a + b;
  }
}

struct Expected {
  uint64_t bits;
  bool anyNan;  // float32/float64: any NaN is right (their NaN payload is not specified)
};

inline Expected refReduce(braidDataType_t t, braidRedOp_t op, uint64_t a, uint64_t b) {
  if (isInt(t)) {
    const __int128 x = intValue(t, a);
    const __int128 y = intValue(t, b);
    // Sum and product modulo 2^128 (unsigned, no overflow), then keep the element's low bits.
    const auto ux = static_cast<unsigned __int128>(x);
    const auto uy = static_cast<unsigned __int128>(y);
    unsigned __int128 r = ux + uy;
    if (op == braidProd) r = ux * uy;
    if (op == braidMax) r = static_cast<unsigned __int128>(x > y ? x : y);
    if (op == braidMin) r = static_cast<unsigned __int128>(x < y ? x : y);
    return {static_cast<uint64_t>(r) & sizeMask(t), false};
  }
  if (t == braidFloat32) {
    // double has more than 2*24+2 bits, so rounding the double result to float is exact rounding.
    const float r =
        static_cast<float>(refCombine(floatOf(static_cast<uint32_t>(a)), floatOf(static_cast<uint32_t>(b)), op));
    return {bitsOf(r), std::isnan(r)};
  }
  if (t == braidFloat64) {
    const double r = refCombine(doubleOf(a), doubleOf(b), op);
    return {bitsOf(r), std::isnan(r)};
  }
  const Format& f = *formatOf(t);
  const double r = refCombine(decode(f, static_cast<uint32_t>(a)), decode(f, static_cast<uint32_t>(b)), op);
  return {rounderFor(f).encode(r), false};
}

inline Expected refDivide(braidDataType_t t, uint64_t x, int divisor) {
  if (isInt(t)) {
    const __int128 v = intValue(t, x);
    const __int128 q = v < 0 ? -(-v / divisor) : v / divisor;  // truncation toward zero, spelt out
    return {static_cast<uint64_t>(q) & sizeMask(t), false};
  }
  if (t == braidFloat32) {
    const float r = static_cast<float>(static_cast<double>(floatOf(static_cast<uint32_t>(x))) / divisor);
    return {bitsOf(r), std::isnan(r)};
  }
  if (t == braidFloat64) {
    const double r = doubleOf(x) / divisor;
    return {bitsOf(r), std::isnan(r)};
  }
  const Format& f = *formatOf(t);
  return {rounderFor(f).encode(decode(f, static_cast<uint32_t>(x)) / divisor), false};
}

inline bool matches(braidDataType_t t, const Expected& e, uint64_t actual) {
  if (!e.anyNan) return e.bits == actual;
  return t == braidFloat32 ? std::isnan(floatOf(static_cast<uint32_t>(actual))) : std::isnan(doubleOf(actual));
}

// ---- Random elements --------------------------------------------------------------------------

inline uint64_t randomElement(braidDataType_t t, std::mt19937_64& rng) {
  const uint64_t raw = rng() & sizeMask(t);
  const int kind = static_cast<int>(rng() % 10);
  if (isInt(t)) {
    const int bits = 8 * static_cast<int>(core::typeSize(t));
    const uint64_t minSigned = uint64_t{1} << (bits - 1);
    const uint64_t specials[] = {0, 1, sizeMask(t), minSigned, minSigned - 1, minSigned + 1, 2};
    if (kind < 2) return specials[rng() % 7];
    if (kind < 6) return raw;
    return static_cast<uint64_t>(static_cast<int64_t>(rng() % 201) - 100) & sizeMask(t);  // small, +-
  }
  if (t == braidFloat32) {
    const uint32_t specials[] = {0,          0x80000000, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff, 1,
                                 0x80000001, 0x00800000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001};
    if (kind < 2) return specials[rng() % 14];
    if (kind < 6) return raw;
    return bitsOf(
        std::ldexp(static_cast<float>(static_cast<int32_t>(rng() % 2001) - 1000), -static_cast<int>(rng() % 8)));
  }
  if (t == braidFloat64) {
    using Limits = std::numeric_limits<double>;
    const double specials[] = {0.0,
                               -0.0,
                               1.0,
                               -1.0,
                               Limits::max(),
                               Limits::denorm_min(),
                               Limits::infinity(),
                               -Limits::infinity(),
                               Limits::quiet_NaN()};
    if (kind < 2) return bitsOf(specials[rng() % 9]);
    if (kind < 6) return raw;
    return bitsOf(
        std::ldexp(static_cast<double>(static_cast<int64_t>(rng() % 20001) - 10000), -static_cast<int>(rng() % 12)));
  }
  const Format& f = *formatOf(t);
  const uint32_t maxFinite = rounderFor(f).maxFinite();
  const uint32_t one = static_cast<uint32_t>((1 << (f.expBits - 1)) - 1) << f.manBits;
  const uint32_t sign = f.signBit();
  const uint32_t specials[] = {0,
                               sign,
                               one,
                               sign | one,
                               maxFinite,
                               sign | maxFinite,
                               1,
                               1u << f.manBits,
                               maxFinite + 1,
                               sign | (maxFinite + 1),
                               f.nanBits};  // + 1: inf, or NaN for E4M3
  if (kind < 2) return specials[rng() % 11];
  if (kind < 6) return raw;
  // Moderate: exponent near the bias, so that sums and products round rather than overflow.
  const uint32_t e = one + (static_cast<uint32_t>(rng() % 5) << f.manBits) - (2u << f.manBits);
  return ((rng() & 1) ? sign : 0) | e | (rng() & ((1u << f.manBits) - 1));
}

// ---- Drivers: run the code under test in several buffer layouts and compare every element ----

inline uint64_t loadElem(const unsigned char* p, size_t i, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p + i * size, size);
  return v;
}

inline void storeElems(unsigned char* p, const std::vector<uint64_t>& v, size_t size) {
  for (size_t i = 0; i < v.size(); ++i) std::memcpy(p + i * size, &v[i], size);
}

enum class Layout { kOutOfPlace, kUnaligned, kInPlaceA, kInPlaceB };
constexpr Layout kAllLayouts[] = {Layout::kOutOfPlace, Layout::kUnaligned, Layout::kInPlaceA, Layout::kInPlaceB};

inline const char* layoutName(Layout l) {
  switch (l) {
    case Layout::kOutOfPlace: return "out-of-place";
    case Layout::kUnaligned: return "unaligned";
    case Layout::kInPlaceA: return "in-place dst=a, unaligned";
    default: return "in-place dst=b, unaligned";
  }
}

inline std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Counts mismatches and keeps the first for the message, so a broken kernel prints one line.
class Mismatches {
 public:
  void add(const std::string& what) {
    if (count_++ == 0) first_ = what;
  }
  int count() const { return count_; }
  const std::string& first() const { return first_; }

 private:
  int count_ = 0;
  std::string first_;
};

inline void checkReduce(braidDataType_t t, braidRedOp_t op, const std::vector<uint64_t>& a,
                        const std::vector<uint64_t>& b) {
  const size_t size = core::typeSize(t);
  const size_t n = a.size();
  for (Layout layout : kAllLayouts) {
    const size_t offset = layout == Layout::kOutOfPlace ? 0 : 1;
    std::vector<unsigned char> bufA(n * size + 1), bufB(n * size + 1), bufD(n * size + 1, 0xa5);
    unsigned char* pa = bufA.data() + offset;
    unsigned char* pb = bufB.data() + offset;
    storeElems(pa, a, size);
    storeElems(pb, b, size);
    unsigned char* dst = layout == Layout::kInPlaceA ? pa : layout == Layout::kInPlaceB ? pb : bufD.data() + offset;
    reduceElems(dst, pa, pb, n, t, op);
    Mismatches bad;
    for (size_t i = 0; i < n; ++i) {
      const Expected e = refReduce(t, op, a[i], b[i]);
      const uint64_t got = loadElem(dst, i, size);
      if (!matches(t, e, got)) {
        bad.add("element " + std::to_string(i) + ": " + hex(a[i]) + " " + core::opName(op) + " " + hex(b[i]) +
                " gave " + hex(got) + ", expected " + hex(e.bits));
      }
    }
    EXPECT_EQ(bad.count(), 0) << core::typeName(t) << " " << core::opName(op) << " " << layoutName(layout) << ", "
                              << bad.first();
  }
}

inline void checkDivide(braidDataType_t t, int divisor, const std::vector<uint64_t>& x) {
  const size_t size = core::typeSize(t);
  const size_t n = x.size();
  for (bool inPlace : {false, true}) {
    std::vector<unsigned char> bufX(n * size + 1), bufD(n * size + 1, 0x5a);
    unsigned char* px = bufX.data() + 1;
    storeElems(px, x, size);
    unsigned char* dst = inPlace ? px : bufD.data();
    divideElems(dst, px, n, t, divisor);
    Mismatches bad;
    for (size_t i = 0; i < n; ++i) {
      const Expected e = refDivide(t, x[i], divisor);
      const uint64_t got = loadElem(dst, i, size);
      if (!matches(t, e, got)) {
        bad.add("element " + std::to_string(i) + ": " + hex(x[i]) + " / " + std::to_string(divisor) + " gave " +
                hex(got) + ", expected " + hex(e.bits));
      }
    }
    EXPECT_EQ(bad.count(), 0) << core::typeName(t) << (inPlace ? " in place" : " out of place") << ", " << bad.first();
  }
}

}  // namespace
}  // namespace braid::exec
