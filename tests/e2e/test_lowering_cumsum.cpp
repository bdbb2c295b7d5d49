// CumSum on the device (compiler/lower/cumsum.cpp), run on the simulated
// `tiny` chip against references written here from the ONNX definitions, not the
// interpreter. One Device per test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// CumSum by its definition: y[.., j, ..] = sum of x[.., i, ..] over i <= j (i < j
// exclusive; i >= j / i > j reverse).
std::vector<float> cumsum_ref(const std::vector<float>& x, const ir::Shape& s, int64_t axis,
                              bool exclusive, bool reverse) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[axis];
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t j = 0; j < len; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < len; ++t) {
          const bool in = reverse ? (exclusive ? t > j : t >= j) : (exclusive ? t < j : t <= j);
          if (in) acc += x[static_cast<size_t>((o * len + t) * inner + i)];
        }
        y[static_cast<size_t>((o * len + j) * inner + i)] = static_cast<float>(acc);
      }
  return y;
}

void check_cumsum(const ir::Shape& s, int64_t axis, bool exclusive, bool reverse) {
  const std::vector<float> x = random_tensor(s, 11).floats();
  const int64_t rank = static_cast<int64_t>(s.size());
  check_single_node("CumSum", s,
                    {{"axis", ir::Attribute(axis)},
                     {"exclusive", ir::Attribute(int64_t{exclusive})},
                     {"reverse", ir::Attribute(int64_t{reverse})}},
                    x, cumsum_ref(x, s, axis < 0 ? axis + rank : axis, exclusive, reverse), 1e-5);
}

// 150 rows (two row tiles), 13 columns (steps 1, 2, 4, 8).
TEST(LoweringCumSum, LastAxis) {
  check_cumsum({150, 13}, -1, false, false);
}

TEST(LoweringCumSum, Exclusive) {
  check_cumsum({150, 13}, 1, true, false);
}

TEST(LoweringCumSum, Reverse) {
  check_cumsum({150, 13}, 1, false, true);
}

TEST(LoweringCumSum, ExclusiveReverseOnAMiddleAxis) {
  check_cumsum({3, 9, 4}, 1, true, true);
}

TEST(LoweringCumSum, LeadingAxis) {
  check_cumsum({17, 6}, 0, false, false);
}

}  // namespace
}  // namespace trnsim::e2e
