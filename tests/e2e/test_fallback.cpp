// Host fallback: a graph with a node the chip cannot run (CumSum) is cut into
// device, host and device segments; the result equals the interpreter's, the
// fallen-back node is reported with the lowering's reason, and the link time is
// charged for exactly the values that cross. One Device per test (one process).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

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

// Integers live on the device as fp32: 4097 x 4099 = 16793603 is beyond 2^24 and
// would round to 16793604 there. The product of two inputs (each up to 2^24) is not
// provably small, so Mul and the ReduceSum over it run on the host and stay exact;
// Clip(A, 0, 100) + 1 (provably in [1, 101]) stays on the device.
TEST(Fallback, IntegersNotProvablySmallRunOnTheHost) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g;
  ir::Value* a = g.add_input("A", {ElemType::int64, {2, 3}});
  ir::Value* b = g.add_input("B", {ElemType::int64, {2, 3}});
  ir::Value* p = ir::make_node(g, "Mul", {a, b}, {}, "mul")->outputs[0];
  g.add_output(p);
  g.add_output(
      ir::make_node(g, "ReduceSum", {p}, {{"axes", std::vector<int64_t>{1}}}, "sum")->outputs[0]);
  ir::Value* am =
      ir::make_node(g, "Clip", {a}, {{"min", ir::Attribute(0.0f)}, {"max", ir::Attribute(100.0f)}},
                    "clip")
          ->outputs[0];
  ir::Value* one = g.add_constant("one", Tensor::from_ints({}, {1}));
  g.add_output(ir::make_node(g, "Add", {am, one}, {}, "next")->outputs[0]);
  interp::TensorMap in{{"A", Tensor::from_ints({2, 3}, {4097, -4097, 3, 16777216, 1, -5})},
                       {"B", Tensor::from_ints({2, 3}, {4099, 4099, 3, 2, 1, 7})}};
  const interp::TensorMap want = interp::run(g, in);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  std::set<std::string> host;
  for (const auto& f : m.fallback) host.insert(f.node);
  EXPECT_TRUE(host.count("mul")) << "Mul should fall back";
  EXPECT_TRUE(host.count("sum")) << "ReduceSum should fall back";
  EXPECT_FALSE(host.count("next")) << "Clip + 1 is provably small";
  EXPECT_FALSE(host.count("clip"));
  for (const auto& f : m.fallback) {
    if (f.node == "mul") {
      EXPECT_NE(f.reason.find("not provably within +-2^24"), std::string::npos) << f.reason;
    }
  }

  runtime::Device dev(cfg);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  for (const ir::Value* o : m.graph.outputs())
    EXPECT_EQ(r.outputs.at(o->name).ints(), want.at(o->name).ints()) << o->name;
  const std::vector<int64_t> prod = {16793603, -16793603, 9, 33554432, 1, -35};
  EXPECT_EQ(r.outputs.at(m.graph.outputs()[0]->name).ints(), prod);
  EXPECT_EQ(r.outputs.at(m.graph.outputs()[1]->name).ints(), (std::vector<int64_t>{9, 33554398}));

  // Without fallback the refusal names the node.
  ir::Graph g2;
  ir::Value* a2 = g2.add_input("A", {ElemType::int64, {2, 3}});
  g2.add_output(ir::make_node(g2, "Mul", {a2, a2}, {}, "square")->outputs[0]);
  try {
    compiler::compile_partitioned(std::move(g2), fp32_options(cfg), false);
    FAIL() << "expected an UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'square'"), std::string::npos) << e.what();
  }
}

// Gather of indices known only at run time: the device cannot check them (an index
// out of range would silently give a zero row), so unless they are provably in range
// the Gather runs on the host, whose interpreter refuses a bad index naming the node.
TEST(Fallback, RuntimeGatherIndicesAreCheckedOnTheHost) {
  const platform::platform_config cfg = platform::load_config("tiny");
  auto graph = [] {
    ir::Graph g;
    ir::Value* idx = g.add_input("idx", {ElemType::int64, {3}});
    ir::Value* table = g.add_constant("table", random_tensor({10, 4}, 5));
    ir::Value* e =
        ir::make_node(g, "Gather", {table, idx}, {{"axis", int64_t{0}}}, "embed")->outputs[0];
    g.add_output(ir::make_node(g, "Relu", {e})->outputs[0]);
    return g;
  };
  compiler::PartitionedModel m = compiler::compile_partitioned(graph(), fp32_options(cfg), true);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].node, "embed");
  EXPECT_NE(m.fallback[0].reason.find("not provably in [-10, 9]"), std::string::npos)
      << m.fallback[0].reason;
  runtime::Device dev(cfg);
  interp::TensorMap good{{"idx", Tensor::from_ints({3}, {0, -10, 9})}};
  const interp::TensorMap want = interp::run(m.graph, good);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, good);
  const ir::Value* out = m.graph.outputs().at(0);
  EXPECT_EQ(r.outputs.at(out->name).floats(), want.at(out->name).floats());
  try {
    runtime::run_partitioned(dev, cfg, m, {{"idx", Tensor::from_ints({3}, {0, 10, 1})}});
    FAIL() << "expected an error for index 10";
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'embed'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 10 is out of range"), std::string::npos)
        << e.what();
  }
  try {
    compiler::compile_partitioned(graph(), fp32_options(cfg), false);
    FAIL() << "expected an UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'embed'"), std::string::npos) << e.what();
  }
}

// Integers cross the host<->device link and the run's output boundary as fp32: an
// exact host result beyond 2^24 is an error naming the tensor, not rounded.
TEST(Fallback, IntegerBeyond2e24IsNotRoundedAtTheBoundary) {
  isa::TensorDecl d;
  d.name = "p";
  d.shape = {2};
  d.dtype = isa::DType::fp32;
  d.role = isa::TensorRole::output;
  EXPECT_EQ(runtime::to_device(Tensor::from_ints({2}, {16777216, -16777216}), d).to_float(),
            (std::vector<float>{16777216.0f, -16777216.0f}));
  try {
    runtime::to_device(Tensor::from_ints({2}, {1, 16793603}), d);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'p': element 1 (16793603)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trnsim::e2e
