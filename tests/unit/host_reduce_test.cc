// The host executor's element-wise arithmetic against an independent reference: narrow values are
// decoded from their format definitions into double, combined in double (exact for sum and
// product of narrow values, correctly rounded otherwise), and rounded back by searching the sorted
// list of every representable value, so no bit trick is shared with the code under test. Literal
// cases pin the CUDA-compatible choices (saturation, NaN, signed zero) independently of both.
#include "exec/host_reduce.h"

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

namespace braid::exec {
namespace {

constexpr braidDataType_t kAllTypes[] = {braidInt8,    braidUint8,    braidInt32,      braidUint32,
                                         braidInt64,   braidUint64,   braidFloat16,    braidFloat32,
                                         braidFloat64, braidBfloat16, braidFloat8e4m3, braidFloat8e5m2};
constexpr braidRedOp_t kAllOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  return u;
}
double doubleOf(uint64_t u) {
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

const Format* formatOf(braidDataType_t type) {
  for (const Format* f : kFormats) {
    if (f->type == type) return f;
  }
  return nullptr;
}

// sign * 2^(e - bias) * 1.mantissa, or subnormal, inf, NaN.
double decode(const Format& f, uint32_t bits) {
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

const Rounder& rounderFor(const Format& f) {
  static const Rounder half(kHalf), bf16(kBf16), e4m3(kE4m3), e5m2(kE5m2);
  switch (f.type) {
    case braidFloat16: return half;
    case braidBfloat16: return bf16;
    case braidFloat8e4m3: return e4m3;
    default: return e5m2;
  }
}

float implToFloat(const Format& f, uint32_t bits) {
  switch (f.type) {
    case braidFloat16: return halfToFloat(static_cast<uint16_t>(bits));
    case braidBfloat16: return bf16ToFloat(static_cast<uint16_t>(bits));
    case braidFloat8e4m3: return fp8e4m3ToFloat(static_cast<uint8_t>(bits));
    default: return fp8e5m2ToFloat(static_cast<uint8_t>(bits));
  }
}

uint32_t implFromFloat(const Format& f, float v) {
  switch (f.type) {
    case braidFloat16: return floatToHalf(v);
    case braidBfloat16: return floatToBf16(v);
    case braidFloat8e4m3: return floatToFp8e4m3(v);
    default: return floatToFp8e5m2(v);
  }
}

// ---- Reference for every type and op, on raw element bits (little-endian host) ---------------

bool isInt(braidDataType_t t) { return t <= braidUint64; }

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

uint64_t sizeMask(braidDataType_t t) {
  const size_t size = core::typeSize(t);
  return size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
}

// fmax/fmin semantics with -0 < +0, written out case by case.
double refMinMax(double a, double b, bool isMax) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) {
    const bool aWins = isMax ? !std::signbit(a) : std::signbit(a);
    return aWins ? a : b;
  }
  return (a > b) == isMax ? a : b;
}

double refCombine(double a, double b, braidRedOp_t op) {
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

Expected refReduce(braidDataType_t t, braidRedOp_t op, uint64_t a, uint64_t b) {
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

Expected refDivide(braidDataType_t t, uint64_t x, int divisor) {
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

bool matches(braidDataType_t t, const Expected& e, uint64_t actual) {
  if (!e.anyNan) return e.bits == actual;
  return t == braidFloat32 ? std::isnan(floatOf(static_cast<uint32_t>(actual))) : std::isnan(doubleOf(actual));
}

// ---- Random elements --------------------------------------------------------------------------

uint64_t randomElement(braidDataType_t t, std::mt19937_64& rng) {
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

uint64_t loadElem(const unsigned char* p, size_t i, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p + i * size, size);
  return v;
}

void storeElems(unsigned char* p, const std::vector<uint64_t>& v, size_t size) {
  for (size_t i = 0; i < v.size(); ++i) std::memcpy(p + i * size, &v[i], size);
}

enum class Layout { kOutOfPlace, kUnaligned, kInPlaceA, kInPlaceB };
constexpr Layout kAllLayouts[] = {Layout::kOutOfPlace, Layout::kUnaligned, Layout::kInPlaceA, Layout::kInPlaceB};

const char* layoutName(Layout l) {
  switch (l) {
    case Layout::kOutOfPlace: return "out-of-place";
    case Layout::kUnaligned: return "unaligned";
    case Layout::kInPlaceA: return "in-place dst=a, unaligned";
    default: return "in-place dst=b, unaligned";
  }
}

std::string hex(uint64_t v) {
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

void checkReduce(braidDataType_t t, braidRedOp_t op, const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
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

void checkDivide(braidDataType_t t, int divisor, const std::vector<uint64_t>& x) {
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

// ---- Conversions ------------------------------------------------------------------------------

// Every bit pattern decodes to the reference value and converts back to itself; NaNs become the
// format's one NaN, and inf (which the saturating fp8 conversion cannot produce) the largest
// finite value of its sign.
void checkEveryPattern(const Format& f) {
  Mismatches bad;
  for (uint32_t bits = 0; bits < (1u << f.width()); ++bits) {
    const double ref = decode(f, bits);
    const float v = implToFloat(f, bits);
    const uint32_t back = implFromFloat(f, v);
    uint32_t expectedBack = bits;
    if (std::isnan(ref)) expectedBack = f.nanBits;
    if (std::isinf(ref) && f.saturates) expectedBack = (bits & f.signBit()) | rounderFor(f).maxFinite();
    const bool sameValue = std::isnan(ref) ? std::isnan(v) : (v == ref && std::signbit(v) == std::signbit(ref));
    if (!sameValue || back != expectedBack) {
      bad.add(hex(bits) + " -> " + std::to_string(v) + " -> " + hex(back) + ", expected " + std::to_string(ref) +
              " -> " + hex(expectedBack));
    }
  }
  EXPECT_EQ(bad.count(), 0) << core::typeName(f.type) << ": " << bad.first();
}

TEST(HostReduceConvert, HalfEveryPatternRoundTrips) { checkEveryPattern(kHalf); }
TEST(HostReduceConvert, Bf16EveryPatternRoundTrips) { checkEveryPattern(kBf16); }
TEST(HostReduceConvert, Fp8e4m3EveryPatternRoundTrips) { checkEveryPattern(kE4m3); }
TEST(HostReduceConvert, Fp8e5m2EveryPatternRoundTrips) { checkEveryPattern(kE5m2); }

// Between every two neighbouring values (and past the largest): the lower value, the exact tie,
// and the floats just below and above the tie, with both signs.
void checkRoundingAtEveryTie(const Format& f) {
  const Rounder& rounder = rounderFor(f);
  const std::vector<double>& values = rounder.values();
  Mismatches bad;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const float tie = static_cast<float>((values[i] + values[i + 1]) / 2);
    ASSERT_EQ(static_cast<double>(tie), (values[i] + values[i + 1]) / 2) << "tie not exact in float";
    const float probes[] = {static_cast<float>(values[i]), tie, std::nextafter(tie, 0.0f), std::nextafter(tie, kInf)};
    for (float p : probes) {
      for (float v : {p, -p}) {
        const uint32_t got = implFromFloat(f, v);
        const uint32_t want = rounder.encode(v);
        if (got != want)
          bad.add(std::to_string(v) + " (" + hex(bitsOf(v)) + ") gave " + hex(got) + ", expected " + hex(want));
      }
    }
  }
  EXPECT_EQ(bad.count(), 0) << core::typeName(f.type) << ": " << bad.first();
}

TEST(HostReduceConvert, HalfRoundsTiesToEven) { checkRoundingAtEveryTie(kHalf); }
TEST(HostReduceConvert, Bf16RoundsTiesToEven) { checkRoundingAtEveryTie(kBf16); }
TEST(HostReduceConvert, Fp8e4m3RoundsTiesToEven) { checkRoundingAtEveryTie(kE4m3); }
TEST(HostReduceConvert, Fp8e5m2RoundsTiesToEven) { checkRoundingAtEveryTie(kE5m2); }

TEST(HostReduceConvert, RandomFloatsRoundLikeReference) {
  std::mt19937_64 rng(7);
  for (const Format* f : kFormats) {
    const Rounder& rounder = rounderFor(*f);
    Mismatches bad;
    for (int i = 0; i < 100000; ++i) {
      // Half of them any float; half with an exponent in or near the format's range.
      uint32_t bits = static_cast<uint32_t>(rng());
      if (i % 2) {
        const int bias = (1 << (f->expBits - 1)) - 1;
        const int e =
            127 - bias - f->manBits - 2 + static_cast<int>(rng() % static_cast<uint64_t>(2 * bias + f->manBits + 5));
        bits = (bits & 0x807fffffu) | (static_cast<uint32_t>(std::clamp(e, 0, 254)) << 23);
      }
      const float v = floatOf(bits);
      const uint32_t got = implFromFloat(*f, v);
      const uint32_t want = rounder.encode(v);
      if (got != want) bad.add(hex(bits) + " gave " + hex(got) + ", expected " + hex(want));
    }
    EXPECT_EQ(bad.count(), 0) << core::typeName(f->type) << ": " << bad.first();
  }
}

// Hand-checked values: the behaviours CUDA defines that a reference could get wrong in the same way.
TEST(HostReduceConvert, KnownValues) {
  // float16: __float2half_rn overflows to inf at 65520 (the tie above 65504) and drops NaN signs.
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-65520.0f), 0xfc00);
  EXPECT_EQ(floatToHalf(-kInf), 0xfc00);
  EXPECT_EQ(floatToHalf(kNan), 0x7fff);
  EXPECT_EQ(floatToHalf(-kNan), 0x7fff);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);      // tie, even stays
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);             // half the smallest subnormal: to zero
  EXPECT_EQ(floatToHalf(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToHalf(-0x1p-26f), 0x8000);
  EXPECT_EQ(floatToHalf(1023.5f * 0x1p-24f), 0x0400);  // largest subnormal/smallest normal tie
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x7c00), kInf);
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01)));

  // bfloat16: a signalling NaN must not truncate to inf; FLT_MAX rounds up to inf.
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBf16(floatOf(0x7f800001u)), 0x7fff);
  EXPECT_EQ(floatToBf16(floatOf(0xffc00000u)), 0x7fff);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBf16(floatOf(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBf16(floatOf(0x00008000u)), 0x0000);
  EXPECT_EQ(floatToBf16(floatOf(0x00018000u)), 0x0002);
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);

  // E4M3 (cuda_fp8 __NV_SATFINITE): saturates at 448, inf included; one NaN 0x7f.
  EXPECT_EQ(floatToFp8e4m3(1.0f), 0x38);
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(432.0f), 0x7e);  // tie between 416 (odd) and 448 (even)
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(std::nextafter(464.0f, kInf)), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(1e30f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(kInf), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(-kInf), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(-500.0f), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(kNan), 0x7f);
  EXPECT_EQ(floatToFp8e4m3(-kNan), 0x7f);
  EXPECT_EQ(floatToFp8e4m3(0x1p-9f), 0x01);
  EXPECT_EQ(floatToFp8e4m3(0x1p-10f), 0x00);
  EXPECT_EQ(floatToFp8e4m3(std::nextafter(0x1p-10f, 1.0f)), 0x01);
  EXPECT_EQ(floatToFp8e4m3(3 * 0x1p-10f), 0x02);
  EXPECT_EQ(floatToFp8e4m3(-0x1p-10f), 0x80);
  EXPECT_EQ(fp8e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x08), 0x1p-6f);
  EXPECT_EQ(fp8e4m3ToFloat(0x78), 256.0f);  // top exponent is finite in E4M3FN
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0xff)));

  // E5M2 (__NV_SATFINITE): saturates at 57344 from 61440 (the tie that would round up) and for inf.
  EXPECT_EQ(floatToFp8e5m2(1.0f), 0x3c);
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(53248.0f), 0x7a);  // tie between 49152 (even) and 57344
  EXPECT_EQ(floatToFp8e5m2(std::nextafter(61440.0f, 0.0f)), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(kInf), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(-kInf), 0xfb);
  EXPECT_EQ(floatToFp8e5m2(kNan), 0x7f);
  EXPECT_EQ(floatToFp8e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(floatToFp8e5m2(3 * 0x1p-17f), 0x02);
  EXPECT_EQ(fp8e5m2ToFloat(0x7c), kInf);
  EXPECT_EQ(fp8e5m2ToFloat(0xfc), -kInf);
  EXPECT_EQ(fp8e5m2ToFloat(0x01), 0x1p-16f);
  EXPECT_TRUE(std::isnan(fp8e5m2ToFloat(0x7d)));
  EXPECT_TRUE(std::isnan(fp8e5m2ToFloat(0xfe)));
}

// ---- Reductions -------------------------------------------------------------------------------

TEST(HostReduce, EveryTypeAndOpMatchesReference) {
  std::mt19937_64 rng(11);
  for (braidDataType_t t : kAllTypes) {
    // Three full blocks of the kernel and a partial one.
    std::vector<uint64_t> a(1000), b(1000);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = randomElement(t, rng);
      b[i] = randomElement(t, rng);
    }
    for (braidRedOp_t op : kAllOps) checkReduce(t, op, a, b);
  }
}

TEST(HostReduce, Fp8AllPairsMatchReference) {
  std::vector<uint64_t> a(65536), b(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    a[i] = i & 0xff;
    b[i] = i >> 8;
  }
  for (braidDataType_t t : {braidFloat8e4m3, braidFloat8e5m2}) {
    for (braidRedOp_t op : {braidSum, braidProd, braidMax, braidMin}) checkReduce(t, op, a, b);
  }
}

// Sums of values of nearby magnitude and either sign, where rounding and cancellation happen.
TEST(HostReduce, HalfAndBf16NearbyValuesMatchReference) {
  std::mt19937_64 rng(13);
  for (braidDataType_t t : {braidFloat16, braidBfloat16}) {
    const Format& f = *formatOf(t);
    std::vector<uint64_t> a(20000), b(20000);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = rng() & rounderFor(f).maxFinite();
      const uint64_t delta = rng() % (uint64_t{4} << f.manBits);
      b[i] = (a[i] + delta > rounderFor(f).maxFinite() ? a[i] - delta : a[i] + delta) | ((rng() & 1) ? f.signBit() : 0);
    }
    for (braidRedOp_t op : {braidSum, braidProd}) checkReduce(t, op, a, b);
  }
}

template <typename T>
std::vector<T> reduceValues(braidDataType_t t, braidRedOp_t op, std::vector<T> a, const std::vector<T>& b) {
  reduceElems(a.data(), a.data(), b.data(), a.size(), t, op);
  return a;
}

TEST(HostReduce, IntegerSumAndProdWrapAround) {
  EXPECT_EQ(reduceValues<int8_t>(braidInt8, braidSum, {127, -128, -1}, {1, -1, -128}),
            (std::vector<int8_t>{-128, 127, 127}));
  EXPECT_EQ(reduceValues<int8_t>(braidInt8, braidProd, {-128, 16, -3}, {-1, 16, 50}),
            (std::vector<int8_t>{-128, 0, 106}));  // -150 wraps to 106
  EXPECT_EQ(reduceValues<uint8_t>(braidUint8, braidSum, {255, 200}, {1, 100}), (std::vector<uint8_t>{0, 44}));
  EXPECT_EQ(reduceValues<uint8_t>(braidUint8, braidProd, {255, 16}, {255, 16}), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(reduceValues<int32_t>(braidInt32, braidSum, {INT32_MAX, INT32_MIN}, {1, -1}),
            (std::vector<int32_t>{INT32_MIN, INT32_MAX}));
  EXPECT_EQ(reduceValues<int32_t>(braidInt32, braidProd, {65536, INT32_MIN}, {65536, -1}),
            (std::vector<int32_t>{0, INT32_MIN}));
  EXPECT_EQ(reduceValues<uint32_t>(braidUint32, braidSum, {UINT32_MAX}, {2}), (std::vector<uint32_t>{1}));
  EXPECT_EQ(reduceValues<int64_t>(braidInt64, braidSum, {INT64_MIN}, {-1}), (std::vector<int64_t>{INT64_MAX}));
  EXPECT_EQ(reduceValues<int64_t>(braidInt64, braidProd, {INT64_MIN, int64_t{1} << 32}, {-1, int64_t{1} << 32}),
            (std::vector<int64_t>{INT64_MIN, 0}));
  EXPECT_EQ(reduceValues<uint64_t>(braidUint64, braidProd, {UINT64_MAX}, {UINT64_MAX}), (std::vector<uint64_t>{1}));
  EXPECT_EQ(reduceValues<uint64_t>(braidUint64, braidMax, {UINT64_MAX, 0}, {1, 1}),
            (std::vector<uint64_t>{UINT64_MAX, 1}));
  EXPECT_EQ(reduceValues<int64_t>(braidInt64, braidMin, {INT64_MIN, -1}, {INT64_MAX, 0}),
            (std::vector<int64_t>{INT64_MIN, -1}));
}

// NaN-ignoring max/min, and -0 < +0 in either operand order, on every floating type.
TEST(HostReduce, FloatMaxMinIgnoreNanAndOrderSignedZeros) {
  const float as[] = {kNan, 1.0f, kNan, -0.0f, 0.0f, -kInf, -2.0f};
  const float bs[] = {1.0f, kNan, kNan, 0.0f, -0.0f, -1.0f, 3.0f};
  const float wantMax[] = {1.0f, 1.0f, kNan, 0.0f, 0.0f, -1.0f, 3.0f};
  const float wantMin[] = {1.0f, 1.0f, kNan, -0.0f, -0.0f, -kInf, -2.0f};
  for (size_t i = 0; i < std::size(as); ++i) {
    for (bool isMax : {true, false}) {
      const float want = isMax ? wantMax[i] : wantMin[i];
      const braidRedOp_t op = isMax ? braidMax : braidMin;
      SCOPED_TRACE(std::string(isMax ? "max(" : "min(") + std::to_string(as[i]) + ", " + std::to_string(bs[i]) + ")");
      float f = 0;
      reduceElems(&f, &as[i], &bs[i], 1, braidFloat32, op);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(f));
      } else {
        EXPECT_EQ(bitsOf(f), bitsOf(want));
      }
      const double da = as[i], db = bs[i];
      double d = 0;
      reduceElems(&d, &da, &db, 1, braidFloat64, op);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(d));
      } else {
        EXPECT_EQ(bitsOf(d), bitsOf(static_cast<double>(want)));
      }
      for (const Format* fmt : kFormats) {
        const uint64_t x = implFromFloat(*fmt, as[i]), y = implFromFloat(*fmt, bs[i]);
        uint64_t r = 0;
        reduceElems(&r, &x, &y, 1, fmt->type, op);
        EXPECT_EQ(r, implFromFloat(*fmt, want)) << core::typeName(fmt->type);
      }
    }
  }
}

TEST(HostReduce, OverflowSaturatesOrGoesToInfinityByType) {
  auto reduce16 = [](braidDataType_t t, braidRedOp_t op, uint16_t a, uint16_t b) {
    reduceElems(&a, &a, &b, 1, t, op);
    return a;
  };
  auto reduce8 = [](braidDataType_t t, braidRedOp_t op, uint8_t a, uint8_t b) {
    reduceElems(&a, &a, &b, 1, t, op);
    return a;
  };
  EXPECT_EQ(reduce16(braidFloat16, braidSum, 0x7bff, 0x4c00), 0x7c00);  // 65504 + 16: tie, to inf
  EXPECT_EQ(reduce16(braidFloat16, braidSum, 0x7bff, 0x4800), 0x7bff);  // 65504 + 8 stays
  EXPECT_EQ(reduce16(braidFloat16, braidProd, 0xfbff, 0x4000), 0xfc00);
  EXPECT_EQ(reduce16(braidFloat16, braidSum, 0x7c00, 0xfc00), 0x7fff);  // inf - inf
  EXPECT_EQ(reduce16(braidBfloat16, braidSum, 0x7f7f, 0x7f7f), 0x7f80);
  EXPECT_EQ(reduce8(braidFloat8e4m3, braidSum, 0x7e, 0x7e), 0x7e);  // 448 + 448 saturates
  EXPECT_EQ(reduce8(braidFloat8e4m3, braidSum, 0xfe, 0xfe), 0xfe);
  EXPECT_EQ(reduce8(braidFloat8e4m3, braidProd, 0x7e, 0x40), 0x7e);  // 448 * 2
  EXPECT_EQ(reduce8(braidFloat8e4m3, braidSum, 0x7f, 0x38), 0x7f);   // NaN + 1
  EXPECT_EQ(reduce8(braidFloat8e5m2, braidSum, 0x7b, 0x7b), 0x7b);   // 57344 + 57344 saturates
  EXPECT_EQ(reduce8(braidFloat8e5m2, braidSum, 0x7c, 0x3c), 0x7b);   // inf + 1: the inf saturates
  EXPECT_EQ(reduce8(braidFloat8e5m2, braidSum, 0x7c, 0xfc), 0x7f);   // inf - inf
  EXPECT_EQ(reduce8(braidFloat8e5m2, braidMax, 0xfc, 0xfb), 0xfb);
}

TEST(HostReduce, EmptyAndSingleElement) {
  for (braidDataType_t t : kAllTypes) {
    for (braidRedOp_t op : kAllOps) {
      unsigned char dst[8];
      std::memset(dst, 0xa5, sizeof(dst));
      reduceElems(dst, nullptr, nullptr, 0, t, op);
      divideElems(dst, nullptr, 0, t, 3);
      for (unsigned char c : dst) ASSERT_EQ(c, 0xa5) << core::typeName(t) << " wrote with n = 0";
    }
  }
  std::mt19937_64 rng(17);
  for (braidDataType_t t : kAllTypes) {
    for (braidRedOp_t op : kAllOps) checkReduce(t, op, {randomElement(t, rng)}, {randomElement(t, rng)});
    checkDivide(t, 3, {randomElement(t, rng)});
  }
}

// ---- The avg post-division --------------------------------------------------------------------

TEST(HostReduce, IntegerAvgTruncatesTowardZero) {
  auto divide = [](auto values, braidDataType_t t, int divisor) {
    divideElems(values.data(), values.data(), values.size(), t, divisor);
    return values;
  };
  EXPECT_EQ(divide(std::vector<int32_t>{-7, 7, -1, -6, INT32_MIN}, braidInt32, 2),
            (std::vector<int32_t>{-3, 3, 0, -3, INT32_MIN / 2}));
  EXPECT_EQ(divide(std::vector<int8_t>{-128, 127, -5}, braidInt8, 3), (std::vector<int8_t>{-42, 42, -1}));
  EXPECT_EQ(divide(std::vector<int8_t>{-128, 100}, braidInt8, 300), (std::vector<int8_t>{0, 0}));
  EXPECT_EQ(divide(std::vector<uint8_t>{255, 7}, braidUint8, 2), (std::vector<uint8_t>{127, 3}));
  EXPECT_EQ(divide(std::vector<uint64_t>{UINT64_MAX}, braidUint64, 3), (std::vector<uint64_t>{0x5555555555555555}));
  EXPECT_EQ(divide(std::vector<int64_t>{INT64_MIN, -9}, braidInt64, 4), (std::vector<int64_t>{INT64_MIN / 4, -2}));
  // avg = sum, then divide: the wrapped sum is what gets divided.
  std::vector<int8_t> a{100, -100}, b{100, -100};
  reduceElems(a.data(), a.data(), b.data(), a.size(), braidInt8, braidAvg);
  divideElems(a.data(), a.data(), a.size(), braidInt8, 2);
  EXPECT_EQ(a, (std::vector<int8_t>{-28, 28}));  // 200 wraps to -56
}

TEST(HostReduce, FloatAvgDividesInItsOwnType) {
  // A true division, correctly rounded: 5 / 3 is 0x1.aaaaaap+0 where multiplying by the rounded
  // reciprocal 1/3 would give 0x1.aaaaacp+0.
  std::vector<float> f{5.0f, 9.0f, 0x1p-149f};
  divideElems(f.data(), f.data(), 2, braidFloat32, 3);
  divideElems(f.data() + 2, f.data() + 2, 1, braidFloat32, 3);
  EXPECT_EQ(bitsOf(f[0]), bitsOf(0x1.aaaaaap+0f));
  EXPECT_EQ(f[1], 3.0f);
  EXPECT_EQ(f[2], 0.0f);  // the smallest subnormal / 3 rounds to zero
  std::vector<float> g{9.0f};
  divideElems(g.data(), g.data(), 1, braidFloat32, 10);
  EXPECT_EQ(bitsOf(g[0]), bitsOf(0x1.ccccccp-1f));  // 9 * 0.1f would be 0x1.cccccep-1
  std::vector<double> d{1.0, 10.0};
  divideElems(d.data(), d.data(), d.size(), braidFloat64, 3);
  EXPECT_EQ(d[0], 1.0 / 3.0);
  EXPECT_EQ(d[1], 10.0 / 3.0);
  // Narrow types divide in float and round once: 1/3 in half is 0x3555.
  uint16_t h = 0x3c00;
  divideElems(&h, &h, 1, braidFloat16, 3);
  EXPECT_EQ(h, 0x3555);
}

TEST(HostReduce, DivideMatchesReference) {
  std::mt19937_64 rng(19);
  for (braidDataType_t t : kAllTypes) {
    std::vector<uint64_t> x(300);
    for (uint64_t& v : x) v = randomElement(t, rng);
    for (int divisor : {1, 2, 3, 7, 8, 255, 256, 1000}) checkDivide(t, divisor, x);
  }
}

TEST(HostReduce, NarrowDivideEveryPattern) {
  for (const Format* f : kFormats) {
    std::vector<uint64_t> x(size_t{1} << f->width());
    for (size_t i = 0; i < x.size(); ++i) x[i] = i;
    for (int divisor : {2, 3, 7}) checkDivide(f->type, divisor, x);
  }
}

// Not a check of speed (shared CI machines vary); prints throughput for the record and checks
// that the large buffers were reduced.
TEST(HostReduce, ThroughputReport) {
  constexpr size_t kBytes = 4 << 20;
  for (braidDataType_t t : {braidFloat32, braidBfloat16, braidFloat16}) {
    const size_t n = kBytes / core::typeSize(t);
    std::vector<unsigned char> a(kBytes), b(kBytes), d(kBytes);
    std::mt19937_64 rng(23);
    for (size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 64.0f;
      const uint32_t bits = t == braidFloat32 ? bitsOf(v) : implFromFloat(*formatOf(t), v);
      std::memcpy(a.data() + i * core::typeSize(t), &bits, core::typeSize(t));
      std::memcpy(b.data() + i * core::typeSize(t), &bits, core::typeSize(t));
    }
    constexpr int kReps = 8;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < kReps; ++r) reduceElems(d.data(), a.data(), b.data(), n, t, braidSum);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ info     ] %s sum: %.2f GB/s of input (a + b), %.2f G elements/s\n", core::typeName(t),
                2.0 * kBytes * kReps / seconds / 1e9, static_cast<double>(n) * kReps / seconds / 1e9);
    const size_t last = n - 1;
    EXPECT_TRUE(matches(t,
                        refReduce(t, braidSum, loadElem(a.data(), last, core::typeSize(t)),
                                  loadElem(b.data(), last, core::typeSize(t))),
                        loadElem(d.data(), last, core::typeSize(t))));
  }
}

}  // namespace
}  // namespace braid::exec
