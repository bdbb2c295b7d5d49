// The PE's arithmetic units alone (models/rtl/fp32_add.sv, bf16_mul.sv through the
// fp_units test top) against the C++ systolic numerics, on edge cases and randomly.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "Vfp_units.h"
#include "models/cosim/systolic_reference.h"
#include "verilated.h"

namespace trnsim::cosim {
namespace {

class FpUnits : public ::testing::Test {
 protected:
  uint32_t add(uint32_t a, uint32_t b) {
    m_.add_a = a;
    m_.add_b = b;
    m_.eval();
    return m_.add_y;
  }
  uint32_t mul(uint16_t a, uint16_t b) {
    m_.mul_a = a;
    m_.mul_b = b;
    m_.eval();
    return m_.mul_y;
  }
  VerilatedContext ctx_;
  Vfp_units m_{&ctx_};
};

uint32_t f32(float f) {
  return std::bit_cast<uint32_t>(f);
}

// Values that exercise the special cases: zeros, denormals, the normal extremes,
// infinities, NaNs, and ones around rounding ties.
const uint32_t kEdges32[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000,
                             0x00800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
                             0xFFC00001, 0x7F800001, 0x3F800000, 0xBF800000, 0x3F800001, 0xBF7FFFFF,
                             0x33800000, 0x33800001, 0xB3800000, 0x34000000, 0x4B800000, 0x4B7FFFFF,
                             0x01000000, 0x81000001, 0x00FFFFFF};

TEST_F(FpUnits, AddSpecialValues) {
  // Every pair of edge values, both orders.
  for (uint32_t a : kEdges32)
    for (uint32_t b : kEdges32) ASSERT_EQ(add(a, b), pe_add(a, b)) << std::hex << a << " + " << b;
  // The documented rules, spelled out.
  EXPECT_EQ(add(f32(1.0f), f32(-1.0f)), 0x00000000u);     // exact cancellation: +0
  EXPECT_EQ(add(0x80000000, 0x80000000), 0x80000000u);    // -0 + -0 = -0
  EXPECT_EQ(add(0x00000001, f32(1.0f)), f32(1.0f));       // denormal input counts as 0
  EXPECT_EQ(add(0x7F800000, 0xFF800000), kCanonicalNan);  // inf - inf
  EXPECT_EQ(add(0xFFC00001, f32(1.0f)), kCanonicalNan);   // NaN payload not kept
  // 2^-126 (1 + 2^-23) - 2^-126 = 2^-149: a denormal result flushes to +0.
  EXPECT_EQ(add(0x00800001, 0x80800000), 0x00000000u);
  EXPECT_EQ(add(0x7F7FFFFF, 0x7F7FFFFF), 0x7F800000u);  // overflow: inf
  // Ties to even: 1 + 2^-24 stays 1; (1 + 2^-23) + 2^-24 rounds up to 1 + 2^-22.
  EXPECT_EQ(add(f32(1.0f), 0x33800000), f32(1.0f));
  EXPECT_EQ(add(0x3F800001, 0x33800000), 0x3F800002u);
}

TEST_F(FpUnits, AddRandomAgainstReference) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    // Bias most pairs to nearby exponents, where cancellation and rounding happen.
    if (i % 4 != 0) b = (b & 0x807FFFFFu) | (((a >> 23) & 0xFF) + (rng() % 31) - 15) % 256 << 23;
    ASSERT_EQ(add(a, b), pe_add(a, b)) << std::hex << a << " + " << b;
  }
}

TEST_F(FpUnits, MulExhaustiveOnMantissas) {
  // Every mantissa pair at a few exponent pairs covering normal, overflow and
  // underflow (2^-126 boundary) products; both signs.
  const std::pair<uint32_t, uint32_t> exps[] = {{127, 127}, {1, 126},  {1, 125}, {254, 128},
                                                {254, 127}, {200, 60}, {64, 63}, {0, 127},
                                                {255, 127}, {255, 0}};
  for (auto [ea, eb] : exps)
    for (uint32_t ma = 0; ma < 128; ++ma)
      for (uint32_t mb = 0; mb < 128; ++mb)
        for (uint32_t s = 0; s < 4; ++s) {
          const uint16_t a = static_cast<uint16_t>((s & 1) << 15 | ea << 7 | ma);
          const uint16_t b = static_cast<uint16_t>((s >> 1) << 15 | eb << 7 | mb);
          ASSERT_EQ(mul(a, b), pe_mul(a, b)) << std::hex << a << " * " << b;
        }
}

TEST_F(FpUnits, MulProductIsExactAndSpecialsDocumented) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200'000; ++i) {
    const uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng());
    ASSERT_EQ(mul(a, b), pe_mul(a, b)) << std::hex << a << " * " << b;
  }
  // 1.5 x 1.5 = 2.25 exactly (bf16 0x3FC0 = 1.5).
  EXPECT_EQ(mul(0x3FC0, 0x3FC0), f32(2.25f));
  EXPECT_EQ(mul(0x7F80, 0x0000), kCanonicalNan);  // inf x 0
  EXPECT_EQ(mul(0x7F80, 0x0001), kCanonicalNan);  // inf x denormal (= 0)
  EXPECT_EQ(mul(0x8000, 0x3F80), 0x80000000u);    // -0 x 1 = -0
  EXPECT_EQ(mul(0x0080, 0x3F00), 0x00000000u);    // 2^-126 x 0.5: flushed
  EXPECT_EQ(mul(0x7F00, 0x4000), 0x7F800000u);    // 2^127 x 2: inf
}

}  // namespace
}  // namespace trnsim::cosim
