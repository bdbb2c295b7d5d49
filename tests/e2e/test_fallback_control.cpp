// Host fallback of nodes with bodies: an If between two matmuls runs on the host
// (the lowering refuses it by name) while the matmuls run on the device; the
// result equals the interpreter's for either branch. One Device per test.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "runtime/fallback.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// A branch applying `op` to its one captured input.
std::shared_ptr<const ir::Graph> branch(const std::string& name, const std::string& op,
                                        const ir::TensorType& t) {
  auto b = std::make_shared<ir::Graph>();
  b->name = name;
  ir::Value* x = b->add_input(name + "_in", t);
  b->add_output(ir::make_node(*b, op, {x}, {}, name + "_op")->outputs[0]);
  return b;
}

// X [32,48] @ W1 [48,40] -> If(C) {Neg} else {Tanh} -> Relu -> @ W2 [40,24].
ir::Graph if_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {32, 48}});
  ir::Value* c = g.add_input("C", {ElemType::boolean, {}});
  ir::Value* w1 = g.add_constant("W1", random_tensor({48, 40}, 5, -0.2f, 0.2f));
  ir::Value* w2 = g.add_constant("W2", random_tensor({40, 24}, 6, -0.2f, 0.2f));
  ir::Value* y = ir::make_node(g, "MatMul", {x, w1})->outputs[0];
  const ir::TensorType t = y->type;
  y = ir::make_node(g, "If", {c, y},
                    {{"then_branch", ir::Attribute(branch("neg", "Neg", t))},
                     {"else_branch", ir::Attribute(branch("tanh", "Tanh", t))}},
                    "choose")
          ->outputs[0];
  y = ir::make_node(g, "Relu", {y})->outputs[0];
  y = ir::make_node(g, "MatMul", {y, w2})->outputs[0];
  g.add_output(y);
  return g;
}

TEST(FallbackControl, IfRunsOnTheHostBetweenDeviceSegments) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  const ir::Graph g = if_graph();
  compiler::PartitionedModel m = compiler::compile_partitioned(g.clone(), o, true);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].op, "If");
  EXPECT_NE(m.fallback[0].reason.find("op type 'If'"), std::string::npos) << m.fallback[0].reason;
  ASSERT_GE(m.segments.size(), 3u);
  EXPECT_TRUE(m.segments.front().on_device);
  EXPECT_TRUE(m.segments.back().on_device);

  runtime::Device dev(cfg);
  for (bool c : {true, false}) {
    interp::TensorMap in{{"X", random_tensor({32, 48}, 1)},
                         {"C", Tensor::from_ints({}, {c ? 1 : 0}, ElemType::boolean)}};
    const interp::TensorMap want = interp::run(g, in);
    runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
    const std::string out = m.graph.outputs().at(0)->name;
    const auto& got = r.outputs.at(out).floats();
    const auto& exp = want.at(out).floats();
    ASSERT_EQ(got.size(), exp.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], exp[i], 1e-4 + 1e-4 * std::fabs(exp[i])) << "cond " << c << " at " << i;
  }
}

}  // namespace
}  // namespace trnsim::e2e
