// Trilu on the device (compiler/lower/trilu.cpp), run on the simulated
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

// Trilu by its definition: element (i, j) of each matrix kept where j - i >= k
// (upper) or j - i <= k (lower), else 0 (not x * 0: an inf there gives 0).
void check_trilu(const ir::Shape& s, int64_t k, bool upper) {
  std::vector<float> x = random_tensor(s, 12).floats();
  for (size_t i = 0; i < x.size(); i += 5) x[i] = std::numeric_limits<float>::infinity();
  const int64_t M = s[s.size() - 2], N = s.back();
  std::vector<float> want(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    const int64_t j = static_cast<int64_t>(e) % N, i = static_cast<int64_t>(e) / N % M;
    want[e] = (upper ? j - i >= k : j - i <= k) ? x[e] : 0.0f;
  }
  check_single_node("Trilu", s, {{"k", ir::Attribute(k)}, {"upper", ir::Attribute(int64_t{upper})}},
                    x, want, 0);
}

TEST(LoweringTrilu, UpperOfABatch) {
  check_trilu({30, 5, 7}, 0, true);  // 25 matrices per 128-partition tile, 2 tiles
}

TEST(LoweringTrilu, LowerBelowTheDiagonal) {
  check_trilu({2, 6, 4}, -1, false);
}

TEST(LoweringTrilu, TallMatricesSpanTiles) {
  check_trilu({2, 200, 9}, 2, true);  // each matrix in row blocks of 128 and 72
}

}  // namespace
}  // namespace trnsim::e2e
