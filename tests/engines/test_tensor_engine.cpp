// The tensor engine as a weight-stationary systolic array (models/engines/
// tensor_engine.h): the fold formula on 8x8, 32x32 and 128x128 arrays, the
// initiation interval and overlap of back-to-back matmuls with and without
// background weight load, fp32/fp8/transpose costs, array tiling, throttling, and
// the utilisation of a back-to-back bf16 128x128x512 stream on trn2 figures.
//
// Unless a test says otherwise: engine and memories at 1 GHz (1 cycle = 1 ns), memory
// ports 1 element per cycle per partition (so port time never exceeds the stream),
// timing-only (no data moves; timing does not depend on values), and every engine of
// a test runs on its own semaphores, side by side in one elaboration.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "models/engines/tensor_engine.h"
#include "models/isa/assembler.h"
#include "models/isa/validate.h"
#include "models/memory/psum.h"
#include "models/memory/sbuf.h"
#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using isa::DType;
using isa::Instruction;
using isa::Opcode;
using sc_core::sc_time;
using test::ns;
using test::ps;
using test::sb;
using test::with_signal;
using test::with_wait;

// A plain array: no background load, no tiling, no throttle.
tensor_engine_params plain(uint32_t rows, uint32_t cols) {
  tensor_engine_params p;
  p.clock_hz = 1e9;
  p.min_ii_cycles = 64;
  p.overhead_cycles = 64;
  p.sem_latency_cycles = 0;
  p.rows = rows;
  p.cols = cols;
  p.fp32_slowdown = 4;
  p.fp8_double_row = true;
  p.background_load = false;
  p.fast_load_speedup = 4;
  p.tile_size = std::min(rows, cols);
  p.throttle = false;
  return p;
}

tensor_engine_params pipelined(uint32_t rows = 128, uint32_t cols = 128) {
  tensor_engine_params p = plain(rows, cols);
  p.background_load = true;
  return p;
}

// Tensor engines, each with its own queue and semaphores, on one SBUF and one PSUM.
class te_harness : public sc_core::sc_module {
 public:
  sim_context ctx;
  sbuf sbuf_mem;
  psum psum_mem;
  std::vector<std::unique_ptr<semaphores>> sems;
  std::vector<std::unique_ptr<tensor_engine>> te;
  std::vector<std::vector<Instruction>> q;

  te_harness(const sc_core::sc_module_name& n, const std::vector<tensor_engine_params>& ps,
             double mem_hz = 1e9)
      : sc_module(n), sbuf_mem("sbuf", sbuf_of(mem_hz)), psum_mem("psum", psum_of(mem_hz)) {
    ctx.functional = false;
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string s = std::to_string(i);
      sems.push_back(std::make_unique<semaphores>(("sems" + s).c_str(), semaphores_params{4}));
      te.push_back(
          std::make_unique<tensor_engine>(("tensor" + s).c_str(), ps[i], *sems.back(), ctx));
      te.back()->sbuf_socket.bind(sbuf_mem.tgt_socket);
      te.back()->psum_socket.bind(psum_mem.tgt_socket);
    }
    q.resize(ps.size());
  }
  void run() {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    for (size_t i = 0; i < te.size(); ++i) te[i]->load(&q[i]);
    for (auto& e : te) e->start();
    sc_core::sc_start();
  }
  std::string faults() const {
    std::string s;
    for (const auto& f : ctx.faults) s += f.where + ": " + f.message + "\n";
    return s;
  }

 private:
  static sbuf_params sbuf_of(double hz) {
    sbuf_params p;
    p.partitions = 128;
    p.partition_bytes = 32 * 1024;
    p.clock_hz = hz;
    p.port_elems_per_cycle = 128;
    return p;
  }
  static psum_params psum_of(double hz) {
    psum_params p;
    p.partitions = 128;
    p.partition_bytes = 16 * 1024;
    p.clock_hz = hz;
    p.port_elems_per_cycle = 128;
    return p;
  }
};

// psum[0:M, bank] (+)= sbuf[0:K, 0, dt, M]^T @ sbuf[0:K, 1024, dt, N].
Instruction matmul(uint32_t K, uint32_t M, uint32_t N, DType dt = DType::bf16, bool acc = false,
                   uint64_t psum_offset = 0) {
  Instruction in = test::instr(Opcode::matmul, ps(0, M, psum_offset, DType::fp32, {{1, N}}),
                               {sb(0, K, 0, dt, {{1, M}}), sb(0, K, 1024, dt, {{1, N}})});
  in.accumulate = acc;
  return in;
}

// The standard weight-stationary mapping of a GEMM stationary[K, C] x moving[K, S]
// onto matmul instructions: one per 128-row K tile x 128-column C tile (an
// instruction's K, M <= 128), each streaming all S columns; K tiles accumulate.
std::vector<Instruction> gemm(uint32_t K, uint32_t C, uint32_t S) {
  std::vector<Instruction> v;
  for (uint32_t c = 0; c < C; c += 128)
    for (uint32_t k = 0; k < K; k += 128)
      v.push_back(matmul(std::min(128u, K - k), std::min(128u, C - c), S, DType::bf16, k > 0));
  return v;
}

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// SCALE-Sim's weight-stationary runtime: ceil(K/R) x ceil(C/Ca) folds of 2R + Ca + S - 2.
uint64_t fold_formula(uint64_t R, uint64_t Ca, uint64_t K, uint64_t C, uint64_t S) {
  return ceil_div(K, R) * ceil_div(C, Ca) * (2 * R + Ca + S - 2);
}

struct gemm_case {
  uint32_t K, C, S;
  uint64_t cycles;  // the fold formula, worked in the comment
};

// Runs every GEMM of `cases` on its own R x R array (background load off, overhead
// 0) and checks its busy cycles against the fold formula. min_ii only floors the
// streamed length (a pass streams max(S, min_ii)); it is set to its minimum here so
// that the bare formula holds for every S, short ones included.
void check_fold_formula(uint32_t R, const std::vector<gemm_case>& cases) {
  std::vector<tensor_engine_params> ps;
  for (size_t i = 0; i < cases.size(); ++i) {
    tensor_engine_params p = plain(R, R);
    p.overhead_cycles = 0;
    p.min_ii_cycles = 1;
    ps.push_back(p);
  }
  te_harness h("h", ps);
  for (size_t i = 0; i < cases.size(); ++i) h.q[i] = gemm(cases[i].K, cases[i].C, cases[i].S);
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  for (size_t i = 0; i < cases.size(); ++i) {
    const gemm_case& c = cases[i];
    const std::string what = std::to_string(R) + "x" + std::to_string(R) +
                             " K=" + std::to_string(c.K) + " C=" + std::to_string(c.C) +
                             " S=" + std::to_string(c.S);
    ASSERT_EQ(c.cycles, fold_formula(R, R, c.K, c.C, c.S)) << what << ": table typo";
    const double cycles = h.te[i]->busy_ns() * 1e-9 * ps[i].clock_hz;
    EXPECT_EQ(std::llround(cycles), int64_t(c.cycles)) << what;
    // Back to back from time 0: the engine was never idle.
    EXPECT_EQ(h.te[i]->last_done(), ns(double(c.cycles))) << what;
  }
}

TEST(TensorEngineFoldFormula, Array8x8) {
  // 128 is a multiple of 8, so the folds of the 128 x 128 instruction tiles add up to
  // ceil(K/8) x ceil(C/8). Fold = 2 x 8 + 8 + S - 2 = 22 + S.
  check_fold_formula(8, {
                            {8, 8, 8, 30},            // 1 x 1 x (22 + 8)
                            {1, 1, 1, 23},            // 1 x 1 x (22 + 1)
                            {20, 13, 37, 354},        // 3 x 2 x (22 + 37 = 59)
                            {200, 70, 100, 27450},    // 25 x 9 x 122 (K tiles 128 + 72: 16 + 9)
                            {128, 128, 512, 136704},  // 16 x 16 x 534
                            {300, 260, 64, 107844},   // 38 x 33 x 86 (3 K x 3 C instruction tiles)
                            {45, 100, 500, 40716},    // 6 x 13 x 522
                        });
}

TEST(TensorEngineFoldFormula, Array32x32) {
  // Fold = 2 x 32 + 32 + S - 2 = 94 + S.
  check_fold_formula(32, {
                             {32, 32, 32, 126},       // 1 x 1 x (94 + 32)
                             {1, 200, 7, 707},        // 1 x 7 x 101 (C tiles 128 + 72: 4 + 3)
                             {50, 40, 100, 776},      // 2 x 2 x 194
                             {96, 33, 65, 954},       // 3 x 2 x 159
                             {128, 128, 512, 9696},   // 4 x 4 x 606
                             {257, 129, 333, 19215},  // 9 x 5 x 427 (K tiles 128+128+1, C 128+1)
                             {384, 300, 48, 17040},   // 12 x 10 x 142
                         });
}

TEST(TensorEngineFoldFormula, Array128x128) {
  // Fold = 2 x 128 + 128 + S - 2 = 382 + S.
  check_fold_formula(128, {
                              {128, 128, 128, 510},   // 1 x 1 x (382 + 128)
                              {1, 1, 1, 383},         // 1 x 1 x 383
                              {100, 60, 300, 682},    // 1 x 1 x 682
                              {129, 385, 200, 4656},  // 2 x 4 x 582
                              {256, 256, 512, 3576},  // 2 x 2 x 894
                              {300, 130, 77, 2754},   // 3 x 2 x 459
                              {640, 200, 5, 3870},    // 5 x 2 x 387
                          });
}

// Folding is timing only: a GEMM folded on an 8x8 array gives the exact products.
TEST(TensorEngineFoldFormula, FoldingChangesNoResult) {
  te_harness h("h", {plain(8, 8)});
  h.ctx.functional = true;
  // stationary [20, 13] fp32 at byte 0, moving [20, 37] fp32 at byte 1024; small
  // integers, so every sum is exact.
  auto a = [](int k, int m) { return float((k * 3 + m) % 7 - 3); };
  auto b = [](int k, int n) { return float((k + 2 * n) % 5 - 2); };
  for (int k = 0; k < 20; ++k) {
    for (int m = 0; m < 13; ++m) test::put_f32(h.sbuf_mem.row(k) + 4 * m, a(k, m));
    for (int n = 0; n < 37; ++n) test::put_f32(h.sbuf_mem.row(k) + 1024 + 4 * n, b(k, n));
  }
  h.q[0] = {with_signal(matmul(20, 13, 37, DType::fp32), 0)};
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  // fp32: S = max(37, 64) x 4 = 256; 3 x 2 passes x (16 + 8 + 256 - 2 = 278) = 1668, + 64.
  EXPECT_EQ(h.te[0]->last_done(), ns(64 + 1668));
  for (int m = 0; m < 13; ++m)
    for (int n = 0; n < 37; ++n) {
      float ref = 0;
      for (int k = 0; k < 20; ++k) ref += a(k, m) * b(k, n);
      ASSERT_EQ(test::f32_at(h.psum_mem.row(m) + 4 * n), ref) << m << "," << n;
    }
}

// ---- back-to-back matmuls: initiation interval and overlap -------------------------

// Full 128 x 128 stationary tiles, overhead 64, min_ii 64. Done times per engine.
std::vector<std::vector<sc_time>> run_back_to_back(const std::vector<tensor_engine_params>& ps,
                                                   const std::vector<uint32_t>& ns_per_engine,
                                                   int count) {
  te_harness h("h", ps);
  std::vector<std::vector<sc_time>> done(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    test::record_semaphore(*h.sems[i], 0, count, &done[i]);
    for (int j = 0; j < count; ++j)
      h.q[i].push_back(with_signal(matmul(128, 128, ns_per_engine[i]), 0));
  }
  h.run();
  EXPECT_TRUE(h.ctx.faults.empty()) << h.faults();
  return done;
}

TEST(TensorEngineBackToBack, WithoutBackgroundLoadEachMatmulLoadsStreamsAndDrainsAlone) {
  const auto done = run_back_to_back({plain(128, 128), plain(128, 128)}, {256, 32}, 3);
  // N = 256: 64 + (128 load + 256 stream + 254 drain = 638) = 702 per matmul: II = 702.
  EXPECT_EQ(done[0], test::times_ns({702, 1404, 2106}));
  // N = 32 streams max(32, 64) = 64: 64 + (128 + 64 + 254 = 446) = 510 per matmul.
  EXPECT_EQ(done[1], test::times_ns({510, 1020, 1530}));
}

TEST(TensorEngineBackToBack, BackgroundLoadHidesTheLoadAndOverlapsFillAndDrain) {
  const auto done = run_back_to_back({pipelined(), pipelined()}, {256, 32}, 4);
  // N = 256. i0: overhead to 64, fast load 128 / 4 = 32 -> 96, stream 96..352, drain
  // 254 -> 606. The sequencer takes i1 once i0 starts loading (64): overhead to 128,
  // load 128..160 into the shadow buffer, stream when i0's stream ends (352..608) ->
  // 862; i2 (issued at 128) likewise -> 1118, i3 -> 1374. II = max(N, min_ii) = 256.
  EXPECT_EQ(done[0], test::times_ns({606, 862, 1118, 1374}));
  // N = 32 streams 64 cycles, but an instruction's SBUF/PSUM accesses bound the span
  // from its load to its stream's end: the 128-column stationary read takes 128 cycles
  // at one column per cycle. i0: load 64, stream 96..160, held to 64 + 128 = 192 ->
  // 446. i1 (issued at 64): load 128..160, stream 192..256 (>= 128 + 128) -> 510; i2:
  // load 192, stream 256..320 -> 574; i3 -> 638: every 64 = max(N, min_ii).
  EXPECT_EQ(done[1], test::times_ns({446, 510, 574, 638}));
}

TEST(TensorEngineBackToBack, BackgroundLoadLongerThanTheMultiplySetsTheInterval) {
  tensor_engine_params slow = pipelined();
  slow.fast_load_speedup = 1;  // a 128-column tile loads in 128 cycles
  const auto done = run_back_to_back({slow}, {64}, 3);
  // i0: load 64..192, stream 192..256 -> 510. i1 (issued at 64): overhead to 128, but
  // the shadow buffer frees when i0 streams (192): load 192..320, stream 320..384 ->
  // 638. i2 (issued at 192): load 320..448, stream 448..512 -> 766. The 128-cycle load
  // is not hidden by the 64-cycle multiply: II = 128.
  EXPECT_EQ(done[0], test::times_ns({510, 638, 766}));
}

// Completions keep issue order: a nop issued behind a pipelined matmul signals after it.
TEST(TensorEngineBackToBack, CompletionsKeepIssueOrder) {
  te_harness h("h", {pipelined()});
  std::vector<sc_time> done;
  test::record_semaphore(*h.sems[0], 0, 2, &done);
  h.q[0] = {with_signal(matmul(128, 128, 512), 0), with_signal(test::nop(), 0)};
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  // matmul: 64 + 32 load, stream 96..608, drain -> 862. The nop issues at 64 (when the
  // matmul starts loading) and would be done at 128, but completes after the matmul.
  EXPECT_EQ(done, test::times_ns({862, 862}));
  // Busy is the union of the instructions' [issue, done] intervals: 0..862.
  EXPECT_DOUBLE_EQ(h.te[0]->busy_ns(), 862.0);
  EXPECT_TRUE(h.te[0]->idle());
}

// ---- per-instruction costs -----------------------------------------------------------

TEST(TensorEngineCosts, Fp32Fp8DoubleRowAndTranspose) {
  std::vector<tensor_engine_params> params = {plain(128, 128), plain(128, 128), plain(32, 32),
                                              plain(32, 32),   plain(128, 128), plain(128, 128),
                                              plain(32, 32)};
  for (auto& p : params) p.overhead_cycles = 0;
  params[3].fp8_double_row = false;
  te_harness h("h", params);
  h.q[0] = {matmul(128, 128, 100)};
  h.q[1] = {matmul(128, 128, 100, DType::fp32)};
  h.q[2] = {matmul(128, 32, 64, DType::fp8e4m3)};
  h.q[3] = {matmul(128, 32, 64, DType::fp8e4m3)};
  h.q[4] = {matmul(128, 128, 64, DType::fp8e4m3)};
  const Instruction tr = test::instr(Opcode::transpose, ps(0, 48, 0, DType::fp32, {{1, 128}}),
                                     {sb(0, 128, 0, DType::fp32, {{1, 48}})});
  h.q[5] = {tr};
  h.q[6] = {tr};
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  const double want[] = {
      482,  // bf16: 2 x 128 + 128 + 100 - 2
      782,  // fp32 streams 4 x 100: 256 + 128 + 400 - 2
      316,  // fp8 double-row on 32 x 32: K = 128 in ceil(128 / 64) = 2 passes x (64 + 32 + 64 - 2)
      632,  // fp8 without double-row: ceil(128 / 32) = 4 passes x 158
      446,  // fp8 K = 128 on 128 rows: one pass either way, 256 + 128 + 64 - 2
      128,  // transpose [128, 48]: max(P = 128, min(64, F = 48))
      256,  // on 32 x 32: 4 x 2 passes x max(32, min(64, 32))
  };
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(h.te[i]->last_done(), ns(want[i])) << "engine " << i;
}

TEST(TensorEngineCosts, Fp8DoubleRowTakesK256AtTheTimeOfK128) {
  // K = 256 as double_row=1: 128 partitions, each holding K rows p (first M / N free
  // elements) and 128 + p (the next M / N). Small integers are exact in fp8e4m3 and
  // every sum is exact in fp32.
  std::vector<tensor_engine_params> params = {plain(128, 128), plain(128, 128)};
  for (auto& p : params) p.overhead_cycles = 0;
  te_harness h("h", params);
  h.ctx.functional = true;
  const uint32_t M = 16, N = 40;
  auto a = [](int k, int m) { return float((k + 3 * m) % 5 - 2); };
  auto b = [](int k, int n) { return float((2 * k + n) % 3 - 1); };
  for (int p = 0; p < 128; ++p)
    for (int half = 0; half < 2; ++half) {
      const int k = p + 128 * half;
      for (uint32_t m = 0; m < M; ++m)
        h.sbuf_mem.row(p)[half * M + m] = isa::fp32_to_fp8e4m3(a(k, int(m)));
      for (uint32_t n = 0; n < N; ++n)
        h.sbuf_mem.row(p)[1024 + half * N + n] = isa::fp32_to_fp8e4m3(b(k, int(n)));
    }
  Instruction dr = test::instr(Opcode::matmul, ps(0, M, 0, DType::fp32, {{1, N}}),
                               {sb(0, 128, 0, DType::fp8e4m3, {{1, 2 * M}}),
                                sb(0, 128, 1024, DType::fp8e4m3, {{1, 2 * N}})});
  dr.double_row = true;
  h.q[0] = {dr};
  h.q[1] = {matmul(128, M, N)};  // bf16, K = 128
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  // One pass either way: 2 x 128 + 128 + max(40, 64) - 2 = 446.
  EXPECT_EQ(h.te[0]->last_done(), ns(446));
  EXPECT_EQ(h.te[1]->last_done(), ns(446));
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      float ref = 0;
      for (int k = 0; k < 256; ++k) ref += a(k, int(m)) * b(k, int(n));
      ASSERT_EQ(test::f32_at(h.psum_mem.row(m) + 4 * n), ref) << m << "," << n;
    }
  // FLOPs count the logical K: 2 x 256 x 16 x 40.
  EXPECT_EQ(h.te[0]->flops(DType::fp8e4m3), 2u * 256 * M * N);
}

// ---- array tiling --------------------------------------------------------------------

TEST(TensorEngineTiling, SmallMatmulsRunConcurrentlyInTiles) {
  std::vector<tensor_engine_params> ps = {plain(128, 128), plain(128, 128), plain(128, 128),
                                          plain(128, 128)};
  ps[0].tile_size = 32;   // 4x32: 4 slots
  ps[1].tile_size = 64;   // 2x64: 2 slots
  ps[2].tile_size = 128;  // no tiling
  ps[3].tile_size = 32;
  te_harness h("h", ps);
  EXPECT_EQ(h.te[0]->tile_slots(), 4u);
  EXPECT_EQ(h.te[1]->tile_slots(), 2u);
  EXPECT_EQ(h.te[2]->tile_slots(), 1u);
  std::vector<sc_time> done[4];
  for (int i = 0; i < 3; ++i) {
    test::record_semaphore(*h.sems[i], 0, 5, &done[i]);
    for (int j = 0; j < 5; ++j) h.q[i].push_back(with_signal(matmul(32, 32, 512), 0));
  }
  // Two small matmuls, then a full-array one that needs every tile.
  test::record_semaphore(*h.sems[3], 0, 3, &done[3]);
  h.q[3] = {with_signal(matmul(32, 32, 512), 0), with_signal(matmul(32, 32, 512), 0),
            with_signal(matmul(128, 128, 64), 0)};
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  // 4x32: a K = M = 32 matmul runs in a 32 x 32 tile: 32 load + 512 stream + 62 drain =
  // 606 after the overhead. i0 in slot 0: 64 -> 670; the sequencer moves on when a tiled
  // matmul starts, so i1..i3 start 64 apart in slots 1..3 -> 734, 798, 862; i4 (issued
  // at 256, overhead to 320) waits for the earliest free slot (0, at 670) -> 1276.
  EXPECT_EQ(done[0], test::times_ns({670, 734, 798, 862, 1276}));
  // 2x64: 64 + 512 + 126 = 702 per matmul in a 64 x 64 tile: i0 64 -> 766, i1 128 -> 830,
  // i2 waits for slot 0 (766) -> 1468, i3 for slot 1 (830) -> 1532, i4 for 1468 -> 2170.
  EXPECT_EQ(done[1], test::times_ns({766, 830, 1468, 1532, 2170}));
  // No tiling: 64 + (256 + 128 + 512 - 2 = 894) = 958 each, one after another.
  EXPECT_EQ(done[2], test::times_ns({958, 1916, 2874, 3832, 4790}));
  // The first four small matmuls finish at 862 with 4x32 tiling, 3832 without.
  EXPECT_LT(done[0][3], done[2][3]);
  // Full-array matmul (issued at 128): waits for both tiles to drain (734), loads 128
  // rows to 862, streams 64 -> 926, drains 254 -> 1180.
  EXPECT_EQ(done[3], test::times_ns({670, 734, 1180}));
}

// ---- throttling ----------------------------------------------------------------------

TEST(TensorEngineThrottle, RampsFromHalfToFullAndReengagesAfterIdle) {
  tensor_engine_params thr = pipelined();
  thr.throttle = true;
  thr.throttle_start = 0.5;
  thr.throttle_ramp_s = 3e-6;  // 3000 cycles at 1 GHz
  thr.throttle_idle_s = 3e-6;
  thr.throttle_reengage = 0.5;
  te_harness h("h", {thr, pipelined()});
  std::vector<sc_time> done[2];
  for (int i = 0; i < 2; ++i) {
    test::record_semaphore(*h.sems[i], 0, 8, &done[i]);
    for (int j = 0; j < 6; ++j) h.q[i].push_back(with_signal(matmul(128, 128, 512), 0));
    // Then one matmul after a short idle gap and one after a long one.
    h.q[i].push_back(with_signal(with_wait(matmul(128, 128, 512), 1, 1), 0));
    h.q[i].push_back(with_signal(with_wait(matmul(128, 128, 512), 1, 2), 0));
    test::increment_at(*h.sems[i], 1, 1, ns(5000));
    test::increment_at(*h.sems[i], 1, 1, ns(10000));
  }
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  // The ramp starts with the first stream (96). Streaming t cycles into the ramp has
  // done 0.5 t + t^2 / 12000 cycles of work (rate 0.5 + 0.5 t / 3000), so each
  // 512-cycle multiply takes (whole cycles, rounded up):
  //   i0 from t = 0:    0.5 t + t^2/12000 = 512         -> t = 891.5  -> 892, done 96 + 892 + 254 =
  //   1242 i1 from t = 892:  ... = 512.3 + 512 at t = 1614.3  -> 723, done 1965 i2 from t = 1615:
  //   ... at t = 2238.6                -> 624, done 2589 i3 from t = 2239: ... at t = 2795.6 ->
  //   557, done 3146 i4 from t = 2796: ramp ends at 3000 (204 cycles do 202.3), then 309.7 more ->
  //   516, 3662 i5 from t = 3312: full rate -> 512, done 4174.
  EXPECT_EQ(done[0], test::times_ns({1242, 1965, 2589, 3146, 3662, 4174, 5862, 11242}));
  // i6 waits for s1 (5000): overhead and load to 5096. The last 3 us (2096..5096) held
  // 239 + 557 + 516 + 512 = 1824 stream cycles, 61 % >= 50 %: still at full rate,
  // 5096 + 512 + 254 = 5862. i7 waits for 10000: nothing streamed in 7096..10096, so
  // the throttle re-engages and i7 streams like i0: 10096 + 892 + 254 = 11242.
  // Without the throttle: 96 + 512 + 254 = 862, then every 512; i6 5862, i7 10862.
  EXPECT_EQ(done[1], test::times_ns({862, 1374, 1886, 2398, 2910, 3422, 5862, 10862}));
}

// ---- utilisation on trn2 -------------------------------------------------------------

// Back-to-back bf16 128x128x512 matmuls with the trn2 tensor engine, written as a
// .tasm program.
TEST(TensorEngineUtilisation, BackToBackBf16OnTrn2ReachesNinetyFivePercent) {
  // configs/trn2.yaml's core.tensor section.
  tensor_engine_params trn2;
  trn2.clock_hz = 2.4e9;
  trn2.min_ii_cycles = 64;
  trn2.overhead_cycles = 64;
  trn2.sem_latency_cycles = 0;
  trn2.rows = trn2.cols = 128;
  trn2.fp32_slowdown = 4;
  trn2.fp8_double_row = true;
  trn2.max_moving_free = 512;
  trn2.background_load = true;
  trn2.fast_load_speedup = 4;
  trn2.tile_size = 32;
  trn2.throttle = true;
  trn2.throttle_start = 0.5;
  trn2.throttle_ramp_s = 3e-6;
  trn2.throttle_idle_s = 3e-6;
  trn2.throttle_reengage = 0.5;
  constexpr int kCount = 256;
  std::string text = ".program b2b\n.semaphores 1\n.queue tensor\n";
  for (int i = 0; i < kCount; ++i) {
    // Alternate PSUM banks and stationary tiles, as a kernel would.
    text += "matmul dst=psum[0:128, " + std::to_string(2048 * (i % 2)) +
            ", fp32, [1,512]] stationary=sbuf[0:128, " + std::to_string(256 * (i % 4)) +
            ", bf16, [1,128]] moving=sbuf[0:128, 1024, bf16, [1,512]] accumulate=0\n";
  }
  const isa::Program p = isa::assemble(text, "b2b.tasm");
  isa::validate(p, isa::Limits{});
  te_harness h("h", {trn2}, 2.4e9);  // trn2 SBUF/PSUM ports run at the TE clock
  h.q[0] = p.queues[0].instrs;
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.faults();
  const double elapsed_cycles = h.te[0]->last_done().to_seconds() * trn2.clock_hz;
  // Peak: the full array busy every cycle; each matmul is 512 such cycles of work.
  const double util = kCount * 512.0 / elapsed_cycles;
  const double busy = h.te[0]->busy_ns() * 1e-9 * trn2.clock_hz / elapsed_cycles;
  std::cout << "trn2 back-to-back bf16 128x128x512 x " << kCount << ": " << elapsed_cycles
            << " cycles, PE utilisation " << 100 * util << " %, engine busy " << 100 * busy
            << " %\n";
  // 256 x 512 = 131072 cycles of work + 96 (overhead, load) + 254 (last drain) + the
  // throttle ramp: 3 us = 7200 cycles at 75 % mean rate lose 1800: ~98.4 %.
  EXPECT_GE(util, 0.95);
  EXPECT_NEAR(elapsed_cycles, 131072 + 96 + 254 + 1800, 4);
  EXPECT_NEAR(busy, 1.0, 1e-9);
}

}  // namespace
}  // namespace trnsim::models
