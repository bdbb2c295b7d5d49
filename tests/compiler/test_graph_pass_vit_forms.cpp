// Graph rules for what torchvision's ViT exports: a patch-embedding Conv (windows
// tiling the input) becomes a MatMul of the patches (fuse_patterns), and a Transpose
// that only moves a dim of size 1 becomes a Reshape (canonicalize). Each rewritten
// graph computes what the original does (the interpreter on random inputs).
#include <gtest/gtest.h>

#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes::testing {
namespace {

TEST(GraphPassesVitForms, PatchConvBecomesMatMul) {
  // 2x3 windows with strides 2x3 over 4x6, bias; and 1 image of 2 channels.
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[2,2,4,6]
    const %w: fp32[3,2,2,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36]
    const %b: fp32[3] = [0.5, -1, 2]
    %y: fp32[2,3,2,2] = Conv(%x, %w, %b) {dilations=[1, 1], group=1, kernel_shape=[2, 3], pads=[0, 0, 0, 0], strides=[2, 3]} @/patch/Conv
    output %y)IR");
  PassContext ctx;
  ir::Graph out = run_on_copy(g, {"fuse_patterns"}, &ctx);
  EXPECT_EQ(count_op(out, "Conv"), 0);
  EXPECT_EQ(count_op(out, "MatMul"), 1);
  EXPECT_EQ(ctx.stats["fuse_patterns.PatchConv"], 1);
  fill_constants(g, 5);
  expect_same_outputs(g, run_on_copy(g, {"fuse_patterns"}), 1e-5);
}

TEST(GraphPassesVitForms, OverlappingOrPaddedConvStays) {
  for (const std::string& attrs :
       {std::string("{dilations=[1, 1], group=1, kernel_shape=[2, 3], pads=[0, 0, 0, 0], "
                    "strides=[1, 3]}"),
        std::string("{dilations=[1, 1], group=1, kernel_shape=[2, 3], pads=[0, 1, 0, 1], "
                    "strides=[2, 3]}")}) {
    const bool padded = attrs.find("pads=[0, 1") != std::string::npos;
    const std::string out_shape = padded ? "[1,3,2,2]" : "[1,3,3,2]";
    ir::Graph g = parse_body(R"IR(
    input %x: fp32[1,2,4,6]
    const %w: fp32[3,2,2,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36]
    %y: fp32)IR" + out_shape +
                             R"IR( = Conv(%x, %w) )IR" + attrs + R"IR( @/c/Conv
    output %y)IR");
    ir::Graph out = run_on_copy(g, {"fuse_patterns"});
    EXPECT_EQ(count_op(out, "Conv"), 1) << attrs;
  }
}

TEST(GraphPassesVitForms, TransposeOfSizeOneDimIsReshape) {
  // [1, 3, 4] -> [3, 1, 4] moves no element; [2, 3, 1] -> [3, 1, 2] does.
  check_pass("canonicalize", R"IR(
    input %x: fp32[1,3,4]
    input %z: fp32[2,3,1]
    %t: fp32[3,1,4] = Transpose(%x) {perm=[1,0,2]} @/t/Transpose
    %u: fp32[3,1,2] = Transpose(%z) {perm=[1,2,0]} @/u/Transpose
    output %t, %u)IR",
             R"IR(
    input %x: fp32[1,3,4]
    input %z: fp32[2,3,1]
    %t: fp32[3,1,4] = Reshape(%x) {shape=[3, 1, 4]} @/t/Transpose
    %u: fp32[3,1,2] = Transpose(%z) {perm=[1,2,0]} @/u/Transpose
    output %t, %u)IR",
             0.0);
}

}  // namespace
}  // namespace trnsim::graph_passes::testing
