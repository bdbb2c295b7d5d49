// Stochastic rounding of fp32 to the narrow float types (from_fp32_stochastic): the
// result is one of the two neighbours, the expected value is the input (checked
// against bounds from the sample size), equal streams repeat and other streams differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "models/isa/dtype.h"

namespace trnsim::isa {
namespace {

std::vector<float> round_all(DType t, const std::vector<float>& x, uint64_t stream) {
  std::vector<uint8_t> raw(x.size() * dtype_size(t));
  from_fp32_stochastic(t, x.data(), raw.data(), x.size(), stream);
  std::vector<float> out(x.size());
  to_fp32(t, raw.data(), out.data(), x.size());
  return out;
}

// The code above `v` (a positive value of the type) decoded.
float next_up(DType t, float v) {
  std::vector<uint8_t> raw(dtype_size(t));
  from_fp32(t, &v, raw.data(), 1);
  if (dtype_size(t) == 2) {
    uint16_t c;
    std::memcpy(&c, raw.data(), 2);
    ++c;
    std::memcpy(raw.data(), &c, 2);
  } else {
    ++raw[0];
  }
  float out;
  to_fp32(t, raw.data(), &out, 1);
  return out;
}

const DType kNarrow[] = {DType::bf16, DType::fp16, DType::fp8e4m3, DType::fp8e5m2};

// x = lo + f * (hi - lo) between neighbours lo, hi rounds to hi in a fraction f of
// the draws. Each draw is Bernoulli(f), so the count of hi over n draws has standard
// deviation sqrt(n f (1 - f)); 6 of them bound it (a false failure ~1e-9).
TEST(StochasticRounding, UpWithTheDroppedFraction) {
  constexpr size_t n = 200000;
  for (DType t : kNarrow)
    for (float lo : {1.0f, 1.5f, 3.0f})
      for (double f : {0.1, 0.25, 0.7}) {
        const float hi = next_up(t, lo);
        const float x = static_cast<float>(lo + f * (hi - lo));
        const double frac = (double(x) - lo) / (double(hi) - lo);  // x as fp32 holds it
        for (float sgn : {1.0f, -1.0f}) {
          const std::vector<float> r = round_all(t, std::vector<float>(n, sgn * x), 7);
          size_t up = 0;
          for (float v : r) {
            ASSERT_TRUE(v == sgn * lo || v == sgn * hi)
                << dtype_name(t) << " " << x << " -> " << v << " not " << lo << " or " << hi;
            up += v == sgn * hi;
          }
          const double sigma = std::sqrt(n * frac * (1 - frac));
          EXPECT_NEAR(double(up), n * frac, 6 * sigma)
              << dtype_name(t) << " x=" << sgn * x << " between " << lo << " and " << hi;
        }
      }
}

// Random values: the mean of the rounded values is the exact mean. The errors are
// independent with mean 0 and |e_i| < ulp_i, so variance <= ulp_i^2 / 4; the mean's
// error has standard deviation <= sqrt(sum ulp_i^2 / 4) / n, bounded by 6 of them.
// Round-to-nearest-even of the same values lies outside that bound (its bias on
// values just above a power of two is what stochastic rounding removes).
TEST(StochasticRounding, MeanOfManyValuesIsTheExactMean) {
  constexpr size_t n = 1000000;
  std::mt19937 gen(123);
  // Just above 1: round to nearest always rounds down for fractions below one half.
  std::uniform_real_distribution<float> d(1.0f, 1.0f + 1.0f / 256);  // within one bf16 ulp
  std::vector<float> x(n);
  for (float& v : x) v = d(gen);
  const std::vector<float> r = round_all(DType::bf16, x, 99);
  double exact = 0, sr = 0, rne = 0, var = 0;
  for (size_t i = 0; i < n; ++i) {
    exact += x[i];
    sr += r[i];
    rne += round_to(DType::bf16, x[i]);
    const double ulp = 1.0 / 128;  // bf16 spacing in [1, 2): 2^-7
    ASSERT_LT(std::fabs(double(r[i]) - x[i]), ulp) << x[i] << " -> " << r[i];
    var += ulp * ulp / 4;
  }
  const double bound = 6 * std::sqrt(var) / n;
  EXPECT_NEAR(sr / n, exact / n, bound);
  EXPECT_GT(std::fabs(rne / n - exact / n), bound) << "round to nearest is as unbiased here";
}

TEST(StochasticRounding, SameStreamSameBitsOtherStreamOther) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  std::vector<float> x(4096);
  for (float& v : x) v = d(gen);
  for (DType t : kNarrow) {
    std::vector<uint8_t> a(x.size() * dtype_size(t)), b(a.size()), c(a.size());
    from_fp32_stochastic(t, x.data(), a.data(), x.size(), 1);
    from_fp32_stochastic(t, x.data(), b.data(), x.size(), 1);
    from_fp32_stochastic(t, x.data(), c.data(), x.size(), 2);
    EXPECT_EQ(a, b) << dtype_name(t);
    EXPECT_NE(a, c) << dtype_name(t);
    // Element i's bits do not depend on the elements before it.
    std::vector<uint8_t> tail(a.size() - 100 * dtype_size(t));
    from_fp32_stochastic(t, x.data() + 100, tail.data(), x.size() - 100, 1);
    EXPECT_NE(std::vector<uint8_t>(a.begin() + 100 * dtype_size(t), a.end()), tail)
        << "bits are keyed by index within one call";
  }
}

TEST(StochasticRounding, ExactValuesAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, -0.0f, 1.0f, -2.0f, 0.5f, inf, -inf};
  for (DType t : kNarrow) {
    const std::vector<float> r = round_all(t, x, 3);
    for (size_t i = 0; i < x.size(); ++i) {
      if (t == DType::fp8e4m3 && std::isinf(x[i])) {
        EXPECT_EQ(r[i], std::copysign(448.0f, x[i]));  // e4m3fn saturates
        continue;
      }
      EXPECT_EQ(r[i], x[i]) << dtype_name(t);
      EXPECT_EQ(std::signbit(r[i]), std::signbit(x[i])) << dtype_name(t);
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(round_all(t, {nan}, 3)[0])) << dtype_name(t);
  }
  // Integer and fp32 targets are not rounded stochastically.
  const std::vector<float> y = {1.25f, 2.5f};
  EXPECT_EQ(round_all(DType::fp32, y, 3), y);
  EXPECT_EQ(round_all(DType::int32, y, 3), (std::vector<float>{1.0f, 2.0f}));
}

}  // namespace
}  // namespace trnsim::isa
