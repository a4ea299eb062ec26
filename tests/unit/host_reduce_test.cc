// The host executor's element-wise arithmetic against an independent reference: narrow values are
// decoded from their format definitions into double, combined in double (exact for sum and
// product of narrow values, correctly rounded otherwise), and rounded back by searching the sorted
// list of every representable value, so no bit trick is shared with the code under test. Literal
// cases pin the CUDA-compatible choices (saturation, NaN, signed zero) independently of both.
#include <gtest/gtest.h>

#include "host_reduce_reference.h"

namespace braid::exec {
namespace {
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

namespace braid::exec {
namespace {

// The element <-> double helpers that checks and tools use: every type, unaligned, integers wrap.
TEST(HostReduceElements, RoundTripAndWrap) {
  unsigned char buf[9] = {0};
  for (braidDataType_t t : kAllTypes) {
    for (double v : {0.0, 1.0, -2.0, 7.0}) {
      bool isUnsigned = t == braidUint8 || t == braidUint32 || t == braidUint64;
      if (isUnsigned && v < 0) continue;
      elementFromDouble(v, buf + 1, t);
      EXPECT_EQ(elementToDouble(buf + 1, t), v) << core::typeName(t);
    }
  }
  elementFromDouble(300, buf + 1, braidUint8);
  EXPECT_EQ(elementToDouble(buf + 1, braidUint8), 44);  // 300 mod 256
  elementFromDouble(-1, buf + 1, braidUint32);
  EXPECT_EQ(elementToDouble(buf + 1, braidUint32), 4294967295.0);
  elementFromDouble(-2.7, buf + 1, braidInt32);
  EXPECT_EQ(elementToDouble(buf + 1, braidInt32), -2);  // truncated toward zero
  elementFromDouble(1000, buf + 1, braidFloat8e4m3);
  EXPECT_EQ(elementToDouble(buf + 1, braidFloat8e4m3), 448);  // saturates
}

}  // namespace
}  // namespace braid::exec
