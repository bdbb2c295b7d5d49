// fuse_patterns' split_projections: a MatMul with a constant weight (and a constant
// bias) whose result is only cut along the last axis becomes one MatMul per part.
// The rewritten graph computes what the original does (the interpreter on random
// inputs), and the forms that must stay are left alone.
#include <gtest/gtest.h>

#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes::testing {
namespace {

TEST(GraphPassesSplitProjection, SplitOfBiasedProjection) {
  // qkv = x @ W + b; q, k, v = qkv.split(2, dim=-1).
  PassContext ctx;
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[1,3,4]
    const %w: fp32[4,6] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    const %b: fp32[6] = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    %y: fp32[1,3,6] = MatMul(%x, %w) @/qkv/MatMul
    %yb: fp32[1,3,6] = Add(%y, %b) @/qkv/Add
    %q: fp32[1,3,2], %k: fp32[1,3,2], %v: fp32[1,3,2] = Split(%yb) {axis=2, split=[2, 2, 2]} @/Split
    %qk: fp32[1,3,2] = Mul(%q, %k) @/Mul
    %o: fp32[1,3,2] = Sub(%qk, %v) @/Sub
    output %o)IR",
             R"IR(
    input %x: fp32[1,3,4]
    const %w_0: fp32[4,2] = [1, 2, 7, 8, 13, 14, 19, 20]
    const %b_0: fp32[2] = [0.5, 1.5]
    const %w_2: fp32[4,2] = [3, 4, 9, 10, 15, 16, 21, 22]
    const %b_2: fp32[2] = [2.5, 3.5]
    const %w_4: fp32[4,2] = [5, 6, 11, 12, 17, 18, 23, 24]
    const %b_4: fp32[2] = [4.5, 5.5]
    %y_0: fp32[1,3,2] = MatMul(%x, %w_0) @/qkv/MatMul_0
    %q: fp32[1,3,2] = Add(%y_0, %b_0) @/qkv/Add_0
    %y_2: fp32[1,3,2] = MatMul(%x, %w_2) @/qkv/MatMul_2
    %k: fp32[1,3,2] = Add(%y_2, %b_2) @/qkv/Add_2
    %y_4: fp32[1,3,2] = MatMul(%x, %w_4) @/qkv/MatMul_4
    %v: fp32[1,3,2] = Add(%y_4, %b_4) @/qkv/Add_4
    %qk: fp32[1,3,2] = Mul(%q, %k) @/Mul
    %o: fp32[1,3,2] = Sub(%qk, %v) @/Sub
    output %o)IR",
             1e-5, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.SplitProjection"], 2);  // check_pass runs the pass twice
}

TEST(GraphPassesSplitProjection, SlicesWithoutBias) {
  // nn.MultiheadAttention's in_proj as exported: Slices of one MatMul (one unused).
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[3,4]
    const %w: fp32[4,6] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    %y: fp32[3,6] = MatMul(%x, %w) @/in_proj/MatMul
    %a: fp32[3,2] = Slice(%y) {axes=[1], ends=[2], starts=[0], steps=[1]} @/Slice
    %c: fp32[3,4] = Slice(%y) {axes=[1], ends=[9223372036854775807], starts=[2], steps=[1]} @/Slice_1
    %d: fp32[3,1] = Slice(%y) {axes=[-1], ends=[-1], starts=[-2], steps=[1]} @/Slice_2
    output %a, %c)IR");
  ir::Graph out = run_on_copy(g, {"fuse_patterns"});
  EXPECT_EQ(count_op(out, "Slice"), 0);
  EXPECT_EQ(count_op(out, "MatMul"), 2);
  fill_constants(g, 3);
  expect_same_outputs(g, run_on_copy(g, {"fuse_patterns"}), 1e-5);
}

TEST(GraphPassesSplitProjection, OtherReadersOrWeightsStay) {
  // The product is also read whole, the weight is an input, or a Slice has a step:
  // nothing changes.
  for (const std::string& body : {std::string(R"IR(
    input %x: fp32[3,4]
    const %w: fp32[4,6] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    %y: fp32[3,6] = MatMul(%x, %w) @/p/MatMul
    %a: fp32[3,2] = Slice(%y) {axes=[1], ends=[2], starts=[0], steps=[1]} @/Slice
    %r: fp32[3,6] = Relu(%y) @/Relu
    output %a, %r)IR"),
                                  std::string(R"IR(
    input %x: fp32[3,4]
    input %w: fp32[4,6]
    %y: fp32[3,6] = MatMul(%x, %w) @/p/MatMul
    %a: fp32[3,2] = Slice(%y) {axes=[1], ends=[2], starts=[0], steps=[1]} @/Slice
    output %a)IR"),
                                  std::string(R"IR(
    input %x: fp32[3,4]
    const %w: fp32[4,6] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    %y: fp32[3,6] = MatMul(%x, %w) @/p/MatMul
    %a: fp32[3,3] = Slice(%y) {axes=[1], ends=[6], starts=[0], steps=[2]} @/Slice
    output %a)IR")}) {
    PassContext ctx;
    ir::Graph out = run_on_copy(parse_body(body), {"fuse_patterns"}, &ctx);
    EXPECT_EQ(ctx.stats["fuse_patterns.SplitProjection"], 0) << body;
    EXPECT_EQ(count_op(out, "MatMul"), 1) << body;
  }
}

TEST(GraphPassesSplitProjection, EmptyPartsStay) {
  // A product with no columns split into empty parts: nothing to split (and no
  // division by the zero column count).
  const std::string body = R"IR(
    input %x: fp32[3,4]
    const %w: fp32[4,0] = []
    %y: fp32[3,0] = MatMul(%x, %w) @/p/MatMul
    %a: fp32[3,0], %b: fp32[3,0] = Split(%y) {axis=1, split=[0, 0]} @/Split
    output %a, %b)IR";
  PassContext ctx;
  ir::Graph out = run_on_copy(parse_body(body), {"fuse_patterns"}, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.SplitProjection"], 0);
  EXPECT_EQ(count_op(out, "MatMul"), 1);
}

}  // namespace
}  // namespace trnsim::graph_passes::testing
