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

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

// trn2 figures (the params rows' defaults; TimingParamsAreTrn2s checks they still are):
//   DMA: 27.2 B/ns cap, fixed 170 ns, 9.4 ns per descriptor.
//   HBM: 2.9 TB/s over 4 x 16 = 64 channels (45.3125 B/ns each), 256 B granules,
//        100 ns latency (only 64 MiB of it).
//   SBUF: 128 partitions x 224 KiB, 2.4 GHz, 128 elements/cycle per port.
// One transfer takes max(own, HBM side, SBUF side), own = 170 + 9.4 x desc + B / 27.2.
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
    dma.bandwidth_bps = 27.2e9;
    dma.fixed_cost_s = 170e-9;
    dma.descriptor_cost_s = 9.4e-9;
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

constexpr double kCap = 27.2;  // B/ns

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
}

// One dma_copy of `size` bytes for each size 64 B .. 1 MiB, in two shapes:
//   one chunk:  HBM -> HBM, one contiguous run (one descriptor);
//   partitions: HBM -> SBUF fp32 over min(128, size/4) partitions, so from 512 B on
//               the chunk per partition is size/128.
struct curve {
  std::vector<uint64_t> sizes;
  std::vector<double> chunk_ns, parts_ns;
};

curve measure_curve() {
  core c("c");
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
  // 1 MiB as one chunk: 170 + 9.4 + 1048576 / 27.2 = 38730.0 ns = 27.07 B/ns, 99.5 % of
  // the cap; over 128 partitions (8 KiB each): 170 + 128 x 9.4 + 38550.6 = 39923.8 ns
  // = 26.26 B/ns, 96.6 %.
  EXPECT_NEAR(r.chunk_ns.back(), 38730.0, 0.5);
  EXPECT_NEAR(r.parts_ns.back(), 39923.8, 0.5);
  EXPECT_GE(double(kMiB) / r.chunk_ns.back(), 0.99 * kCap);
  EXPECT_GE(double(kMiB) / r.parts_ns.back(), 0.95 * kCap);
  // 64 B as one chunk is HBM-latency-bound: own 170 + 9.4 + 2.4 = 181.8 < HBM side
  // 170 + 100 + 64 / 45.3125 (read) + 64 / 45.3125 (write, same channel) = 272.8 ns.
  EXPECT_NEAR(r.chunk_ns.front(), 272.8, 0.1);
}

TEST(DmaTiming, KneesWhereDocumented) {
  const curve r = measure_curve();
  ASSERT_EQ(r.parts_ns.size(), r.sizes.size());
  // Efficiency (of the cap) of a 128-partition transfer by chunk per partition.
  auto eff = [&](uint64_t chunk) {
    for (size_t i = 0; i < r.sizes.size(); ++i)
      if (r.sizes[i] == 128 * chunk) return double(r.sizes[i]) / r.parts_ns[i] / kCap;
    ADD_FAILURE() << "no chunk " << chunk;
    return 0.0;
  };
  // docs/hardware.md, DMA Efficiency: < 256 B per partition is overhead-bound; 256 B is
  // where per-chunk overhead equals data time: 128 x 256 B = 170 + 128 x (9.4 +
  // 256 / 27.2) = 170 + 2407.9 = 2577.9 ns, 46.7 % of the cap.
  EXPECT_NEAR(128 * 256 / (eff(256) * kCap), 2577.9, 0.5);
  EXPECT_LT(eff(128), 0.35);  // 170 + 128 x (9.4 + 4.7) = 1975.6 ns: 30.3 %
  EXPECT_LT(eff(256), 0.5);
  EXPECT_GE(eff(512), 0.5);  // 170 + 128 x (9.4 + 18.8) = 3782.6 ns: 63.7 %
  // >= 4 KiB saturates: 2 KiB is 87.5 %, 4 KiB 93.3 % (170 + 128 x (9.4 + 150.6) =
  // 20648.5 ns), within 10 % of the cap.
  EXPECT_LT(eff(2048), 0.9);
  EXPECT_GE(eff(4096), 0.9);
  EXPECT_NEAR(128 * 4096 / (eff(4096) * kCap), 20648.5, 0.5);
  // One chunk: transfers under ~32 KiB waste bandwidth on the fixed cost: 32 KiB
  // reaches 87 % of the cap, 4 KiB only 45 %.
  auto chunk_eff = [&](uint64_t s) {
    for (size_t i = 0; i < r.sizes.size(); ++i)
      if (r.sizes[i] == s) return double(s) / r.chunk_ns[i] / kCap;
    return 0.0;
  };
  EXPECT_LT(chunk_eff(4096), 0.5);
  EXPECT_GE(chunk_eff(32768), 0.85);
}

TEST(DmaTiming, CalibrationMatchesTheMeasured32KiBTransfer) {
  core c("c");
  std::vector<sc_time> done;
  test::record_semaphore(c.sems, 0, 2, &done);
  // docs/hardware.md: 32 KiB through one trn2 DMA engine in ~1416 ns.
  // One contiguous chunk: 170 + 9.4 + 32768 / 27.2 = 170 + 9.4 + 1204.7 = 1384.1 ns.
  c.q[0][0].push_back(with_signal(dma_copy(hb(1, 8192, 32 * kMiB, DType::fp32, {{1, 8192}}),
                                           hb(1, 8192, 0, DType::fp32, {{1, 8192}})),
                                  0));
  // 8 partitions x 4 KiB: 170 + 8 x 9.4 + 1204.7 = 1449.9 ns (SBUF side: 170 + 1024
  // elements / 2.4 GHz = 596.7 ns).
  c.q[0][0].push_back(with_signal(
      dma_copy(sb(0, 8, 0, DType::fp32, {{1, 1024}}), hb(8, 1024, 0, DType::fp32, {{1, 1024}})),
      0));
  c.run();
  const auto d = durations_ns(done);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 1384.1, 0.1);
  EXPECT_NEAR(d[1], 1449.9, 0.1);
  for (double t : d) EXPECT_NEAR(t / 1416.0, 1.0, 0.05) << t;  // within 5 %
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
  // once: 170 + 8 x 9.4 + 8192 / 27.2 = 170 + 75.2 + 301.2 = 546.4 ns. Alone one
  // engine would take 170 + 128 x 9.4 + 131072 / 27.2 = 6192.0 ns.
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
  for (const auto& t : done) EXPECT_NEAR(t.to_seconds() * 1e9, 546.4, 0.1);
  // Then the 64 B copy: HBM-latency-bound 170 + 100 + 64 / 45.3125 = 271.4 ns.
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NEAR(after[0].to_seconds() * 1e9, 546.4 + 271.4, 0.2);
  EXPECT_NEAR((c.dma[0]->last_done()).to_seconds() * 1e9, 546.4 + 271.4, 0.2);
  for (size_t e = 0; e < 16; ++e) {
    EXPECT_EQ(c.dma[e]->bytes(), (e == 0 ? 8192u + 64u : 8192u)) << e;
    EXPECT_EQ(c.dma[e]->helper_shares(), e == 0 ? 0u : 1u) << e;
    EXPECT_NEAR(c.dma[e]->busy_ns(), e == 0 ? 546.4 + 271.4 : 546.4, 0.2) << e;
    EXPECT_EQ(c.dma[e]->instructions(), e == 0 ? 2u : 0u) << e;
  }
  // Every row arrived.
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 256; i += 51)
      ASSERT_EQ(test::f32_at(c.sbuf_mem.row(p) + 4 * i), x[p * 256 + i]) << p << "," << i;
  stats::group g("dma");
  c.dma[0]->register_stats(g);
  EXPECT_EQ(g.value("q0.bytes"), 131072.0 + 64);  // the whole instruction counts once
  EXPECT_EQ(g.value("q0.transfers"), 2.0);
  EXPECT_EQ(g.value("transfers"), 2.0);  // its own share and the 64 B copy
  EXPECT_DOUBLE_EQ(g.value("avg_transfer_bytes"), (8192.0 + 64) / 2);
}

TEST(DmaTiming, SpreadSharesAreRealWorkOnTheOtherEngines) {
  core c("c");
  c.ctx.functional = false;
  std::vector<sc_time> spread_done, own_done;
  test::record_semaphore(c.sems, 0, 2, &spread_done);
  test::record_semaphore(c.sems, 1, 2, &own_done);
  // Engine 1 is busy with its own queue: two 1-chunk copies of 32 KiB, 1384.1 ns each.
  auto big = [](uint64_t dst) {
    return dma_copy(hb(1, 8192, dst, DType::fp32, {{1, 8192}}),
                    hb(1, 8192, 0, DType::fp32, {{1, 8192}}));
  };
  c.q[1][0] = {with_signal(big(32 * kMiB), 1), with_signal(big(33 * kMiB), 1)};
  // Engine 0 spreads 16 rows x 1 KiB over engines 0 and 1 (issued at 0): 8 rows each,
  // 170 + 8 x 9.4 + 8192 / 27.2 = 546.4 ns. Engine 0's share completes at 546.4.
  // Engine 1 takes its share in round-robin order after its running copy: queue 0's
  // first copy [0, 1384.1), then the share slot [1384.1, 1930.5), then queue 0's
  // second copy [1930.5, 3314.6).
  c.q[0][0] = {with_signal(spread(dma_copy(sb(0, 16, 0, DType::fp32, {{1, 256}}),
                                           hb(16, 256, 0, DType::fp32, {{1, 256}})),
                                  2),
                           0)};
  c.run();
  ASSERT_TRUE(c.ctx.faults.empty());
  ASSERT_EQ(spread_done.size(), 2u);
  EXPECT_NEAR(spread_done[0].to_seconds() * 1e9, 546.4, 0.1);
  EXPECT_NEAR(spread_done[1].to_seconds() * 1e9, 1384.1 + 546.4, 0.2);
  ASSERT_EQ(own_done.size(), 2u);
  EXPECT_NEAR(own_done[0].to_seconds() * 1e9, 1384.1, 0.1);
  EXPECT_NEAR(own_done[1].to_seconds() * 1e9, 1384.1 + 546.4 + 1384.1, 0.3);
  // The spread instruction completes with its last share.
  EXPECT_NEAR(c.dma[0]->last_done().to_seconds() * 1e9, 1930.5, 0.2);
  EXPECT_NEAR(c.dma[1]->busy_ns(), 1384.1 * 2 + 546.4, 0.3);
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
  // Four 8 x 4 KiB transfers, 1449.9 ns each, two per queue: A0 B0 A1 B1.
  auto t = [](uint64_t hbm) {
    return dma_copy(sb(0, 8, 0, DType::fp32, {{1, 1024}}),
                    hb(8, 1024, hbm, DType::fp32, {{1, 1024}}));
  };
  c.q[5][0] = {with_signal(t(0), 0), with_signal(t(kMiB), 0)};
  c.q[5][3] = {with_signal(t(2 * kMiB), 1), with_signal(t(3 * kMiB), 1)};
  c.run();
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(a[0].to_seconds() * 1e9, 1449.9, 0.1);
  EXPECT_NEAR(b[0].to_seconds() * 1e9, 2 * 1449.9, 0.1);
  EXPECT_NEAR(a[1].to_seconds() * 1e9, 3 * 1449.9, 0.2);
  EXPECT_NEAR(b[1].to_seconds() * 1e9, 4 * 1449.9, 0.2);
  stats::group g("dma");
  c.dma[5]->register_stats(g);
  EXPECT_EQ(g.value("q0.bytes"), 2.0 * 32768);
  EXPECT_EQ(g.value("q3.transfers"), 2.0);
  EXPECT_EQ(g.value("descriptors"), 4.0 * 8);
  EXPECT_NEAR(g.value("busy_ns"), 4 * 1449.9, 0.3);
}

}  // namespace
}  // namespace trnsim::models
