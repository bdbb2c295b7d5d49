// tile::DepCache: passes share one dependency graph while the kernel's memory accesses
// are unchanged, and any change to them (an operand, an address, the op order) builds
// it again, equal to a fresh build_deps.
#include <gtest/gtest.h>

#include "compiler/kernels/builder.h"
#include "compiler/passes/pass.h"
#include "compiler/tile/deps.h"

namespace trnsim::tile {
namespace {

compiler::Target cache_target() {
  compiler::Target t;
  t.name = "test";
  t.sbuf_partition_bytes = 64 * 1024;
  t.dma_engines = 4;
  t.dma_bandwidth_bytes_per_ns = 10;
  t.dma_fixed_ns = 100;
  for (compiler::EngineCost* e : {&t.tensor, &t.vector, &t.scalar, &t.gpsimd, &t.sync})
    *e = compiler::EngineCost{1e9, 64, 64};
  return t;
}

// X -> tile -> relu -> T (scratch) -> tile -> Y, in 4 row blocks over 2 buffers.
Kernel chain_kernel() {
  kernels::Builder b("chain");
  auto X = b.input("X", {512, 64}, isa::DType::fp32);
  auto T = b.scratch("T", {512, 64}, isa::DType::fp32);
  auto Y = b.output("Y", {512, 64}, isa::DType::fp32);
  auto p = b.pool("sb", isa::MemSpace::sbuf, 2);
  using kernels::all;
  using kernels::sl;
  for (int64_t r = 0; r < 512; r += 128) {
    auto t = b.tile(p, {128, 64}, isa::DType::fp32);
    b.dma(t, X({sl(r, r + 128), all()}));
    b.dma(T({sl(r, r + 128), all()}), t);
  }
  for (int64_t r = 0; r < 512; r += 128) {
    auto t = b.tile(p, {128, 64}, isa::DType::fp32);
    b.dma(t, T({sl(r, r + 128), all()}));
    b.dma(Y({sl(r, r + 128), all()}), t);
  }
  return b.kernel();
}

void expect_same(const DepGraph& a, const DepGraph& b) {
  EXPECT_EQ(a.preds, b.preds);
  EXPECT_EQ(a.succs, b.succs);
}

TEST(TileDepCache, ReusedWhileAccessesAreUnchanged) {
  Kernel k = chain_kernel();
  DepCache c;
  expect_same(c.get(k, DepMode::logical), build_deps(k, DepMode::logical));
  expect_same(c.get(k, DepMode::logical), build_deps(k, DepMode::logical));
  EXPECT_EQ(c.builds(), 1);
  EXPECT_EQ(c.reuses(), 1);
  // Engines and queues are not memory accesses: still the same graph.
  k.ops[0].dma_engine = 3;
  k.ops[0].dma_queue = 1;
  c.get(k, DepMode::logical);
  EXPECT_EQ(c.builds(), 1);
  // Another mode, another graph.
  passes::PassContext ctx;
  ctx.target = cache_target();
  passes::run_passes(k, ctx, {"assign_engines", "alloc_memory"});
  expect_same(c.get(k, DepMode::physical), build_deps(k, DepMode::physical));
  EXPECT_EQ(c.builds(), 2);
}

TEST(TileDepCache, RebuiltWhenAccessesChange) {
  Kernel k = chain_kernel();
  passes::PassContext ctx;
  ctx.target = cache_target();
  passes::run_passes(k, ctx, {"assign_engines", "alloc_memory"});
  DepCache c;
  c.get(k, DepMode::physical);
  // The first reload of T now reads the rows the last store writes: a new edge.
  Op* load = nullptr;
  for (Op& op : k.ops)
    if (op.ins.op == isa::Opcode::dma_copy && op.ins.dst.space == isa::MemSpace::sbuf &&
        op.ins.src[0].space == isa::MemSpace::hbm && k.tensors[op.ref[kSrc0]].name == "T") {
      load = &op;
      break;
    }
  ASSERT_NE(load, nullptr);
  load->ins.src[0].offset += 384 * 64 * 4;
  expect_same(c.get(k, DepMode::physical), build_deps(k, DepMode::physical));
  EXPECT_EQ(c.builds(), 2);
  // Moving a tile (alloc_memory's address) changes the physical graph's input.
  k.tiles[0].addr += 64;
  expect_same(c.get(k, DepMode::physical), build_deps(k, DepMode::physical));
  EXPECT_EQ(c.builds(), 3);
  // So does reordering the ops (schedule).
  std::swap(k.ops[0], k.ops[1]);
  expect_same(c.get(k, DepMode::physical), build_deps(k, DepMode::physical));
  EXPECT_EQ(c.builds(), 4);
  EXPECT_EQ(c.reuses(), 0);
}

TEST(TileDepCache, PipelineBuildsOncePerDistinctKernelState) {
  // assign_dma_queues and schedule see the same ops and addresses: one build for both.
  Kernel k = chain_kernel();
  passes::PassContext ctx;
  ctx.target = cache_target();
  passes::run_passes(k, ctx, {"assign_engines", "alloc_memory", "assign_dma_queues", "schedule"});
  EXPECT_EQ(ctx.deps.reuses(), 1);
  EXPECT_EQ(ctx.deps.builds(), 2);  // logical (assign_engines), physical
}

}  // namespace
}  // namespace trnsim::tile
