// DMA timing (models/memory/dma_engine.*) on trn2 figures: the bandwidth curve
// against transfer size (monotone, saturating at the per-engine cap, knees where
// docs/hardware.md's DMA Efficiency puts them), the 32 KiB calibration figure, and
// dma_copy spread=N: rows split over N engines that are busy for their share and
// each signal completion.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/memory/dma_engine.h"
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

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

// trn2 figures (the params rows' defaults; TimingParamsAreTrn2s checks they still are):
//   DMA: 27.2 B/ns cap, fixed 170 ns, 9.4 ns per descriptor.
//   HBM: 2.9 TB/s over 4 x 16 = 64 channels (45.3125 B/ns each), 256 B granules,
//        100 ns latency (only 64 MiB of it).
//   SBUF: 128 partitions x 224 KiB, 2.4 GHz, 128 elements/cycle per port.
// One transfer takes max(own, HBM side, SBUF side), own = 0 + 1 x desc + B / 23.
struct trn2_params {
  sbuf_params sbuf;
  hbm_params hbm;
  dma_params dma;
  trn2_params() {
    sbuf.partitions = 128;
    sbuf.partition_bytes = 224 * kKiB;
    sbuf.clock_hz = 2.4e9;
    sbuf.port_elems_per_cycle = 128;
    hbm.size_bytes = 64 * kMiB;
    hbm.bandwidth_bps = 2.9e12;
    hbm.latency_s = 100e-9;
    hbm.stacks = 4;
    hbm.channels_per_stack = 16;
    hbm.interleave_bytes = 256;
    dma.engines = 16;
    dma.queues_per_engine = 16;
    dma.bandwidth_bps = 23e9;
    dma.fixed_cost_s = 0;
    dma.descriptor_cost_s = 1e-9;
    // The transfer arithmetic alone (the DmaLatency tests set these).
    dma.start_latency_s = 0;
    dma.queue_depth = 1;
  }
};

// One core's DMA engines with its SBUF and semaphores, and an HBM.
class core : public sc_core::sc_module {
 public:
  sim_context ctx;
  semaphores sems;
  sbuf sbuf_mem;
  hbm hbm_mem;
  std::vector<std::unique_ptr<dma_engine>> dma;
  std::vector<std::array<std::vector<Instruction>, 4>> q;  // [engine][queue]

  explicit core(const sc_core::sc_module_name& n, const trn2_params& p = trn2_params())
      : sc_module(n),
        sems("sems", semaphores_params{16}),
        sbuf_mem("sbuf", p.sbuf),
        hbm_mem("hbm", p.hbm),
        q(p.dma.engines) {
    for (uint32_t i = 0; i < p.dma.engines; ++i) {
      dma.push_back(
          std::make_unique<dma_engine>(("dma" + std::to_string(i)).c_str(), p.dma, sems, ctx));
      dma.back()->hbm_socket.bind(hbm_mem.tgt_socket);
      dma.back()->sbuf_socket.bind(sbuf_mem.tgt_socket);
    }
  }
  void run() {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    for (size_t e = 0; e < dma.size(); ++e) {
      for (uint16_t k = 0; k < 4; ++k)
        if (!q[e][k].empty()) dma[e]->load(k, &q[e][k]);
      dma[e]->start();
    }
    sc_core::sc_start();
  }
};

// Durations of consecutive transfers from the times each completed (back to back in
// one queue, each starting when the previous one completes).
std::vector<double> durations_ns(const std::vector<sc_time>& done) {
  std::vector<double> d;
  sc_time prev = sc_core::SC_ZERO_TIME;
  for (const auto& t : done) d.push_back((t - prev).to_seconds() * 1e9), prev = t;
  return d;
}

constexpr double kCap = 23;  // B/ns

TEST(DmaTiming, TimingParamsAreTrn2s) {
  // The figures above are the trn2 preset's, i.e. the params rows' defaults; a change
  // there must be made here too.
  const trn2_params p;
  const sbuf_params sbuf;
  const hbm_params hbm;
  const dma_params dma;
  EXPECT_EQ(p.hbm.bandwidth_bps, hbm.bandwidth_bps);
  EXPECT_EQ(p.hbm.latency_s, hbm.latency_s);
  EXPECT_EQ(p.hbm.stacks, hbm.stacks);
  EXPECT_EQ(p.hbm.channels_per_stack, hbm.channels_per_stack);
  EXPECT_EQ(p.hbm.interleave_bytes, hbm.interleave_bytes);
  EXPECT_EQ(p.sbuf.partitions, sbuf.partitions);
  EXPECT_EQ(p.sbuf.partition_bytes, sbuf.partition_bytes);
  EXPECT_EQ(p.sbuf.clock_hz, sbuf.clock_hz);
  EXPECT_EQ(p.sbuf.port_elems_per_cycle, sbuf.port_elems_per_cycle);
  EXPECT_EQ(p.dma.engines, dma.engines);
  EXPECT_EQ(p.dma.bandwidth_bps, dma.bandwidth_bps);
  EXPECT_EQ(p.dma.fixed_cost_s, dma.fixed_cost_s);
  EXPECT_EQ(p.dma.descriptor_cost_s, dma.descriptor_cost_s);
  // Latency and depth are set apart (DmaLatency tests): the rows' are trn2's.
  EXPECT_EQ(dma.start_latency_s, 600e-9);
  EXPECT_EQ(dma.queue_depth, 2u);
}

// One dma_copy of `size` bytes for each size 64 B .. 1 MiB, in two shapes:
//   one chunk:  HBM -> HBM, one contiguous run (one descriptor);
//   partitions: HBM -> SBUF fp32 over min(128, size/4) partitions, so from 512 B on
//               the chunk per partition is size/128.
struct curve {
  std::vector<uint64_t> sizes;
  std::vector<double> chunk_ns, parts_ns;
};

// The engine's own curve: the two shapes run on two engines at once, so the core's
// shared rate (its own tests below) is set out of the way, not to couple them.
curve measure_curve() {
  trn2_params p;
  p.dma.core_bandwidth_bps = 1e15;
  p.dma.core_descriptor_cost_s = 0;
  core c("c", p);
  c.ctx.functional = false;
  curve r;
  for (uint64_t s = 64; s <= kMiB; s *= 2) r.sizes.push_back(s);
  for (uint64_t s : r.sizes) {
    const uint32_t n = uint32_t(s / 4);
    c.q[0][0].push_back(with_signal(
        dma_copy(hb(1, n, 32 * kMiB, DType::fp32, {{1, n}}), hb(1, n, 0, DType::fp32, {{1, n}})),
        0));
  }
  for (uint64_t s : r.sizes) {
    const uint32_t n = uint32_t(s / 4), parts = std::min<uint32_t>(128, n), per = n / parts;
    c.q[1][0].push_back(with_signal(dma_copy(sb(0, parts, 0, DType::fp32, {{1, per}}),
                                             hb(parts, per, 0, DType::fp32, {{1, per}})),
                                    1));
  }
  std::vector<sc_time> t0, t1;
  test::record_semaphore(c.sems, 0, uint32_t(r.sizes.size()), &t0);
  test::record_semaphore(c.sems, 1, uint32_t(r.sizes.size()), &t1);
  c.run();
  EXPECT_TRUE(c.ctx.faults.empty());
  r.chunk_ns = durations_ns(t0);
  r.parts_ns = durations_ns(t1);
  EXPECT_EQ(r.chunk_ns.size(), r.sizes.size());
  EXPECT_EQ(r.parts_ns.size(), r.sizes.size());
  return r;
}

TEST(DmaTiming, BandwidthIsMonotoneInSizeAndSaturatesAtTheCap) {
  const curve r = measure_curve();
  ASSERT_EQ(r.parts_ns.size(), r.sizes.size());
  for (size_t i = 0; i < r.sizes.size(); ++i) {
    const double g1 = double(r.sizes[i]) / r.chunk_ns[i], g2 = double(r.sizes[i]) / r.parts_ns[i];
    EXPECT_LE(g1, kCap) << r.sizes[i];
    EXPECT_LE(g2, kCap) << r.sizes[i];
    if (i > 0) {
      EXPECT_GE(g1, double(r.sizes[i - 1]) / r.chunk_ns[i - 1]) << r.sizes[i];
      EXPECT_GE(g2, double(r.sizes[i - 1]) / r.parts_ns[i - 1]) << r.sizes[i];
    }
  }
  // 1 MiB as one chunk: 1 + 1048576 / 23 = 45591.3 ns, 99.998 % of the cap; over 128
  // partitions (8 KiB each): 128 x 1 + 45590.3 = 45718.3 ns, 99.7 %.
  EXPECT_NEAR(r.chunk_ns.back(), 45591.3, 0.5);
  EXPECT_NEAR(r.parts_ns.back(), 45718.3, 0.5);
  EXPECT_GE(double(kMiB) / r.chunk_ns.back(), 0.99 * kCap);
  EXPECT_GE(double(kMiB) / r.parts_ns.back(), 0.95 * kCap);
  // 64 B as one chunk is HBM-latency-bound: own 1 + 2.8 = 3.8 < HBM side 100 + 64 /
  // 45.3125 (read) + 64 / 45.3125 (write, same channel) = 102.8 ns.
  EXPECT_NEAR(r.chunk_ns.front(), 102.8, 0.1);
}

// docs/hardware.md, DMA Efficiency: a [128, F] transfer is spread 8 partitions per
// engine; under 256 B per partition it is overhead-bound, 2 KiB is the minimum
// recommended and 4 KiB saturates. The overhead is the start latency (here 1.3 us, the
// cross-engine figure), which a queue hides behind the transfer before it (2 in
// flight): back to back, a transfer of d ns issues when the one two before completed,
// so the period is max(d, (1300 + d) / 2) and the efficiency data / period.
TEST(DmaTiming, KneesComeFromTheStartLatency) {
  trn2_params p;
  p.dma.start_latency_s = 1.3e-6;
  p.dma.queue_depth = 2;
  core c("c", p);
  c.ctx.functional = false;
  // One queue per chunk size, each on its own engine (semaphore e): 8 back to back.
  constexpr uint32_t kN = 8;
  const uint32_t chunks[] = {256, 2048, 4096};
  std::vector<sc_time> done[3];
  for (uint16_t e = 0; e < 3; ++e) {
    test::record_semaphore(c.sems, e, kN, &done[e]);
    const uint32_t n = chunks[e] / 4;
    for (uint32_t i = 0; i < kN; ++i)
      c.q[e][0].push_back(with_signal(
          dma_copy(sb(0, 8, 0, DType::fp32, {{1, n}}), hb(8, n, 0, DType::fp32, {{1, n}})), e));
  }
  c.run();
  auto efficiency = [&](int e) {
    EXPECT_EQ(done[e].size(), kN);
    const double period = (done[e][kN - 1] - done[e][kN - 3]).to_seconds() * 1e9 / 2;
    return 8.0 * chunks[e] / kCap / period;
  };
  // 256 B: own 8 + 2048 / 23 = 97.0 ns, but HBM-latency-bound: 100 + 256 / 45.3125 =
  // 105.65 (8 rows on 8 channels); period (1300 + 105.65) / 2 = 702.8: 12.7 %.
  EXPECT_NEAR(efficiency(0), 89.04 / 702.82, 1e-4);
  // 2 KiB: d = 8 + 712.3 = 720.3, period 1010.2: 70.5 %, below peak.
  EXPECT_NEAR(efficiency(1), 712.35 / 1010.17, 1e-4);
  // 4 KiB: d = 8 + 1424.7 = 1432.7 >= 1300: the latency is hidden, 99.4 %.
  EXPECT_NEAR(efficiency(2), 1424.70 / 1432.70, 1e-4);
}

TEST(DmaTiming, CalibrationMatchesTheMeasured32KiBTransfer) {
  core c("c");
  std::vector<sc_time> done;
  test::record_semaphore(c.sems, 0, 2, &done);
  // docs/hardware.md: 32 KiB through one trn2 DMA engine in ~1416 ns.
  // One contiguous chunk: 1 + 32768 / 23 = 1 + 1424.7 = 1425.7 ns.
  c.q[0][0].push_back(with_signal(dma_copy(hb(1, 8192, 32 * kMiB, DType::fp32, {{1, 8192}}),
                                           hb(1, 8192, 0, DType::fp32, {{1, 8192}})),
                                  0));
  // 8 partitions x 4 KiB: 8 x 1 + 1424.7 = 1432.7 ns (SBUF side: 1024 words / 2.4 GHz
  // = 426.7 ns).
  c.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 8, 0, DType::fp32, {{1, 1024}}), hb(8, 1024, 0, DType::fp32, {{1, 1024}})),
      0));
  c.run();
  const auto d = durations_ns(done);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 1425.7, 0.1);
  EXPECT_NEAR(d[1], 1432.7, 0.1);
  for (double t : d) EXPECT_NEAR(t / 1416.0, 1.0, 0.015) << t;  // within 1.5 %
}

// ---- spread ----------------------------------------------------------------------

Instruction spread(Instruction in, uint8_t n) {
  in.spread = n;
  return in;
}

TEST(DmaTiming, SpreadOver16EnginesSignals16AndRunsConcurrently) {
  core c("c");
  std::vector<float> x(128 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  c.hbm_mem.write(0, test::f32_bytes(x).data(), x.size() * 4);
  std::vector<sc_time> started, done, after;
  test::record_semaphore(c.sems, 0, 16, &done);
  test::record_semaphore(c.sems, 1, 1, &started);
  test::record_semaphore(c.sems, 2, 1, &after);
  // 128 rows x 1 KiB over 16 engines: 8 rows (8 KiB, 8 descriptors) each, all at
  // once: 8 x 1 + 8192 / 23 = 8 + 356.2 = 364.2 ns. Alone one engine would take 128 x
  // 1 + 131072 / 23 = 5826.8 ns. Each share is also 8192 / 437.5 + 8 x 1.8 = 33.125
  // ns of the core's shared rate; shares of one instant do not wait for each other,
  // but the next transfer waits for all 16: 16 x 33.125 = 530.0 ns.
  Instruction in = spread(
      dma_copy(sb(0, 128, 0, DType::fp32, {{1, 256}}), hb(128, 256, 0, DType::fp32, {{1, 256}})),
      16);
  in = with_signal(in, 0);
  in = with_signal(in, 1, 1, isa::SignalWhen::start);
  c.q[0][0].push_back(in);
  // The queue's next instruction starts only when every share has completed.
  c.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 1, 4096, DType::fp32, {{1, 16}}), hb(1, 16, 0, DType::fp32, {{1, 16}})), 2));
  c.run();
  ASSERT_TRUE(c.ctx.faults.empty()) << c.ctx.faults[0].message;
  ASSERT_EQ(done.size(), 16u);  // each of the 16 engines signalled +1
  EXPECT_EQ(c.sems.value(0), 16u);
  EXPECT_EQ(c.sems.value(1), 1u);  // start signals fire once
  EXPECT_EQ(started, test::times_ns({0}));
  for (const auto& t : done) EXPECT_NEAR(t.to_seconds() * 1e9, 364.2, 0.1);
  // Then the 64 B copy, at 364.2 ns: its HBM time (100 + 64 / 45.3125 = 101.4 ns) is
  // shorter than its turn at the shared rate, 530.0 + 64 / 437.5 + 1.8 = 531.95 ns.
  const double copy_end = 530.0 + 64 / 437.5 + 1.8;
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NEAR(after[0].to_seconds() * 1e9, copy_end, 0.2);
  EXPECT_NEAR((c.dma[0]->last_done()).to_seconds() * 1e9, copy_end, 0.2);
  for (size_t e = 0; e < 16; ++e) {
    EXPECT_EQ(c.dma[e]->bytes(), (e == 0 ? 8192u + 64u : 8192u)) << e;
    EXPECT_EQ(c.dma[e]->helper_shares(), e == 0 ? 0u : 1u) << e;
    EXPECT_NEAR(c.dma[e]->busy_ns(), e == 0 ? copy_end : 364.2, 0.2) << e;
    EXPECT_EQ(c.dma[e]->instructions(), e == 0 ? 2u : 0u) << e;
  }
  // DMA active (the profiler's: some engine moving data) is the union, not the sum:
  // [0, 364.2) on all 16 engines, then [364.2, 506.15) on engine 0. Any engine reports it.
  EXPECT_NEAR(c.dma[7]->core_active_ns(), copy_end, 0.2);
  // Every row arrived.
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 256; i += 51)
      ASSERT_EQ(test::f32_at(c.sbuf_mem.row(p) + 4 * i), x[p * 256 + i]) << p << "," << i;
  stats::group g("dma");
  c.dma[0]->register_stats(g);
  EXPECT_EQ(g.value("q0.bytes"), 131072.0 + 64);  // the whole instruction counts once
  EXPECT_EQ(g.value("q0.copies"), 2.0);
  EXPECT_EQ(g.value("shares"), 2.0);  // its own share and the 64 B copy
  EXPECT_DOUBLE_EQ(g.value("avg_share_bytes"), (8192.0 + 64) / 2);
}

TEST(DmaTiming, SpreadSharesAreRealWorkOnTheOtherEngines) {
  core c("c");
  c.ctx.functional = false;
  std::vector<sc_time> spread_done, own_done;
  test::record_semaphore(c.sems, 0, 2, &spread_done);
  test::record_semaphore(c.sems, 1, 2, &own_done);
  // Engine 1 is busy with its own queue: two 1-chunk copies of 32 KiB, 1425.7 ns each.
  auto big = [](uint64_t dst) {
    return dma_copy(hb(1, 8192, dst, DType::fp32, {{1, 8192}}),
                    hb(1, 8192, 0, DType::fp32, {{1, 8192}}));
  };
  c.q[1][0] = {with_signal(big(32 * kMiB), 1), with_signal(big(33 * kMiB), 1)};
  // Engine 0 spreads 16 rows x 1 KiB over engines 0 and 1 (issued at 0): 8 rows each,
  // 8 x 1 + 8192 / 23 = 364.2 ns. Engine 0's share completes at 364.2. Engine 1 takes
  // its share in round-robin order after its running copy: queue 0's first copy [0,
  // 1425.7), then the share slot [1425.7, 1789.9), then queue 0's second copy
  // [1789.9, 3215.6).
  c.q[0][0] = {with_signal(spread(dma_copy(sb(0, 16, 0, DType::fp32, {{1, 256}}),
                                           hb(16, 256, 0, DType::fp32, {{1, 256}})),
                                  2),
                           0)};
  c.run();
  ASSERT_TRUE(c.ctx.faults.empty());
  ASSERT_EQ(spread_done.size(), 2u);
  EXPECT_NEAR(spread_done[0].to_seconds() * 1e9, 364.2, 0.1);
  EXPECT_NEAR(spread_done[1].to_seconds() * 1e9, 1425.7 + 364.2, 0.2);
  ASSERT_EQ(own_done.size(), 2u);
  EXPECT_NEAR(own_done[0].to_seconds() * 1e9, 1425.7, 0.1);
  EXPECT_NEAR(own_done[1].to_seconds() * 1e9, 1425.7 + 364.2 + 1425.7, 0.3);
  // The spread instruction completes with its last share.
  EXPECT_NEAR(c.dma[0]->last_done().to_seconds() * 1e9, 1789.9, 0.2);
  EXPECT_NEAR(c.dma[1]->busy_ns(), 1425.7 * 2 + 364.2, 0.3);
  EXPECT_EQ(c.dma[1]->helper_shares(), 1u);
}

TEST(DmaTiming, SpreadWrapsAroundFromTheIssuingEngine) {
  core c("c");
  c.ctx.functional = false;
  std::vector<sc_time> done;
  test::record_semaphore(c.sems, 3, 4, &done);
  // Issued on engine 14 with spread=4: engines 14, 15, 0, 1 take 2 rows each (+2 x 4).
  c.q[14][2] = {with_signal(spread(dma_copy(hb(8, 64, 32 * kMiB, DType::fp32, {{1, 64}}),
                                            sb(0, 8, 0, DType::fp32, {{1, 64}})),
                                   4),
                            3, 2)};
  c.run();
  ASSERT_TRUE(c.ctx.faults.empty());
  EXPECT_EQ(c.sems.value(3), 8u);
  for (size_t e = 0; e < 16; ++e) {
    const bool took_part = e == 14 || e == 15 || e == 0 || e == 1;
    EXPECT_EQ(c.dma[e]->bytes(), took_part ? 2u * 256 : 0u) << e;
    EXPECT_EQ(c.dma[e]->helper_shares(), took_part && e != 14 ? 1u : 0u) << e;
  }
  EXPECT_EQ(c.dma[14]->instructions(), 1u);
}

TEST(DmaTiming, SpreadWiderThanTheCoreIsAFault) {
  trn2_params p;
  p.dma.engines = 4;
  core c("c", p);
  Instruction in =
      spread(dma_copy(sb(0, 8, 0, DType::fp32, {{1, 4}}), hb(8, 4, 0, DType::fp32, {{1, 4}})), 8);
  in.line = 7;
  c.q[2][1] = {in};
  c.q[0][0] = {with_signal(
      dma_copy(sb(0, 1, 0, DType::fp32, {{1, 4}}), hb(1, 4, 0, DType::fp32, {{1, 4}})), 0)};
  c.run();
  ASSERT_EQ(c.ctx.faults.size(), 1u);
  EXPECT_EQ(c.ctx.faults[0].where, std::string(c.dma[2]->name()) + ".q1");
  EXPECT_NE(c.ctx.faults[0].message.find("instruction 0 (line 7): dma_copy"), std::string::npos)
      << c.ctx.faults[0].message;
  EXPECT_NE(c.ctx.faults[0].message.find("spread=8 but the core has 4 DMA engines"),
            std::string::npos)
      << c.ctx.faults[0].message;
  EXPECT_TRUE(c.dma[2]->failed());
  EXPECT_EQ(c.sems.value(0), 1u);  // other engines carry on
}

TEST(DmaTiming, RoundRobinAmongQueuesAndInOrderWithinOne) {
  core c("c");
  c.ctx.functional = false;
  std::vector<sc_time> a, b;
  test::record_semaphore(c.sems, 0, 2, &a);
  test::record_semaphore(c.sems, 1, 2, &b);
  // Four 8 x 4 KiB transfers, 1432.7 ns each, two per queue: A0 B0 A1 B1.
  auto t = [](uint64_t hbm) {
    return dma_copy(sb(0, 8, 0, DType::fp32, {{1, 1024}}),
                    hb(8, 1024, hbm, DType::fp32, {{1, 1024}}));
  };
  c.q[5][0] = {with_signal(t(0), 0), with_signal(t(kMiB), 0)};
  c.q[5][3] = {with_signal(t(2 * kMiB), 1), with_signal(t(3 * kMiB), 1)};
  c.run();
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(a[0].to_seconds() * 1e9, 1432.7, 0.1);
  EXPECT_NEAR(b[0].to_seconds() * 1e9, 2 * 1432.7, 0.1);
  EXPECT_NEAR(a[1].to_seconds() * 1e9, 3 * 1432.7, 0.2);
  EXPECT_NEAR(b[1].to_seconds() * 1e9, 4 * 1432.7, 0.2);
  stats::group g("dma");
  c.dma[5]->register_stats(g);
  EXPECT_EQ(g.value("q0.bytes"), 2.0 * 32768);
  EXPECT_EQ(g.value("q3.copies"), 2.0);
  EXPECT_EQ(g.value("descriptors"), 4.0 * 8);
  EXPECT_NEAR(g.value("busy_ns"), 4 * 1432.7, 0.3);
}

// ---- start latency -----------------------------------------------------------------

// A wait met while the engine moved other data counts its start latency from when it
// was met (semaphores keep the increments' times), not from when the engine looked.
TEST(DmaLatency, StartLatencyCountsFromWhenTheWaitWasMet) {
  trn2_params p;
  p.dma.start_latency_s = 1.3e-6;
  p.dma.queue_depth = 2;
  core c("c", p);
  c.ctx.functional = false;
  std::vector<sc_time> a, b;
  test::record_semaphore(c.sems, 0, 1, &a);
  test::record_semaphore(c.sems, 1, 1, &b);
  // A: 32 KiB in one chunk, issued at 0, moves [1300, 2725.7) (1 + 32768 / 23).
  c.q[0][0] = {with_signal(dma_copy(hb(1, 8192, 32 * kMiB, DType::fp32, {{1, 8192}}),
                                    hb(1, 8192, 0, DType::fp32, {{1, 8192}})),
                           0)};
  // B waits for s5, which another agent increments at 2000 ns, while A moves: B issues
  // at 2000 and moves [3300, 3664.2) (8 x 1 + 8192 / 23 = 364.2), not from 2725.7.
  c.q[0][1] = {with_signal(with_wait(dma_copy(sb(0, 8, 0, DType::fp32, {{1, 256}}),
                                              hb(8, 256, 0, DType::fp32, {{1, 256}})),
                                     5, 1),
                           1)};
  sc_core::sc_spawn([&c] {
    sc_core::wait(2000, sc_core::SC_NS);
    c.sems.increment(5, 1);
  });
  c.run();
  ASSERT_TRUE(c.ctx.faults.empty());
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(a[0].to_seconds() * 1e9, 1300 + 1425.7, 0.1);
  EXPECT_NEAR(b[0].to_seconds() * 1e9, 2000 + 1300 + 364.2, 0.1);
  // Active: [1300, 2725.7) and [3300, 3664.2).
  EXPECT_NEAR(c.dma[0]->core_active_ns(), 1425.7 + 364.2, 0.2);
}

// With one in flight, a queue pays the latency for every transfer: period 1300 + d.
TEST(DmaLatency, OneInFlightPaysTheLatencyEachTime) {
  trn2_params p;
  p.dma.start_latency_s = 1.3e-6;
  p.dma.queue_depth = 1;
  core c("c", p);
  c.ctx.functional = false;
  std::vector<sc_time> done;
  test::record_semaphore(c.sems, 0, 3, &done);
  for (int i = 0; i < 3; ++i)
    c.q[2][0].push_back(with_signal(
        dma_copy(sb(0, 8, 0, DType::fp32, {{1, 1024}}), hb(8, 1024, 0, DType::fp32, {{1, 1024}})),
        0));
  c.run();
  // d = 8 + 32768 / 23 = 1432.7: done at k x (1300 + 1432.7).
  ASSERT_EQ(done.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(done[k].to_seconds() * 1e9, (k + 1) * 2732.7, 0.2) << k;
}

}  // namespace
}  // namespace trnsim::models
