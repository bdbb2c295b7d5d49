// DMA engine (models/memory/dma_engine.*) with an SBUF, an HBM and semaphores:
// copies with casts, strided and broadcast patterns, the transfer-time formula,
// semaphore waits and signals, round-robin queues, pending() and faults.
#include "models/memory/dma_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/common/scheduler.h"
#include "models/memory/hbm.h"
#include "models/memory/sbuf.h"
#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using isa::DType;
using isa::Instruction;
using sc_core::sc_time;
using test::dma_copy;
using test::hb;
using test::ns;
using test::sb;
using test::with_signal;
using test::with_wait;

constexpr uint64_t kMiB = 1ull << 20;

// Figures chosen for exact arithmetic (1 ns = 1000 ps):
//   SBUF: 128 partitions x 16 KiB, 1 GHz, 128 elem/cycle -> 1 element per ns per lane.
//   HBM: 16 MiB, 64 B/ns, 100 ns latency, one channel.
//   DMA: 16 B/ns per engine, 1000 ns fixed cost, 10 ns per descriptor.
// A transfer takes max(own, HBM side, SBUF side) with
//   own  = 1000 + 10 x descriptors + bytes / 16
//   HBM  = 1000 + 100 + bytes / 64 (later when the HBM bandwidth is busy)
//   SBUF = 1000 + 32-bit words per partition (x2 when the innermost stride > 16 B)
struct dma_setup {
  sbuf_params sbuf;
  hbm_params hbm;
  dma_params dma;
  dma_setup() {
    sbuf.partitions = 128;
    sbuf.partition_bytes = 16 * 1024;
    sbuf.clock_hz = 1e9;
    sbuf.port_elems_per_cycle = 128;
    hbm.size_bytes = 16 * kMiB;
    hbm.bandwidth_bps = 64e9;
    hbm.latency_s = 100e-9;
    hbm.stacks = 1;
    hbm.channels_per_stack = 1;
    dma.engines = 2;
    dma.queues_per_engine = 16;
    dma.bandwidth_bps = 16e9;
    dma.fixed_cost_s = 1000e-9;
    dma.descriptor_cost_s = 10e-9;
    // The transfer arithmetic alone: no start latency, one in flight per queue
    // (DmaLatency tests in test_dma_timing.cpp cover those).
    dma.start_latency_s = 0;
    dma.queue_depth = 1;
  }
};

// Two DMA engines sharing one SBUF and one HBM, like one core's.
class dma_harness : public sc_core::sc_module {
 public:
  sim_context ctx;
  semaphores sems;
  sbuf sbuf_mem;
  hbm hbm_mem;
  dma_engine d0, d1;
  std::vector<Instruction> q[2][4];  // [engine][queue]

  explicit dma_harness(const sc_core::sc_module_name& n, const dma_setup& s = dma_setup())
      : sc_module(n),
        sems("sems", semaphores_params{16}),
        sbuf_mem("sbuf", s.sbuf),
        hbm_mem("hbm", s.hbm),
        d0("d0", s.dma, sems, ctx),
        d1("d1", s.dma, sems, ctx) {
    for (dma_engine* d : {&d0, &d1}) {
      d->hbm_socket.bind(hbm_mem.tgt_socket);
      d->sbuf_socket.bind(sbuf_mem.tgt_socket);
    }
  }
  // As the runtime drives a launch: finish elaboration, load, start, simulate, on
  // SystemC threads or (`sched`) on the chip's scheduler.
  void run(scheduler* sched = nullptr) {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    ctx.sched = sched;
    dma_engine* engines[2] = {&d0, &d1};
    for (int e = 0; e < 2; ++e) {
      for (uint16_t k = 0; k < 4; ++k)
        if (!q[e][k].empty()) engines[e]->load(k, &q[e][k]);
      engines[e]->start();
    }
    if (sched)
      sched->run();
    else
      sc_core::sc_start();
  }
  void hbm_f32(uint64_t addr, const std::vector<float>& v) {
    hbm_mem.write(addr, test::f32_bytes(v).data(), v.size() * 4);
  }
  float hbm_f32_at(uint64_t addr) const {
    uint8_t b[4];
    hbm_mem.read(addr, b, 4);
    return test::f32_at(b);
  }
  uint16_t hbm_u16_at(uint64_t addr) const {
    uint8_t b[2];
    hbm_mem.read(addr, b, 2);
    return test::u16_at(b);
  }
  float sbuf_f32(uint32_t p, uint64_t byte) { return test::f32_at(sbuf_mem.row(p) + byte); }
  // HBM's first 64 KiB hold fp32 v[i] = i, so the fp32 at byte b is b / 4.
  void hbm_index_ramp() {
    std::vector<float> v(16384);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
    hbm_f32(0, v);
  }
};

TEST(DmaEngine, CopyHbmToSbufToHbmWithCasts) {
  dma_harness h("h");
  // 4 rows of 64 fp32, including bf16 rounding ties and near-ties.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = std::ldexp(float(i % 37) - 18.3f, (i % 9) - 4);
  x[0] = 1.0f + 0x1p-8f;             // tie between 1 and 1+2^-7: to even -> 1.0
  x[1] = 1.0f + 3 * 0x1p-8f;         // tie between 1+2^-7 and 1+2^-6: to even -> 1+2^-6
  x[2] = 1.0f + 0x1p-8f + 0x1p-20f;  // just above the tie -> 1+2^-7
  x[3] = -(1.0f + 0x1p-8f);          // negative tie -> -1.0
  h.hbm_f32(0, x);
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 3, &done);
  // i0: bytes max(1024 fp32, 512 bf16) = 1024; descriptors max(4 rows, 4 partitions) = 4.
  //     own 1000 + 4x10 + 1024/16 = 1104; HBM 1000 + 100 + 1024/64 = 1116; SBUF 1000 + 64
  //     = 1064 -> 1116 ns (HBM side), done at 1116.
  h.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 4, 0, DType::bf16, {{1, 64}}), hb(4, 64, 0, DType::fp32, {{1, 64}})), 0));
  // i1: 512 B bf16 to HBM @4096: own 1000 + 40 + 32 = 1072; SBUF read 1064; HBM write
  //     1000 + 100 + 8 = 1108 -> 1108 ns, done at 1116 + 1108 = 2224.
  h.q[0][0].push_back(with_signal(
      dma_copy(hb(4, 64, 4096, DType::bf16, {{1, 64}}), sb(0, 4, 0, DType::bf16, {{1, 64}})), 0));
  // i2: widen back to fp32 @8192: bytes max(512, 1024) = 1024: own 1104; SBUF 1064; HBM
  //     1116 -> 1116 ns, done at 2224 + 1116 = 3340.
  h.q[0][0].push_back(with_signal(
      dma_copy(hb(4, 64, 8192, DType::fp32, {{1, 64}}), sb(0, 4, 0, DType::bf16, {{1, 64}})), 0));
  h.run();
  EXPECT_TRUE(h.ctx.faults.empty());
  EXPECT_EQ(done, test::times_ns({1116, 2224, 3340}));
  EXPECT_EQ(h.d0.last_done(), ns(3340));
  EXPECT_TRUE(h.d0.idle());
  for (uint32_t p = 0; p < 4; ++p)
    for (uint32_t i = 0; i < 64; ++i) {
      const float v = x[p * 64 + i];
      const uint16_t bits = isa::fp32_to_bf16(v);
      ASSERT_EQ(test::u16_at(h.sbuf_mem.row(p) + 2 * i), bits) << p << "," << i;
      ASSERT_EQ(h.hbm_u16_at(4096 + 2 * (p * 64 + i)), bits);
      ASSERT_EQ(h.hbm_f32_at(8192 + 4 * (p * 64 + i)), isa::bf16_to_fp32(bits));
    }
  EXPECT_EQ(h.hbm_f32_at(8192 + 0), 1.0f);
  EXPECT_EQ(h.hbm_f32_at(8192 + 4), 1.0f + 0x1p-6f);
  EXPECT_EQ(h.hbm_f32_at(8192 + 8), 1.0f + 0x1p-7f);
  EXPECT_EQ(h.hbm_f32_at(8192 + 12), -1.0f);
  // Partition 4 was not part of the copy.
  EXPECT_EQ(test::u16_at(h.sbuf_mem.row(4)), 0);
}

TEST(DmaEngine, IntegerCastsRoundToEvenAndSaturate) {
  dma_harness h("h");
  h.hbm_f32(0, {300.0f, -5.0f, 2.5f, 3.5f, -0.5f, 254.6f, 0.49f, 128.0f});
  h.hbm_f32(64, {2.5f, -2.5f, 1e10f, -1e10f});
  h.q[0][0] = {dma_copy(sb(5, 1, 0, DType::uint8, {{1, 8}}), hb(1, 8, 0, DType::fp32, {{1, 8}})),
               dma_copy(sb(5, 1, 64, DType::int32, {{1, 4}}), hb(1, 4, 64, DType::fp32, {{1, 4}}))};
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.ctx.faults[0].message;
  const uint8_t* row = h.sbuf_mem.row(5);
  EXPECT_EQ(std::vector<uint8_t>(row, row + 8),
            (std::vector<uint8_t>{255, 0, 2, 4, 0, 255, 0, 128}));
  int32_t i32[4];
  std::memcpy(i32, row + 64, 16);
  EXPECT_EQ(i32[0], 2);
  EXPECT_EQ(i32[1], -2);
  EXPECT_EQ(i32[2], 2147483647);
  EXPECT_EQ(i32[3], -2147483647 - 1);
}

TEST(DmaEngine, StridedBroadcastAndNegativeHbmPatterns) {
  dma_harness h("h");
  h.hbm_index_ramp();
  auto& q = h.q[0][0];
  // Row 0 (elements 0..31) broadcast to 8 partitions: hbm[8x0, 0, fp32, [1,32]].
  q.push_back(dma_copy(sb(0, 8, 0, DType::fp32, {{1, 32}}), hb(8, 0, 0, DType::fp32, {{1, 32}})));
  // Every other element of rows 100 elements apart from element 1024.
  q.push_back(
      dma_copy(sb(0, 4, 256, DType::fp32, {{1, 16}}), hb(4, 100, 4096, DType::fp32, {{2, 16}})));
  // Reversed: from element 63 down to 0.
  q.push_back(
      dma_copy(sb(0, 1, 512, DType::fp32, {{1, 64}}), hb(1, 0, 252, DType::fp32, {{-1, 64}})));
  // Two dims with a negative outer stride: row r, (a, b) -> element 8 + 64r - 4a + b.
  q.push_back(dma_copy(sb(0, 2, 1024, DType::fp32, {{1, 12}}),
                       hb(2, 64, 32, DType::fp32, {{-4, 3}, {1, 4}})));
  // Scatter SBUF -> HBM every other element of rows 64 apart at @65536 (= element 16384).
  q.push_back(
      dma_copy(hb(4, 64, 65536, DType::fp32, {{2, 16}}), sb(0, 4, 256, DType::fp32, {{1, 16}})));
  h.run();
  ASSERT_TRUE(h.ctx.faults.empty()) << h.ctx.faults[0].message;
  for (uint32_t p = 0; p < 8; ++p)
    for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(h.sbuf_f32(p, 4 * i), float(i)) << p;
  for (uint32_t p = 0; p < 4; ++p)
    for (uint32_t i = 0; i < 16; ++i)
      EXPECT_EQ(h.sbuf_f32(p, 256 + 4 * i), float(1024 + 100 * p + 2 * i));
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(h.sbuf_f32(0, 512 + 4 * i), float(63 - i));
  for (uint32_t r = 0; r < 2; ++r)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 4; ++b)
        EXPECT_EQ(h.sbuf_f32(r, 1024 + 4 * (4 * a + b)), float(8 + 64 * r - 4 * a + b))
            << r << a << b;
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t i = 0; i < 32; ++i) {
      const float want = i % 2 == 0 ? float(1024 + 100 * r + i) : 0.0f;  // gaps stay 0
      EXPECT_EQ(h.hbm_f32_at(65536 + 4 * (64 * r + i)), want) << r << "," << i;
    }
}

TEST(DmaEngine, TransferTimeIsTheMaxOfEngineHbmAndSbufSides) {
  dma_harness h("h");
  h.hbm_index_ramp();
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 5, &done);
  auto& q = h.q[0][0];
  // T1, engine-bound: 16 x 256 fp32 = 16384 B, 16 descriptors (rows):
  //   own 1000 + 160 + 16384/16 = 2184; HBM 1000 + 100 + 256 = 1356; SBUF 1000 + 256
  //   = 1256 -> 2184 ns, done at 2184.
  q.push_back(with_signal(
      dma_copy(sb(0, 16, 0, DType::fp32, {{1, 256}}), hb(16, 256, 0, DType::fp32, {{1, 256}})), 0));
  // T2, HBM-latency-bound: 16 fp32 = 64 B, 1 descriptor: own 1000 + 10 + 4 = 1014;
  //   HBM 1000 + 100 + 1 = 1101; SBUF 1000 + 16 = 1016 -> 1101 ns, done at 3285.
  q.push_back(with_signal(
      dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 0));
  // T3, SBUF-port-bound: one partition of 2048 bf16 = 4096 B = 1024 words, 1
  //   descriptor: own 1000 + 10 + 256 = 1266; HBM 1000 + 100 + 64 = 1164; SBUF 1000 +
  //   1024 = 2024 -> 2024 ns, done at 5309.
  q.push_back(with_signal(
      dma_copy(sb(0, 1, 0, DType::bf16, {{1, 2048}}), hb(1, 2048, 0, DType::bf16, {{1, 2048}})),
      0));
  // T4, descriptor-bound: SBUF stride 8 fp32 (32 B) makes 256 one-element descriptors:
  //   own 1000 + 2560 + 1024/16 = 3624; HBM 1000 + 100 + 16 = 1116; SBUF 1000 + 2 x 256
  //   = 1512 -> 3624 ns, done at 8933.
  q.push_back(with_signal(
      dma_copy(sb(0, 1, 0, DType::fp32, {{8, 256}}), hb(1, 256, 0, DType::fp32, {{1, 256}})), 0));
  // T5, runs of 16: hbm[2x512, [32,4],[1,16]] is 128 elements in 128/16 = 8 runs:
  //   own 1000 + 80 + 512/16 = 1112; HBM 1000 + 100 + 8 = 1108; SBUF 1000 + 64 = 1064
  //   -> 1112 ns, done at 10045.
  q.push_back(with_signal(dma_copy(sb(0, 2, 4096, DType::fp32, {{1, 64}}),
                                   hb(2, 512, 0, DType::fp32, {{32, 4}, {1, 16}})),
                          0));
  h.run();
  EXPECT_TRUE(h.ctx.faults.empty());
  EXPECT_EQ(done, test::times_ns({2184, 3285, 5309, 8933, 10045}));
  // T5's data: partition r, element 16a + b = HBM element 512r + 32a + b.
  for (uint32_t r = 0; r < 2; ++r)
    for (uint32_t a = 0; a < 4; ++a)
      for (uint32_t b = 0; b < 16; ++b)
        EXPECT_EQ(h.sbuf_f32(r, 4096 + 4 * (16 * a + b)), float(512 * r + 32 * a + b));
  stats::group g("dma");
  h.d0.register_stats(g);
  EXPECT_EQ(g.value("descriptors"), 16.0 + 1 + 1 + 256 + 8);
  EXPECT_EQ(g.value("shares"), 5.0);
  // Bytes written: 16384 + 64 + 4096 + 1024 + 512 = 22080.
  EXPECT_EQ(g.value("bytes"), 22080.0);
  EXPECT_DOUBLE_EQ(g.value("busy_ns"), 10045.0);
  EXPECT_DOUBLE_EQ(g.value("avg_share_bytes"), 22080.0 / 5);
  EXPECT_EQ(g.value("q0.bytes"), 22080.0);
  EXPECT_EQ(g.value("q0.copies"), 5.0);
  // Only queues up to the highest loaded one exist (an unused queue costs nothing).
  EXPECT_TRUE(std::isnan(g.value("q1.copies")));
}

TEST(DmaEngine, TwoEnginesShareTheHbmBandwidth) {
  dma_setup s;
  s.hbm.bandwidth_bps = 16e9;  // 16 B/ns: the HBM now limits two engines at once
  dma_harness h("h", s);
  std::vector<sc_time> d0_done, d1_done;
  test::record_semaphore(h.sems, 0, 1, &d0_done);
  test::record_semaphore(h.sems, 1, 1, &d1_done);
  // Each: 16 x 256 fp32 = 16384 B, 16 descriptors: own 1000 + 160 + 1024 = 2184. HBM:
  // both offered at 1000 + 100 = 1100; the first served holds [1100, 2124), the second
  // [2124, 3148). First done max(2184, 2124) = 2184, second max(2184, 3148) = 3148.
  h.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 16, 0, DType::fp32, {{1, 256}}), hb(16, 256, 0, DType::fp32, {{1, 256}})), 0));
  h.q[1][0].push_back(with_signal(
      dma_copy(sb(16, 16, 0, DType::fp32, {{1, 256}}), hb(16, 256, 0, DType::fp32, {{1, 256}})),
      1));
  h.run();
  ASSERT_EQ(d0_done.size(), 1u);
  ASSERT_EQ(d1_done.size(), 1u);
  EXPECT_EQ(std::min(d0_done[0], d1_done[0]), ns(2184));
  EXPECT_EQ(std::max(d0_done[0], d1_done[0]), ns(3148));
  EXPECT_EQ(h.hbm_mem.read_bytes(), 2u * 16384);
}

TEST(DmaEngine, SemaphoreWaitsAndSignals) {
  dma_harness h("h");
  h.hbm_index_ramp();
  std::vector<sc_time> started, done, nop_done;
  test::record_semaphore(h.sems, 3, 1, &started);
  test::record_semaphore(h.sems, 4, 2, &done);
  test::record_semaphore(h.sems, 6, 1, &nop_done);
  test::increment_at(h.sems, 2, 1, ns(500));
  test::increment_at(h.sems, 5, 2, ns(4000));
  // Waits for s2 >= 1 (set at 500 ns); signals s3 at read start and s4 +2 at completion.
  // 64 B: HBM-bound 1101 ns (1000 + 100 + 64/64), so done at 500 + 1101 = 1601.
  Instruction c = with_wait(
      dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 2, 1);
  c = with_signal(std::move(c), 3, 1, isa::SignalWhen::start);
  h.q[0][0].push_back(with_signal(std::move(c), 4, 2));
  // A nop waiting for s5 >= 2 (at 4000 ns) takes no time and signals s6.
  h.q[0][0].push_back(with_signal(with_wait(test::nop(), 5, 2), 6));
  h.run();
  EXPECT_EQ(started, test::times_ns({500}));
  EXPECT_EQ(done, test::times_ns({1601, 1601}));  // one +2 increment
  EXPECT_EQ(nop_done, test::times_ns({4000}));
  EXPECT_EQ(h.sems.value(4), 2u);
  EXPECT_EQ(h.d0.instructions(), 2u);
  EXPECT_DOUBLE_EQ(h.d0.busy_ns(), 1101.0);  // the wait is not busy time
  EXPECT_EQ(h.d0.last_done(), ns(4000));
  EXPECT_EQ(h.sbuf_f32(0, 60), 15.0f);
}

TEST(DmaEngine, QueuesAreServedRoundRobin) {
  dma_harness h("h");
  std::vector<sc_time> a_done, b_done;
  test::record_semaphore(h.sems, 0, 2, &a_done);
  test::record_semaphore(h.sems, 1, 2, &b_done);
  // Every transfer: 64 B, HBM-latency-bound D = 1000 + 100 + 1 = 1101 ns, one at a time.
  auto small = [](uint64_t sbuf_off) {
    return dma_copy(sb(0, 1, sbuf_off, DType::fp32, {{1, 16}}),
                    hb(1, 16, 0, DType::fp32, {{1, 16}}));
  };
  h.q[0][0] = {with_signal(small(0), 0), with_signal(small(64), 0)};     // A0, A1
  h.q[0][1] = {with_signal(small(128), 1), with_signal(small(192), 1)};  // B0, B1
  h.run();
  // A0, B0, A1, B1: completions at D, 2D, 3D, 4D = 1101, 2202, 3303, 4404.
  EXPECT_EQ(a_done, test::times_ns({1101, 3303}));
  EXPECT_EQ(b_done, test::times_ns({2202, 4404}));
}

TEST(DmaEngine, InOrderWithinAQueue) {
  dma_harness h("h");
  std::vector<sc_time> a_done, b_done;
  test::record_semaphore(h.sems, 0, 2, &a_done);
  test::record_semaphore(h.sems, 1, 1, &b_done);
  auto small = [](uint64_t sbuf_off) {
    return dma_copy(sb(0, 1, sbuf_off, DType::fp32, {{1, 16}}),
                    hb(1, 16, 0, DType::fp32, {{1, 16}}));
  };
  // A0 waits for B0's s5; A1 is ready at once but must stay behind A0.
  h.q[0][0] = {with_signal(with_wait(small(0), 5, 1), 0), with_signal(small(64), 0)};
  h.q[0][1] = {with_signal(with_signal(small(128), 5), 1)};
  h.run();
  // B0 at D = 1101, then A0 at 2D = 2202, then A1 at 3D = 3303.
  EXPECT_EQ(b_done, test::times_ns({1101}));
  EXPECT_EQ(a_done, test::times_ns({2202, 3303}));
}

TEST(DmaEngine, PendingNamesAWaitThatCanNeverBeSatisfied) {
  dma_harness h("h");
  Instruction stuck = with_wait(
      dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 7, 1);
  stuck.line = 12;
  h.q[0][2] = {
      with_signal(
          dma_copy(sb(0, 1, 64, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 0),
      stuck};
  h.run();
  EXPECT_TRUE(h.ctx.faults.empty());
  EXPECT_FALSE(h.d0.idle());
  EXPECT_FALSE(h.d0.failed());
  EXPECT_TRUE(h.d1.idle());
  const auto p = h.d0.pending();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("queue 2: waiting for s7 >= 1 (now 0) at instruction 1 (line 12): dma_copy"),
            std::string::npos)
      << p[0];
  EXPECT_NE(p[0].find("wait=s7>=1"), std::string::npos) << p[0];
  EXPECT_EQ(h.d0.instructions(), 1u);
  EXPECT_TRUE(h.d1.pending().empty());
}

TEST(DmaEngine, OutOfRangeTransferIsAFaultNotACrash) {
  dma_harness h("h");
  Instruction bad = dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}),
                             hb(1, 16, 16 * kMiB - 32, DType::fp32, {{1, 16}}));
  bad.line = 3;
  h.q[0][0] = {bad};
  h.q[1][0] = {with_signal(
      dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 0)};
  h.run();
  ASSERT_EQ(h.ctx.faults.size(), 1u);
  const auto& f = h.ctx.faults[0];
  EXPECT_EQ(f.where, std::string(h.d0.name()) + ".q0");
  EXPECT_NE(f.message.find("instruction 0 (line 3): dma_copy"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("outside the device's 16777216 bytes"), std::string::npos) << f.message;
  EXPECT_TRUE(h.d0.failed());
  EXPECT_FALSE(h.d0.idle());
  // The other engine is unaffected: 64 B in 1101 ns.
  EXPECT_EQ(h.d1.last_done(), ns(1101));
  EXPECT_EQ(h.sems.value(0), 1u);
}

TEST(DmaEngine, HbmBaseIsAddedToProgramOffsets) {
  dma_harness h("h");
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = 100.0f + float(i);
  h.hbm_f32(kMiB + 64, v);
  h.d0.set_hbm_base(kMiB);
  h.q[0][0] = {
      dma_copy(sb(3, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 64, DType::fp32, {{1, 16}})),
      dma_copy(hb(1, 16, 128, DType::fp32, {{1, 16}}), sb(3, 1, 0, DType::fp32, {{1, 16}}))};
  h.run();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(h.sbuf_f32(3, 4 * i), 100.0f + float(i));
    EXPECT_EQ(h.hbm_f32_at(kMiB + 128 + 4 * i), 100.0f + float(i));
    EXPECT_EQ(h.hbm_f32_at(128 + 4 * i), 0.0f);  // not relative to 0
  }
}

TEST(DmaEngine, TimingOnlyGivesTheSameTimesAndMovesNoData) {
  dma_harness h("h");
  h.ctx.functional = false;
  h.hbm_index_ramp();
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 2, &done);
  // Same transfers as the cast test: 1116 ns, then 1108 ns -> 1116, 2224.
  h.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 4, 0, DType::bf16, {{1, 64}}), hb(4, 64, 0, DType::fp32, {{1, 64}})), 0));
  h.q[0][0].push_back(with_signal(
      dma_copy(hb(4, 64, 65536, DType::bf16, {{1, 64}}), sb(0, 4, 0, DType::bf16, {{1, 64}})), 0));
  h.run();
  EXPECT_TRUE(h.ctx.faults.empty());
  EXPECT_EQ(done, test::times_ns({1116, 2224}));
  for (uint32_t p = 0; p < 4; ++p)
    for (uint32_t b = 0; b < 128; ++b) ASSERT_EQ(h.sbuf_mem.row(p)[b], 0);
  for (uint32_t i = 0; i < 256; ++i) ASSERT_EQ(h.hbm_u16_at(65536 + 2 * i), 0);
  EXPECT_EQ(h.d0.bytes(), 512u + 512u);  // still accounted
}

// A spread dma_copy whose helper engine has no queue of its own: the share starts
// it on either scheduler, with the same times. (The chip's scheduler used to leave
// the never-started helper asleep: a deadlock.)
TEST(DmaEngine, SpreadShareStartsAHelperWithoutQueuesOnBothSchedulers) {
  dma_harness on_sched("on_sched"), on_threads("on_threads");
  scheduler s;
  for (dma_harness* h : {&on_sched, &on_threads}) {
    h->hbm_index_ramp();
    Instruction in = with_signal(
        dma_copy(sb(0, 16, 0, DType::fp32, {{1, 64}}), hb(16, 64, 0, DType::fp32, {{1, 64}})), 0);
    in.spread = 2;
    h->q[0][0] = {in};  // d1 has no queue
  }
  on_sched.run(&s);
  on_threads.run();
  for (dma_harness* h : {&on_sched, &on_threads}) {
    SCOPED_TRACE(h->name());
    EXPECT_TRUE(h->ctx.faults.empty());
    EXPECT_TRUE(h->d0.idle()) << (h->d0.pending().empty() ? "" : h->d0.pending()[0]);
    EXPECT_TRUE(h->d1.idle());
    EXPECT_EQ(h->d1.helper_shares(), 1u);
    EXPECT_EQ(h->sems.value(0), 2u);  // each share signals
    for (uint32_t p = 0; p < 16; ++p) EXPECT_EQ(h->sbuf_f32(p, 4 * 5), float(64 * p + 5));
  }
  EXPECT_GT(on_sched.d0.last_done(), sc_core::SC_ZERO_TIME);
  EXPECT_EQ(on_sched.d0.last_done(), on_threads.d0.last_done());
}

// Transfer times past the simulated time range (a bandwidth or latency the config
// would refuse, given to the model directly) are faults naming the instruction, not
// times wrapped round 2^64.
TEST(DmaEngine, TransferTimePastTheRangeIsAFaultNamingTheInstruction) {
  dma_setup slow;
  slow.dma.bandwidth_bps = 1e-20;  // 64 B take 6.4e21 s
  dma_setup late;
  late.hbm.latency_s = 3e6;  // in range alone; two transfers end past 4.6e6 s
  dma_harness a("a", slow), b("b", late);
  for (dma_harness* h : {&a, &b}) {
    Instruction in = with_signal(
        dma_copy(sb(0, 1, 0, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 0);
    in.line = 9;
    h->q[0][0] = {in, in};
  }
  a.run();
  b.run();
  for (dma_harness* h : {&a, &b}) {
    SCOPED_TRACE(h->name());
    ASSERT_EQ(h->ctx.faults.size(), 1u);
    const auto& f = h->ctx.faults[0];
    EXPECT_EQ(f.where, std::string(h->d0.name()) + ".q0");
    EXPECT_NE(f.message.find("past the simulated time range"), std::string::npos) << f.message;
    EXPECT_TRUE(h->d0.failed());
  }
  EXPECT_NE(a.ctx.faults[0].message.find("instruction 0 (line 9): dma_copy"), std::string::npos)
      << a.ctx.faults[0].message;
  EXPECT_EQ(a.sems.value(0), 0u);
  // The first transfer ends at 3e6 s + 1.1 us; the second would end past the range.
  EXPECT_NE(b.ctx.faults[0].message.find("instruction 1 (line 9): dma_copy"), std::string::npos)
      << b.ctx.faults[0].message;
  EXPECT_EQ(b.sems.value(0), 1u);
}

}  // namespace
}  // namespace trnsim::models
