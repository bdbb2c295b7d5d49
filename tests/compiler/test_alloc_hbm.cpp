// alloc_hbm: scratch tensors share HBM bytes only when their lifetimes do not
// overlap; inputs, outputs and constants keep their own space; tensors no op touches
// leave the program; sharing orders the old tensor's accesses before the new one's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/compile.h"
#include "compiler/ir/ops.h"
#include "compiler/passes/pass.h"
#include "compiler/tile/ir.h"
#include "tests/common/bf16_linear.h"

namespace trnsim::tile {
namespace {

using passes::HbmBlock;
using passes::PassContext;
using passes::place_hbm_blocks;
using passes::run_passes;

bool share_bytes(const HbmBlock& a, const HbmBlock& b) {
  return a.addr < b.addr + b.size && b.addr < a.addr + a.size;
}
bool live_together(const HbmBlock& a, const HbmBlock& b) {
  return a.first <= b.last && b.first <= a.last;
}
uint64_t footprint(const std::vector<HbmBlock>& v) {
  uint64_t hi = 0;
  for (const HbmBlock& b : v) hi = std::max(hi, b.addr + b.size);
  return hi;
}

TEST(AllocHbm, DeadTensorsBytesAreReused) {
  // A [0,2] and C [4,7] never live together: C (placed second, same size, later
  // first use) takes A's bytes at 0. B [3,5] overlaps C, so it goes after C's 1024
  // bytes: footprint 1024 + 512 = 1536, where one range each takes
  // 1024 + 512 + 1024 = 2560.
  const std::vector<HbmBlock> in = {{1024, 0, 2}, {512, 3, 5}, {1024, 4, 7}};
  const std::vector<HbmBlock> out = place_hbm_blocks(in, 256);
  EXPECT_EQ(out[0].addr, 0u);
  EXPECT_EQ(out[2].addr, 0u);
  EXPECT_EQ(out[1].addr, 1024u);
  EXPECT_EQ(footprint(out), 1536u);
}

TEST(AllocHbm, OverlappingLifetimesNeverShare) {
  // All three live at op 2, one after another, largest first, each at the next
  // 64-byte boundary: 300 bytes at 0, 200 at 320, 100 at 576 (520 rounded up): 676.
  std::vector<HbmBlock> out = place_hbm_blocks({{100, 0, 2}, {200, 2, 3}, {300, 1, 4}}, 64);
  EXPECT_EQ(out[2].addr, 0u);
  EXPECT_EQ(out[1].addr, 320u);
  EXPECT_EQ(out[0].addr, 576u);
  EXPECT_EQ(footprint(out), 676u);
  for (uint64_t a : {out[0].addr, out[1].addr, out[2].addr}) EXPECT_EQ(a % 64, 0u);
  // The schedule's estimates: the second block's first op starts (t = 5) before the
  // first's last op ends (t = 6), so they do not share although the list orders them.
  out = place_hbm_blocks({{256, 0, 1, 0, 6}, {256, 2, 3, 5, 9}}, 64);
  EXPECT_FALSE(share_bytes(out[0], out[1]));
  out = place_hbm_blocks({{256, 0, 1, 0, 5}, {256, 2, 3, 5, 9}}, 64);
  EXPECT_TRUE(share_bytes(out[0], out[1]));
}

TEST(AllocHbm, RandomLifetimesNeverOverlapInMemory) {
  // A fixed pseudo-random set: whatever the placement, blocks live together never
  // share a byte, and the footprint is at least the most bytes live at one op.
  uint64_t s = 12345;
  auto next = [&s](uint64_t n) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (s >> 33) % n;
  };
  std::vector<HbmBlock> in;
  for (int i = 0; i < 200; ++i) {
    const int first = static_cast<int>(next(500));
    in.push_back({64 * (1 + next(64)), first, first + static_cast<int>(next(40))});
  }
  const std::vector<HbmBlock> out = place_hbm_blocks(in, 64);
  uint64_t live_peak = 0, sum = 0;
  for (int op = 0; op < 540; ++op) {
    uint64_t live = 0;
    for (const HbmBlock& b : out)
      if (b.first <= op && op <= b.last) live += b.size;
    live_peak = std::max(live_peak, live);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    sum += out[i].size;
    for (size_t j = i + 1; j < out.size(); ++j)
      if (live_together(out[i], out[j])) {
        EXPECT_FALSE(share_bytes(out[i], out[j])) << i << " " << j;
      }
  }
  EXPECT_GE(footprint(out), live_peak);
  EXPECT_LT(footprint(out), sum);
}

// S is stored (%1) and loaded back (%2, on dma.0.1); T is stored from x0 (%3, on
// dma.1.0), which no dependency in the kernel orders after %2: only sharing S's
// bytes does. W is a constant and U a scratch tensor no op touches.
const char* kReuse = R"(kernel k
tensor X [128,64] fp32 input
tensor W [128,64] fp32 constant
tensor S [128,64] fp32 scratch
tensor U [128,64] fp32 scratch
tensor T [128,64] fp32 scratch
tensor Y [128,128] fp32 output
pool a sbuf bufs=3
tile x0 a [128,64] fp32 slot=0
tile x1 a [128,64] fp32 slot=1
tile x2 a [128,64] fp32 slot=2
%0 dma.0.0 dma_copy dst=x0:sbuf[0:128, 0, fp32, [1,64]] src=X:hbm[128x64, 0, fp32, [1,64]]
%1 dma.0.0 dma_copy dst=S:hbm[128x64, 0, fp32, [1,64]] src=x0:sbuf[0:128, 0, fp32, [1,64]]
%2 dma.0.1 dma_copy dst=x1:sbuf[0:128, 0, fp32, [1,64]] src=S:hbm[128x64, 0, fp32, [1,64]]
%3 dma.1.0 dma_copy dst=T:hbm[128x64, 0, fp32, [1,64]] src=x0:sbuf[0:128, 0, fp32, [1,64]]
%4 dma.1.0 dma_copy dst=x2:sbuf[0:128, 0, fp32, [1,64]] src=T:hbm[128x64, 0, fp32, [1,64]]
%5 dma.0.1 dma_copy dst=Y:hbm[128x128, 0, fp32, [1,64]] src=x1:sbuf[0:128, 0, fp32, [1,64]]
%6 dma.1.0 dma_copy dst=Y:hbm[128x128, 256, fp32, [1,64]] src=x2:sbuf[0:128, 0, fp32, [1,64]]
)";

TEST(AllocHbm, PassSharesDeadScratchDropsUntouchedAndOrdersReuse) {
  Kernel k = parse(kReuse, "reuse.tir");
  k.tensors[static_cast<size_t>(k.find_tensor("W"))].data.assign(128 * 64 * 4, 0);
  PassContext ctx;
  ctx.target.hbm_alignment = 64;
  run_passes(k, ctx, {"alloc_memory", "alloc_hbm", "insert_sync"});
  // W and U are gone; X (32 KiB) at 0, Y (64 KiB) at 32768, then the scratch:
  // S and T (32 KiB each) share 98304..131071.
  EXPECT_EQ(k.find_tensor("W"), -1);
  EXPECT_EQ(k.find_tensor("U"), -1);
  const Tensor& S = k.tensors[static_cast<size_t>(k.find_tensor("S"))];
  const Tensor& T = k.tensors[static_cast<size_t>(k.find_tensor("T"))];
  EXPECT_EQ(k.tensors[static_cast<size_t>(k.find_tensor("X"))].hbm_offset, 0);
  EXPECT_EQ(k.tensors[static_cast<size_t>(k.find_tensor("Y"))].hbm_offset, 32768);
  EXPECT_EQ(S.hbm_offset, 98304);
  EXPECT_EQ(T.hbm_offset, 98304);
  EXPECT_EQ(ctx.stats["alloc_hbm.bytes"], 131072);
  EXPECT_EQ(ctx.stats["alloc_hbm.dropped_constant_bytes"], 32768);
  EXPECT_EQ(ctx.stats["alloc_hbm.dropped_scratch_bytes"], 32768);
  // Every queue's last op on S (%1 on dma.0.0, %2 on dma.0.1) before T's first (%3 on
  // dma.1.0); %2 waited for %1 already, so %3 waits for S's load (dma.0.1) only.
  EXPECT_EQ(ctx.hbm_reuse_deps, (std::vector<std::pair<int, int>>{{1, 3}, {2, 3}}));
  const Op& store_t =
      *std::find_if(k.ops.begin(), k.ops.end(), [](const Op& o) { return o.id == 3; });
  const Op& load_s =
      *std::find_if(k.ops.begin(), k.ops.end(), [](const Op& o) { return o.id == 2; });
  ASSERT_EQ(load_s.ins.signals.size(), 1u);
  bool waits_for_load = false;
  for (const isa::SemWait& w : store_t.ins.waits)
    waits_for_load |= w.sem == load_s.ins.signals[0].sem;
  EXPECT_TRUE(waits_for_load);
  // The program: the tensors above at those offsets, no constant data.
  const isa::Program p = codegen::generate(k, ctx.target);
  EXPECT_TRUE(p.constants.empty());
  EXPECT_EQ(p.hbm_bytes(), 131072u);
  EXPECT_EQ(p.find_tensor("T")->hbm_offset, 98304u);
}

// Y = relu(X [64,256] @ W [256,512] + b) with W and b constants, compiled in bf16:
// the program holds W's bf16 cast, not the fp32 original no instruction reads.
TEST(AllocHbm, Bf16ProgramHoldsOnlyTheCastWeights) {
  std::vector<float> w(256 * 512), bias(512);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) * 0.01f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) * 0.1f;
  ir::Graph g = test::bf16_linear_graph(ir::Tensor::from_floats({256, 512}, w),
                                        ir::Tensor::from_floats({512}, bias));
  compiler::CompileOnnxOptions o;
  o.precision = graph_passes::Precision::bf16;
  o.target.name = "test";
  compiler::run_graph_pipeline(g, o, nullptr);
  compiler::ProgramRoofline roof;
  const isa::Program p = compiler::generate(g, o, nullptr, nullptr, &roof);
  test::expect_bf16_linear_program(p, roof);
}

}  // namespace
}  // namespace trnsim::tile
