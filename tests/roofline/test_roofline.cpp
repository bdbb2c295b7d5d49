// The report's roofline (compiler/roofline.h, runtime/roofline.h): FLOPs and
// minimum bytes worked out by hand for small graphs, the roofline times for trn2,
// and simulated runs that must not beat their roofline (that would be a model bug).
// One Device per test (SystemC elaborates once per process).
#include <gtest/gtest.h>

#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// trn2 roofs of one core: bf16 2 x 128 x 128 PEs x 2.4 GHz = 78.6432 TFLOP/s, fp32
// a quarter of it (fp32_slowdown 4) = 19.6608 TFLOP/s; memory min(HBM 2900 GB/s,
// 16 DMA engines x 23 GB/s = 368 GB/s, their shared 437.5 GB/s) = 368 GB/s.
constexpr double kPeakBf16 = 78.6432e12, kPeakFp32 = 19.6608e12, kMemory = 368e9;

// Y[M,N] = A[M,K] @ B[K,N], everything bf16; A an input, B a weight.
ir::Graph gemm(int64_t m, int64_t k, int64_t n) {
  ir::Graph g;
  ir::Value* a = g.add_input("A", {ElemType::bf16, {m, k}});
  ir::Value* b = g.add_constant("B", random_tensor({k, n}, 3).cast(ElemType::bf16));
  g.add_output(ir::make_node(g, "MatMul", {a, b})->outputs[0]);
  return g;
}

// Z = X + Y, fp32 [R, C].
ir::Graph add(int64_t r, int64_t c) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {r, c}});
  ir::Value* y = g.add_input("Y", {ElemType::fp32, {r, c}});
  g.add_output(ir::make_node(g, "Add", {x, y})->outputs[0]);
  return g;
}

struct Compiled {
  isa::Program program;
  std::shared_ptr<const compiler::ProgramRoofline> roofline;
};

Compiled compile(ir::Graph g, const platform::platform_config& cfg) {
  compiler::CompileOnnxOptions o;
  o.precision = Precision::bf16;
  o.target = runtime::target_from_config(cfg);
  compiler::PartitionedModel pm = compiler::compile_partitioned(std::move(g), o, false);
  EXPECT_EQ(pm.segments.size(), 1u);
  return {std::move(pm.segments.at(0).program), pm.segments.at(0).roofline};
}

// Runs timing-only on core 0 with the roofline attached.
runtime::RunReport run(const platform::platform_config& cfg, const Compiled& c) {
  runtime::Device dev(cfg, runtime::DeviceOptions(false));
  runtime::Launch l;
  l.program = &c.program;
  l.roofline = c.roofline.get();
  return dev.run({l});
}

const runtime::RooflineRow* kind(const runtime::Roofline& r, const std::string& name) {
  for (const auto& k : r.kinds)
    if (k.kind == name) return &k;
  return nullptr;
}

TEST(Roofline, GemmFlopsAndBytesByHand) {
  // [256,512] x [512,384] bf16: 2 x 256 x 512 x 384 = 100663296 FLOPs;
  // (256 x 512 + 512 x 384 + 256 x 384) x 2 bytes = (131072 + 196608 + 98304) x 2 = 851968.
  const auto cfg = platform::load_config("trn2");
  const Compiled c = compile(gemm(256, 512, 384), cfg);
  ASSERT_TRUE(c.roofline);
  const compiler::ProgramRoofline& m = *c.roofline;
  ASSERT_EQ(m.kinds.size(), 1u);
  EXPECT_EQ(m.kinds[0].name, "MatMul");
  EXPECT_EQ(m.kinds[0].count, 1u);
  EXPECT_EQ(m.kinds[0].flops[size_t(isa::DType::bf16)], 100663296.0);
  EXPECT_EQ(m.kinds[0].total_flops(), 100663296.0);
  EXPECT_EQ(m.kinds[0].min_bytes, 851968u);
  EXPECT_EQ(m.min_bytes, 851968u);
  EXPECT_EQ(m.total_flops(), 100663296.0);
  // Every instruction came from the MatMul.
  ASSERT_EQ(m.instr_kind.size(), c.program.queues.size());
  for (const auto& q : m.instr_kind)
    for (int32_t k : q) EXPECT_EQ(k, 0);

  const std::array<uint64_t, isa::kNumDTypes> none{};
  const runtime::Roofline r =
      runtime::make_roofline(cfg, 1, c.roofline.get(), c.program, none, 1e6, nullptr, 0);
  EXPECT_DOUBLE_EQ(r.memory_bps, kMemory);
  EXPECT_DOUBLE_EQ(r.peak_bf16, kPeakBf16);
  // compute 100663296 / 78.6432e12 s = 1280 ns; memory 851968 / 368e9 s = 2315.13 ns.
  EXPECT_NEAR(r.total.compute_ns, 1280.0, 1e-6);
  EXPECT_NEAR(r.total.memory_ns, 851968 / 368.0, 1e-6);
  EXPECT_NEAR(r.total.roofline_ns(), 851968 / 368.0, 1e-6);
  EXPECT_FALSE(r.total.compute_bound());
  // efficiency against the 1 ms given as the simulated time
  EXPECT_NEAR(r.total.efficiency_pct(), 100.0 * 851968 / 368.0 / 1e6, 1e-9);
}

// A compute-bound GEMM: [1024,1024] x [1024,1024] bf16: 2 x 1024^3 = 2147483648 FLOPs
// / 78.6432e12 = 27306.67 ns; 3 x 1024^2 x 2 = 6291456 bytes / 368e9 = 17096.35 ns.
TEST(Roofline, ComputeBoundGemmDoesNotBeatItsRoofline) {
  const auto cfg = platform::load_config("trn2");
  const Compiled c = compile(gemm(1024, 1024, 1024), cfg);
  const runtime::RunReport rep = run(cfg, c);
  const runtime::Roofline& r = rep.roofline;
  ASSERT_TRUE(r.available && r.from_compiler && r.attributed);
  EXPECT_NEAR(r.total.roofline_ns(), 2147483648.0 / kPeakBf16 * 1e9, 1e-6);
  EXPECT_TRUE(r.total.compute_bound());
  EXPECT_EQ(r.total.simulated_ns, rep.simulated_ns);
  EXPECT_GT(r.total.efficiency_pct(), 0.0);
  EXPECT_LE(r.total.efficiency_pct(), 100.0);
  const runtime::RooflineRow* mm = kind(r, "MatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_GT(mm->simulated_ns, 0.0);
  EXPECT_LE(mm->simulated_ns, rep.simulated_ns);
  EXPECT_LE(mm->efficiency_pct(), 100.0);
  EXPECT_LE(r.busy_ns, rep.simulated_ns);
  // The stats tree carries the same figures.
  EXPECT_NE(rep.stats_json.find("\"roofline\""), std::string::npos);
  EXPECT_NE(rep.stats_json.find("\"MatMul\""), std::string::npos);
}

// A memory-bound elementwise op: Add of two fp32 [256,1024]: 262144 FLOPs / 19.6608e12
// = 13.33 ns; (3 x 262144) x 4 = 3145728 bytes / 368e9 = 8548.17 ns.
TEST(Roofline, MemoryBoundAddDoesNotBeatItsRoofline) {
  const auto cfg = platform::load_config("trn2");
  const Compiled c = compile(add(256, 1024), cfg);
  ASSERT_EQ(c.roofline->kinds.size(), 1u);
  EXPECT_EQ(c.roofline->kinds[0].name, "Add");
  EXPECT_EQ(c.roofline->kinds[0].flops[size_t(isa::DType::fp32)], 262144.0);
  EXPECT_EQ(c.roofline->min_bytes, 3145728u);
  const runtime::RunReport rep = run(cfg, c);
  const runtime::Roofline& r = rep.roofline;
  ASSERT_TRUE(r.attributed);
  EXPECT_NEAR(r.total.compute_ns, 262144.0 / kPeakFp32 * 1e9, 1e-9);
  EXPECT_NEAR(r.total.roofline_ns(), 3145728.0 / kMemory * 1e9, 1e-6);
  EXPECT_FALSE(r.total.compute_bound());
  EXPECT_GT(r.total.efficiency_pct(), 0.0);
  EXPECT_LE(r.total.efficiency_pct(), 100.0);
  const runtime::RooflineRow* a = kind(r, "Add");
  ASSERT_NE(a, nullptr);
  EXPECT_LE(a->efficiency_pct(), 100.0);
  EXPECT_GT(a->simulated_ns, 0.0);
}

// Fused and aliased ops: MatMul + bias Add + Relu fuse into one node counted as MatMul
// (Add and Relu listed as fused); a Reshape of the input moves nothing itself, and
// the MatMul still reads the input's bytes through it.
// X [64,32] fp32 -> Reshape [64,32] -> @ W [32,48] + b [48] -> Relu:
// FLOPs bf16 2 x 64 x 32 x 48 = 196608, fp32 64 x 48 (Add) + 64 x 48 (Relu) = 6144;
// bytes (64 x 32 + 48 + 64 x 48) x 4 = (2048 + 48 + 3072) x 4 = 20672 plus W as the
// program reads it, cast to bf16 at compile time, 32 x 48 x 2 = 3072: 23744.
TEST(Roofline, FusedEpilogueCountsWithItsMatMul) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {64, 32}});
  ir::Value* w = g.add_constant("W", random_tensor({32, 48}, 4));
  ir::Value* b = g.add_constant("b", random_tensor({48}, 5));
  ir::Value* r =
      ir::make_node(g, "Reshape", {x}, {{"shape", std::vector<int64_t>{64, 32}}})->outputs[0];
  ir::Value* y = ir::make_node(g, "MatMul", {r, w})->outputs[0];
  y = ir::make_node(g, "Add", {y, b})->outputs[0];
  g.add_output(ir::make_node(g, "Relu", {y})->outputs[0]);
  const Compiled c = compile(std::move(g), platform::load_config("trn2"));
  const compiler::ProgramRoofline& m = *c.roofline;
  EXPECT_EQ(m.total_flops(), 196608.0 + 6144.0);
  EXPECT_EQ(m.flops[size_t(isa::DType::bf16)], 196608.0);
  EXPECT_EQ(m.min_bytes, 23744u);
  const compiler::RooflineKind* mm = nullptr;
  uint64_t bytes = 0;
  for (const auto& k : m.kinds) {
    bytes += k.min_bytes;
    if (k.name == "MatMul") mm = &k;
  }
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, 1u);
  EXPECT_EQ(mm->fused.at("Add"), 1u);
  EXPECT_EQ(mm->fused.at("Relu"), 1u);
  EXPECT_EQ(mm->total_flops(), 196608.0 + 6144.0);
  EXPECT_EQ(bytes, 23744u);  // every op kind together: each byte once here
  EXPECT_EQ(mm->min_bytes, 23744u);
}

}  // namespace
}  // namespace trnsim::e2e
