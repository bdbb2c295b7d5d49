// A LayerNorm whose output only feeds MatMuls with constant weights (a transformer
// block's q/k/v projections, its MLP's first Linear) costs on the chip what a
// LayerNorm without scale and bias does: fuse_patterns folds gamma and beta into the
// weights and biases, so no parameter row is loaded and no scale/bias pass runs.
// The outputs match LayerNorm then Linear computed in double from the definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Graph;
using ir::Value;

constexpr int64_t kRows = 200, kC = 96, kN1 = 64, kN2 = 48;

std::vector<float> values(const ir::Shape& s, uint32_t seed, float lo, float hi) {
  return random_tensor(s, seed, lo, hi).floats();
}

struct Block {
  std::vector<float> gamma, beta, w1, b1, w2, b2;
};

Block block() {
  return {values({kC}, 11, 0.5f, 1.5f),       values({kC}, 12, -0.5f, 0.5f),
          values({kC, kN1}, 13, -0.3f, 0.3f), values({kN1}, 14, -0.2f, 0.2f),
          values({kC, kN2}, 15, -0.3f, 0.3f), values({kN2}, 16, -0.2f, 0.2f)};
}

// y = LayerNorm(x) [* gamma + beta]; y @ w1 + b1 and y @ w2 + b2, constants as a
// torch export gives them.
Graph graph(const Block& p, bool affine) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {kRows, kC}});
  auto c = [&](const char* name, ir::Shape s, const std::vector<float>& v) {
    return g.add_constant(name, Tensor::from_floats(std::move(s), v));
  };
  std::vector<Value*> ln_in{x};
  if (affine) ln_in = {x, c("gamma", {kC}, p.gamma), c("beta", {kC}, p.beta)};
  if (!affine)  // onnx LayerNormalization needs a scale: ones
    ln_in = {x, c("ones", {kC}, std::vector<float>(kC, 1.0f))};
  Value* y =
      ir::make_node(g, "LayerNormalization", ln_in, {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}})
          ->outputs[0];
  auto linear = [&](const char* w, const char* b, int64_t n, const std::vector<float>& wv,
                    const std::vector<float>& bv) {
    Value* m = ir::make_node(g, "MatMul", {y, c(w, {kC, n}, wv)})->outputs[0];
    return ir::make_node(g, "Add", {m, c(b, {n}, bv)})->outputs[0];
  };
  g.add_output(linear("w1", "b1", kN1, p.w1, p.b1));
  g.add_output(linear("w2", "b2", kN2, p.w2, p.b2));
  return g;
}

// LayerNorm then Linear from the definitions, in double.
std::vector<float> reference(const std::vector<float>& x, const Block& p,
                             const std::vector<float>& w, const std::vector<float>& b, int64_t n) {
  std::vector<float> out(static_cast<size_t>(kRows * n));
  std::vector<double> y(static_cast<size_t>(kC));
  for (int64_t r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < kC; ++k) mean += x[r * kC + k];
    mean /= kC;
    for (int64_t k = 0; k < kC; ++k) var += (x[r * kC + k] - mean) * (x[r * kC + k] - mean);
    var /= kC;
    for (int64_t k = 0; k < kC; ++k)
      y[k] = (x[r * kC + k] - mean) / std::sqrt(var + 1e-5) * p.gamma[k] + p.beta[k];
    for (int64_t j = 0; j < n; ++j) {
      double s = b[j];
      for (int64_t k = 0; k < kC; ++k) s += y[k] * w[k * n + j];
      out[r * n + j] = static_cast<float>(s);
    }
  }
  return out;
}

TEST(NormFold, LayerNormAffineCostsNothingBeforeMatMuls) {
  const Block p = block();
  const platform::platform_config cfg = platform::load_config("tiny");
  runtime::Device dev(cfg);  // one device per process (SystemC)
  const std::vector<float> x = values({kRows, kC}, 1, -2.0f, 2.0f);
  auto run = [&](bool affine, std::map<std::string, double>& stats) {
    compiler::CompileOnnxOptions o;
    o.precision = Precision::bf16;
    o.target = runtime::target_from_config(cfg);
    Graph g = graph(p, affine);
    compiler::run_graph_pipeline(g, o, nullptr);
    const isa::Program prog = compiler::generate(g, o, nullptr, &stats);
    runtime::Launch l{&prog, {}, 0};
    l.inputs["x"] = runtime::HostTensor::from_float({kRows, kC}, isa::DType::fp32, x);
    return dev.run({l});
  };
  std::map<std::string, double> s_aff, s_plain;
  const runtime::RunReport aff = run(true, s_aff);
  const runtime::RunReport plain = run(false, s_plain);
  // Without the fold the affine norm loads gamma and beta broadcast to every
  // partition it uses and runs a multiply and an add over the activation.
  EXPECT_EQ(aff.hbm_read_bytes, plain.hbm_read_bytes);
  EXPECT_EQ(aff.hbm_write_bytes, plain.hbm_write_bytes);
  EXPECT_EQ(aff.instructions, plain.instructions);
  std::printf("[norm_fold] affine: %llu instructions, %llu HBM bytes read, %.0f ns\n",
              static_cast<unsigned long long>(aff.instructions),
              static_cast<unsigned long long>(aff.hbm_read_bytes), aff.simulated_ns);
  const auto& outs = aff.launches.at(0).outputs;
  ASSERT_EQ(outs.size(), 2u);
  // bf16 operands: each product term is rounded to 8 bits of mantissa.
  std::vector<std::vector<float>> want{reference(x, p, p.w1, p.b1, kN1),
                                       reference(x, p, p.w2, p.b2, kN2)};
  size_t k = 0;
  const Graph named = graph(p, true);
  for (const Value* v : named.outputs())
    expect_close(v->name, outs.at(v->name).to_float(), want[k++], 2e-2, 3e-2);
}

}  // namespace
}  // namespace trnsim::e2e
