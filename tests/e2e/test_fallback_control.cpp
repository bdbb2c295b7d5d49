// Host decisions: an If between two matmuls whose condition is a run-time value is
// decided on the host, and the chosen branch (compiled ahead) runs on the device
// like the matmuls; the result equals the interpreter's for either branch. One
// Device per test.
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

TEST(FallbackControl, IfBranchRunsOnTheDeviceBetweenDeviceSegments) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  const ir::Graph g = if_graph();
  compiler::PartitionedModel m = compiler::compile_partitioned(g.clone(), o, true);
  // The If is a host decision, not host compute; its branches' ops lower.
  EXPECT_TRUE(m.fallback.empty()) << m.fallback.at(0).reason;
  ASSERT_EQ(m.decisions.size(), 1u);
  EXPECT_EQ(m.decisions[0].op, "If");
  EXPECT_EQ(m.decisions[0].node, "choose");
  ASSERT_EQ(m.segments.size(), 3u);
  EXPECT_TRUE(m.segments.front().on_device);
  EXPECT_TRUE(m.segments.back().on_device);
  const compiler::Segment& d = m.segments[1];
  ASSERT_EQ(d.branches.size(), 2u);
  for (const compiler::Branch& b : d.branches) {
    ASSERT_EQ(b.model->segments.size(), 1u) << b.name;
    EXPECT_TRUE(b.model->segments[0].on_device) << b.name;
    EXPECT_GT(b.model->segments[0].program.instruction_count(), 0u) << b.name;
  }

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
    // Three device runs: before, the branch, after; the branch is the one the
    // condition picks, and nothing ran in the interpreter.
    ASSERT_EQ(r.segments.size(), 3u);
    EXPECT_EQ(r.segments[1].branch, c ? "then_branch" : "else_branch");
    EXPECT_EQ(r.segments[1].branch_device_segments, 1u);
    EXPECT_EQ(r.segments[1].branch_host_segments, 0u);
    EXPECT_GT(r.segments[1].simulated_ns, 0);
    EXPECT_EQ(r.device_trees.size(), 3u);
    EXPECT_DOUBLE_EQ(r.device_ns, r.segments[0].simulated_ns + r.segments[1].simulated_ns +
                                      r.segments[2].simulated_ns);
    const std::string text = runtime::format_fallback(m, r);
    EXPECT_NE(text.find("host decision: If 'choose'"), std::string::npos) << text;
    EXPECT_EQ(text.find("fell back"), std::string::npos) << text;
    EXPECT_NE(r.stats_json.find("\"branch\": \"" + r.segments[1].branch + "\""), std::string::npos);
  }
}

// X [4,8] -> If(ReduceSum(X) > 0) {Neg} else {X} -> Relu: the condition is made
// on the device, the else branch has no nodes.
ir::Graph device_condition_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {4, 8}});
  ir::Value* s =
      ir::make_node(g, "ReduceSum", {x}, {{"keepdims", ir::Attribute(int64_t{0})}})->outputs[0];
  ir::Value* zero = g.add_constant("zero", Tensor::from_floats({}, {0.0f}));
  ir::Value* c = ir::make_node(g, "Greater", {s, zero})->outputs[0];
  auto pass = std::make_shared<ir::Graph>();
  pass->name = "pass";
  pass->add_output(pass->add_input("pass_in", x->type));
  ir::Value* y =
      ir::make_node(g, "If", {c, x},
                    {{"then_branch", ir::Attribute(branch("neg", "Neg", x->type))},
                     {"else_branch", ir::Attribute(std::shared_ptr<const ir::Graph>(pass))}},
                    "choose")
          ->outputs[0];
  g.add_output(ir::make_node(g, "Relu", {y})->outputs[0]);
  return g;
}

// A branch with no nodes (its output is its captured input) and a condition
// computed on the device: the decision downloads the condition, and the empty
// branch hands its input back.
TEST(FallbackControl, IfWithAPassThroughBranchAndADeviceCondition) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  const ir::Graph g = device_condition_graph();
  compiler::PartitionedModel m = compiler::compile_partitioned(g.clone(), o, true);
  EXPECT_TRUE(m.fallback.empty());
  ASSERT_EQ(m.decisions.size(), 1u);

  runtime::Device dev(cfg);
  for (float sign : {1.0f, -1.0f}) {
    Tensor xin = random_tensor({4, 8}, 3, 0.1f, 1.0f);
    for (float& v : xin.floats()) v *= sign;
    const interp::TensorMap in{{"X", xin}};
    const interp::TensorMap want = interp::run(g, in);
    runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
    const std::string out = m.graph.outputs().at(0)->name;
    expect_close(out, r.outputs.at(out).floats(), want.at(out).floats(), 1e-5, 1e-6);
    ASSERT_EQ(r.segments.size(), 3u);
    EXPECT_EQ(r.segments[1].branch, sign > 0 ? "then_branch" : "else_branch");
    EXPECT_EQ(r.segments[1].download_bytes, 4u);  // the condition, made on the device
    EXPECT_FALSE(r.segments[1].branch_assumed);
  }
}

// Without fallback, an If is still decided on the host when both branches and every
// other node lower; a branch with a node the chip cannot run is refused by name.
TEST(FallbackControl, NoFallbackKeepsDecisionsWhoseBranchesLower) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  compiler::PartitionedModel m = compiler::compile_partitioned(if_graph(), o, false);
  EXPECT_TRUE(m.fallback.empty());
  ASSERT_EQ(m.decisions.size(), 1u);
  EXPECT_EQ(m.decisions[0].node, "choose");

  // The else branch goes through fp64, which only the host computes.
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {4}});
  ir::Value* c = g.add_input("C", {ElemType::boolean, {}});
  auto wide = std::make_shared<ir::Graph>();
  wide->name = "wide";
  ir::Value* w = wide->add_input("wide_in", x->type);
  w = ir::make_node(*wide, "Cast", {w}, {{"to", ir::Attribute("fp64")}}, "to_fp64")->outputs[0];
  w = ir::make_node(*wide, "Cast", {w}, {{"to", ir::Attribute("fp32")}}, "from_fp64")->outputs[0];
  wide->add_output(w);
  g.add_output(
      ir::make_node(g, "If", {c, x},
                    {{"then_branch", ir::Attribute(branch("neg", "Neg", x->type))},
                     {"else_branch", ir::Attribute(std::shared_ptr<const ir::Graph>(wide))}},
                    "choose_wide")
          ->outputs[0]);
  try {
    compiler::compile_partitioned(g.clone(), o, false);
    FAIL() << "expected a refusal";
  } catch (const ir::UnsupportedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("to_fp64"), std::string::npos) << msg;
    EXPECT_NE(msg.find("else_branch of If 'choose_wide'"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(compiler::compile_partitioned(g.clone(), o, true));
}

// A timing-only run computes no data on the device: a condition made there reads as
// zero, and the report says the branch taken was assumed.
TEST(FallbackControl, TimingOnlyRunSaysTheBranchIsAssumed) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  compiler::PartitionedModel m = compiler::compile_partitioned(device_condition_graph(), o, true);
  runtime::Device dev(cfg, runtime::DeviceOptions(false));
  const interp::TensorMap in{{"X", random_tensor({4, 8}, 3, 0.1f, 1.0f)}};
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  ASSERT_EQ(r.segments.size(), 3u);
  EXPECT_EQ(r.segments[1].branch, "else_branch");
  EXPECT_TRUE(r.segments[1].branch_assumed);
  const std::string text = runtime::format_fallback(m, r);
  EXPECT_NE(text.find("[assumed: the condition is a device result"), std::string::npos) << text;
  EXPECT_NE(r.stats_json.find("\"branch_assumed\": true"), std::string::npos);
}

// The runtime's host tensors are fp32: an fp64 model input or output is rounded at
// the boundary, and the report says so (the host still computes in double).
TEST(FallbackControl, Fp64InputsAndOutputsAreNamedAsRounded) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp64, {2, 3}});
  g.add_output(
      ir::make_node(g, "CumSum", {x}, {{"axis", ir::Attribute(int64_t{1})}}, "cumsum")->outputs[0]);
  compiler::PartitionedModel m = compiler::compile_partitioned(std::move(g), o, true);
  runtime::Device dev(cfg);
  const interp::TensorMap in{{"X", random_tensor({2, 3}, 4).cast(ElemType::fp64)}};
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  const std::string text = runtime::format_fallback(m, r);
  EXPECT_NE(text.find("fp64 input 'X': crosses the runtime as fp32"), std::string::npos) << text;
  EXPECT_NE(text.find("fp64 output"), std::string::npos) << text;
}

}  // namespace
}  // namespace trnsim::e2e
