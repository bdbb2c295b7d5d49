// ConvTranspose, lowered as the conv of the flipped, in/out-swapped kernel over the
// zero-inserted input (compiler/lower/conv.cpp), compiled for the simulated `tiny`
// chip as one device program (compile_graph: a refusal would throw), run, and
// compared with the reference interpreter on the graph as imported. Eager-PyTorch
// comparisons of torch's layers: tests/python/test_torch_recurrent_conv.py.
// One process per test, so each test makes at most one check_graph call.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/text.h"
#include "tests/compiler/graph_pass_test_util.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

ir::Graph graph(const std::string& body, uint32_t seed = 3) {
  ir::Graph g = graph_passes::testing::parse_body(body);
  graph_passes::testing::fill_constants(g, seed, -0.5f, 0.5f);
  return g;
}

// Stride 2, pads 1, output_padding 1, 2 groups (6 -> 8 channels): OH = 2*4 + 1 + 3 - 2
// = 10, OW = 2*6 + 1 + 3 - 2 = 14; bias + Relu fused into the epilogue.
const char* kConvTranspose = R"IR(
    input %x: fp32[2,6,5,7]
    const %w: fp32[6,4,3,3]
    const %b: fp32[8]
    %c: fp32[2,8,10,14] = ConvTranspose(%x, %w, %b) {group=2, output_padding=[1,1], pads=[1,1,1,1], strides=[2,2]} @convt
    %y: fp32[2,8,10,14] = Relu(%c) @relu
    output %y)IR";

TEST(LoweringConvTranspose, Stride2PadsOutputPaddingGroupsFp32) {
  check_graph(graph(kConvTranspose), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringConvTranspose, Stride2PadsOutputPaddingGroupsBf16) {
  check_graph(graph(kConvTranspose), Precision::bf16, 3e-2, 1e-2);
}

// Dilation 2 with strides (1, 3) and uneven pads: OH = 5 + 5 - 3 = 7, OW = 3*4 + 3 =
// 15. 1-D: stride 2, pads 1: OW = 2*8 + 4 - 2 = 18. Depthwise-shaped (groups =
// channels) goes the GEMM way too.
TEST(LoweringConvTranspose, DilationsConv1dDepthwiseFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[1,4,6,5]
    input %x1: fp32[2,5,9]
    input %xd: fp32[1,3,4,4]
    const %w: fp32[4,5,3,2]
    const %w1: fp32[5,3,4]
    const %wd: fp32[3,1,2,2]
    %y: fp32[1,5,7,15] = ConvTranspose(%x, %w) {dilations=[2,2], pads=[2,0,1,0], strides=[1,3]} @dil
    %y1: fp32[2,3,18] = ConvTranspose(%x1, %w1) {pads=[1,1], strides=[2]} @t1d
    %yd: fp32[1,3,8,8] = ConvTranspose(%xd, %wd) {group=3, strides=[2,2]} @dw
    output %y, %y1, %yd)IR"),
              Precision::fp32, 1e-4, 1e-5);
}

// Run-time weights (as ONNX's node tests give them): gathered per slab with the
// taps flipped, 2 groups, stride 2 with output_padding: OH = 2*3 + 1 + 3 - 2 = 8,
// OW = 2*4 + 1 + 3 - 2 = 10.
TEST(LoweringConvTranspose, RuntimeWeightsGroupsFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[2,4,4,5]
    input %w: fp32[4,3,3,3]
    %y: fp32[2,6,8,10] = ConvTranspose(%x, %w) {group=2, output_padding=[1,1], pads=[1,1,1,1], strides=[2,2]} @convt
    output %y)IR"),
              Precision::fp32, 1e-4, 1e-5);
}

}  // namespace
}  // namespace trnsim::e2e
