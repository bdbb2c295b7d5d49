// TopK on the device (compiler/lower/topk.cpp), run on the simulated `tiny` chip
// against a reference written here from the ONNX definition (a stable sort: equal
// values keep the lower index first), not the interpreter. One Device per test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct TopKRef {
  std::vector<float> values;
  std::vector<float> indices;
};

TopKRef topk_reference(const std::vector<float>& x, const ir::Shape& s, int64_t axis, int64_t k,
                       bool largest) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[axis];
  TopKRef r;
  r.values.resize(static_cast<size_t>(outer * k * inner));
  r.indices.resize(r.values.size());
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return x[static_cast<size_t>((o * len + j) * inner + i)]; };
      std::iota(order.begin(), order.end(), 0);
      // NaN ranks above every number for the largest, below for the smallest (as
      // PyTorch does); the ONNX spec leaves it open.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const float x = at(a), y = at(b);
        if (std::isnan(x) || std::isnan(y)) return largest ? !std::isnan(y) : !std::isnan(x);
        return largest ? x > y : x < y;
      });
      for (int64_t j = 0; j < k; ++j) {
        const size_t dst = static_cast<size_t>((o * k + j) * inner + i);
        r.values[dst] = at(order[static_cast<size_t>(j)]);
        r.indices[dst] = static_cast<float>(order[static_cast<size_t>(j)]);
      }
    }
  return r;
}

ir::Graph topk_graph(const ir::Shape& s, int64_t axis, int64_t k, bool largest) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, s});
  ir::Node* n = ir::make_node(g, "TopK", {x},
                              {{"axis", ir::Attribute(axis)},
                               {"k", ir::Attribute(k)},
                               {"largest", ir::Attribute(int64_t{largest ? 1 : 0})}},
                              "top", 2);
  g.add_output(n->outputs[0]);
  g.add_output(n->outputs[1]);
  return g;
}

// Values drawn from a few levels, so most rows hold ties.
std::vector<float> tied_values(int64_t count, uint32_t seed, int levels) {
  std::mt19937 gen(seed);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& e : v) e = static_cast<float>(static_cast<int>(gen() % levels) - levels / 2) * 0.25f;
  return v;
}

void check_topk(const ir::Shape& s, int64_t axis, int64_t k, bool largest,
                const std::vector<float>& x) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g = topk_graph(s, axis, k, largest);
  const std::string vname = g.outputs()[0]->name, iname = g.outputs()[1]->name;
  compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  const auto got = run_on_tiny(cfg, r.program, {{"X", Tensor::from_floats(s, x)}});
  const TopKRef want = topk_reference(x, s, axis < 0 ? axis + int64_t(s.size()) : axis, k, largest);
  ASSERT_TRUE(got.count(vname) && got.count(iname));
  expect_close("values", got.at(vname).to_float(), want.values, 0, 0);
  expect_close("indices", got.at(iname).to_float(), want.indices, 0, 0);
}

// 200 rows: a full tile of partitions and a partial one; ties everywhere.
TEST(LoweringTopK, LargestLastAxisWithTies) {
  const ir::Shape s = {200, 37};
  check_topk(s, -1, 5, true, tied_values(200 * 37, 3, 7));
}

TEST(LoweringTopK, SmallestOnAMiddleAxis) {
  const ir::Shape s = {3, 9, 4};
  check_topk(s, 1, 4, false, tied_values(3 * 9 * 4, 4, 5));
}

TEST(LoweringTopK, LeadingAxisOfDistinctValues) {
  const ir::Shape s = {12, 20};
  const Tensor x = random_tensor(s, 9);
  check_topk(s, 0, 3, true, x.floats());
}

// k equal to the axis: every element comes out, -inf ones (which look like the
// taken ones) in index order, +inf first.
TEST(LoweringTopK, WholeRowWithInfinities) {
  const ir::Shape s = {2, 6};
  check_topk(s, 1, 6, true,
             {-kInf, 1.0f, -kInf, kInf, 1.0f, -kInf, 0.5f, -kInf, -kInf, 2.0f, -1.0f, -kInf});
}

const std::vector<float> kWithNaN = {0.5f,
                                     std::numeric_limits<float>::quiet_NaN(),
                                     2.0f,
                                     -1.0f,
                                     std::numeric_limits<float>::quiet_NaN(),
                                     0.5f,
                                     3.0f,
                                     1.0f,
                                     -2.0f,
                                     0.0f};

TEST(LoweringTopK, NaNRanksFirstForTheLargest) {
  check_topk({2, 5}, 1, 3, true, kWithNaN);
}

TEST(LoweringTopK, NaNRanksLastForTheSmallest) {
  check_topk({2, 5}, 1, 4, false, kWithNaN);
}

// ArgMax/ArgMin: TopK's indices for k = 1 (select_last_index: the last maximum).
void check_arg(const std::string& op, const ir::Shape& s, int64_t axis, bool keepdims, bool last,
               const std::vector<float>& x) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g;
  ir::Value* xv = g.add_input("X", {ElemType::fp32, s});
  ir::Node* nd = ir::make_node(g, op, {xv},
                               {{"axis", ir::Attribute(axis)},
                                {"keepdims", ir::Attribute(int64_t{keepdims})},
                                {"select_last_index", ir::Attribute(int64_t{last})}},
                               "arg");
  g.add_output(nd->outputs[0]);
  const std::string name = nd->outputs[0]->name;
  compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  const auto got = run_on_tiny(cfg, r.program, {{"X", Tensor::from_floats(s, x)}});
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  std::vector<float> want;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < s[axis]; ++j) {
        const float v = x[static_cast<size_t>((a * s[axis] + j) * inner + i)];
        const float b = x[static_cast<size_t>((a * s[axis] + best) * inner + i)];
        const bool better = op == "ArgMax" ? v > b : v < b;
        if (better || (last && v == b)) best = j;
      }
      want.push_back(static_cast<float>(best));
    }
  ASSERT_TRUE(got.count(name));
  expect_close(op, got.at(name).to_float(), want, 0, 0);
}

TEST(LoweringTopK, ArgMaxFirstIndexOfTies) {
  check_arg("ArgMax", {150, 11}, 1, true, false, tied_values(150 * 11, 5, 5));
}

TEST(LoweringTopK, ArgMaxLastIndexOfTiesNoKeepdims) {
  check_arg("ArgMax", {150, 11}, 1, false, true, tied_values(150 * 11, 5, 5));
}

TEST(LoweringTopK, ArgMinOnALeadingAxis) {
  check_arg("ArgMin", {6, 4, 3}, 0, false, false, tied_values(6 * 4 * 3, 6, 4));
}

TEST(LoweringTopK, ArgMinLastIndexOnAMiddleAxis) {
  check_arg("ArgMin", {6, 4, 3}, 1, true, true, tied_values(6 * 4 * 3, 6, 4));
}

TEST(LoweringTopK, LargeKIsRefusedByName) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(topk_graph({4, 300}, -1, 300, true), o, true);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].node, "top");
  EXPECT_NE(m.fallback[0].reason.find("k = 300 is above"), std::string::npos)
      << m.fallback[0].reason;
}

}  // namespace
}  // namespace trnsim::e2e
