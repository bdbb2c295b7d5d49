// Reference interpreter: matmul, convolution, pooling, normalisation and softmax
// on small hand-computed cases, plus conv checked against a direct loop.
#include <random>

#include "compiler/ir/ops.h"
#include "tests/compiler/interp_test_util.h"

namespace trnsim::ir::testing {
namespace {

TEST(InterpMatMul, BatchedBroadcastAnd1D) {
  const std::string body = R"(input %a: fp32[2,2,3]
input %b: fp32[3,2]
input %v: fp32[3]
%y: fp32[2,2,2] = MatMul(%a, %b)
%vb: fp32[2] = MatMul(%v, %b)
%av: fp32[2,2] = MatMul(%a, %v)
output %y, %vb, %av)";
  // a[0] = [[1,2,3],[4,5,6]], a[1] = [[1,0,0],[0,1,0]]; b = [[1,0],[0,1],[1,1]] is
  // shared by both batches: a[0] @ b = [[1+3, 2+3], [4+6, 5+6]]; a[1] @ b picks rows.
  auto out = run_ir(body, {{"a", F({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0})},
                           {"b", F({3, 2}, {1, 0, 0, 1, 1, 1})},
                           {"v", F({3}, {1, 1, 1})}});
  expect_floats(out.at("y"), {4, 5, 10, 11, 1, 0, 0, 1});
  expect_floats(out.at("vb"), {2, 2});         // [1,1,1] @ b = column sums
  expect_floats(out.at("av"), {6, 15, 1, 1});  // row sums of each matrix
  // Integer matmul.
  Tensor yi = run_y(
      "input %a: int32[1,2]\ninput %b: int32[2,1]\n%y: int32[1,1] = MatMul(%a, %b)\noutput %y",
      {{"a", I({1, 2}, {3, -4}, ElemType::int32)}, {"b", I({2, 1}, {5, 6}, ElemType::int32)}});
  expect_ints(yi, {3 * 5 - 4 * 6});
}

TEST(InterpMatMul, GemmTransposesAndScales) {
  // A [3,2] with transA -> [[1,3,5],[2,4,6]]; B [2,3] with transB -> [[1,0],[0,1],[1,1]].
  // A'B' = [[1+5, 3+5], [2+6, 4+6]] = [[6,8],[8,10]]; * alpha 2 -> [[12,16],[16,20]];
  // + beta 0.5 * C (C = [1,-1] broadcast over rows) -> [[12.5,15.5],[16.5,19.5]].
  Tensor y = run_y(R"(input %a: fp32[3,2]
input %b: fp32[2,3]
const %c: fp32[2] = [1, -1]
%y: fp32[2,2] = Gemm(%a, %b, %c) {transA=1, transB=1, alpha=2.0, beta=0.5}
output %y)",
                   {{"a", F({3, 2}, {1, 2, 3, 4, 5, 6})}, {"b", F({2, 3}, {1, 0, 1, 0, 1, 1})}});
  expect_floats(y, {12.5f, 15.5f, 16.5f, 19.5f});
}

Tensor conv(const std::string& attrs, const Tensor& x, const Tensor& w, const std::string& out,
            const Tensor* b = nullptr) {
  std::string body = "input %x: " + x.type().str() + "\ninput %w: " + w.type().str() + "\n";
  if (b) body += "input %b: " + b->type().str() + "\n";
  body +=
      "%y: " + out + " = Conv(%x, %w" + std::string(b ? ", %b" : "") + ") " + attrs + "\noutput %y";
  interp::TensorMap in{{"x", x}, {"w", w}};
  if (b) in["b"] = *b;
  return run_y(body, in);
}

TEST(InterpConv, HandComputed2D) {
  Tensor x = F({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor diag = F({1, 1, 2, 2}, {1, 0, 0, 1});  // sums each window's diagonal
  // No padding: (1+5, 2+6, 4+8, 5+9), plus bias 1.
  Tensor b = F({1}, {1});
  expect_floats(conv("", x, diag, "fp32[1,1,2,2]", &b), {7, 9, 13, 15});
  // pads 1, stride 2: windows start at padded (-1,-1), (-1,1), (1,-1), (1,1); their
  // diagonals hold (pad, 1), (pad, 3), (pad, 7), (5, 9).
  expect_floats(conv("{pads=[1,1,1,1], strides=[2,2]}", x, diag, "fp32[1,1,2,2]"), {1, 3, 7, 14});
  // dilation 2: the 2x2 kernel spans 3x3 and reads corners (0,0) and (2,2): 1 + 9.
  expect_floats(conv("{dilations=[2,2]}", x, diag, "fp32[1,1,1,1]"), {10});
  // Asymmetric pads [top=0,left=0,bottom=1,right=1]: a 3x3 output whose last row
  // and column pair the top-left element with a pad zero: 1+5, 2+6, 3+0, 4+8, 5+9,
  // 6+0, 7+0, 8+0, 9+0.
  expect_floats(conv("{pads=[0,0,1,1]}", x, diag, "fp32[1,1,3,3]"), {6, 8, 3, 12, 14, 6, 7, 8, 9});
}

TEST(InterpConv, HandComputed1DAndGroups) {
  // [1,0,-1] over [0,1,2,3,4,5,0] (pads 1): p[i] - p[i+2].
  expect_floats(
      conv("{pads=[1,1]}", F({1, 1, 5}, {1, 2, 3, 4, 5}), F({1, 1, 3}, {1, 0, -1}), "fp32[1,1,5]"),
      {-2, -2, -2, -2, 4});
  // Depthwise (group = channels): channel 0 scaled by 2, channel 1 by -1.
  expect_floats(conv("{group=2}", F({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                     F({2, 1, 1, 1}, {2, -1}), "fp32[1,2,2,2]"),
                {2, 4, 6, 8, -5, -6, -7, -8});
}

// Direct convolution (no im2col) as an independent reference.
std::vector<float> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b,
                               const WindowGeometry& g, int64_t group, const Shape& out) {
  const size_t k = g.kernel.size();
  const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], Cg = C / group,
                Mg = M / group;
  std::vector<float> y(num_elements(out), 0.0f);
  std::vector<int64_t> xs = strides_of(x.shape()), ws = strides_of(w.shape()), ys = strides_of(out);
  std::vector<int64_t> o(k), kk(k);
  int64_t P = 1, KK = 1;
  for (size_t d = 0; d < k; ++d) P *= g.out[d], KK *= g.kernel[d];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < P; ++p) {
        for (int64_t r = p, d = static_cast<int64_t>(k) - 1; d >= 0; --d)
          o[d] = r % g.out[d], r /= g.out[d];
        double acc = b.floats()[m];
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t q = 0; q < KK; ++q) {
            for (int64_t r = q, d = static_cast<int64_t>(k) - 1; d >= 0; --d)
              kk[d] = r % g.kernel[d], r /= g.kernel[d];
            int64_t xo = n * xs[0] + ((m / Mg) * Cg + c) * xs[1], wo = m * ws[0] + c * ws[1];
            bool inside = true;
            for (size_t d = 0; d < k; ++d) {
              int64_t i = o[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
              inside = inside && i >= 0 && i < g.in[d];
              xo += i * xs[2 + d];
              wo += kk[d] * ws[2 + d];
            }
            if (inside) acc += static_cast<double>(x.floats()[xo]) * w.floats()[wo];
          }
        int64_t yo = n * ys[0] + m * ys[1];
        for (size_t d = 0; d < k; ++d) yo += o[d] * ys[2 + d];
        y[yo] = static_cast<float>(acc);
      }
  return y;
}

TEST(InterpConv, MatchesDirectLoopOnRandomConfigs) {
  struct Cfg {
    Shape x, w;
    std::vector<int64_t> strides, pads, dilations;
    int64_t group;
  };
  const std::vector<Cfg> cfgs = {
      {{2, 3, 11}, {4, 3, 3}, {2}, {1, 2}, {1}, 1},                   // 1-D, asymmetric pads
      {{1, 4, 9, 7}, {6, 2, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2},  // groups + dilation
      {{1, 6, 8, 8}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6},  // depthwise
      {{1, 4, 6, 6}, {8, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4},  // depthwise x2 multiplier
      {{1, 2, 5, 4, 6}, {4, 1, 2, 3, 2}, {1, 2, 2}, {0, 1, 1, 1, 0, 0}, {2, 1, 1}, 2}};  // 3-D
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  auto rnd = [&](Shape s) {
    std::vector<float> v(num_elements(s));
    for (auto& e : v) e = u(rng);
    return F(std::move(s), std::move(v));
  };
  for (const Cfg& c : cfgs) {
    Graph g;
    Tensor x = rnd(c.x), w = rnd(c.w), b = rnd({c.w[0]});
    Value* xv = g.add_input("x", x.type());
    Node* n = make_node(
        g, "Conv", {xv, g.add_constant("w", w), g.add_constant("b", b)},
        {{"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}, {"group", c.group}});
    g.add_output(n->outputs[0]);
    Tensor y = interp::run(g, {{"x", x}}).at(n->outputs[0]->name);
    std::vector<float> want = direct_conv(x, w, b, window_geometry(*n), c.group, y.shape());
    SCOPED_TRACE(y.type().str());
    expect_floats(y, want, 1e-5);
  }
}

TEST(InterpConv, Transpose) {
  // Each input element stamps the kernel [1,1,1] at stride 2: x0=1 at 0..2, x1=2 at
  // 2..4 -> [1,1,1+2,2,2].
  const std::string head = "input %x: fp32[1,1,2]\nconst %w: fp32[1,1,3] = [1, 1, 1]\n";
  interp::TensorMap in{{"x", F({1, 1, 2}, {1, 2})}};
  expect_floats(
      run_y(head + "%y: fp32[1,1,5] = ConvTranspose(%x, %w) {strides=[2]}\noutput %y", in),
      {1, 1, 3, 2, 2});
  // pads crop one element from each end; output_padding adds one at the end.
  expect_floats(
      run_y(head + "%y: fp32[1,1,3] = ConvTranspose(%x, %w) {strides=[2], pads=[1,1]}\noutput %y",
            in),
      {1, 3, 2});
  expect_floats(run_y(head + "%y: fp32[1,1,6] = ConvTranspose(%x, %w) {strides=[2], "
                             "output_padding=[1]}\noutput %y",
                      in),
                {1, 1, 3, 2, 2, 0});
}

TEST(InterpPool, MaxPool) {
  std::vector<float> v16(16), v25(25);
  for (int i = 0; i < 16; ++i) v16[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 25; ++i) v25[i] = static_cast<float>(i + 1);
  interp::TensorMap in{{"x", F({1, 1, 4, 4}, v16)}};
  const std::string x4 = "input %x: fp32[1,1,4,4]\n";
  // 2x2 stride 2 on 1..16: the bottom-right of each block.
  expect_floats(
      run_y(x4 + "%y: fp32[1,1,2,2] = MaxPool(%x) {kernel_shape=[2,2], strides=[2,2]}\noutput %y",
            in),
      {6, 8, 14, 16});
  // 3x3 stride 2 pads 1: windows at -1 and 1; padding never wins.
  expect_floats(run_y(x4 + "%y: fp32[1,1,2,2] = MaxPool(%x) {kernel_shape=[3,3], strides=[2,2], "
                           "pads=[1,1,1,1]}\noutput %y",
                      in),
                {6, 8, 14, 16});
  // Dilation 2: a 2x2 kernel reads (i,j), (i,j+2), (i+2,j), (i+2,j+2).
  expect_floats(
      run_y(x4 + "%y: fp32[1,1,2,2] = MaxPool(%x) {kernel_shape=[2,2], dilations=[2,2]}\noutput %y",
            in),
      {11, 12, 15, 16});
  // ceil_mode on 5x5, 2x2 stride 2: ceil(3/2)+1 = 3 windows per dim, the last one
  // covering only row/col 4.
  expect_floats(run_y("input %x: fp32[1,1,5,5]\n%y: fp32[1,1,3,3] = MaxPool(%x) "
                      "{kernel_shape=[2,2], strides=[2,2], "
                      "ceil_mode=1}\noutput %y",
                      {{"x", F({1, 1, 5, 5}, v25)}}),
                {7, 9, 10, 17, 19, 20, 22, 24, 25});
  // A window entirely in the padding (pads >= kernel) yields -inf: [pad, 5, pad].
  expect_floats(run_y("input %x: fp32[1,1,1]\n%y: fp32[1,1,3] = MaxPool(%x) {kernel_shape=[1], "
                      "pads=[1,1]}\noutput %y",
                      {{"x", F({1, 1, 1}, {5})}}),
                {-INFINITY, 5, -INFINITY});
}

TEST(InterpPool, AveragePoolPaddingRules) {
  interp::TensorMap in{{"x", F({1, 1, 3}, {1, 2, 3})}};
  const std::string pre =
      "input %x: fp32[1,1,3]\n%y: fp32[1,1,4] = AveragePool(%x) {kernel_shape=[2], pads=[1,1]";
  // Windows [-1,0], [0,1], [1,2], [2,3]. Excluding pads: 1, 1.5, 2.5, 3.
  expect_floats(run_y(pre + "}\noutput %y", in), {1, 1.5f, 2.5f, 3});
  // Including pads (zeros count in the divisor): 0.5, 1.5, 2.5, 1.5.
  expect_floats(run_y(pre + ", count_include_pad=1}\noutput %y", in), {0.5f, 1.5f, 2.5f, 1.5f});
  // ceil_mode without pads: the last window [4,5] hangs past the end and averages
  // only what is inside, even with count_include_pad: (1+2)/2, (3+4)/2, 5/1.
  expect_floats(run_y("input %x: fp32[1,1,5]\n%y: fp32[1,1,3] = AveragePool(%x) {kernel_shape=[2], "
                      "strides=[2], "
                      "ceil_mode=1, count_include_pad=1}\noutput %y",
                      {{"x", F({1, 1, 5}, {1, 2, 3, 4, 5})}}),
                {1.5f, 3.5f, 5});
}

TEST(InterpPool, GlobalPools) {
  const std::string body = R"(input %x: fp32[1,2,2,2]
%a: fp32[1,2,1,1] = GlobalAveragePool(%x)
%m: fp32[1,2,1,1] = GlobalMaxPool(%x)
output %a, %m)";
  auto out = run_ir(body, {{"x", F({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  expect_floats(out.at("a"), {2.5f, 6.5f});
  expect_floats(out.at("m"), {4, 8});
}

TEST(InterpNorm, BatchAndInstanceNormalization) {
  // Channel 0: (x - 1) / sqrt(4) * 1 + 0 -> 0, 0.5.
  // Channel 1: (x - 3) / sqrt(0.25) * 2 + 1 -> 1, 5.
  Tensor y = run_y(R"(input %x: fp32[1,2,1,2]
const %s: fp32[2] = [1, 2]
const %b: fp32[2] = [0, 1]
const %m: fp32[2] = [1, 3]
const %v: fp32[2] = [4, 0.25]
%y: fp32[1,2,1,2] = BatchNormalization(%x, %s, %b, %m, %v) {epsilon=0.0}
output %y)",
                   {{"x", F({1, 2, 1, 2}, {1, 2, 3, 4})}});
  expect_floats(y, {0, 0.5f, 1, 5});
  // Instance norm: channel 0 [1,3] (mean 2, var 1) -> [-1,1]; channel 1 [0,4]
  // (mean 2, var 4) -> [-1,1] * 2.
  Tensor z = run_y(R"(input %x: fp32[1,2,2]
const %s: fp32[2] = [1, 2]
const %b: fp32[2] = [0, 0]
%y: fp32[1,2,2] = InstanceNormalization(%x, %s, %b) {epsilon=0.0}
output %y)",
                   {{"x", F({1, 2, 2}, {1, 3, 0, 4})}});
  expect_floats(z, {-1, 1, -2, 2});
}

TEST(InterpNorm, LayerNormalization) {
  // Rows [1,3] (mean 2, var 1, inv std 1) and [2,6] (mean 4, var 4, inv std 0.5)
  // both normalise to [-1,1]; * scale [2,1] + bias [0,1] -> [-2, 2].
  auto out = run_ir(R"(input %x: fp32[2,2]
const %s: fp32[2] = [2, 1]
const %b: fp32[2] = [0, 1]
%y: fp32[2,2], %mean: fp32[2,1], %inv: fp32[2,1] = LayerNormalization(%x, %s, %b) {epsilon=0.0}
output %y, %mean, %inv)",
                    {{"x", F({2, 2}, {1, 3, 2, 6})}});
  expect_floats(out.at("y"), {-2, 2, -2, 2});
  expect_floats(out.at("mean"), {2, 4});
  expect_floats(out.at("inv"), {1, 0.5f});
  // axis 0 normalises over everything: mean 3, var (4+0+1+9)/4 = 3.5, inv std
  // 1/sqrt(3.5) = 0.534522484.
  Tensor y = run_y(R"(input %x: fp32[2,2]
const %s: fp32[1] = [1]
%y: fp32[2,2] = LayerNormalization(%x, %s) {axis=0, epsilon=0.0}
output %y)",
                   {{"x", F({2, 2}, {1, 3, 2, 6})}});
  expect_floats(y, {-2 * 0.534522484f, 0, -0.534522484f, 3 * 0.534522484f});
}

TEST(InterpSoftmax, AxesAndVariants) {
  interp::TensorMap in{{"x", F({2, 3}, {0, 0, 0, 1, 2, 3})}};
  auto out = run_ir(R"(input %x: fp32[2,3]
%s1: fp32[2,3] = Softmax(%x)
%s0: fp32[2,3] = Softmax(%x) {axis=0}
%l1: fp32[2,3] = LogSoftmax(%x)
%h: fp32[2,3] = Hardmax(%x)
output %s1, %s0, %l1, %h)",
                    in);
  // Row [1,2,3]: e^(x-3) = [e^-2, e^-1, 1] / 1.503214724.
  expect_floats(out.at("s1"),
                {1.0f / 3, 1.0f / 3, 1.0f / 3, 0.0900305732f, 0.244728471f, 0.665240956f});
  // Columns [0,1], [0,2], [0,3]: [1, e^k] / (1 + e^k).
  expect_floats(out.at("s0"), {0.268941421f, 0.119202922f, 0.0474258732f, 0.731058579f,
                               0.880797078f, 0.952574127f});
  // log softmax = x - max - log(sum e^(x - max)); log(1.503214724) = 0.407605964.
  expect_floats(out.at("l1"), {-1.09861229f, -1.09861229f, -1.09861229f, -2.40760596f, -1.40760596f,
                               -0.407605964f});
  expect_floats(out.at("h"), {1, 0, 0, 0, 0, 1});  // first maximum wins
}

}  // namespace
}  // namespace trnsim::ir::testing
