// Host fallback: a graph with a node the chip cannot run (Shrink) is cut into
// device, host and device segments; the result equals the interpreter's, the
// fallen-back node is reported with the lowering's reason, and the link time is
// charged for exactly the values that cross. One Device per test (one process).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "runtime/fallback.h"
#include "tests/e2e/lowering_check.h"

#include <yaml-cpp/yaml.h>

namespace trnsim::e2e {
namespace {

// X [64,96] @ W1 [96,80] -> Shrink -> Relu -> @ W2 [80,40].
ir::Graph shrink_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {64, 96}});
  ir::Value* w1 = g.add_constant("W1", random_tensor({96, 80}, 3, -0.2f, 0.2f));
  ir::Value* w2 = g.add_constant("W2", random_tensor({80, 40}, 4, -0.2f, 0.2f));
  ir::Value* y = ir::make_node(g, "MatMul", {x, w1})->outputs[0];
  y = ir::make_node(g, "Shrink", {y})->outputs[0];
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
  ir::Graph g = shrink_graph();
  interp::TensorMap in{{"X", random_tensor({64, 96}, 1)}};
  const interp::TensorMap want = interp::run(g, in);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  ASSERT_EQ(m.segments.size(), 3u);
  EXPECT_TRUE(m.segments[0].on_device);
  EXPECT_FALSE(m.segments[1].on_device);
  EXPECT_TRUE(m.segments[2].on_device);
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].op, "Shrink");
  EXPECT_NE(m.fallback[0].reason.find("Shrink"), std::string::npos) << m.fallback[0].reason;

  runtime::Device dev(cfg);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  const ir::Value* out = m.graph.outputs().at(0);
  const auto& got = r.outputs.at(out->name).floats();
  const auto& exp = want.at(out->name).floats();
  ASSERT_EQ(got.size(), exp.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], exp[i], 1e-4 + 1e-4 * std::fabs(exp[i]));

  // The MatMul result [64,80] fp32 goes down, the Shrink result comes back up:
  // 2 x (20480 B / link bandwidth + link latency).
  const double bytes = 64 * 80 * 4;
  EXPECT_EQ(r.transfer_bytes, uint64_t(2 * bytes));
  const double want_ns = 2 * 1e9 * (cfg.host.link_latency_s + bytes / cfg.host.link_bandwidth_bps);
  EXPECT_NEAR(r.transfer_ns, want_ns, 1e-6 * want_ns);
  EXPECT_NEAR(r.total.simulated_ns,
              r.segments[0].simulated_ns + r.segments[2].simulated_ns + r.transfer_ns, 1e-6);
  EXPECT_NE(r.stats_json.find("\"op\": \"Shrink\""), std::string::npos);
  const std::string text = runtime::format_fallback(m, r);
  EXPECT_NE(text.find("fell back: Shrink"), std::string::npos) << text;
}

// Every stat's dotted name in a stats JSON (its meta map).
std::set<std::string> stat_keys(const std::string& json) {
  std::set<std::string> k;
  for (const auto& kv : YAML::Load(json)["meta"]) k.insert(kv.first.as<std::string>());
  return k;
}

double stat_at(const YAML::Node& n, const std::string& dotted) {
  const auto dot = dotted.find('.');
  if (dot == std::string::npos) return n[dotted].as<double>();
  return stat_at(n[dotted.substr(0, dot)], dotted.substr(dot + 1));
}
double stat(const std::string& json, const std::string& dotted) {
  return stat_at(YAML::Load(json), dotted);
}

// The fallback run's stats tree has every key of a device run's (the device segments
// summed) and the host figures; the simulated total is device + link time.
TEST(Fallback, StatsTreeHasTheDeviceKeysAndHostFigures) {
  const platform::platform_config cfg = platform::load_config("tiny");
  interp::TensorMap in{{"X", random_tensor({64, 96}, 1)}};
  compiler::PartitionedModel m =
      compiler::compile_partitioned(shrink_graph(), fp32_options(cfg), true);
  runtime::Device dev(cfg);
  const runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  ASSERT_EQ(r.segments.size(), 3u);
  const std::string& j = r.stats_json;
  const std::string& a = r.segments[0].report.stats_json;
  const std::string& b = r.segments[2].report.stats_json;
  const std::set<std::string> keys = stat_keys(j);
  for (const std::string& k : stat_keys(a)) EXPECT_TRUE(keys.count(k)) << k;
  for (const char* k : {"flops_by_dtype.fp32", "dma.active_pct", "sbuf.high_water_bytes",
                        "psum.touched_bytes", "chip.core0.engines.tensor.instructions",
                        "host.link.time_ns", "host.compute_wall_seconds", "host.ops.Shrink"})
    EXPECT_TRUE(keys.count(k)) << k;
  // Counters are the sums of the device segments'.
  for (const char* k : {"instructions", "flops", "engines.tensor.instructions",
                        "engines.vector.busy_ns", "dma.bytes", "hbm.read_bytes",
                        "chip.core0.engines.tensor.instructions", "chip.core0.sbuf.read_bytes"})
    EXPECT_NEAR(stat(j, k), stat(a, k) + stat(b, k), 1e-6 * (1 + stat(j, k))) << k;
  EXPECT_EQ(stat(j, "sbuf.high_water_bytes"),
            std::max(stat(a, "sbuf.high_water_bytes"), stat(b, "sbuf.high_water_bytes")));
  // The total and the shares of it.
  const double total = stat(j, "simulated_ns");
  EXPECT_NEAR(total, r.total.simulated_ns, 1e-9 * total);
  EXPECT_NEAR(total, stat(j, "host.device_ns") + stat(j, "host.link.time_ns"), 1e-9 * total);
  EXPECT_NEAR(stat(j, "host.device_ns"), stat(a, "simulated_ns") + stat(b, "simulated_ns"),
              1e-9 * total);
  EXPECT_NEAR(stat(j, "dma.active_pct"), 100.0 * stat(j, "dma.active_ns") / total, 1e-9);
  EXPECT_NEAR(stat(j, "engines.tensor.active_pct"),
              100.0 * stat(j, "engines.tensor.busy_ns") / total, 1e-9);
  EXPECT_EQ(stat(j, "host.segments"), 1);
  EXPECT_EQ(stat(j, "host.device_segments"), 2);
  EXPECT_EQ(stat(j, "host.ops.Shrink"), 1);
  EXPECT_EQ(stat(j, "host.link.bytes"), 2 * 64 * 80 * 4);
  EXPECT_EQ(stat(j, "host.link.transfers"), 2);
  EXPECT_GT(stat(j, "host.compute_wall_seconds"), 0);
  const YAML::Node root = YAML::Load(j);
  EXPECT_EQ(root["meta"]["host.link.time_ns"]["unit"].as<std::string>(), "ns");
  EXPECT_EQ(root["fallback"]["nodes"][0]["op"].as<std::string>(), "Shrink");
  EXPECT_EQ(root["fallback"]["segments"].size(), 3u);
  // The text report's DMA queues are the tree's: one row per queue of the run.
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> queues;
  for (const auto& q : r.total.dma_queues) {
    EXPECT_TRUE(queues.insert({q.core, q.engine, q.queue}).second) << "queue listed twice";
    const std::string k = "dma.queues.core" + std::to_string(q.core) + ".dma" +
                          std::to_string(q.engine) + ".q" + std::to_string(q.queue);
    EXPECT_EQ(stat(j, k + ".bytes"), double(q.bytes)) << k;
    EXPECT_EQ(stat(j, k + ".copies"), double(q.copies)) << k;
  }
  // The text form is the same tree.
  EXPECT_NE(r.stats_text.find("host.link.time_ns"), std::string::npos);
  EXPECT_NE(r.stats_text.find("chip.core0.engines.tensor.instructions"), std::string::npos);
}

// A model wholly on the host: its inputs come down from HBM and its outputs go back
// up, as a device run's start and end there, so the simulated time is that link time,
// not zero; the device keys are all present and zero.
TEST(Fallback, WhollyOnTheHostChargesTheLink) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {64, 96}});
  g.add_output(ir::make_node(g, "Shrink", {x}, {}, "shrink")->outputs[0]);
  interp::TensorMap in{{"X", random_tensor({64, 96}, 1)}};
  const interp::TensorMap want = interp::run(g, in);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  ASSERT_EQ(m.segments.size(), 1u);
  ASSERT_FALSE(m.segments[0].on_device);
  runtime::Device dev(cfg);
  const runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  const ir::Value* out = m.graph.outputs().at(0);
  EXPECT_EQ(r.outputs.at(out->name).floats(), want.at(out->name).floats());
  const double bytes = 64 * 96 * 4;
  const double link = 2 * 1e9 * (cfg.host.link_latency_s + bytes / cfg.host.link_bandwidth_bps);
  EXPECT_EQ(r.transfer_bytes, uint64_t(2 * bytes));
  EXPECT_EQ(r.output_upload_bytes, uint64_t(bytes));
  EXPECT_NEAR(r.total.simulated_ns, link, 1e-9 * link);
  const std::string& j = r.stats_json;
  EXPECT_NEAR(stat(j, "simulated_ns"), link, 1e-9 * link);
  EXPECT_EQ(stat(j, "host.device_ns"), 0);
  EXPECT_EQ(stat(j, "host.link.download_bytes"), bytes);
  EXPECT_EQ(stat(j, "host.link.upload_bytes"), bytes);
  const std::set<std::string> keys = stat_keys(j);
  for (const char* k :
       {"instructions", "cores", "flops", "tflops", "mfu_pct", "host_seconds",
        "engines.tensor.active_pct", "engines.sync.port_stall_ns", "hbm.mbu_pct", "dma.active_pct",
        "dma.engines_busy_pct", "sbuf.high_water_bytes", "psum.touched_bytes",
        "chip.hbm.read_bytes", "chip.core0.engines.tensor.instructions"}) {
    ASSERT_TRUE(keys.count(k)) << k;
    if (std::string(k) != "cores" && std::string(k) != "host_seconds") {
      EXPECT_EQ(stat(j, k), 0) << k;
    }
  }
  EXPECT_EQ(r.total.engines.size(), 6u);  // the text report's engine rows, all zero
  const std::string text = runtime::format_fallback(m, r);
  EXPECT_NE(text.find("outputs to HBM"), std::string::npos) << text;
  EXPECT_NE(text.find("fell back: Shrink 'shrink'"), std::string::npos) << text;
}

// Fallen-back nodes are named by the model's own ONNX nodes: the graph passes carry
// each node's origin through rewrites and fusions (ir::Node::origin).
TEST(Fallback, OriginsSurviveFusionAndRewrites) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {16, 24}});
  ir::Value* w = g.add_constant("W", random_tensor({24, 8}, 2));
  ir::Value* c = g.add_constant("c", random_tensor({8}, 3));
  ir::Value* y = ir::make_node(g, "Gemm", {x, w, c}, {}, "gemm")->outputs[0];
  ir::Value* two = g.add_constant("two", Tensor::from_floats({}, {2.0f}));
  ir::Value* t = ir::make_node(g, "Shrink", {y}, {}, "cs")->outputs[0];
  t = ir::make_node(g, "Mul", {t, two}, {}, "mul")->outputs[0];
  t = ir::make_node(g, "Sigmoid", {t}, {}, "sig")->outputs[0];
  t = ir::make_node(g, "Add", {t, two}, {}, "add")->outputs[0];
  g.add_output(t);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(std::move(g), fp32_options(cfg), true);
  using Origin = std::vector<std::pair<std::string, std::string>>;
  bool fused = false, gemm = false;
  for (const auto& n : m.graph.nodes()) {
    if (n->op == "trn.Elementwise") {
      fused = true;
      EXPECT_EQ(n->origin, (Origin{{"Mul", "mul"}, {"Sigmoid", "sig"}, {"Add", "add"}}));
    }
    if (n->op == "MatMul" || n->op == "trn.MatMulEpilogue") {
      gemm = true;
      EXPECT_EQ(n->origin.front(), (std::pair<std::string, std::string>{"Gemm", "gemm"}));
    }
  }
  EXPECT_TRUE(fused) << m.dump_text;
  EXPECT_TRUE(gemm) << m.dump_text;
  ASSERT_EQ(m.fallback.size(), 1u);
  EXPECT_EQ(m.fallback[0].onnx, (Origin{{"Shrink", "cs"}}));

  // A fused node on the host is reported as the ONNX nodes it computes.
  runtime::FallbackResult r;
  compiler::PartitionedModel f;
  f.fallback.push_back({"add", "trn.Elementwise", "refused", {{"Mul", "mul"}, {"Add", "add"}}});
  const std::string text = runtime::format_fallback(f, r);
  EXPECT_NE(text.find("fell back: Mul 'mul' (as trn.Elementwise 'add'): refused"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fell back: Add 'add' (as trn.Elementwise 'add')"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2 node(s) on the host"), std::string::npos) << text;
}

TEST(Fallback, RefusedWithoutFallback) {
  const platform::platform_config cfg = platform::load_config("tiny");
  try {
    compiler::compile_partitioned(shrink_graph(), fp32_options(cfg), false);
    FAIL() << "expected an UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("Shrink"), std::string::npos) << e.what();
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
