// The unroll_rnn and decompose_3d graph passes on hand-written IR: the recurrent /
// 3-D nodes are gone afterwards, and the reference interpreter computes the same
// outputs before and after (its LSTM/GRU/RNN, Conv and pool kernels follow the
// ONNX spec on their own).
#include <gtest/gtest.h>

#include <string>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/unroll_rnn.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/lower/lower.h"
#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes {
namespace {

using namespace testing;

std::string dims(std::initializer_list<int64_t> d) {
  std::string s = "[";
  for (int64_t x : d) s += (s.size() > 1 ? "," : "") + std::to_string(x);
  return s + "]";
}

struct RnnCase {
  RnnCase(std::string op_, std::string dir, int layout_, bool init_ = true, bool bias_ = true,
          bool peep_ = false, std::string extra_ = "")
      : op(std::move(op_)),
        direction(std::move(dir)),
        layout(layout_),
        init(init_),
        bias(bias_),
        peep(peep_),
        extra(std::move(extra_)) {}
  std::string op;         // LSTM, GRU, RNN
  std::string direction;  // forward, reverse, bidirectional
  int layout;
  bool init;          // initial_h (and initial_c) as graph inputs
  bool bias;          // B
  bool peep;          // LSTM P
  std::string extra;  // more attributes, e.g. linear_before_reset=1
};

// X [T=3, B=2, I=5] (or [B, T, I]), H = 4; every output used.
std::string rnn_ir(const RnnCase& c) {
  const int64_t T = 3, B = 2, I = 5, H = 4;
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  const bool l1 = c.layout == 1;
  const std::string xs = l1 ? dims({B, T, I}) : dims({T, B, I});
  const std::string ss = l1 ? dims({B, D, H}) : dims({D, B, H});
  const std::string ys = l1 ? dims({B, T, D, H}) : dims({T, D, B, H});
  std::string ir = "input %x: fp32" + xs + "\n";
  ir += "const %w: fp32" + dims({D, G * H, I}) + "\n";
  ir += "const %r: fp32" + dims({D, G * H, H}) + "\n";
  ir += "const %b: fp32" + dims({D, 2 * G * H}) + "\n";
  ir += "const %p: fp32" + dims({D, 3 * H}) + "\n";
  const bool lstm = c.op == "LSTM";
  if (c.init) {
    ir += "input %h0: fp32" + ss + "\n";
    if (lstm) ir += "input %c0: fp32" + ss + "\n";
  }
  std::string outs = "%y: fp32" + ys + ", %yh: fp32" + ss;
  if (lstm) outs += ", %yc: fp32" + ss;
  std::string ins =
      "%x, %w, %r, " + std::string(c.bias ? "%b" : "_") + ", _, " + (c.init ? "%h0" : "_");
  if (lstm) ins += std::string(", ") + (c.init ? "%c0" : "_") + ", " + (c.peep ? "%p" : "_");
  ir += outs + " = " + c.op + "(" + ins + ") {direction=\"" + c.direction +
        "\", hidden_size=" + std::to_string(H) + ", layout=" + std::to_string(c.layout) +
        (c.extra.empty() ? "" : ", " + c.extra) + "} @rnn\n";
  ir += std::string("output %y, %yh") + (lstm ? ", %yc" : "") + "\n";
  return ir;
}

void check_unrolled(const RnnCase& c) {
  SCOPED_TRACE(c.op + " " + c.direction + " layout " + std::to_string(c.layout) + " " + c.extra);
  ir::Graph g = parse_body(rnn_ir(c));
  fill_constants(g, 3, -0.6f, 0.6f);
  PassContext ctx;
  ctx.precision = Precision::fp32;
  ir::Graph out = run_on_copy(g, {"unroll_rnn"}, &ctx);
  EXPECT_EQ(count_op(out, c.op), 0);
  EXPECT_EQ(ctx.stats["unroll_rnn." + c.op], 1);
  expect_same_outputs(g, out, 2e-6);
  // canonicalize folds the weight slicing; outputs keep their names and values.
  ir::Graph canon_out = run_on_copy(g, {"unroll_rnn", "canonicalize"});
  if (c.layout == 0) {
    EXPECT_EQ(count_op(canon_out, "Transpose"), 0);
  }
  expect_same_outputs(g, canon_out, 2e-6);
}

TEST(GraphPassesUnrollRnn, LstmDirectionsAndLayouts) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (int layout : {0, 1}) check_unrolled({"LSTM", dir, layout});
}

TEST(GraphPassesUnrollRnn, LstmPeepholesNoBiasZeroState) {
  check_unrolled({"LSTM", "bidirectional", 0, false, false, true});
  check_unrolled({"LSTM", "forward", 1, true, true, true});
}

TEST(GraphPassesUnrollRnn, GruLinearBeforeReset) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (int lbr : {0, 1}) {
      check_unrolled(
          {"GRU", dir, 0, true, true, false, "linear_before_reset=" + std::to_string(lbr)});
      check_unrolled(
          {"GRU", dir, 1, false, true, false, "linear_before_reset=" + std::to_string(lbr)});
    }
}

TEST(GraphPassesUnrollRnn, RnnTanhReluAndOtherActivations) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    check_unrolled({"RNN", dir, 0});
    const bool bi = std::string(dir) == "bidirectional";
    check_unrolled({"RNN", dir, 1, false, false, false,
                    std::string("activations=\"Relu") + (bi ? ",Relu" : "") + "\""});
  }
  check_unrolled({"RNN", "bidirectional", 0, true, true, false,
                  "activations=\"LeakyRelu,ScaledTanh\", activation_alpha=[0.2, 0.7], "
                  "activation_beta=[0.0, 1.5]"});
  check_unrolled({"LSTM", "forward", 0, true, true, false,
                  "activations=\"HardSigmoid,Affine,Softsign\", activation_alpha=[0.3, 0.5, "
                  "0.0], activation_beta=[0.4, 0.1, 0.0]"});
  check_unrolled({"GRU", "forward", 0, true, true, false,
                  "activations=\"Sigmoid,Elu\", activation_alpha=[0.0, 0.8], "
                  "activation_beta=[0.0, 0.0]"});
}

TEST(GraphPassesUnrollRnn, ConstantFullSequenceLensUnrolls) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[3,2,5]
    const %w: fp32[1,4,5]
    const %r: fp32[1,4,4]
    const %lens: int32[2] = [3, 3]
    %y: fp32[3,1,2,4], %yh: fp32[1,2,4] = RNN(%x, %w, %r, _, %lens) {hidden_size=4} @rnn
    output %yh)IR");
  fill_constants(g, 5);
  ir::Graph out = run_on_copy(g, {"unroll_rnn"});
  EXPECT_EQ(count_op(out, "RNN"), 0);
  // Y is not read: no Concat of the steps is built.
  EXPECT_EQ(count_op(out, "Concat"), 0);
  expect_same_outputs(g, out, 2e-6);
}

// What the pass leaves whole is refused by the lowering with the reason.
void expect_refused(const std::string& body, const std::string& what) {
  SCOPED_TRACE(what);
  ir::Graph g = parse_body(body);
  fill_constants(g, 5);
  ir::Graph out = run_on_copy(g, {"unroll_rnn"});
  ASSERT_EQ(out.num_nodes(), 1u);
  EXPECT_NE(rnn_unroll_refusal(*out.nodes()[0]).find(what), std::string::npos);
  try {
    lower::lower_graph(out, compiler::Target{});
    FAIL() << "lowered a node the pass refused";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'rnn'"), std::string::npos) << e.what();
  }
}

TEST(GraphPassesUnrollRnn, RefusedByName) {
  expect_refused(R"IR(
    input %x: fp32[3,2,5]
    const %w: fp32[1,4,5]
    const %r: fp32[1,4,4]
    %y: fp32[3,1,2,4], %yh: fp32[1,2,4] = RNN(%x, %w, %r) {clip=1.5, hidden_size=4} @rnn
    output %y)IR",
                 "'clip'");
  expect_refused(R"IR(
    input %x: fp32[3,2,5]
    const %w: fp32[1,4,5]
    const %r: fp32[1,4,4]
    const %lens: int32[2] = [3, 2]
    %y: fp32[3,1,2,4], %yh: fp32[1,2,4] = RNN(%x, %w, %r, _, %lens) {hidden_size=4} @rnn
    output %y)IR",
                 "'sequence_lens'");
  expect_refused(R"IR(
    input %x: fp32[3,2,5]
    input %lens: int32[2]
    const %w: fp32[1,4,5]
    const %r: fp32[1,4,4]
    %y: fp32[3,1,2,4], %yh: fp32[1,2,4] = RNN(%x, %w, %r, _, %lens) {hidden_size=4} @rnn
    output %y)IR",
                 "'sequence_lens'");
  expect_refused(R"IR(
    input %x: fp32[3,2,5]
    const %w: fp32[1,16,5]
    const %r: fp32[1,16,4]
    %y: fp32[3,1,2,4], %yh: fp32[1,2,4], %yc: fp32[1,2,4] = LSTM(%x, %w, %r) {hidden_size=4, input_forget=1} @rnn
    output %y)IR",
                 "'input_forget'");
  expect_refused(R"IR(
    input %x: fp32[1025,1,2]
    const %w: fp32[1,1,2]
    const %r: fp32[1,1,1]
    %y: fp32[1025,1,1,1], %yh: fp32[1,1,1] = RNN(%x, %w, %r) {hidden_size=1} @rnn
    output %y)IR",
                 "unroll limit");
}

// ---------------------------------------------------------------------------
// decompose_3d

void check_3d(const std::string& body, const std::string& op) {
  ir::Graph g = parse_body(body);
  fill_constants(g, 9, -0.5f, 0.5f);
  PassContext ctx;
  ctx.precision = Precision::fp32;
  ir::Graph out = run_on_copy(g, {"decompose_3d"}, &ctx);
  for (const auto& n : out.nodes()) {
    if (n->op == op) {
      EXPECT_EQ(n->inputs[0]->rank(), 4) << ir::print_graph(out);
    }
  }
  EXPECT_EQ(ctx.stats["decompose_3d." + op], 1);
  expect_same_outputs(g, out, 2e-6);
  expect_same_outputs(g, run_on_copy(out, {"canonicalize"}), 2e-6);
}

TEST(GraphPassesDecompose3d, ConvStridesPadsDilationsGroups) {
  // Kernel 2x2x3, strides (2,1,2), dilations (2,1,1), uneven pads, 2 groups.
  check_3d(R"IR(
    input %x: fp32[2,4,7,6,7]
    const %w: fp32[6,2,2,2,3]
    const %b: fp32[6]
    %y: fp32[2,6,4,6,3] = Conv(%x, %w, %b) {dilations=[2,1,1], group=2, pads=[1,1,0,1,0,1], strides=[2,1,2]} @conv
    output %y)IR",
           "Conv");
  check_3d(R"IR(
    input %x: fp32[1,3,4,5,5]
    const %w: fp32[2,3,3,3,3]
    %y: fp32[1,2,2,3,3] = Conv(%x, %w) @conv
    output %y)IR",
           "Conv");
}

TEST(GraphPassesDecompose3d, ConvTransposeStridesPadsOutputPaddingGroups) {
  // D: 2*(4-1) + 1 + (3-1)*2 + 1 - 1 - 2 = 9; H: 1*(5-1) + 2 - 0 = 6;
  // W: 3*(3-1) + 1 + 2 - 1 - 1 = 7.
  check_3d(R"IR(
    input %x: fp32[2,4,4,5,3]
    const %w: fp32[4,3,3,2,2]
    const %b: fp32[6]
    %y: fp32[2,6,9,6,7] = ConvTranspose(%x, %w, %b) {dilations=[2,1,1], group=2, output_padding=[1,0,1], pads=[1,0,1,2,0,1], strides=[2,1,3]} @convt
    output %y)IR",
           "ConvTranspose");
  // Pads larger than the first taps' reach: those taps are cut, not shifted in.
  check_3d(R"IR(
    input %x: fp32[1,2,3,4,4]
    input %w: fp32[2,2,3,3,3]
    %y: fp32[1,2,1,7,7] = ConvTranspose(%x, %w) {pads=[3,1,1,1,1,1], strides=[1,2,2]} @convt
    output %y)IR",
           "ConvTranspose");
}

TEST(GraphPassesDecompose3d, MaxPoolPadsCeilDilations) {
  check_3d(R"IR(
    input %x: fp32[2,3,7,6,5]
    %y: fp32[2,3,4,3,2] = MaxPool(%x) {ceil_mode=1, dilations=[1,1,2], kernel_shape=[3,2,2], pads=[1,0,0,1,0,0], strides=[2,2,2]} @pool
    output %y)IR",
           "MaxPool");
}

TEST(GraphPassesDecompose3d, AveragePoolCountIncludePad) {
  for (int inc : {0, 1})
    check_3d(R"IR(
    input %x: fp32[1,2,5,6,5]
    %y: fp32[1,2,3,4,3] = AveragePool(%x) {ceil_mode=1, count_include_pad=)IR" +
                 std::to_string(inc) +
                 R"IR(, kernel_shape=[3,3,2], pads=[1,1,1,1,1,0], strides=[2,2,2]} @pool
    output %y)IR",
             "AveragePool");
}

}  // namespace
}  // namespace trnsim::graph_passes
