// The decompose graph pass: Einsum, Resize and InstanceNormalization rewritten into
// ops the device lowers. Each case checks that the op is gone (or left, with its
// reason, where the rewrite refuses) and that the reference interpreter computes
// the same outputs on the rewritten graph as on the original op.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/graph_passes/decompose.h"
#include "compiler/graph_passes/pass.h"
#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "compiler/lower/lower.h"
#include "compiler/target.h"
#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes {
namespace {

using namespace testing;

std::string shape_text(const ir::Shape& s) {
  std::string r = "fp32[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// One node `op` reading inputs of the given shapes, as a text body.
std::string one_node(const std::string& op, const std::vector<ir::Shape>& ins, const ir::Shape& out,
                     const std::string& attrs) {
  std::string body, args;
  for (size_t k = 0; k < ins.size(); ++k) {
    body += "input %x" + std::to_string(k) + ": " + shape_text(ins[k]) + "\n";
    args += (k ? ", %x" : "%x") + std::to_string(k);
  }
  body += "%y: " + shape_text(out) + " = " + op + "(" + args + ") {" + attrs + "} @node\n";
  return body + "output %y";
}

// Runs decompose, then checks the op is gone and the outputs match.
ir::Graph decompose_and_compare(const std::string& body, const std::string& op, double tol = 1e-5) {
  ir::Graph g = parse_body(body);
  ir::Graph out = run_on_copy(g, {"decompose"});
  EXPECT_EQ(count_op(out, op), 0) << ir::print_graph(out);
  expect_same_outputs(g, out, tol);
  return out;
}

struct EinsumCase {
  std::string eq;
  std::vector<ir::Shape> ins;
  ir::Shape out;
};

TEST(GraphPassDecompose, EinsumEquationsBecomeMatMulsTransposesAndSums) {
  const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}},
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}, {2, 3, 5, 6}},
      {"bhqk,bhkd->bqhd", {{2, 3, 5, 6}, {2, 3, 6, 4}}, {2, 5, 3, 4}},
      {"ij->ji", {{3, 4}}, {4, 3}},
      {"ij->", {{3, 4}}, {}},
      {"ijk->ki", {{2, 3, 4}}, {4, 2}},
      {"i,j->ij", {{3}, {4}}, {3, 4}},
      {"i,i->", {{5}, {5}}, {}},
      {"i,i->i", {{5}, {5}}, {5}},
      {"ij,jk", {{3, 4}, {4, 5}}, {3, 5}},  // implicit output
      {"ba,cb", {{4, 3}, {5, 4}}, {3, 5}},  // implicit output: letters in order
      {"ijk,jil->kl", {{2, 3, 4}, {3, 2, 5}}, {4, 5}},
      {"abc,cd->abd", {{2, 3, 4}, {4, 5}}, {2, 3, 5}},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, {2, 4}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {2, 5}},
      {"ij,kl->", {{2, 3}, {4, 5}}, {}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 6}}, {2, 5, 3, 6}},
      {"i...,i...->...", {{3, 2, 4}, {3, 2, 4}}, {2, 4}},
      // Diagonals: a subscript twice (or three times) in one operand.
      {"ii->i", {{4, 4}}, {4}},
      {"ii", {{4, 4}}, {}},  // implicit: the trace
      {"bjii->bij", {{2, 3, 4, 4}}, {2, 4, 3}},
      {"iii->i", {{3, 3, 3}}, {3}},
      {"ij,jj->ij", {{3, 4}, {4, 4}}, {3, 4}},
      {"bii,bij->bj", {{2, 3, 3}, {2, 3, 5}}, {2, 5}},
  };
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(c.eq);
    ir::Graph out = decompose_and_compare(
        one_node("Einsum", c.ins, c.out, "equation=\"" + c.eq + "\""), "Einsum");
    if (c.ins.size() == 2 && c.eq != "i,i->i" && c.eq != "ij,jj->ij") {
      EXPECT_EQ(count_op(out, "MatMul"), 1) << ir::print_graph(out);
    }
  }
}

TEST(GraphPassDecompose, AttentionScoresTransposeOnlyTheKeys) {
  // q [b,h,q,d] is already [batch, free, contracted]; k goes to [b,h,d,k]; the
  // batched MatMul's result is the output as it is (no reshape: no output copy).
  check_pass("decompose", R"IR(
    input %q: fp32[2,3,5,4]
    input %k: fp32[2,3,6,4]
    %s: fp32[2,3,5,6] = Einsum(%q, %k) {equation="bhqd,bhkd->bhqk"} @att
    output %s)IR",
             R"IR(
    input %q: fp32[2,3,5,4]
    input %k: fp32[2,3,6,4]
    %"att/rhs_perm": fp32[2,3,4,6] = Transpose(%k) {perm=[0,1,3,2]} @"att/rhs_perm"
    %s: fp32[2,3,5,6] = MatMul(%q, %"att/rhs_perm") @"att/matmul"
    output %s)IR",
             1e-5);
  // Without batch labels A keeps its free dims (MatMul flattens them onto M).
  check_pass("decompose", R"IR(
    input %x: fp32[2,3,4]
    input %w: fp32[5,4]
    %y: fp32[2,3,5] = Einsum(%x, %w) {equation="bij,kj->bik"} @lin
    output %y)IR",
             R"IR(
    input %x: fp32[2,3,4]
    input %w: fp32[5,4]
    %"lin/rhs_perm": fp32[4,5] = Transpose(%w) {perm=[1,0]} @"lin/rhs_perm"
    %y: fp32[2,3,5] = MatMul(%x, %"lin/rhs_perm") @"lin/matmul"
    output %y)IR",
             1e-5);
}

TEST(GraphPassDecompose, DiagonalIsASliceWithStepNPlusOne) {
  check_pass("decompose", R"IR(
    input %x: fp32[2,4,3,4]
    %y: fp32[2,3,4] = Einsum(%x) {equation="bici->bci"} @d
    output %y)IR",
             R"IR(
    input %x: fp32[2,4,3,4]
    %"d/diag_perm": fp32[2,3,4,4] = Transpose(%x) {perm=[0,2,1,3]} @"d/diag_perm"
    %"d/diag_flat": fp32[2,3,16] = Reshape(%"d/diag_perm") {shape=[2,3,16]} @"d/diag_flat"
    %y: fp32[2,3,4] = Slice(%"d/diag_flat") {starts=[0], ends=[16], axes=[2], steps=[5]} @"d/diag"
    output %y)IR",
             0);
}

TEST(GraphPassDecompose, IntegerEinsumIsLeftWithItsReason) {
  const std::string body = R"IR(
    input %a: int64[3,4]
    input %b: int64[4,5]
    %y: int64[3,5] = Einsum(%a, %b) {equation="ij,jk->ik"} @node
    output %y)IR";
  ir::Graph out = run_on_copy(parse_body(body), {"decompose"});
  ASSERT_EQ(count_op(out, "Einsum"), 1);
  const ir::Node& n = *out.nodes().front();
  EXPECT_NE(einsum_refusal(n).find("Einsum on int64 is not rewritten"), std::string::npos);
  // The lowering refuses it by that reason, so it falls back to the host.
  try {
    lower::lower_graph(out, compiler::Target{});
    ADD_FAILURE() << "the int64 Einsum lowered";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node' (op Einsum): Einsum on int64"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("left for the host"), std::string::npos) << e.what();
  }
}

struct ResizeCase {
  std::string attrs;
  ir::Shape in, out;
};

TEST(GraphPassDecompose, ResizeNearestAndLinearMatchTheOp) {
  const std::string lin = "mode=\"linear\", coordinate_transformation_mode=";
  const std::string near = "mode=\"nearest\", coordinate_transformation_mode=";
  const std::vector<ResizeCase> cases = {
      // torch bilinear, scale 2, align_corners False / True.
      {lin + "\"pytorch_half_pixel\", scales=[1.0,1.0,2.0,2.0], sizes=[1,2,8,10]",
       {1, 2, 4, 5},
       {1, 2, 8, 10}},
      {lin + "\"align_corners\", scales=[1.0,1.0,2.0,2.0], sizes=[1,2,8,10]",
       {1, 2, 4, 5},
       {1, 2, 8, 10}},
      // Sizes that are not a multiple, up and down.
      {lin + "\"half_pixel\", sizes=[2,3,7,9]", {2, 3, 4, 5}, {2, 3, 7, 9}},
      {lin + "\"align_corners\", sizes=[1,2,3,7]", {1, 2, 5, 6}, {1, 2, 3, 7}},
      {lin + "\"asymmetric\", scales=[1.0,1.0,0.6,1.5], sizes=[1,1,3,9]",
       {1, 1, 5, 6},
       {1, 1, 3, 9}},
      // torch nearest (asymmetric, floor) with a non-integer size; every rounding.
      {near + "\"asymmetric\", nearest_mode=\"floor\", sizes=[1,2,7,9]",
       {1, 2, 4, 5},
       {1, 2, 7, 9}},
      {near + "\"half_pixel\", nearest_mode=\"round_prefer_ceil\", sizes=[1,2,7,3]",
       {1, 2, 4, 5},
       {1, 2, 7, 3}},
      {near + "\"align_corners\", nearest_mode=\"round_prefer_floor\", sizes=[1,2,7,9]",
       {1, 2, 4, 5},
       {1, 2, 7, 9}},
      {near + "\"tf_half_pixel_for_nn\", nearest_mode=\"ceil\", sizes=[1,2,7,9]",
       {1, 2, 4, 5},
       {1, 2, 7, 9}},
      // Cubic (torch's bicubic is a = -0.75), ONNX's a = -0.5 with exclude_outside.
      {"mode=\"cubic\", coordinate_transformation_mode=\"pytorch_half_pixel\", "
       "scales=[1.0,1.0,2.0,2.0], sizes=[1,2,8,10]",
       {1, 2, 4, 5},
       {1, 2, 8, 10}},
      {"mode=\"cubic\", cubic_coeff_a=-0.5, exclude_outside=1, sizes=[1,1,3,7]",
       {1, 1, 5, 4},
       {1, 1, 3, 7}},
      {"mode=\"cubic\", coordinate_transformation_mode=\"align_corners\", sizes=[1,1,7,9]",
       {1, 1, 4, 4},
       {1, 1, 7, 9}},
      // 1-D and 3-D spatial.
      {lin + "\"half_pixel\", sizes=[2,3,11]", {2, 3, 5}, {2, 3, 11}},
      {lin + "\"align_corners\", sizes=[1,2,5,6,7]", {1, 2, 3, 4, 5}, {1, 2, 5, 6, 7}},
  };
  for (const ResizeCase& c : cases) {
    SCOPED_TRACE(c.attrs);
    ir::Graph out = decompose_and_compare(one_node("Resize", {c.in}, c.out, c.attrs), "Resize");
    EXPECT_GE(count_op(out, "MatMul"), 1) << ir::print_graph(out);
  }
}

TEST(GraphPassDecompose, ResizeNearestByIntegerFactorsIsAnExpand) {
  // Scale 2 x 3 nearest in torch's and ONNX's default modes: pure data movement.
  for (const std::string ctm : {"asymmetric\", nearest_mode=\"floor", "half_pixel"}) {
    SCOPED_TRACE(ctm);
    ir::Graph out =
        decompose_and_compare(one_node("Resize", {{1, 2, 4, 5}}, {1, 2, 8, 15},
                                       "mode=\"nearest\", coordinate_transformation_mode=\"" + ctm +
                                           "\", scales=[1.0,1.0,2.0,3.0], sizes=[1,2,8,15]"),
                              "Resize", 0);
    EXPECT_EQ(count_op(out, "Expand"), 1) << ir::print_graph(out);
    EXPECT_EQ(count_op(out, "MatMul"), 0) << ir::print_graph(out);
  }
}

TEST(GraphPassDecompose, ResizeCropAndHugeAxesAreLeftWithTheirReasons) {
  ir::Graph out = run_on_copy(
      parse_body(one_node("Resize", {{1, 1, 4, 4}}, {1, 1, 3, 3},
                          "mode=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\", "
                          "roi=[0,0,0.1,0.1,1,1,0.9,0.9], sizes=[1,1,3,3]")),
      {"decompose"});
  ASSERT_EQ(count_op(out, "Resize"), 1);
  EXPECT_NE(resize_refusal(*out.nodes().front()).find("tf_crop_and_resize"), std::string::npos);
  // An axis whose interpolation matrix would be too large: 8192 -> 4096 is 2^25.
  ir::Graph big = run_on_copy(parse_body(one_node("Resize", {{1, 1, 2, 8192}}, {1, 1, 2, 4096},
                                                  "mode=\"linear\", sizes=[1,1,2,4096]")),
                              {"decompose"});
  ASSERT_EQ(count_op(big, "Resize"), 1);
  EXPECT_NE(resize_refusal(*big.nodes().front()).find("4096x8192 interpolation matrix"),
            std::string::npos)
      << resize_refusal(*big.nodes().front());
  std::optional<std::string> why = decompose_refusal(*out.nodes().front());
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("left for the host"), std::string::npos);
}

TEST(GraphPassDecompose, InstanceNormBecomesLayerNormOverSpatialDims) {
  check_pass("decompose", R"IR(
    input %x: fp32[2,3,4,5]
    const %g: fp32[3] = [1, 0.5, 2]
    input %b: fp32[3]
    %y: fp32[2,3,4,5] = InstanceNormalization(%x, %g, %b) {epsilon=0.001} @in
    output %y)IR",
             R"IR(
    input %x: fp32[2,3,4,5]
    input %b: fp32[3]
    const %g: fp32[3] = [1, 0.5, 2]
    const %"in/scale": fp32[3,1,1] = [1, 0.5, 2]
    %"in/norm": fp32[2,3,4,5] = trn.LayerNorm(%x) {axis=2, epsilon=0.001} @"in/norm"
    %"in/mul": fp32[2,3,4,5] = Mul(%"in/norm", %"in/scale") @"in/mul"
    %"in/bias": fp32[3,1,1] = Reshape(%b) {shape=[3,1,1]} @"in/bias"
    %y: fp32[2,3,4,5] = Add(%"in/mul", %"in/bias") @"in/add"
    output %y)IR",
             1e-5);
  for (const ir::Shape& s : {ir::Shape{2, 3, 7}, ir::Shape{1, 2, 3, 4, 5}}) {
    const std::string t = shape_text(s);
    decompose_and_compare("input %x: " + t + "\ninput %g: fp32[" + std::to_string(s[1]) +
                              "]\ninput %b: fp32[" + std::to_string(s[1]) + "]\n%y: " + t +
                              " = InstanceNormalization(%x, %g, %b) @in\noutput %y",
                          "InstanceNormalization");
  }
}

TEST(GraphPassDecompose, TorchGroupNormIsALayerNormAndOneAffine) {
  // nn.GroupNorm(2, 4) as torch exports it at opset 17: Reshape to [N, G, -1],
  // InstanceNormalization with unit scale and zero bias, Reshape back, Mul, Add.
  const std::string body = R"IR(
    input %x: fp32[2,4,3,5]
    const %ones: fp32[2] = [1, 1]
    const %zeros: fp32[2] = [0, 0]
    const %w: fp32[4,1,1] = [1, 0.5, 2, -1]
    const %bias: fp32[4,1,1] = [0.1, 0.2, 0.3, 0.4]
    %r: fp32[2,2,30] = Reshape(%x) {shape=[2,2,30]} @/g/Reshape
    %n: fp32[2,2,30] = InstanceNormalization(%r, %ones, %zeros) @/g/InstanceNormalization
    %r2: fp32[2,4,3,5] = Reshape(%n) {shape=[2,4,3,5]} @/g/Reshape_1
    %m: fp32[2,4,3,5] = Mul(%r2, %w) @/g/Mul
    %y: fp32[2,4,3,5] = Add(%m, %bias) @/g/Add
    output %y)IR";
  ir::Graph g = parse_body(body);
  ir::Graph out = run_on_copy(g, default_graph_pipeline(Precision::fp32));
  EXPECT_EQ(count_op(out, "InstanceNormalization"), 0);
  EXPECT_EQ(count_op(out, "trn.LayerNorm"), 1);
  // The unit scale and zero bias are gone: one fused multiply-add remains.
  EXPECT_EQ(count_op(out, "Mul") + count_op(out, "Add"), 0) << ir::print_graph(out);
  EXPECT_EQ(count_op(out, "trn.Elementwise"), 1) << ir::print_graph(out);
  expect_same_outputs(g, out, 1e-5);
}

}  // namespace
}  // namespace trnsim::graph_passes
