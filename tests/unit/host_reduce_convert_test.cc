// Conversions of the narrow float formats (fp16, bf16, fp8 e4m3/e5m2) against the reference of
// host_reduce_reference.h: every bit pattern, every rounding tie, and literal CUDA-compatible cases.
#include <gtest/gtest.h>

#include "host_reduce_reference.h"

namespace braid::exec {
namespace {
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

}  // namespace
}  // namespace braid::exec
