// The runtime API (runtime/device.h): programs loaded once with their weights
// resident, synchronous and asynchronous launches, several programs at once, and a
// batch split data-parallel over the cores of the `tiny` chip (2 cores). Results are
// checked against the reference interpreter. One Device per test (one process).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "compiler/ir/ops.h"
#include "compiler/lower/lower.h"
#include "models/isa/binary.h"
#include "runtime/constants.h"
#include "runtime/fallback.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// Y = relu(X [rows,64] @ W [64,48] + b): W and b are the program's constants.
struct Model {
  ir::Graph graph;
  isa::Program program;
};

Model linear(int64_t rows, uint32_t seed, const platform::platform_config& cfg) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {rows, 64}});
  ir::Value* w = g.add_constant("W", random_tensor({64, 48}, seed, -0.2f, 0.2f));
  ir::Value* b = g.add_constant("b", random_tensor({48}, seed + 1));
  ir::Value* y = ir::make_node(g, "MatMul", {x, w})->outputs[0];
  y = ir::make_node(g, "Add", {y, b})->outputs[0];
  g.add_output(ir::make_node(g, "Relu", {y})->outputs[0]);
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  Model m;
  m.graph = g.clone();
  m.program = compiler::compile_graph(std::move(g), o).program;
  return m;
}

runtime::Launch launch(const isa::Program* p, const Tensor& x, uint32_t core) {
  runtime::Launch l{p, {}, core};
  l.inputs["X"] = runtime::HostTensor::from_float(x.shape(), isa::DType::fp32, x.floats());
  return l;
}

void expect_output(const Model& m, const Tensor& x, const runtime::LaunchResult& got) {
  const interp::TensorMap want = interp::run(m.graph, {{"X", x}});
  const ir::Value* out = m.graph.outputs().at(0);
  const std::string tensor = lower::io_tensor_names(m.graph).at(out->name);
  const std::vector<float> g = got.outputs.at(tensor).to_float();
  const auto& w = want.at(out->name).floats();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-4 + 1e-4 * std::fabs(w[i]));
}

TEST(RuntimeApi, WeightsStayResidentAcrossLaunches) {
  const platform::platform_config cfg = platform::load_config("tiny");
  const Model m = linear(100, 7, cfg);
  runtime::Device dev(cfg);
  const isa::Program* p = dev.load(m.program);
  const Tensor x1 = random_tensor({100, 64}, 1), x2 = random_tensor({100, 64}, 2);
  const runtime::RunReport r1 = dev.run({launch(p, x1, 0)});
  expect_output(m, x1, r1.launches.at(0));
  const runtime::RunReport r2 = dev.run({launch(p, x2, 0)});
  expect_output(m, x2, r2.launches.at(0));
  // First launch: W (64x48) + b (48) + X (100x64) fp32; then X only.
  EXPECT_EQ(r1.uploaded_bytes, uint64_t(4 * (64 * 48 + 48 + 100 * 64)));
  EXPECT_EQ(r2.uploaded_bytes, uint64_t(4 * 100 * 64));
  // A program that was not loaded uploads its constants every run.
  const runtime::RunReport r3 = dev.run({launch(&m.program, x1, 0)});
  EXPECT_EQ(r3.uploaded_bytes, r1.uploaded_bytes);
  expect_output(m, x1, r3.launches.at(0));
}

// A constant no instruction reads (a compiled program keeps the fp32 weights its
// bf16 copies came from) is neither loaded from a file nor written into HBM.
TEST(RuntimeApi, ConstantsNoInstructionReadsAreNotUploaded) {
  const platform::platform_config cfg = platform::load_config("tiny");
  Model m = linear(100, 7, cfg);
  isa::TensorDecl unused;
  unused.name = "unused";
  unused.shape = {1024};
  unused.role = isa::TensorRole::constant;
  unused.hbm_offset = (m.program.hbm_bytes() + 4095) / 4096 * 4096;
  m.program.tensors.push_back(unused);
  m.program.constants["unused"] = std::vector<uint8_t>(4096, 0x3f);
  const runtime::HbmAccesses acc(m.program);
  EXPECT_FALSE(runtime::constant_is_read(acc, unused));
  for (const auto& d : m.program.tensors) {
    if (d.name != "unused" && m.program.constants.count(d.name)) {
      EXPECT_TRUE(runtime::constant_is_read(acc, d)) << d.name;
    }
  }
  // Loaded from a file for a functional run: W and b only; timing-only: none.
  const std::string path = ::testing::TempDir() + "trnsim_unread_constant.tbin";
  isa::save_program(m.program, path);
  const isa::Program loaded = isa::load_program(path, runtime::constants_to_load(true));
  EXPECT_EQ(loaded.constants.size(), m.program.constants.size() - 1);
  EXPECT_EQ(loaded.constants.count("unused"), 0u);
  EXPECT_TRUE(isa::load_program(path, runtime::constants_to_load(false)).constants.empty());
  std::remove(path.c_str());
  // Run with the constant present: the upload skips it and the output is right.
  runtime::Device dev(cfg);
  const Tensor x = random_tensor({100, 64}, 1);
  const runtime::RunReport r = dev.run({launch(&m.program, x, 0)});
  EXPECT_EQ(r.uploaded_bytes, uint64_t(4 * (64 * 48 + 48 + 100 * 64)));
  expect_output(m, x, r.launches.at(0));
  isa::Program copy = m.program;
  EXPECT_EQ(runtime::drop_unread_constants(copy), 4096u);
  EXPECT_EQ(copy.constants.count("unused"), 0u);
  EXPECT_EQ(copy.constants.size(), m.program.constants.size() - 1);
}

// A batch of 2 x 100 rows as one launch per core, submitted asynchronously; two
// different programs loaded at once.
TEST(RuntimeApi, DataParallelAsyncTwoPrograms) {
  const platform::platform_config cfg = platform::load_config("tiny");
  const Model a = linear(100, 7, cfg), b = linear(100, 9, cfg);
  runtime::Device dev(cfg);
  const isa::Program* pa = dev.load(a.program);
  const isa::Program* pb = dev.load(b.program);
  const Tensor x0 = random_tensor({100, 64}, 3), x1 = random_tensor({100, 64}, 4);
  const double one = dev.run({launch(pa, x0, 0)}).simulated_ns;
  dev.submit(launch(pa, x0, 0));
  dev.submit(launch(pa, x1, 1));
  const runtime::RunReport dp = dev.wait();
  ASSERT_EQ(dp.launches.size(), 2u);
  expect_output(a, x0, dp.launches[0]);
  expect_output(a, x1, dp.launches[1]);
  EXPECT_EQ(dp.cores, 2u);
  // The two halves run concurrently: far less than twice one launch (they share HBM).
  EXPECT_LT(dp.simulated_ns, 1.5 * one);
  // Two programs side by side, each on its own core.
  const runtime::RunReport two = dev.run({launch(pa, x0, 0), launch(pb, x1, 1)});
  expect_output(a, x0, two.launches[0]);
  expect_output(b, x1, two.launches[1]);
  // A second wait() with nothing submitted runs nothing.
  EXPECT_TRUE(dev.wait().launches.empty());
}

// Launches the device refuses before touching its memory (Device::run's placement
// phase): each names what is wrong, and the device runs the next good launch.
TEST(RuntimeApi, BadLaunchesAreRunErrorsNamingTheLaunch) {
  const platform::platform_config cfg = platform::load_config("tiny");
  const Model m = linear(100, 7, cfg);
  runtime::Device dev(cfg);
  const Tensor x = random_tensor({100, 64}, 5);
  auto expect_error = [&](const std::vector<runtime::Launch>& ls, const std::string& needle) {
    try {
      dev.run(ls);
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const runtime::RunError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({launch(nullptr, x, 0)}, "launch without a program");
  expect_error({launch(&m.program, x, 2)}, "core 2 does not exist: the chip has 2 cores");
  expect_error({launch(&m.program, x, 1), launch(&m.program, x, 1)},
               "two launches on core 1 in one run");
  const runtime::RunReport ok = dev.run({launch(&m.program, x, 1)});
  expect_output(m, x, ok.launches.at(0));
}

}  // namespace
}  // namespace trnsim::e2e
