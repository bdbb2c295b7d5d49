// The back-end passes one at a time, on tile IR written as text: each test parses a
// kernel, runs one pass and compares the dump (or the relevant lines) with what the
// pass must produce. The costs come from a small round-number target (1 GHz
// engines, 64-cycle overhead and minimum, DMA 100 ns + 10 B/ns) so the expected
// times can be worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/kernels/builder.h"
#include "compiler/kernels/library.h"
#include "compiler/passes/pass.h"
#include "compiler/tile/deps.h"
#include "compiler/tile/ir.h"

namespace trnsim::tile {
namespace {

using passes::all_passes;
using passes::default_pipeline;
using passes::find_pass;
using passes::PassContext;
using passes::PassInfo;
using passes::placed_bytes;
using passes::run_passes;

compiler::Target test_target() {
  compiler::Target t;
  t.name = "test";
  t.sbuf_partition_bytes = 64 * 1024;
  t.dma_engines = 4;
  t.dma_bandwidth_bytes_per_ns = 10;
  t.dma_fixed_ns = 100;
  t.dma_descriptor_ns = 0;
  t.dma_core_descriptor_ns = 0;
  t.dma_core_bandwidth_bytes_per_ns = 1e6;
  t.hbm_bandwidth_bytes_per_ns = 1e6;  // never the limit here
  t.dma_split_min_bytes = 16 * 1024;
  t.dma_split_max = 8;
  for (compiler::EngineCost* e : {&t.tensor, &t.vector, &t.scalar, &t.gpsimd, &t.sync})
    *e = compiler::EngineCost{1e9, 64, 64};
  t.vector_perf_modes = false;
  return t;
}

// Runs one pass on `text` and returns the dump.
std::string run_pass(const std::string& pass, const std::string& text,
                     std::map<std::string, double>* stats = nullptr,
                     const compiler::Target& t = test_target()) {
  Kernel k = parse(text, "test.tir");
  PassContext ctx;
  ctx.target = t;
  run_passes(k, ctx, {pass});
  if (stats) *stats = ctx.stats;
  return to_text(k);
}

// Lines of `text` that start with `prefix`.
std::vector<std::string> lines(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);)
    if (l.rfind(prefix, 0) == 0) out.push_back(l);
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ---- text form --------------------------------------------------------------------

const char* kSmall = R"(kernel small
tensor X [128,64] fp32 input
tensor Y [128,64] bf16 output
tensor C [2] fp32 constant data=AACAPwAAAEA=
pool sb sbuf bufs=2
pool ps psum bufs=1
tile x sb [128,64] fp32 slot=0
tile y sb [128,64] bf16 slot=1
tile p ps [128,64] fp32 slot=0
%0 dma dma_copy dst=x:sbuf[0:128, 0, fp32, [1,64]] src=X:hbm[128x64, 0, fp32, [1,64]]
%1 auto tensor_scalar dst=x:sbuf[0:128, 0, fp32, [1,64]] src=x:sbuf[0:128, 0, fp32, [1,64]] op0=mul arg0=2
%2 vector! tensor_copy dst=p:psum[0:128, 0, fp32, [1,64]] src=x:sbuf[0:128, 0, fp32, [1,64]]
%3 scalar activation dst=y:sbuf[0:128, 0, bf16, [1,64]] src=p:psum[0:128, 0, fp32, [1,64]] func=exp bias=x:sbuf[0:128, 0, fp32]
%4 dma dma_copy dst=Y:hbm[128x64, 0, bf16, [1,64]] src=y:sbuf[0:128, 0, bf16, [1,64]]
)";

TEST(TilePassesText, RoundTrip) {
  Kernel k = parse(kSmall, "small.tir");
  EXPECT_EQ(to_text(k), kSmall);
  ASSERT_EQ(k.ops.size(), 5u);
  EXPECT_TRUE(k.ops[1].engine_auto);
  EXPECT_TRUE(k.ops[2].pinned);
  EXPECT_EQ(k.ops[2].engine, isa::Engine::vector);
  EXPECT_EQ(k.ops[3].ref[kArg1], k.find_tile("x"));  // the bias operand
  EXPECT_EQ(k.tensors[2].data.size(), 8u);           // two fp32 constants: 1.0, 2.0
  // A kernel from the builder round-trips too, after every pass.
  Kernel m = kernels::matmul_bias_act(128, 256, 256, isa::ActFunc::relu);
  EXPECT_EQ(to_text(parse(to_text(m))), to_text(m));
  codegen::CompileResult r = codegen::compile(std::move(m), test_target());
  EXPECT_EQ(to_text(parse(to_text(r.kernel))), to_text(r.kernel));
}

TEST(TilePassesText, ErrorsNameTheLine) {
  auto err = [](const std::string& text) { return error_of([&] { parse(text, "bad.tir"); }); };
  const std::string head = "kernel k\npool sb sbuf bufs=1\ntile x sb [128,64] fp32\n";
  EXPECT_NE(err(head + "%0 warp tensor_copy dst=x:sbuf[0:128, 0, fp32, [1,64]] "
                       "src=x:sbuf[0:128, 0, fp32, [1,64]]\n")
                .find("bad.tir:4: error: unknown engine 'warp'"),
            std::string::npos);
  EXPECT_NE(err(head + "%0 vector tensor_copy dst=y:sbuf[0:128, 0, fp32, [1,64]] "
                       "src=x:sbuf[0:128, 0, fp32, [1,64]]\n")
                .find("bad.tir:4: error: unknown tile 'y' in dst"),
            std::string::npos);
  EXPECT_NE(err(head + "%0 vector tensor_copy dst=sbuf[0:128, 0, fp32, [1,64]] "
                       "src=x:sbuf[0:128, 0, fp32, [1,64]]\n")
                .find("bad.tir:4: error: dst needs a tile or tensor name"),
            std::string::npos);
  EXPECT_NE(err(head + "%0 vector tensor_copy dst=x:sbuf[0:128, 0, fp32, [1,64]] "
                       "src=x:sbuf[0:128, 0, fp32, [1,64]] op0=mul\n")
                .find("bad.tir:4: error:"),
            std::string::npos);
  EXPECT_NE(err("kernel k\ntile x nopool [128] fp32\n").find("bad.tir:2: error: unknown pool"),
            std::string::npos);
  EXPECT_NE(err(head + "%2 vector tensor_copy dst=x:sbuf[16:48, 0, fp32, [1,64]] "
                       "src=x:sbuf[0:32, 0, fp32, [1,64]]\n")
                .find("op %2 (vector tensor_copy): dst uses partitions 16..47, which breaks the "
                      "partition-start rule"),
            std::string::npos);
  // Semantic checks after parsing name the op: 64 fp32 = 256 bytes per partition.
  EXPECT_NE(err(head + "%7 vector tensor_copy dst=x:sbuf[0:128, 4, fp32, [1,64]] "
                       "src=x:sbuf[0:128, 0, fp32, [1,64]]\n")
                .find("op %7 (vector tensor_copy): dst reaches bytes [4,260) outside tile 'x'"),
            std::string::npos);
}

// Out-of-range numbers and unbalanced brackets are errors: never a wrapped value, a
// crash, or a word silently dropped.
TEST(TilePassesText, RejectsOverflowAndUnbalancedBrackets) {
  auto err = [](const std::string& text) { return error_of([&] { parse(text, "bad.tir"); }); };
  EXPECT_NE(err("kernel k\nsemaphores 99999999999999999999\n")
                .find("bad.tir:2: error: semaphore count '99999999999999999999' is out of range"),
            std::string::npos);
  EXPECT_NE(err("kernel k\ntensor t [2] fp32 input [junk\n")
                .find("bad.tir:2: error: unexpected '[junk' in tensor declaration"),
            std::string::npos);
  EXPECT_NE(err("kernel k\n] x\n").find("bad.tir:2: error: unknown engine '] x'"),
            std::string::npos);
}

// ---- split_dma ------------------------------------------------------------------------

TEST(TilePassesSplitDma, RowGroupsThenColumns) {
  // 128 x 1024 fp32 = 512 KiB: min(8 max, 512/16 KiB) = 8 pieces -> 4 groups of 32
  // partitions x 2 column halves (64 KiB each). 100 x 64 fp32 = 25 KiB holds one
  // 16 KiB piece -> stays whole. 96 x 256 fp32 = 96 KiB: 6 pieces -> 3 groups of 32
  // partitions (starting at 0, 32, 64) x 2 column halves.
  const std::string in = R"(kernel k
tensor X [128,1024] fp32 input
tensor S [100,64] fp32 input
tensor T [96,256] fp32 input
pool sb sbuf bufs=1
tile x sb [128,1024] fp32 slot=0
%0 dma dma_copy dst=x:sbuf[0:128, 0, fp32, [1,1024]] src=X:hbm[128x1024, 0, fp32, [1,1024]]
%1 dma dma_copy dst=x:sbuf[0:100, 0, fp32, [1,64]] src=S:hbm[100x64, 0, fp32, [1,64]]
%2 dma dma_copy dst=x:sbuf[0:96, 0, fp32, [1,256]] src=T:hbm[96x256, 0, fp32, [1,256]]
)";
  std::map<std::string, double> st;
  const std::string out = run_pass("split_dma", in, &st);
  const std::vector<std::string> want = {
      "%0 dma dma_copy dst=x:sbuf[0:32, 0, fp32, [1,512]] src=X:hbm[32x1024, 0, fp32, [1,512]]",
      "%3 dma dma_copy dst=x:sbuf[0:32, 2048, fp32, [1,512]] src=X:hbm[32x1024, 2048, fp32, "
      "[1,512]]",
      "%4 dma dma_copy dst=x:sbuf[32:64, 0, fp32, [1,512]] src=X:hbm[32x1024, 131072, fp32, "
      "[1,512]]",
      "%5 dma dma_copy dst=x:sbuf[32:64, 2048, fp32, [1,512]] src=X:hbm[32x1024, 133120, fp32, "
      "[1,512]]",
      "%6 dma dma_copy dst=x:sbuf[64:96, 0, fp32, [1,512]] src=X:hbm[32x1024, 262144, fp32, "
      "[1,512]]",
      "%7 dma dma_copy dst=x:sbuf[64:96, 2048, fp32, [1,512]] src=X:hbm[32x1024, 264192, fp32, "
      "[1,512]]",
      "%8 dma dma_copy dst=x:sbuf[96:128, 0, fp32, [1,512]] src=X:hbm[32x1024, 393216, fp32, "
      "[1,512]]",
      "%9 dma dma_copy dst=x:sbuf[96:128, 2048, fp32, [1,512]] src=X:hbm[32x1024, 395264, fp32, "
      "[1,512]]",
      "%1 dma dma_copy dst=x:sbuf[0:100, 0, fp32, [1,64]] src=S:hbm[100x64, 0, fp32, [1,64]]",
      "%2 dma dma_copy dst=x:sbuf[0:32, 0, fp32, [1,128]] src=T:hbm[32x256, 0, fp32, [1,128]]",
      "%10 dma dma_copy dst=x:sbuf[0:32, 512, fp32, [1,128]] src=T:hbm[32x256, 512, fp32, [1,128]]",
      "%11 dma dma_copy dst=x:sbuf[32:64, 0, fp32, [1,128]] src=T:hbm[32x256, 32768, fp32, "
      "[1,128]]",
      "%12 dma dma_copy dst=x:sbuf[32:64, 512, fp32, [1,128]] src=T:hbm[32x256, 33280, fp32, "
      "[1,128]]",
      "%13 dma dma_copy dst=x:sbuf[64:96, 0, fp32, [1,128]] src=T:hbm[32x256, 65536, fp32, "
      "[1,128]]",
      "%14 dma dma_copy dst=x:sbuf[64:96, 512, fp32, [1,128]] src=T:hbm[32x256, 66048, fp32, "
      "[1,128]]",
  };
  const auto got = lines(out, "%");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "line " << i;
  EXPECT_EQ(st["split_dma.split"], 2);
  EXPECT_EQ(st["split_dma.pieces"], 14);
}

TEST(TilePassesSplitDma, HbmToHbmRowsThenColumns) {
  // HBM -> HBM copies (a Transpose or Concat lowered as DMA) have no partitions:
  // 64 x 1024 fp32 = 256 KiB -> min(8 max, 256/16 KiB) = 8 groups of 8 rows (32 KiB
  // each); one row of 65536 fp32 (256 KiB) -> 8 column parts of 8192.
  const std::string in = R"(kernel k
tensor A [64,1024] fp32 input
tensor B [64,1024] fp32 output
tensor C [1,65536] fp32 input
tensor D [1,65536] fp32 output
%0 dma dma_copy dst=B:hbm[64x1024, 0, fp32, [1,1024]] src=A:hbm[64x1024, 0, fp32, [1,1024]]
%1 dma dma_copy dst=D:hbm[1x65536, 0, fp32, [1,65536]] src=C:hbm[1x65536, 0, fp32, [1,65536]]
)";
  std::map<std::string, double> st;
  const std::string out = run_pass("split_dma", in, &st);
  const auto got = lines(out, "%");
  ASSERT_EQ(got.size(), 16u);
  EXPECT_EQ(got[0],
            "%0 dma dma_copy dst=B:hbm[8x1024, 0, fp32, [1,1024]] src=A:hbm[8x1024, 0, "
            "fp32, [1,1024]]");
  // Group 7 starts at row 56: 56 x 1024 x 4 B.
  EXPECT_EQ(got[7],
            "%8 dma dma_copy dst=B:hbm[8x1024, 229376, fp32, [1,1024]] src=A:hbm[8x1024, "
            "229376, fp32, [1,1024]]");
  EXPECT_EQ(got[8],
            "%1 dma dma_copy dst=D:hbm[1x65536, 0, fp32, [1,8192]] src=C:hbm[1x65536, 0, "
            "fp32, [1,8192]]");
  // Part 7 starts at column 57344: x 4 B.
  EXPECT_EQ(got[15],
            "%15 dma dma_copy dst=D:hbm[1x65536, 229376, fp32, [1,8192]] "
            "src=C:hbm[1x65536, 229376, fp32, [1,8192]]");
  EXPECT_EQ(st["split_dma.split"], 2);
  EXPECT_EQ(st["split_dma.pieces"], 16);
}

// ---- assign_engines -------------------------------------------------------------------

TEST(TilePassesAssignEngines, CapabilityAndFinishTime) {
  // Every copy of 512 elements costs 64 + 512 = 576 ns on any engine. %0 goes to
  // vector (all free, first choice); %1 is independent and would finish at 1152 on
  // vector but 576 on gpsimd; %2 reads PSUM, which gpsimd cannot, and vector is busy
  // until 1152: scalar (576); %3 stays on the pinned vector engine; %4 needs %0's
  // result (done at 576): vector free at 1152+576, gpsimd at 576 -> gpsimd.
  const std::string in = R"(kernel k
pool sb sbuf bufs=1
pool ps psum bufs=1
tile a sb [128,512] fp32 slot=0
tile b sb [128,512] fp32 slot=0
tile c sb [128,512] fp32 slot=0
tile d sb [128,512] fp32 slot=0
tile p ps [128,512] fp32 slot=0
%0 auto tensor_copy dst=b:sbuf[0:128, 0, fp32, [1,512]] src=a:sbuf[0:128, 0, fp32, [1,512]]
%1 auto tensor_copy dst=c:sbuf[0:128, 0, fp32, [1,512]] src=a:sbuf[0:128, 0, fp32, [1,512]]
%2 auto tensor_copy dst=d:sbuf[0:128, 0, fp32, [1,512]] src=p:psum[0:128, 0, fp32, [1,512]]
%3 vector! tensor_scalar dst=a:sbuf[0:128, 0, fp32, [1,512]] src=p:psum[0:128, 0, fp32, [1,512]] op0=add arg0=1
%4 auto tensor_tensor dst=c:sbuf[0:128, 0, fp32, [1,512]] in0=b:sbuf[0:128, 0, fp32, [1,512]] in1=b:sbuf[0:128, 0, fp32, [1,512]] op=max
)";
  std::map<std::string, double> st;
  const auto got = lines(run_pass("assign_engines", in, &st), "%");
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].substr(0, 22), "%0 vector tensor_copy ");
  EXPECT_EQ(got[1].substr(0, 22), "%1 gpsimd tensor_copy ");
  EXPECT_EQ(got[2].substr(0, 22), "%2 scalar tensor_copy ");
  EXPECT_EQ(got[3].substr(0, 25), "%3 vector! tensor_scalar ");
  EXPECT_EQ(got[4].substr(0, 24), "%4 gpsimd tensor_tensor ");
  EXPECT_EQ(st["assign_engines.assigned"], 4);
}

TEST(TilePassesAssignEngines, GpsimdNeverTouchesPsum) {
  // partition_broadcast runs on gpsimd only, which cannot reach PSUM: rejected when
  // the IR is read, naming the op.
  const std::string in = R"(kernel k
pool ps psum bufs=1
tile p ps [128,4] fp32 slot=0
%3 gpsimd partition_broadcast dst=p:psum[0:128, 0, fp32, [1,4]] src=p:psum[0:1, 0, fp32, [1,4]]
)";
  EXPECT_NE(error_of([&] {
              parse(in, "g.tir");
            }).find("op %3 (gpsimd partition_broadcast): the gpsimd engine cannot reach PSUM"),
            std::string::npos);
  // An auto op that reads PSUM is never given gpsimd, however busy the others are.
  std::string many =
      "kernel k\npool ps psum bufs=1\npool sb sbuf bufs=1\n"
      "tile p ps [128,512] fp32 slot=0\ntile s sb [128,512] fp32 slot=0\n";
  for (int i = 0; i < 6; ++i)
    many += "%" + std::to_string(i) +
            " auto tensor_copy dst=s:sbuf[0:128, 0, fp32, [1,512]] src=p:psum[0:128, 0, fp32, "
            "[1,512]]\n";
  std::map<std::string, double> st;
  run_pass("assign_engines", many, &st);
  EXPECT_EQ(st["assign_engines.gpsimd"], 0);
  EXPECT_EQ(st["assign_engines.vector"] + st["assign_engines.scalar"], 6);
}

// ---- alloc_memory ---------------------------------------------------------------------

TEST(TilePassesAllocMemory, RotatingBuffersLivenessAndBanks) {
  // Pool a: 2 buffers of its largest tile (256 fp32 = 1024 B) = 2048 B, live ops
  // 0..3. Pool b: 1 x 512 B, live ops 4..5 only: it reuses a's memory (address 0).
  // Pool c: live throughout, placed above a: 2048. PSUM: p's 300 fp32 = 1200 B round
  // to 2048 (a power of two, aligned to itself, so never across a bank); 2 buffers
  // at 0. q's 64 fp32 = 256 B x 3, live over p's lifetime too (ops 5..8), at 4096
  // (placed largest first).
  const std::string in = R"(kernel k
pool a sbuf bufs=2
pool b sbuf bufs=1
pool c sbuf bufs=1
pool p psum bufs=2
pool q psum bufs=3
tile a0 a [128,256] fp32 slot=0
tile a1 a [128,100] fp32 slot=1
tile a2 a [128,256] fp32 slot=0
tile b0 b [128,128] fp32 slot=0
tile c0 c [128,16] fp32 slot=0
tile p0 p [128,300] fp32 slot=0
tile p1 p [128,300] fp32 slot=1
tile q0 q [128,64] fp32 slot=0
%0 vector memset dst=a0:sbuf[0:128, 0, fp32, [1,256]] value=0
%1 vector memset dst=a1:sbuf[0:128, 0, fp32, [1,100]] value=0
%2 vector tensor_copy dst=c0:sbuf[0:128, 0, fp32, [1,16]] src=a1:sbuf[0:128, 0, fp32, [1,16]]
%3 vector memset dst=a2:sbuf[0:128, 0, fp32, [1,256]] value=1
%4 vector memset dst=b0:sbuf[0:128, 0, fp32, [1,128]] value=2
%5 vector tensor_copy dst=q0:psum[0:128, 0, fp32, [1,64]] src=b0:sbuf[0:128, 0, fp32, [1,64]]
%6 vector tensor_copy dst=p1:psum[0:128, 0, fp32, [1,16]] src=c0:sbuf[0:128, 0, fp32, [1,16]]
%7 vector tensor_copy dst=p0:psum[0:128, 0, fp32, [1,16]] src=c0:sbuf[0:128, 0, fp32, [1,16]]
%8 vector tensor_copy dst=c0:sbuf[0:128, 0, fp32, [1,16]] src=q0:psum[0:128, 0, fp32, [1,16]]
)";
  std::map<std::string, double> st;
  const std::string out = run_pass("alloc_memory", in, &st);
  EXPECT_EQ(lines(out, "pool"), (std::vector<std::string>{
                                    "pool a sbuf bufs=2 @0 buf=1024",
                                    "pool b sbuf bufs=1 @0 buf=512",
                                    "pool c sbuf bufs=1 @2048 buf=64",
                                    "pool p psum bufs=2 @0 buf=2048",
                                    "pool q psum bufs=3 @4096 buf=256",
                                }));
  EXPECT_EQ(lines(out, "tile"), (std::vector<std::string>{
                                    "tile a0 a [128,256] fp32 slot=0 @0",
                                    "tile a1 a [128,100] fp32 slot=1 @1024",
                                    "tile a2 a [128,256] fp32 slot=0 @0",
                                    "tile b0 b [128,128] fp32 slot=0 @0",
                                    "tile c0 c [128,16] fp32 slot=0 @2048",
                                    "tile p0 p [128,300] fp32 slot=0 @0",
                                    "tile p1 p [128,300] fp32 slot=1 @2048",
                                    "tile q0 q [128,64] fp32 slot=0 @4096",
                                }));
  EXPECT_EQ(st["alloc_memory.sbuf_bytes"], 2112);  // c ends at 2048 + 64
  EXPECT_EQ(st["alloc_memory.psum_bytes"], 4096 + 768);
}

TEST(TilePassesAllocMemory, TooBigIsAClearError) {
  // 3 buffers of 16384 fp32 (64 KiB) = 192 KiB per partition; the target has 64 KiB.
  const std::string in = R"(kernel big
pool huge sbuf bufs=3
tile h0 huge [128,16384] fp32 slot=0
%0 vector memset dst=h0:sbuf[0:128, 0, fp32, [1,16384]] value=0
)";
  const std::string e = error_of([&] { run_pass("alloc_memory", in); });
  EXPECT_NE(e.find("alloc_memory: kernel 'big' needs 196608 bytes per partition of sbuf but the "
                   "target (test) has 65536; at op %0 the live pools are: huge 3 x 65536 B."),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("use fewer buffers, smaller tiles, or split the kernel"), std::string::npos)
      << e;
}

TEST(TilePassesAllocMemory, MatmulAcrossABankIsAnError) {
  // A [128,1024] fp32 PSUM tile spans two banks; columns 256..767 cross the first
  // bank boundary (byte 2048).
  const std::string in = R"(kernel k
pool sb sbuf bufs=1
pool ps psum bufs=1
tile s sb [128,640] bf16 slot=0
tile p ps [128,1024] fp32 slot=0
%0 tensor matmul dst=p:psum[0:128, 1024, fp32, [1,512]] stationary=s:sbuf[0:128, 0, bf16, [1,128]] moving=s:sbuf[0:128, 0, bf16, [1,512]]
)";
  const std::string e = error_of([&] { run_pass("alloc_memory", in); });
  EXPECT_NE(e.find("op %0 (tensor matmul): its output, bytes 1024..3072 of PSUM in tile 'p', "
                   "crosses a 2048-byte bank boundary"),
            std::string::npos)
      << e;
}

// ---- assign_dma_queues ----------------------------------------------------------------

TEST(TilePassesAssignDmaQueues, LoadsStoresSpread) {
  // Four independent 12.8 KB loads (100 + 1280 ns each) go to the four engines in
  // turn; the store waits for the vector op that needs load %0 (done at 1380, then
  // 64 + 64 ns of vector) and goes to the engine free first (all free at 1380:
  // engine 0), on the store queue 1.
  const std::string in = R"(kernel k
tensor X [4,128,25] fp32 input
tensor Y [128,25] fp32 output
pool sb sbuf bufs=4
tile x0 sb [128,25] fp32 slot=0
tile x1 sb [128,25] fp32 slot=1
tile x2 sb [128,25] fp32 slot=2
tile x3 sb [128,25] fp32 slot=3
%0 dma dma_copy dst=x0:sbuf[0:128, 0, fp32, [1,25]] src=X:hbm[128x25, 0, fp32, [1,25]]
%1 dma dma_copy dst=x1:sbuf[0:128, 0, fp32, [1,25]] src=X:hbm[128x25, 12800, fp32, [1,25]]
%2 dma dma_copy dst=x2:sbuf[0:128, 0, fp32, [1,25]] src=X:hbm[128x25, 25600, fp32, [1,25]]
%3 dma dma_copy dst=x3:sbuf[0:128, 0, fp32, [1,25]] src=X:hbm[128x25, 38400, fp32, [1,25]]
%4 vector tensor_scalar dst=x0:sbuf[0:128, 0, fp32, [1,25]] src=x0:sbuf[0:128, 0, fp32, [1,25]] op0=mul arg0=3
%5 dma dma_copy dst=Y:hbm[128x25, 0, fp32, [1,25]] src=x0:sbuf[0:128, 0, fp32, [1,25]]
)";
  Kernel k = parse(in);
  PassContext ctx;
  ctx.target = test_target();
  run_passes(k, ctx, {"alloc_memory", "assign_dma_queues"});
  const auto got = lines(to_text(k), "%");
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].substr(0, 12), "%0 dma.0.0 d");
  EXPECT_EQ(got[1].substr(0, 12), "%1 dma.1.0 d");
  EXPECT_EQ(got[2].substr(0, 12), "%2 dma.2.0 d");
  EXPECT_EQ(got[3].substr(0, 12), "%3 dma.3.0 d");
  EXPECT_EQ(got[5].substr(0, 12), "%5 dma.0.1 d");
}

// ---- schedule -------------------------------------------------------------------------

// Two row tiles, written load/compute/store one after the other. Costs: a load or
// store of 128 x 256 fp32 = 128 KiB at 10 B/ns + 100 ns = 13207 ns; the exp on the
// scalar engine 64 + 256 = 320 ns. With two buffers both loads start at once (two
// DMA engines), so the second tile's load is hoisted above the first tile's exp and
// store, and the second exp runs while the first store is in flight.
const char* kTwoTiles = R"(kernel k
tensor X [256,256] fp32 input
tensor Y [256,256] fp32 output
pool sb sbuf bufs=2
pool o sbuf bufs=2
tile x0 sb [128,256] fp32 slot=0
tile y0 o [128,256] fp32 slot=0
tile x1 sb [128,256] fp32 slot=1
tile y1 o [128,256] fp32 slot=1
%0 dma.0.0 dma_copy dst=x0:sbuf[0:128, 0, fp32, [1,256]] src=X:hbm[128x256, 0, fp32, [1,256]]
%1 scalar activation dst=y0:sbuf[0:128, 0, fp32, [1,256]] src=x0:sbuf[0:128, 0, fp32, [1,256]] func=exp
%2 dma.0.1 dma_copy dst=Y:hbm[128x256, 0, fp32, [1,256]] src=y0:sbuf[0:128, 0, fp32, [1,256]]
%3 dma.0.0 dma_copy dst=x1:sbuf[0:128, 0, fp32, [1,256]] src=X:hbm[128x256, 131072, fp32, [1,256]]
%4 scalar activation dst=y1:sbuf[0:128, 0, fp32, [1,256]] src=x1:sbuf[0:128, 0, fp32, [1,256]] func=exp
%5 dma.0.1 dma_copy dst=Y:hbm[128x256, 131072, fp32, [1,256]] src=y1:sbuf[0:128, 0, fp32, [1,256]]
)";

// keep_on_chip: S is stored from two tiles (t0, t1: columns 0..31 and 32..63) and
// loaded back whole with a cast to bf16; R is stored from r0 with a cast (fp32 ->
// bf16), so its load must keep the round trip; Q's tile q0 is rewritten between its
// store and load, so that load stays too.
const char* kRoundTrips = R"(kernel k
tensor X [128,64] fp32 input
tensor S [128,64] fp32 scratch
tensor R [128,32] bf16 scratch
tensor Q [128,32] fp32 scratch
tensor Y [128,64] bf16 output
pool a sbuf bufs=2
pool b sbuf bufs=1
pool c sbuf bufs=1
tile t0 a [128,32] fp32 slot=0
tile t1 a [128,32] fp32 slot=1
tile u b [128,64] bf16 slot=0
tile r0 c [128,32] fp32 slot=0
tile q0 c [128,32] fp32 slot=0
%0 dma dma_copy dst=t0:sbuf[0:128, 0, fp32, [1,32]] src=X:hbm[128x64, 0, fp32, [1,32]]
%1 dma dma_copy dst=S:hbm[128x64, 0, fp32, [1,32]] src=t0:sbuf[0:128, 0, fp32, [1,32]]
%2 dma dma_copy dst=t1:sbuf[0:128, 0, fp32, [1,32]] src=X:hbm[128x64, 128, fp32, [1,32]]
%3 dma dma_copy dst=S:hbm[128x64, 128, fp32, [1,32]] src=t1:sbuf[0:128, 0, fp32, [1,32]]
%4 dma dma_copy dst=u:sbuf[0:128, 0, bf16, [1,64]] src=S:hbm[128x64, 0, fp32, [1,64]]
%5 dma dma_copy dst=Y:hbm[128x64, 0, bf16, [1,64]] src=u:sbuf[0:128, 0, bf16, [1,64]]
%6 dma dma_copy dst=R:hbm[128x32, 0, bf16, [1,32]] src=r0:sbuf[0:128, 0, fp32, [1,32]]
%7 dma dma_copy dst=r0:sbuf[0:128, 0, fp32, [1,32]] src=R:hbm[128x32, 0, bf16, [1,32]]
%8 dma dma_copy dst=Q:hbm[128x32, 0, fp32, [1,32]] src=q0:sbuf[0:128, 0, fp32, [1,32]]
%9 vector memset dst=q0:sbuf[0:128, 0, fp32, [1,32]] value=0
%10 dma dma_copy dst=q0:sbuf[0:128, 0, fp32, [1,32]] src=Q:hbm[128x32, 0, fp32, [1,32]]
)";

TEST(TilePassesKeepOnChip, ForwardsLoadsAsCopiesAndDropsDeadStores) {
  std::map<std::string, double> st;
  const std::string out = run_pass("keep_on_chip", kRoundTrips, &st);
  // The load of S becomes one copy per source tile (casting as the DMA did); both
  // stores into S are dead then. t0 and t1 leave the rotating pool a for pools of
  // their own, which alloc_memory keeps alive until the copies.
  EXPECT_EQ(
      lines(out, "%"),
      (std::vector<std::string>{
          "%0 dma dma_copy dst=t0:sbuf[0:128, 0, fp32, [1,32]] src=X:hbm[128x64, 0, fp32, [1,32]]",
          "%2 dma dma_copy dst=t1:sbuf[0:128, 0, fp32, [1,32]] src=X:hbm[128x64, 128, fp32, "
          "[1,32]]",
          "%4 auto tensor_copy dst=u:sbuf[0:128, 0, bf16, [1,32]] src=t0:sbuf[0:128, 0, fp32, "
          "[1,32]]",
          "%11 auto tensor_copy dst=u:sbuf[0:128, 64, bf16, [1,32]] src=t1:sbuf[0:128, 0, fp32, "
          "[1,32]]",
          "%5 dma dma_copy dst=Y:hbm[128x64, 0, bf16, [1,64]] src=u:sbuf[0:128, 0, bf16, [1,64]]",
          "%6 dma dma_copy dst=R:hbm[128x32, 0, bf16, [1,32]] src=r0:sbuf[0:128, 0, fp32, [1,32]]",
          "%7 dma dma_copy dst=r0:sbuf[0:128, 0, fp32, [1,32]] src=R:hbm[128x32, 0, bf16, [1,32]]",
          "%8 dma dma_copy dst=Q:hbm[128x32, 0, fp32, [1,32]] src=q0:sbuf[0:128, 0, fp32, [1,32]]",
          "%9 vector memset dst=q0:sbuf[0:128, 0, fp32, [1,32]] value=0",
          "%10 dma dma_copy dst=q0:sbuf[0:128, 0, fp32, [1,32]] src=Q:hbm[128x32, 0, fp32, [1,32]]",
      }));
  EXPECT_EQ(lines(out, "tile t"), (std::vector<std::string>{
                                      "tile t0 t0.kept [128,32] fp32 slot=0",
                                      "tile t1 t1.kept [128,32] fp32 slot=0",
                                  }));
  EXPECT_EQ(st["keep_on_chip.loads_forwarded"], 1);
  EXPECT_EQ(st["keep_on_chip.loads_spilled"], 0);
  EXPECT_EQ(st["keep_on_chip.copies"], 2);
  EXPECT_EQ(st["keep_on_chip.stores_dropped"], 2);
  // Two stores of 128 x 32 fp32 and the load of 128 x 64 fp32: 16 + 16 + 32 KiB.
  EXPECT_EQ(st["keep_on_chip.hbm_bytes_saved"], 65536);
}

TEST(TilePassesKeepOnChip, PartitionShiftBecomesAnSbufTransfer) {
  // Rows 64..127 of t are stored to S, then loaded onto partitions 0..63 of u: the
  // engines cannot shift partitions, so the load becomes one SBUF-to-SBUF dma_copy
  // (the store is dead then). R holds rows 0..15; loading its rows 8..15 onto 0..7
  // stays a load: an SBUF pattern of 8 partitions must start at 0, 32, 64 or 96, and
  // t's rows 8..15 do not (found by trnsim fuzz).
  const std::string in = R"(kernel k
tensor X [128,16] fp32 input
tensor S [64,16] fp32 scratch
tensor R [16,16] fp32 scratch
tensor Y [64,16] fp32 output
pool a sbuf bufs=1
pool b sbuf bufs=1
tile t a [128,16] fp32 slot=0
tile u b [64,16] fp32 slot=0
%0 dma dma_copy dst=t:sbuf[0:128, 0, fp32, [1,16]] src=X:hbm[128x16, 0, fp32, [1,16]]
%1 dma dma_copy dst=S:hbm[64x16, 0, fp32, [1,16]] src=t:sbuf[64:128, 0, fp32, [1,16]]
%2 dma dma_copy dst=u:sbuf[0:64, 0, fp32, [1,16]] src=S:hbm[64x16, 0, fp32, [1,16]]
%3 dma dma_copy dst=Y:hbm[64x16, 0, fp32, [1,16]] src=u:sbuf[0:64, 0, fp32, [1,16]]
%4 dma dma_copy dst=R:hbm[16x16, 0, fp32, [1,16]] src=t:sbuf[0:16, 0, fp32, [1,16]]
%5 dma dma_copy dst=u:sbuf[0:8, 0, fp32, [1,16]] src=R:hbm[8x16, 512, fp32, [1,16]]
)";
  std::map<std::string, double> st;
  const std::string out = run_pass("keep_on_chip", in, &st);
  EXPECT_EQ(lines(out, "%"),
            (std::vector<std::string>{
                "%0 dma dma_copy dst=t:sbuf[0:128, 0, fp32, [1,16]] src=X:hbm[128x16, 0, fp32, "
                "[1,16]]",
                "%2 dma dma_copy dst=u:sbuf[0:64, 0, fp32, [1,16]] src=t:sbuf[64:128, 0, fp32, "
                "[1,16]]",
                "%3 dma dma_copy dst=Y:hbm[64x16, 0, fp32, [1,16]] src=u:sbuf[0:64, 0, fp32, "
                "[1,16]]",
                "%4 dma dma_copy dst=R:hbm[16x16, 0, fp32, [1,16]] src=t:sbuf[0:16, 0, fp32, "
                "[1,16]]",
                "%5 dma dma_copy dst=u:sbuf[0:8, 0, fp32, [1,16]] src=R:hbm[8x16, 512, fp32, "
                "[1,16]]",
            }));
  EXPECT_EQ(st["keep_on_chip.loads_forwarded"], 1);
  EXPECT_EQ(st["keep_on_chip.stores_dropped"], 1);
  EXPECT_EQ(st["keep_on_chip.hbm_bytes_saved"], 64 * 16 * 4);  // the store; the load moves on chip
}

TEST(TilePassesKeepOnChip, EqualRunsMergeIntoOneStridedCopy) {
  // u takes columns 0..7 and 16..23 of t (through S): two runs of 8 elements, 16
  // apart in t and 8 apart in u, become one copy with a 2-D pattern on each side.
  const std::string in = R"(kernel k
tensor X [128,32] fp32 input
tensor S [128,32] fp32 scratch
tensor Y [128,16] fp32 output
pool a sbuf bufs=1
pool b sbuf bufs=1
tile t a [128,32] fp32 slot=0
tile u b [128,16] fp32 slot=0
%0 dma dma_copy dst=t:sbuf[0:128, 0, fp32, [1,32]] src=X:hbm[128x32, 0, fp32, [1,32]]
%1 dma dma_copy dst=S:hbm[128x32, 0, fp32, [1,32]] src=t:sbuf[0:128, 0, fp32, [1,32]]
%2 dma dma_copy dst=u:sbuf[0:128, 0, fp32, [1,16]] src=S:hbm[128x32, 0, fp32, [16,2], [1,8]]
%3 dma dma_copy dst=Y:hbm[128x16, 0, fp32, [1,16]] src=u:sbuf[0:128, 0, fp32, [1,16]]
)";
  std::map<std::string, double> st;
  const std::string out = run_pass("keep_on_chip", in, &st);
  EXPECT_EQ(lines(out, "%2"), (std::vector<std::string>{
                                  "%2 auto tensor_copy dst=u:sbuf[0:128, 0, fp32, [8,2], [1,8]] "
                                  "src=t:sbuf[0:128, 0, fp32, [16,2], [1,8]]"}));
  EXPECT_EQ(st["keep_on_chip.copies"], 1);
  EXPECT_EQ(st["keep_on_chip.stores_dropped"], 1);
}

TEST(TilePassesKeepOnChip, SpillsWhenSbufWouldRunOut) {
  // As lowered, pool a (2 x 128 B, ops 0..3) and pool b (128 B, ops 4..5) never live
  // together: 256 B per partition (c: 128 B more over ops 6..10, placed at 0 too).
  // Keeping t0 and t1 until op 4 needs 128 + 128 + 128 = 384 B there. With 256 B of
  // SBUF per partition the load keeps its round trip.
  compiler::Target t = test_target();
  t.sbuf_partition_bytes = 256;
  std::map<std::string, double> st;
  const std::string out = run_pass("keep_on_chip", kRoundTrips, &st, t);
  EXPECT_EQ(out, to_text(parse(kRoundTrips)));
  EXPECT_EQ(st["keep_on_chip.loads_forwarded"], 0);
  EXPECT_EQ(st["keep_on_chip.loads_spilled"], 1);
  EXPECT_EQ(placed_bytes(parse(kRoundTrips), t, isa::MemSpace::sbuf), 256u);
  t.sbuf_partition_bytes = 384;  // now it fits
  run_pass("keep_on_chip", kRoundTrips, &st, t);
  EXPECT_EQ(st["keep_on_chip.loads_forwarded"], 1);
}

TEST(TilePassesSchedule, HoistsPrefetchAndOverlaps) {
  Kernel k = parse(kTwoTiles);
  PassContext ctx;
  ctx.target = test_target();
  run_passes(k, ctx, {"alloc_memory", "schedule"});
  std::vector<int> order;
  for (const Op& op : k.ops) order.push_back(op.id);
  // Both loads first (t=0 on engines 0 and 1), then the first exp (13207), then the
  // first store and the second exp together (13527; equal starts keep list order),
  // then the second store (13847) on another engine. Queue order is list order: DMA
  // engine 1 now carries the second load.
  EXPECT_EQ(order, (std::vector<int>{0, 3, 1, 2, 4, 5}));
  auto at = [&](int id) -> const Op& {
    return *std::find_if(k.ops.begin(), k.ops.end(), [&](const Op& o) { return o.id == id; });
  };
  EXPECT_DOUBLE_EQ(at(3).est_start, 0.0);
  EXPECT_EQ(at(3).dma_engine, 1);
  EXPECT_EQ(at(3).dma_queue, 0);  // the queue class stays
  EXPECT_DOUBLE_EQ(at(1).est_start, 13207.2);
  EXPECT_DOUBLE_EQ(at(4).est_start, 13207.2 + 320);
  EXPECT_DOUBLE_EQ(at(2).est_start, 13207.2 + 320);
  EXPECT_DOUBLE_EQ(at(5).est_start, 13207.2 + 640);
  EXPECT_NE(at(5).dma_engine, at(2).dma_engine);
  EXPECT_DOUBLE_EQ(ctx.stats["schedule.makespan_ns"], 13207.2 + 640 + 13207.2);
  // The dump after the pass has the new order and queues.
  const auto got = lines(to_text(k), "%");
  EXPECT_EQ(got[1].substr(0, 12), "%3 dma.1.0 d");
}

TEST(TilePassesSchedule, KeepsTheOrderOfEveryConflictingPair) {
  // On a real kernel: every pair of ops that touch the same memory (one writing)
  // keeps its relative order, so the reordered list means the same.
  Kernel k = kernels::softmax(300, 77);
  PassContext ctx;
  ctx.target = test_target();
  run_passes(k, ctx, {"split_dma", "assign_engines", "alloc_memory", "assign_dma_queues"});
  std::map<int, size_t> before;
  for (size_t i = 0; i < k.ops.size(); ++i) before[k.ops[i].id] = i;
  Kernel s = k;
  run_passes(s, ctx, {"schedule"});
  size_t pairs = 0;
  for (size_t b = 0; b < s.ops.size(); ++b)
    for (size_t a = 0; a < b; ++a)
      if (ops_conflict(s, s.ops[a], s.ops[b], DepMode::physical)) {
        ++pairs;
        EXPECT_LT(before[s.ops[a].id], before[s.ops[b].id])
            << op_label(s, s.ops[a]) << " and " << op_label(s, s.ops[b]) << " swapped";
      }
  EXPECT_GT(pairs, 20u);
  // ... and it did reorder something.
  bool moved = false;
  for (size_t i = 0; i < s.ops.size(); ++i) moved |= before[s.ops[i].id] != i;
  EXPECT_TRUE(moved);
}

TEST(TileDeps, HbmBandsKeepEveryConflictOrdered) {
  // A scratch tensor T [512, 64] fp32 has 256-byte rows, so build_deps files its
  // accesses in bands of 128 rows (32 KiB). T is written in 128-row blocks, read back
  // in 100-row blocks of half the columns (crossing bands), then written again in
  // 96-row blocks. Every edge must be a real conflict in list order, and every
  // conflicting pair must be ordered through the graph.
  kernels::Builder b("bands");
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
  for (int64_t r = 0; r < 500; r += 100)
    for (int64_t c = 0; c < 64; c += 32) {
      auto t = b.tile(p, {100, 32}, isa::DType::fp32);
      b.dma(t, T({sl(r, r + 100), sl(c, c + 32)}));
      b.dma(Y({sl(r, r + 100), sl(c, c + 32)}), t);
    }
  for (int64_t r = 0; r + 96 <= 512; r += 96) {
    auto t = b.tile(p, {96, 64}, isa::DType::fp32);
    b.dma(t, X({sl(r, r + 96), all()}));
    b.dma(T({sl(r, r + 96), all()}), t);
  }
  Kernel k = b.kernel();
  PassContext ctx;
  ctx.target = test_target();
  run_passes(k, ctx, {"split_dma", "assign_engines", "alloc_memory"});
  for (DepMode mode : {DepMode::logical, DepMode::physical}) {
    const DepGraph g = build_deps(k, mode);
    const size_t n = k.ops.size();
    for (size_t j = 0; j < n; ++j)
      for (int i : g.preds[j]) {
        EXPECT_LT(static_cast<size_t>(i), j);
        EXPECT_TRUE(ops_conflict(k, k.ops[i], k.ops[j], mode))
            << op_label(k, k.ops[i]) << " -> " << op_label(k, k.ops[j]);
      }
    // reach[a][b]: b is ordered after a through edges (preds come earlier in the list).
    std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
    for (size_t j = 0; j < n; ++j)
      for (int i : g.preds[j]) {
        reach[i][j] = true;
        for (size_t a = 0; a < n; ++a)
          if (reach[a][i]) reach[a][j] = true;
      }
    size_t pairs = 0;
    for (size_t bb = 0; bb < n; ++bb)
      for (size_t a = 0; a < bb; ++a)
        if (ops_conflict(k, k.ops[a], k.ops[bb], mode)) {
          ++pairs;
          EXPECT_TRUE(reach[a][bb])
              << op_label(k, k.ops[a]) << " and " << op_label(k, k.ops[bb]) << " are not ordered";
        }
    // T's stores, its band-crossing loads and the rewrites conflict through HBM alone.
    EXPECT_GT(pairs, 40u);
  }
}

// ---- insert_sync ----------------------------------------------------------------------

TEST(TilePassesInsertSync, FewestWaits) {
  // %2 needs both loads: two waits. %3 (scalar) needs %2 (vector). %4 is on %2's
  // queue: no wait. %5 (gpsimd) needs %3's d and %0's a; waiting for %3 already
  // implies %0 (through %2's wait), so one wait. %6 stores f: waits for gpsimd. %7
  // rewrites a (WAR with %2 and %5 reading it, WAW with %0): %5's completion
  // implies all of them (gpsimd, whose clock covers vector and dma.0.0), so one
  // wait. Semaphores: dma.0.0 s0, dma.1.0 s1, vector s2, scalar s3, gpsimd s4.
  const std::string in = R"(kernel k
tensor A [128,64] fp32 input
tensor B [128,64] fp32 input
tensor F [128,64] fp32 output
pool sb sbuf bufs=6
tile a sb [128,64] fp32 slot=0
tile b sb [128,64] fp32 slot=1
tile c sb [128,64] fp32 slot=2
tile d sb [128,64] fp32 slot=3
tile e sb [128,64] fp32 slot=4
tile f sb [128,64] fp32 slot=5
%0 dma.0.0 dma_copy dst=a:sbuf[0:128, 0, fp32, [1,64]] src=A:hbm[128x64, 0, fp32, [1,64]]
%1 dma.1.0 dma_copy dst=b:sbuf[0:128, 0, fp32, [1,64]] src=B:hbm[128x64, 0, fp32, [1,64]]
%2 vector tensor_tensor dst=c:sbuf[0:128, 0, fp32, [1,64]] in0=a:sbuf[0:128, 0, fp32, [1,64]] in1=b:sbuf[0:128, 0, fp32, [1,64]] op=add
%3 scalar activation dst=d:sbuf[0:128, 0, fp32, [1,64]] src=c:sbuf[0:128, 0, fp32, [1,64]] func=exp
%4 vector tensor_scalar dst=e:sbuf[0:128, 0, fp32, [1,64]] src=c:sbuf[0:128, 0, fp32, [1,64]] op0=mul arg0=2
%5 gpsimd tensor_tensor dst=f:sbuf[0:128, 0, fp32, [1,64]] in0=d:sbuf[0:128, 0, fp32, [1,64]] in1=a:sbuf[0:128, 0, fp32, [1,64]] op=add
%6 dma.0.1 dma_copy dst=F:hbm[128x64, 0, fp32, [1,64]] src=f:sbuf[0:128, 0, fp32, [1,64]]
%7 dma.0.0 dma_copy dst=a:sbuf[0:128, 0, fp32, [1,64]] src=B:hbm[128x64, 0, fp32, [1,64]]
)";
  Kernel k = parse(in);
  PassContext ctx;
  ctx.target = test_target();
  run_passes(k, ctx, {"alloc_memory", "insert_sync"});
  const std::string out = to_text(k);
  EXPECT_EQ(lines(out, "semaphores"), std::vector<std::string>{"semaphores 5"});
  auto sync_of = [&](int i) {
    std::string l = lines(out, "%" + std::to_string(i) + " ")[0];
    std::string s;
    for (const char* key : {" wait=", " signal="})
      for (size_t p = l.find(key); p != std::string::npos; p = l.find(key, p + 1))
        s += l.substr(p, l.find(' ', p + 1) - p);
    return s;
  };
  EXPECT_EQ(sync_of(0), " signal=s0+1");
  EXPECT_EQ(sync_of(1), " signal=s1+1");
  EXPECT_EQ(sync_of(2), " wait=s0>=1 wait=s1>=1 signal=s2+1");
  EXPECT_EQ(sync_of(3), " wait=s2>=1 signal=s3+1");
  EXPECT_EQ(sync_of(4), "");
  EXPECT_EQ(sync_of(5), " wait=s3>=1 signal=s4+1");
  EXPECT_EQ(sync_of(6), " wait=s4>=1");
  EXPECT_EQ(sync_of(7), " wait=s4>=1");
  // Cross-queue dependency edges: %2<-%0, %2<-%1, %3<-%2, %5<-%3, %5<-%0, %6<-%5,
  // %7<-%2, %7<-%5 (and %7<-%0 on its own queue): 8; we wait 2+1+1+1+1 = 6 times.
  EXPECT_EQ(ctx.stats["insert_sync.waits"], 6);
  EXPECT_EQ(ctx.stats["insert_sync.naive_waits"], 8);
}

// ---- the pipeline ---------------------------------------------------------------------

TEST(TilePassesPipeline, NamesSummariesAndDumps) {
  std::vector<std::string> names;
  for (const PassInfo* p : all_passes()) {
    names.emplace_back(p->name);
    EXPECT_FALSE(p->summary.empty()) << p->name;
  }
  EXPECT_EQ(names, default_pipeline());
  EXPECT_EQ(names, (std::vector<std::string>{"keep_on_chip", "split_dma", "assign_engines",
                                             "alloc_memory", "assign_dma_queues", "schedule",
                                             "alloc_hbm", "insert_sync"}));
  EXPECT_NE(error_of([] {
              find_pass("fuse_everything");
            }).find("unknown pass 'fuse_everything' (passes: keep_on_chip, split_dma"),
            std::string::npos);
  Kernel k = parse(kTwoTiles);
  PassContext ctx;
  ctx.target = test_target();
  std::vector<std::string> dumped;
  ctx.dump_after = {"alloc_memory", "insert_sync"};
  ctx.dump = [&](const std::string& pass, const std::string& text) {
    dumped.push_back(pass);
    EXPECT_NE(text.find("kernel k"), std::string::npos);
    if (pass == "alloc_memory") {
      EXPECT_NE(text.find("pool sb sbuf bufs=2 @0"), std::string::npos);
    } else {
      EXPECT_NE(text.find("semaphores"), std::string::npos);
    }
  };
  run_passes(k, ctx, default_pipeline());
  EXPECT_EQ(dumped, (std::vector<std::string>{"alloc_memory", "insert_sync"}));
  // A pass whose prerequisite did not run says which.
  Kernel u = parse(kSmall);
  EXPECT_NE(error_of([&] {
              run_passes(u, ctx, {"schedule"});
            }).find("schedule: kernel 'small': tile 'x' has no address; run alloc_memory"),
            std::string::npos);
}

}  // namespace
}  // namespace trnsim::tile
