// fuse_patterns' fold_norm_affine: a LayerNorm/RMSNorm over the last axis read only
// as the left operand of MatMuls with constant weights loses its scale and bias to
// those weights (diag(s) W) and biases (+ beta W). The rewritten graph computes what
// the original does (the interpreter on random inputs); other forms stay.
#include <gtest/gtest.h>

#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes::testing {
namespace {

const ir::Node* only(const ir::Graph& g, const std::string& op) {
  const ir::Node* found = nullptr;
  for (const auto& n : g.nodes())
    if (n->op == op) {
      EXPECT_EQ(found, nullptr) << "two " << op;
      found = n.get();
    }
  EXPECT_NE(found, nullptr) << "no " << op;
  return found;
}

TEST(GraphPassesNormFold, LayerNormIntoBiasedAndPlainMatMuls) {
  // q = ln(x) @ wq + bq; m = ln(x) @ wm (no bias: beta @ wm becomes an Add).
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[2,3,8]
    const %g: fp32[8]
    const %b: fp32[8]
    const %wq: fp32[8,4]
    const %bq: fp32[4]
    const %wm: fp32[8,6]
    %y: fp32[2,3,8] = trn.LayerNorm(%x, %g, %b) {axis=2, epsilon=9.99999975e-06} @/ln/LayerNorm
    %q0: fp32[2,3,4] = MatMul(%y, %wq) @/q/MatMul
    %q: fp32[2,3,4] = Add(%q0, %bq) @/q/Add
    %m: fp32[2,3,6] = MatMul(%y, %wm) @/m/MatMul
    output %q, %m)IR");
  fill_constants(g, 7);
  PassContext ctx;
  ir::Graph out = run_on_copy(g, {"fuse_patterns"}, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.NormAffineFolded"], 1);
  EXPECT_EQ(only(out, "trn.LayerNorm")->inputs.size(), 1u);
  EXPECT_EQ(count_op(out, "MatMul"), 2);
  EXPECT_EQ(count_op(out, "Add"), 2);
  expect_same_outputs(g, out, 1e-5);
}

TEST(GraphPassesNormFold, RmsNormScaleIntoWeights) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[5,8]
    const %s: fp32[8]
    const %w: fp32[8,3]
    %y: fp32[5,8] = trn.RMSNorm(%x, %s) {axis=-1, epsilon=9.99999975e-06} @/n/RMSNorm
    %o: fp32[5,3] = MatMul(%y, %w) @/o/MatMul
    output %o)IR");
  fill_constants(g, 3);
  PassContext ctx;
  ir::Graph out = run_on_copy(g, {"fuse_patterns"}, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.NormAffineFolded"], 1);
  EXPECT_EQ(only(out, "trn.RMSNorm")->inputs.size(), 1u);
  EXPECT_EQ(count_op(out, "Add"), 0);
  expect_same_outputs(g, out, 1e-5);
}

TEST(GraphPassesNormFold, OtherReadersOrLayoutsStay) {
  // The norm is also read by a residual Add, is a graph output, reads a weight that
  // is an input, is the right operand, or normalises more than the last axis.
  for (const std::string& body : {std::string(R"IR(
    input %x: fp32[4,8]
    const %g: fp32[8]
    const %b: fp32[8]
    const %w: fp32[8,8]
    %y: fp32[4,8] = trn.LayerNorm(%x, %g, %b) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    %m: fp32[4,8] = MatMul(%y, %w) @/m/MatMul
    %r: fp32[4,8] = Add(%m, %y) @/r/Add
    output %r)IR"),
                                  std::string(R"IR(
    input %x: fp32[4,8]
    const %g: fp32[8]
    const %w: fp32[8,2]
    %y: fp32[4,8] = trn.LayerNorm(%x, %g) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    %m: fp32[4,2] = MatMul(%y, %w) @/m/MatMul
    output %m, %y)IR"),
                                  std::string(R"IR(
    input %x: fp32[4,8]
    input %w: fp32[8,2]
    const %g: fp32[8]
    %y: fp32[4,8] = trn.LayerNorm(%x, %g) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    %m: fp32[4,2] = MatMul(%y, %w) @/m/MatMul
    output %m)IR"),
                                  std::string(R"IR(
    input %x: fp32[8,8]
    const %g: fp32[8]
    const %a: fp32[3,8]
    %y: fp32[8,8] = trn.LayerNorm(%x, %g) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    %m: fp32[3,8] = MatMul(%a, %y) @/m/MatMul
    output %m)IR"),
                                  std::string(R"IR(
    input %x: fp32[2,4,8]
    const %g: fp32[4,8]
    const %w: fp32[8,2]
    %y: fp32[2,4,8] = trn.LayerNorm(%x, %g) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    %m: fp32[2,4,2] = MatMul(%y, %w) @/m/MatMul
    output %m)IR")}) {
    ir::Graph g = parse_body(body);
    fill_constants(g, 5);
    PassContext ctx;
    ir::Graph out = run_on_copy(g, {"fuse_patterns"}, &ctx);
    EXPECT_EQ(ctx.stats["fuse_patterns.NormAffineFolded"], 0) << body;
    EXPECT_GT(out.nodes().front()->inputs.size(), 1u) << body;
  }
}

}  // namespace
}  // namespace trnsim::graph_passes::testing
