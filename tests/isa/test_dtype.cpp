// Conversions between fp32 and the narrow ISA types: exhaustive round trips, decoded
// values checked against an independent formula, ties-to-even at every halfway
// point, subnormals, overflow, signed zeros and NaN handling.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "models/isa/dtype.h"

namespace trnsim::isa {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

// A narrow float format under test, with its reference decoder.
struct Format {
  const char* name;
  int ebits, mbits;
  bool ieee;  // all-ones exponent = inf/NaN (else e4m3fn: only S.1111.111 is NaN)
  uint32_t ncodes;
  std::function<uint32_t(float)> encode;
  std::function<float(uint32_t)> decode;
  DType dtype;

  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
  uint32_t quiet_bit() const { return 1u << (mbits - 1); }
  bool is_nan_code(uint32_t c) const {
    const uint32_t a = c & (sign_bit() - 1);
    const uint32_t exp_ones = ((1u << ebits) - 1) << mbits;
    if (ieee) return (a & exp_ones) == exp_ones && (a & ((1u << mbits) - 1)) != 0;
    return a == (exp_ones | ((1u << mbits) - 1));
  }
  // Value of a non-NaN code from the definition (sign, biased exponent, fraction).
  double reference(uint32_t c) const {
    const int bias = (1 << (ebits - 1)) - 1;
    const double s = (c & sign_bit()) ? -1.0 : 1.0;
    const int e = static_cast<int>((c >> mbits) & ((1u << ebits) - 1));
    const double m = c & ((1u << mbits) - 1);
    if (ieee && e == (1 << ebits) - 1) return s * std::numeric_limits<double>::infinity();
    if (e == 0) return s * std::ldexp(m, 1 - bias - mbits);
    return s * std::ldexp(1.0 + m / (1 << mbits), e - bias);
  }
};

std::vector<Format> formats() {
  return {
      {"bf16", 8, 7, true, 1u << 16, [](float f) { return uint32_t(fp32_to_bf16(f)); },
       [](uint32_t c) { return bf16_to_fp32(uint16_t(c)); }, DType::bf16},
      {"fp16", 5, 10, true, 1u << 16, [](float f) { return uint32_t(fp32_to_fp16(f)); },
       [](uint32_t c) { return fp16_to_fp32(uint16_t(c)); }, DType::fp16},
      {"fp8e4m3", 4, 3, false, 256, [](float f) { return uint32_t(fp32_to_fp8e4m3(f)); },
       [](uint32_t c) { return fp8e4m3_to_fp32(uint8_t(c)); }, DType::fp8e4m3},
      {"fp8e5m2", 5, 2, true, 256, [](float f) { return uint32_t(fp32_to_fp8e5m2(f)); },
       [](uint32_t c) { return fp8e5m2_to_fp32(uint8_t(c)); }, DType::fp8e5m2},
  };
}

TEST(DTypeNames, SizesNamesAndParse) {
  EXPECT_EQ(dtype_size(DType::fp32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::fp8e5m2), 1u);
  EXPECT_EQ(dtype_size(DType::int32), 4u);
  EXPECT_EQ(dtype_size(DType::uint8), 1u);
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_FALSE(parse_dtype("fp64").has_value());
  EXPECT_TRUE(is_fp8(DType::fp8e4m3));
  EXPECT_FALSE(is_float(DType::int32));
}

// Every code decodes to the value its fields define, and encodes back to itself;
// NaNs stay NaN with their sign, coming back quiet (only the quiet bit may change).
TEST(DTypeRoundTrip, EveryCodeOfEveryFormat) {
  for (const Format& fmt : formats()) {
    SCOPED_TRACE(fmt.name);
    int nans = 0;
    for (uint32_t c = 0; c < fmt.ncodes; ++c) {
      const float f = fmt.decode(c);
      const uint32_t back = fmt.encode(f);
      if (fmt.is_nan_code(c)) {
        ++nans;
        ASSERT_TRUE(std::isnan(f)) << std::hex << c;
        ASSERT_EQ(std::signbit(f), (c & fmt.sign_bit()) != 0) << std::hex << c;
        ASSERT_TRUE(fmt.is_nan_code(back)) << std::hex << c << " -> " << back;
        const uint32_t expect = fmt.ieee ? (c | fmt.quiet_bit()) : c;
        ASSERT_EQ(back, expect) << std::hex << c;
        continue;
      }
      ASSERT_EQ(static_cast<double>(f), fmt.reference(c)) << std::hex << c;
      ASSERT_EQ(std::signbit(f), (c & fmt.sign_bit()) != 0) << std::hex << c;
      ASSERT_EQ(back, c) << std::hex << c;
    }
    // NaN codes: IEEE formats have 2*(2^M - 1), e4m3fn exactly two (0x7F, 0xFF).
    const int expect_nans = fmt.ieee ? 2 * ((1 << fmt.mbits) - 1) : 2;
    EXPECT_EQ(nans, expect_nans);
  }
}

// The bulk converters agree with the scalar ones on every code, also through
// unaligned buffers (they must use memcpy, not pointer casts).
TEST(DTypeRoundTrip, BulkMatchesScalarUnaligned) {
  for (const Format& fmt : formats()) {
    SCOPED_TRACE(fmt.name);
    const size_t es = dtype_size(fmt.dtype);
    std::vector<unsigned char> raw(fmt.ncodes * es + 1);
    for (uint32_t c = 0; c < fmt.ncodes; ++c) std::memcpy(&raw[1 + c * es], &c, es);  // LE
    std::vector<float> wide(fmt.ncodes);
    to_fp32(fmt.dtype, raw.data() + 1, wide.data(), fmt.ncodes);
    std::vector<unsigned char> narrow(fmt.ncodes * es + 1);
    from_fp32(fmt.dtype, wide.data(), narrow.data() + 1, fmt.ncodes);
    for (uint32_t c = 0; c < fmt.ncodes; ++c) {
      ASSERT_EQ(bits(wide[c]), bits(fmt.decode(c))) << std::hex << c;
      uint32_t back = 0;
      std::memcpy(&back, &narrow[1 + c * es], es);
      ASSERT_EQ(back, fmt.encode(wide[c])) << std::hex << c;
    }
  }
}

// For every pair of adjacent finite codes (same sign): the exact midpoint rounds to
// the code with an even mantissa, one fp32 ulp either side rounds to the nearer code.
// Covers subnormals (including the midpoint between 0 and the smallest subnormal)
// and the normal/subnormal boundary.
TEST(DTypeRounding, TiesToEvenAtEveryHalfway) {
  for (const Format& fmt : formats()) {
    SCOPED_TRACE(fmt.name);
    const uint32_t sign = fmt.sign_bit();
    int checked = 0;
    for (uint32_t c = 0; c + 1 < sign; ++c) {
      const uint32_t hi_code = c + 1;
      if (fmt.is_nan_code(hi_code) || fmt.is_nan_code(c)) continue;
      const double lo = fmt.reference(c), hi = fmt.reference(hi_code);
      if (std::isinf(hi)) continue;  // overflow is checked separately
      // Midpoints need one more significand bit than the format: exact in fp32.
      const float mid = static_cast<float>((lo + hi) / 2);
      ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
      const uint32_t even = (c & 1) ? hi_code : c;
      for (uint32_t s : {0u, sign}) {
        const float m = s ? -mid : mid;
        ASSERT_EQ(fmt.encode(m), even | s) << std::hex << c << " sign " << s;
        ASSERT_EQ(fmt.encode(std::nextafter(m, 0.0f)), c | s) << std::hex << c;
        ASSERT_EQ(fmt.encode(std::nextafter(m, s ? -kInf : kInf)), hi_code | s) << std::hex << c;
      }
      ++checked;
    }
    EXPECT_GT(checked, 100);
  }
}

TEST(DTypeRounding, SpotValues) {
  // bf16 keeps 8 significand bits: 1 + 2^-8 is halfway between 1 and 1+2^-7, and
  // 1.0 (0x3F80) has the even mantissa.
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3F82);  // odd 0x3F81 rounds up
  // fp16 smallest subnormal 2^-24 = 0x0001; half of it ties to 0, just above to 1.
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(1.5f * 0x1p-24f), 0x0002);  // 1.5 ulp ties to even 2
  // Largest subnormal 1023*2^-24 plus half an ulp rounds up to the smallest normal.
  EXPECT_EQ(fp32_to_fp16(1023.5f * 0x1p-24f), 0x0400);
  EXPECT_EQ(fp16_to_fp32(0x0400), 0x1p-14f);
  // e4m3: 2^-9 is the smallest subnormal (0x01); 2^-6 the smallest normal (0x08).
  EXPECT_EQ(fp32_to_fp8e4m3(0x1p-9f), 0x01);
  EXPECT_EQ(fp32_to_fp8e4m3(0x1p-10f), 0x00);
  EXPECT_EQ(fp32_to_fp8e4m3(0x1p-6f), 0x08);
  EXPECT_EQ(fp8e4m3_to_fp32(0x38), 1.0f);  // exponent 7 = bias
  // e5m2: 2^-16 smallest subnormal, 1.0 = 0x3C, 1.25 = 0x3D; 1.125 ties to 1.0.
  EXPECT_EQ(fp32_to_fp8e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(fp32_to_fp8e5m2(1.0f), 0x3C);
  EXPECT_EQ(fp32_to_fp8e5m2(1.125f), 0x3C);
  EXPECT_EQ(fp32_to_fp8e5m2(1.375f), 0x3E);  // between 1.25 (odd) and 1.5: even 1.5
  // fp32 subnormals are far below every format's range: signed zero.
  EXPECT_EQ(fp32_to_fp16(from_bits(0x00000001)), 0x0000);
  EXPECT_EQ(fp32_to_fp8e4m3(from_bits(0x80000001)), 0x80);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00000001)), 0x0000);  // bf16 keeps 7 of 23 bits
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00008000)), 0x0000);  // ties to even 0
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00018000)), 0x0002);  // ties to even 2
}

TEST(DTypeOverflow, MaxFiniteAndBeyond) {
  // bf16 max 0x7F7F = (2 - 2^-7) * 2^127 = 3.3895314e38.
  EXPECT_EQ(bf16_to_fp32(0x7F7F), 3.3895314e38f);
  EXPECT_EQ(fp32_to_bf16(3.3895314e38f), 0x7F7F);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7F7F7FFF)), 0x7F7F);
  // Halfway to 2^128 ties to even: 0x7F7F is odd, so it rounds up to inf.
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7F7F8000)), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(-kInf), 0xFF80);

  // fp16 max 65504 = (2 - 2^-10) * 2^15; halfway to 65536 is 65520 -> inf.
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e6f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(kInf), 0x7C00);

  // e4m3fn max 448 = 1.75 * 2^8 (0x7E); everything beyond, and inf, saturates.
  EXPECT_EQ(fp8e4m3_to_fp32(0x7E), 448.0f);
  EXPECT_EQ(fp32_to_fp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(fp32_to_fp8e4m3(464.0f), 0x7E);  // halfway to 480: ties to even 448
  EXPECT_EQ(fp32_to_fp8e4m3(470.0f), 0x7E);  // would round to 480 (the NaN code)
  EXPECT_EQ(fp32_to_fp8e4m3(1e30f), 0x7E);
  EXPECT_EQ(fp32_to_fp8e4m3(kInf), 0x7E);
  EXPECT_EQ(fp32_to_fp8e4m3(-kInf), 0xFE);
  EXPECT_EQ(fp32_to_fp8e4m3(-std::numeric_limits<float>::max()), 0xFE);
  EXPECT_EQ(round_to(DType::fp8e4m3, -1000.0f), -448.0f);

  // e5m2 max 57344 = 1.75 * 2^15 (0x7B); halfway to 65536 is 61440 -> inf.
  EXPECT_EQ(fp8e5m2_to_fp32(0x7B), 57344.0f);
  EXPECT_EQ(fp32_to_fp8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(fp32_to_fp8e5m2(std::nextafter(61440.0f, 0.0f)), 0x7B);
  EXPECT_EQ(fp32_to_fp8e5m2(61440.0f), 0x7C);
  EXPECT_EQ(fp32_to_fp8e5m2(-1e30f), 0xFC);
  EXPECT_EQ(fp8e5m2_to_fp32(0x7C), kInf);
}

TEST(DTypeSpecial, SignedZero) {
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp8e4m3(-0.0f), 0x80);
  EXPECT_EQ(fp32_to_fp8e5m2(-0.0f), 0x80);
  EXPECT_EQ(fp32_to_fp16(-1e-30f), 0x8000);  // underflow keeps the sign
  for (DType t : {DType::bf16, DType::fp16, DType::fp8e4m3, DType::fp8e5m2}) {
    EXPECT_EQ(bits(round_to(t, -0.0f)), 0x80000000u) << dtype_name(t);
    EXPECT_EQ(bits(round_to(t, 0.0f)), 0u) << dtype_name(t);
  }
}

TEST(DTypeSpecial, NaNNeverBecomesInf) {
  // A signalling NaN whose payload sits only in bits a truncation would drop.
  const float snan = from_bits(0x7F800001);
  const float neg_qnan = from_bits(0xFFC00000);
  EXPECT_EQ(fp32_to_bf16(snan), 0x7FC0);
  EXPECT_EQ(fp32_to_fp16(snan), 0x7E00);
  EXPECT_EQ(fp32_to_fp8e4m3(snan), 0x7F);
  EXPECT_EQ(fp32_to_fp8e5m2(snan), 0x7E);
  EXPECT_EQ(fp32_to_bf16(neg_qnan), 0xFFC0);
  EXPECT_EQ(fp32_to_fp16(neg_qnan), 0xFE00);
  EXPECT_EQ(fp32_to_fp8e4m3(neg_qnan), 0xFF);
  EXPECT_EQ(fp32_to_fp8e5m2(neg_qnan), 0xFE);
  // Top payload bits survive (fp16 keeps 10 of fp32's 23 mantissa bits).
  EXPECT_EQ(fp32_to_fp16(from_bits(0x7FC02000)), 0x7E01);
  EXPECT_EQ(bits(fp16_to_fp32(0x7E01)), 0x7FC02000u);
  for (DType t : {DType::bf16, DType::fp16, DType::fp8e4m3, DType::fp8e5m2})
    EXPECT_TRUE(std::isnan(round_to(t, kNaN))) << dtype_name(t);
  EXPECT_TRUE(std::isnan(fp8e4m3_to_fp32(0x7F)));
  EXPECT_TRUE(std::isnan(fp8e5m2_to_fp32(0x7D)));  // signalling code decodes to NaN too
}

TEST(DTypeInt, Int32RoundsToEvenAndSaturates) {
  auto cvt = [](float f) {
    int32_t v;
    from_fp32(DType::int32, &f, &v, 1);
    return v;
  };
  EXPECT_EQ(cvt(2.5f), 2);
  EXPECT_EQ(cvt(3.5f), 4);
  EXPECT_EQ(cvt(-2.5f), -2);
  EXPECT_EQ(cvt(-0.5f), 0);
  EXPECT_EQ(cvt(2.4999998f), 2);
  EXPECT_EQ(cvt(-7.6f), -8);
  EXPECT_EQ(cvt(2147483520.0f), 2147483520);  // largest float below 2^31
  EXPECT_EQ(cvt(2147483648.0f), INT32_MAX);
  EXPECT_EQ(cvt(-2147483648.0f), INT32_MIN);  // -2^31 is exact
  EXPECT_EQ(cvt(1e20f), INT32_MAX);
  EXPECT_EQ(cvt(-1e20f), INT32_MIN);
  EXPECT_EQ(cvt(kInf), INT32_MAX);
  EXPECT_EQ(cvt(-kInf), INT32_MIN);
  EXPECT_EQ(cvt(kNaN), 0);
  const int32_t in[3] = {-5, 16777217, INT32_MAX};
  float out[3];
  to_fp32(DType::int32, in, out, 3);
  EXPECT_EQ(out[0], -5.0f);
  EXPECT_EQ(out[1], 16777216.0f);  // 2^24+1 ties to even 2^24
  EXPECT_EQ(out[2], 2147483648.0f);
  EXPECT_EQ(round_to(DType::int32, 6.5f), 6.0f);
}

TEST(DTypeInt, Uint8RoundsToEvenAndSaturates) {
  auto cvt = [](float f) {
    uint8_t v;
    from_fp32(DType::uint8, &f, &v, 1);
    return int(v);
  };
  EXPECT_EQ(cvt(0.5f), 0);
  EXPECT_EQ(cvt(1.5f), 2);
  EXPECT_EQ(cvt(2.5f), 2);
  EXPECT_EQ(cvt(254.5f), 254);
  EXPECT_EQ(cvt(255.5f), 255);
  EXPECT_EQ(cvt(300.0f), 255);
  EXPECT_EQ(cvt(-3.0f), 0);
  EXPECT_EQ(cvt(-kInf), 0);
  EXPECT_EQ(cvt(kInf), 255);
  EXPECT_EQ(cvt(kNaN), 0);
  const uint8_t in[2] = {0, 255};
  float out[2];
  to_fp32(DType::uint8, in, out, 2);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 255.0f);
  EXPECT_EQ(round_to(DType::uint8, 77.5f), 78.0f);
}

TEST(DTypeBulk, RandomValuesEveryType) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-600.0f, 600.0f);
  std::vector<float> src(1003);  // odd length: exercises vector-loop tails
  for (auto& x : src) x = dist(rng);
  src[0] = kNaN, src[1] = -0.0f, src[2] = kInf, src[3] = 1e-30f;
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    SCOPED_TRACE(dtype_name(t));
    std::vector<unsigned char> buf(src.size() * dtype_size(t));
    from_fp32(t, src.data(), buf.data(), src.size());
    std::vector<float> back(src.size());
    to_fp32(t, buf.data(), back.data(), src.size());
    for (size_t k = 0; k < src.size(); ++k) {
      const float expect = round_to(t, src[k]);
      if (std::isnan(expect))
        ASSERT_TRUE(std::isnan(back[k])) << k;
      else
        ASSERT_EQ(bits(back[k]), bits(expect)) << k << " " << src[k];
    }
  }
  // round_to agrees with the scalar pair for the float formats, e.g. 0.1 in bf16:
  // 0.1 = 0x3DCCCCCD, truncated 0x3DCC, dropped bits 0xCCCD > half -> 0x3DCD.
  EXPECT_EQ(bits(round_to(DType::bf16, 0.1f)), 0x3DCD0000u);
  EXPECT_EQ(round_to(DType::fp32, 0.1f), 0.1f);
}

}  // namespace
}  // namespace trnsim::isa
