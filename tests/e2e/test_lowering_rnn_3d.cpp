// LSTM/GRU/RNN (unrolled by the unroll_rnn graph pass) and 3-D Conv/pools (made
// 2-D by decompose_3d) compiled for the simulated `tiny` chip as one device
// program (compile_graph: a refusal would throw), run, and compared with the
// reference interpreter on the graph as imported. Eager-PyTorch comparisons of the
// torch layers are in tests/python/test_torch_recurrent_conv.py.
// One process per test, so each test makes at most one check_graph call.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/text.h"
#include "compiler/partition.h"
#include "tests/compiler/graph_pass_test_util.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

ir::Graph graph(const std::string& body, uint32_t seed = 3) {
  ir::Graph g = graph_passes::testing::parse_body(body);
  graph_passes::testing::fill_constants(g, seed, -0.5f, 0.5f);
  return g;
}

// X [T=4, B=3, I=6], H = 5: a bidirectional LSTM with initial states and
// peepholes, a reverse GRU with linear_before_reset (torch's form) and one
// without, and a forward Relu RNN in layout 1, all reading the same X.
const char* kRecurrent = R"IR(
    input %x: fp32[4,3,6]
    input %h0: fp32[2,3,5]
    input %c0: fp32[2,3,5]
    const %lw: fp32[2,20,6]
    const %lr: fp32[2,20,5]
    const %lb: fp32[2,40]
    const %lp: fp32[2,15]
    const %gw: fp32[1,15,6]
    const %gr: fp32[1,15,5]
    const %gb: fp32[1,30]
    const %rw: fp32[1,5,6]
    const %rr: fp32[1,5,5]
    const %rb: fp32[1,10]
    %ly: fp32[4,2,3,5], %lh: fp32[2,3,5], %lc: fp32[2,3,5] = LSTM(%x, %lw, %lr, %lb, _, %h0, %c0, %lp) {direction="bidirectional", hidden_size=5} @lstm
    %gy: fp32[4,1,3,5], %gh: fp32[1,3,5] = GRU(%x, %gw, %gr, %gb) {direction="reverse", hidden_size=5, linear_before_reset=1} @gru
    %g0y: fp32[4,1,3,5], %g0h: fp32[1,3,5] = GRU(%x, %gw, %gr, %gb) {hidden_size=5} @gru0
    %xt: fp32[3,4,6] = Transpose(%x) {perm=[1,0,2]} @xt
    %ry: fp32[3,4,1,5], %rh: fp32[3,1,5] = RNN(%xt, %rw, %rr, %rb) {activations="Relu", hidden_size=5, layout=1} @rnn
    output %ly, %lh, %lc, %gy, %gh, %g0y, %ry, %rh)IR";

TEST(LoweringRecurrent, LstmGruRnnFp32) {
  check_graph(graph(kRecurrent), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringRecurrent, LstmGruRnnBf16) {
  check_graph(graph(kRecurrent), Precision::bf16, 3e-2, 1e-2);
}

// A clipped LSTM stays whole and falls back to the host with the attribute named;
// the unclipped RNN beside it is unrolled onto the device.
TEST(LoweringRecurrent, ClipFallsBackByName) {
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(platform::load_config("tiny"));
  compiler::PartitionedModel m = compiler::compile_partitioned(graph(R"IR(
    input %x: fp32[3,2,5]
    const %lw: fp32[1,16,5]
    const %lr: fp32[1,16,4]
    const %rw: fp32[1,4,5]
    const %rr: fp32[1,4,4]
    %ly: fp32[3,1,2,4], %lh: fp32[1,2,4], %lc: fp32[1,2,4] = LSTM(%x, %lw, %lr) {clip=2.0, hidden_size=4} @clipped
    %ry: fp32[3,1,2,4], %rh: fp32[1,2,4] = RNN(%x, %rw, %rr) {hidden_size=4} @plain
    %y: fp32[3,1,2,4] = Add(%ly, %ry) @sum
    output %y)IR"),
                                                               o, true);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].op, "LSTM");
  EXPECT_NE(m.fallback[0].reason.find("'clip'"), std::string::npos) << m.fallback[0].reason;
  for (const auto& n : m.graph.nodes()) EXPECT_NE(n->op, "RNN");
}

// Conv3d: 2 groups, strides (1,2,2), pads 1: [1,6,5,4,3]. MaxPool3d k3 s2 p1:
// [1,3,3,4,4]. AvgPool3d k3 s2 p1 ceil_mode without the pads in the count.
TEST(LoweringThreeD, ConvMaxAvgPoolFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[1,4,5,7,6]
    input %p: fp32[1,3,6,7,8]
    const %w: fp32[6,2,3,3,3]
    const %b: fp32[6]
    %y: fp32[1,6,5,4,3] = Conv(%x, %w, %b) {group=2, pads=[1,1,1,1,1,1], strides=[1,2,2]} @conv3d
    %m: fp32[1,3,3,4,4] = MaxPool(%p) {kernel_shape=[3,3,3], pads=[1,1,1,1,1,1], strides=[2,2,2]} @max3d
    %a: fp32[1,3,4,4,5] = AveragePool(%p) {ceil_mode=1, kernel_shape=[3,3,3], pads=[1,1,1,1,1,1], strides=[2,2,2]} @avg3d
    output %y, %m, %a)IR"),
              Precision::fp32, 1e-4, 1e-5);
}

// ConvTranspose3d: stride 2 in every dim, pads 1, output_padding 1, 2 groups, bias:
// each dim 2*(3-1) + 1 + 3 - 2 = 6 (D from 3, H from 3, W from 3).
TEST(LoweringThreeD, ConvTransposeFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[2,4,3,3,3]
    const %w: fp32[4,3,3,3,3]
    const %b: fp32[6]
    %y: fp32[2,6,6,6,6] = ConvTranspose(%x, %w, %b) {group=2, output_padding=[1,1,1], pads=[1,1,1,1,1,1], strides=[2,2,2]} @convt3d
    output %y)IR"),
              Precision::fp32, 1e-4, 1e-5);
}

}  // namespace
}  // namespace trnsim::e2e
