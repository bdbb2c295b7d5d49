// Host fallback: a graph with a node the chip cannot run (CumSum) is cut into
// device, host and device segments; the result equals the interpreter's, the
// fallen-back node is reported with the lowering's reason, and the link time is
// charged for exactly the values that cross. One Device per test (one process).
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "runtime/fallback.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// X [64,96] @ W1 [96,80] -> CumSum(axis 1) -> Relu -> @ W2 [80,40].
ir::Graph cumsum_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {64, 96}});
  ir::Value* w1 = g.add_constant("W1", random_tensor({96, 80}, 3, -0.2f, 0.2f));
  ir::Value* w2 = g.add_constant("W2", random_tensor({80, 40}, 4, -0.2f, 0.2f));
  ir::Value* y = ir::make_node(g, "MatMul", {x, w1})->outputs[0];
  y = ir::make_node(g, "CumSum", {y}, {{"axis", int64_t{1}}})->outputs[0];
  y = ir::make_node(g, "Relu", {y})->outputs[0];
  y = ir::make_node(g, "MatMul", {y, w2})->outputs[0];
  g.add_output(y);
  return g;
}

compiler::CompileOnnxOptions fp32_options(const platform::platform_config& cfg) {
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  return o;
}

TEST(Fallback, DeviceHostDeviceMatchesInterpreter) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g = cumsum_graph();
  interp::TensorMap in{{"X", random_tensor({64, 96}, 1)}};
  const interp::TensorMap want = interp::run(g, in);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  ASSERT_EQ(m.segments.size(), 3u);
  EXPECT_TRUE(m.segments[0].on_device);
  EXPECT_FALSE(m.segments[1].on_device);
  EXPECT_TRUE(m.segments[2].on_device);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].op, "CumSum");
  EXPECT_NE(m.fallback[0].reason.find("CumSum"), std::string::npos) << m.fallback[0].reason;

  runtime::Device dev(cfg);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  const ir::Value* out = m.graph.outputs().at(0);
  const auto& got = r.outputs.at(out->name).floats();
  const auto& exp = want.at(out->name).floats();
  ASSERT_EQ(got.size(), exp.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], exp[i], 1e-4 + 1e-4 * std::fabs(exp[i]));

  // The MatMul result [64,80] fp32 goes down, the CumSum result comes back up:
  // 2 x (20480 B / link bandwidth + link latency).
  const double bytes = 64 * 80 * 4;
  EXPECT_EQ(r.transfer_bytes, uint64_t(2 * bytes));
  const double want_ns = 2 * 1e9 * (cfg.host.link_latency_s + bytes / cfg.host.link_bandwidth_bps);
  EXPECT_NEAR(r.transfer_ns, want_ns, 1e-6 * want_ns);
  EXPECT_NEAR(r.total.simulated_ns,
              r.segments[0].simulated_ns + r.segments[2].simulated_ns + r.transfer_ns, 1e-6);
  EXPECT_NE(r.stats_json.find("\"op\": \"CumSum\""), std::string::npos);
  const std::string text = runtime::format_fallback(m, r);
  EXPECT_NE(text.find("fell back"), std::string::npos) << text;
}

TEST(Fallback, RefusedWithoutFallback) {
  const platform::platform_config cfg = platform::load_config("tiny");
  try {
    compiler::compile_partitioned(cumsum_graph(), fp32_options(cfg), false);
    FAIL() << "expected an UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("CumSum"), std::string::npos) << e.what();
  }
}

// Everything lowers: one device segment, no fallback, no link time.
TEST(Fallback, WholeGraphOnDevice) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {10, 20}});
  g.add_output(ir::make_node(g, "Relu", {x})->outputs[0]);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_TRUE(m.segments[0].on_device);
  EXPECT_TRUE(m.fallback.empty());
}

}  // namespace
}  // namespace trnsim::e2e
