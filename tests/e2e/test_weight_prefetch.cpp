// Weight prefetch across nodes (alloc_memory): the pools a matmul fills only from
// constants get memory of their own from the previous weight-loading node's start,
// so their loads may run under that node's compute. An MLP on the tiny chip gets
// such pools and still computes what double-precision loops from the definition do.
#include <gtest/gtest.h>

#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Graph;
using ir::Value;

constexpr int64_t kM = 256, kK = 128, kH = 512, kN = 128;

// x @ w1 -> Relu -> @ w2, weights constant.
Graph mlp(const std::vector<float>& w1, const std::vector<float>& w2) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {kM, kK}});
  Value* c1 = g.add_constant("w1", Tensor::from_floats({kK, kH}, w1));
  Value* c2 = g.add_constant("w2", Tensor::from_floats({kH, kN}, w2));
  Value* h = ir::make_node(g, "MatMul", {x, c1})->outputs[0];
  h = ir::make_node(g, "Relu", {h})->outputs[0];
  g.add_output(ir::make_node(g, "MatMul", {h, c2})->outputs[0]);
  return g;
}

std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w1,
                             const std::vector<float>& w2) {
  std::vector<double> h(static_cast<size_t>(kM * kH), 0.0);
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t j = 0; j < kH; ++j) {
      double s = 0;
      for (int64_t k = 0; k < kK; ++k) s += double(x[m * kK + k]) * w1[k * kH + j];
      h[m * kH + j] = s > 0 ? s : 0;
    }
  std::vector<float> out(static_cast<size_t>(kM * kN));
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t j = 0; j < kN; ++j) {
      double s = 0;
      for (int64_t k = 0; k < kH; ++k) s += h[m * kH + k] * w2[k * kN + j];
      out[m * kN + j] = static_cast<float>(s);
    }
  return out;
}

TEST(WeightPrefetch, SecondMatMulsWeightsLoadEarly) {
  const std::vector<float> w1 = random_tensor({kK, kH}, 21, -0.2f, 0.2f).floats();
  const std::vector<float> w2 = random_tensor({kH, kN}, 22, -0.2f, 0.2f).floats();
  const std::vector<float> x = random_tensor({kM, kK}, 23).floats();
  auto compile = [&](const platform::platform_config& cfg, std::map<std::string, double>& stats) {
    compiler::CompileOnnxOptions o;
    o.precision = Precision::bf16;
    o.target = runtime::target_from_config(cfg);
    Graph g = mlp(w1, w2);
    compiler::run_graph_pipeline(g, o, nullptr);
    return compiler::generate(g, o, nullptr, &stats);
  };
  const platform::platform_config cfg = platform::load_config("tiny");
  std::map<std::string, double> stats;
  const isa::Program prog = compile(cfg, stats);
  // The second matmul's weight pool lives from the first matmul's start: its
  // weights may stream in while the first one computes.
  EXPECT_GT(stats["alloc_memory.prefetch_pools"], 0);

  runtime::Device dev(cfg);
  runtime::Launch l{&prog, {}, 0};
  l.inputs["x"] = runtime::HostTensor::from_float({kM, kK}, isa::DType::fp32, x);
  const runtime::RunReport rep = dev.run({l});
  const auto& outs = rep.launches.at(0).outputs;
  ASSERT_EQ(outs.size(), 1u);
  // bf16 operands (8-bit mantissas) over sums of 128 and 512 terms.
  expect_close("y", outs.begin()->second.to_float(), reference(x, w1, w2), 3e-2, 3e-2);
}

}  // namespace
}  // namespace trnsim::e2e
