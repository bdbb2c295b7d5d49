// HBM channels and interleaving (models/memory/hbm.*): the granule-to-channel map,
// per-channel byte counts of access patterns against a per-byte reference, one
// channel vs all channels, and contention when two cores' 16 DMA engines stream at
// once (each core sees less bandwidth than alone; together they get the peak).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <set>
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

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

hbm_params params(uint32_t stacks, uint32_t per_stack, uint64_t granule, double bps) {
  hbm_params p;
  p.size_bytes = 16 * kMiB;
  p.bandwidth_bps = bps;
  p.latency_s = 100e-9;
  p.stacks = stacks;
  p.channels_per_stack = per_stack;
  p.interleave_bytes = granule;
  return p;
}

class hbm_only : public sc_core::sc_module {
 public:
  hbm mem;
  std::vector<std::unique_ptr<test::driver>> drivers;
  hbm_only(const sc_core::sc_module_name& n, const hbm_params& p, int ndrivers = 1)
      : sc_module(n), mem("hbm", p) {
    for (int i = 0; i < ndrivers; ++i) {
      drivers.push_back(std::make_unique<test::driver>(("d" + std::to_string(i)).c_str()));
      drivers.back()->socket.bind(mem.tgt_socket);
    }
  }
};

TEST(HbmTiming, EveryBlockOfGranulesCoversEveryChannel) {
  // 2 stacks x 4 channels, 256 B granules: a block is 8 x 256 = 2048 B.
  hbm_only h("h", params(2, 4, 256, 64e9));
  ASSERT_EQ(h.mem.channels(), 8u);
  std::set<uint32_t> first_of_block;
  for (uint64_t blk = 0; blk < 1000; ++blk) {
    std::set<uint32_t> seen;
    for (uint64_t g = 0; g < 8; ++g) {
      const uint64_t a = blk * 2048 + g * 256;
      const uint32_t c = h.mem.channel_of(a);
      ASSERT_EQ(h.mem.channel_of(a + 255), c);  // one granule, one channel
      seen.insert(c);
    }
    EXPECT_EQ(seen.size(), 8u) << blk;  // a permutation of the channels
    first_of_block.insert(h.mem.channel_of(blk * 2048));
  }
  // The order is rotated per block (hashed), not the same in every block.
  EXPECT_EQ(first_of_block.size(), 8u);
  // A whole number of blocks puts the same bytes on every channel: 1 MiB / 8 = 128 KiB.
  const auto per = h.mem.channel_bytes(hb(1, 0, 3 * 2048, DType::fp32, {{1, 262144}}));
  for (uint64_t b : per) EXPECT_EQ(b, 128 * kKiB);
}

TEST(HbmTiming, ChannelBytesMatchAPerByteCount) {
  // 3 stacks x 2 channels (not a power of two), 64 B granules.
  hbm_only h("h", params(3, 2, 64, 60e9));
  const isa::AccessPattern pats[] = {
      hb(1, 0, 37, DType::uint8, {{1, 5000}}),                    // unaligned contiguous run
      hb(7, 333, 1000, DType::fp32, {{1, 100}}),                  // rows with an odd stride
      hb(5, 1024, 64, DType::bf16, {{96, 3}, {1, 40}}),           // runs of 40 in a 2-D pattern
      hb(4, -300, 40000, DType::fp32, {{-2, 50}}),                // negative strides, elements
      hb(6, 0, 12345, DType::fp32, {{1, 77}}),                    // one row broadcast 6 times
      hb(3, 4096, 8, DType::fp32, {{2048, 2}, {16, 8}, {1, 4}}),  // 3-D, runs of 4
  };
  for (const auto& ap : pats) {
    std::vector<uint64_t> want(h.mem.channels(), 0);
    const int64_t es = int64_t(isa::dtype_size(ap.dtype));
    for (uint32_t r = 0; r < ap.partition_count; ++r)
      isa::for_each_free(ap, [&](uint64_t, int64_t off) {
        const int64_t base = int64_t(ap.offset) + int64_t(r) * ap.partition_stride * es + off;
        for (int64_t b = 0; b < es; ++b) ++want[h.mem.channel_of(uint64_t(base + b))];
      });
    EXPECT_EQ(h.mem.channel_bytes(ap), want) << isa::to_string(ap);
  }
}

TEST(HbmTiming, PowerOfTwoRowStridesDoNotPileOnOneChannel) {
  // trn2: 64 channels, 256 B granules. 128 rows of 256 B, 16 KiB apart: each row is
  // granule 0 of its block, which plain modulo interleaving would put on one channel.
  hbm_only h("h", params(4, 16, 256, 2.9e12));
  const auto per = h.mem.channel_bytes(hb(128, 4096, 0, DType::fp32, {{1, 64}}));
  const auto used = std::count_if(per.begin(), per.end(), [](uint64_t b) { return b > 0; });
  // 128 rows hashed over 64 channels: ~55 channels expected (64 x (1 - (63/64)^128)).
  EXPECT_GE(used, 40);
  EXPECT_LE(*std::max_element(per.begin(), per.end()), 8u * 256);
}

TEST(HbmTiming, WithoutTheHashPowerOfTwoRowStridesPileOnOneChannel) {
  // The same 128 rows 16 KiB apart with hbm.channel_hash off: granule 0 of every
  // block is channel 0, so all 128 x 256 B land there.
  hbm_params p = params(4, 16, 256, 2.9e12);
  p.channel_hash = false;
  hbm_only h("h", p);
  const auto per = h.mem.channel_bytes(hb(128, 4096, 0, DType::fp32, {{1, 64}}));
  EXPECT_EQ(per[0], 128u * 256);
  EXPECT_EQ(std::count_if(per.begin(), per.end(), [](uint64_t b) { return b > 0; }), 1);
}

TEST(HbmTiming, OneChannelIsSlowerThanAllChannels) {
  // 8 channels at 8 B/ns each (64 B/ns in all), 256 B granules, 100 ns latency.
  hbm_only h("h", params(2, 4, 256, 64e9), 2);
  auto& d = *h.drivers[0];
  std::vector<uint8_t> buf(4096);
  // Eight granules on the channel of address 0, in increasing order.
  std::vector<uint64_t> same;
  for (uint64_t g = 0; same.size() < 8; ++g)
    if (h.mem.channel_of(g * 256) == h.mem.channel_of(0)) same.push_back(g * 256);
  sc_time one, all, split, last_same, last_spread;
  d.body = [&] {
    // 256 B in one granule: one channel, 100 + 256 / 8 = 132 ns.
    one = d.read(hb(1, 0, 0, DType::uint8, {{1, 256}}), buf.data());
    sc_core::wait(ns(1000));
    // 2048 B, one whole block: every channel 256 B, 100 + 256 / 8 = 132 ns: 8x the
    // bytes in the same time.
    all = d.read(hb(1, 0, 2048, DType::uint8, {{1, 2048}}), buf.data());
    sc_core::wait(ns(1000));
    // 256 B straddling two granules: 128 B on each of two channels: 100 + 16 = 116 ns.
    split = d.read(hb(1, 0, 2048 + 128, DType::uint8, {{1, 256}}), buf.data());
    sc_core::wait(ns(1000));
    // 8 granules of one channel back to back: they queue, 100 + 8 x 32 = 356 ns ...
    for (uint64_t a : same) last_same = d.read(hb(1, 0, a, DType::uint8, {{1, 256}}), buf.data());
    sc_core::wait(ns(1000));
    // ... while 8 granules of one block, on 8 channels, all finish at 132 ns.
    for (uint64_t g = 0; g < 8; ++g)
      last_spread = d.read(hb(1, 0, 4 * 2048 + g * 256, DType::uint8, {{1, 256}}), buf.data());
  };
  sc_core::sc_start();
  EXPECT_EQ(one, ns(132));
  EXPECT_EQ(all, ns(132));
  EXPECT_EQ(split, ns(116));
  EXPECT_EQ(last_same, ns(356));
  EXPECT_EQ(last_spread, ns(132));
}

TEST(HbmTiming, StatsPerChannelAndTotals) {
  hbm_only h("h", params(2, 4, 256, 64e9));
  stats::group g("hbm");
  h.mem.register_stats(g);
  auto& d = *h.drivers[0];
  std::vector<uint8_t> buf(8192);
  d.body = [&] {
    d.read(hb(1, 0, 0, DType::uint8, {{1, 8192}}), buf.data());  // 4 blocks: 1 KiB per channel
    // 100000 = 390 x 256 + 160: 96 B in granule 390, 160 B in granule 391, both in
    // block 48, so on two different channels.
    d.write(hb(1, 0, 100000, DType::uint8, {{1, 256}}), buf.data());
  };
  sc_core::sc_start();
  EXPECT_EQ(g.value("read_bytes"), 8192.0);
  EXPECT_EQ(g.value("write_bytes"), 256.0);
  EXPECT_EQ(g.value("transfers"), 2.0);
  EXPECT_DOUBLE_EQ(g.value("peak_bytes_per_ns"), 64.0);
  double sum = 0, busy = 0;
  for (int c = 0; c < 8; ++c) {
    sum += g.value("ch" + std::to_string(c) + ".bytes");
    busy += g.value("ch" + std::to_string(c) + ".busy_ns");
    EXPECT_GE(g.value("ch" + std::to_string(c) + ".bytes"), 1024.0);
  }
  EXPECT_EQ(sum, 8192.0 + 256);
  // busy_ns is channel time / channels = bytes / peak: 8448 / 64 = 132 ns.
  EXPECT_NEAR(busy / 8, 132.0, 1e-6);
  EXPECT_NEAR(g.value("busy_ns"), 132.0, 1e-6);
  // The busiest channel: 1024 B of the read plus 160 B of the write at 8 B/ns = 148 ns.
  EXPECT_NEAR(g.value("max_channel_busy_ns"), 148.0, 1e-6);
}

// ---- two cores streaming ------------------------------------------------------------

// One core's 16 DMA engines with their SBUF and semaphores, bound to a shared HBM.
class dma_core : public sc_core::sc_module {
 public:
  sim_context ctx;
  semaphores sems;
  sbuf sbuf_mem;
  std::vector<std::unique_ptr<dma_engine>> dma;
  std::vector<std::vector<Instruction>> q;  // one queue per engine

  dma_core(const sc_core::sc_module_name& n, hbm& mem, const dma_params& p)
      : sc_module(n),
        sems("sems", semaphores_params{4}),
        sbuf_mem("sbuf", sbuf_cfg()),
        q(p.engines) {
    ctx.functional = false;
    for (uint32_t i = 0; i < p.engines; ++i) {
      dma.push_back(
          std::make_unique<dma_engine>(("dma" + std::to_string(i)).c_str(), p, sems, ctx));
      dma.back()->hbm_socket.bind(mem.tgt_socket);
      dma.back()->sbuf_socket.bind(sbuf_mem.tgt_socket);
    }
  }
  static sbuf_params sbuf_cfg() {
    sbuf_params s;
    s.partitions = 128;
    s.partition_bytes = 64 * kKiB;
    s.clock_hz = 1e9;
    s.port_elems_per_cycle = 128;
    return s;
  }
  // Each engine streams `n` transfers of 64 KiB (128 partitions x 512 B) from its own
  // HBM region.
  void load_stream(uint64_t hbm_base, int n) {
    for (size_t e = 0; e < dma.size(); ++e) {
      q[e].clear();
      for (int k = 0; k < n; ++k)
        q[e].push_back(
            dma_copy(sb(0, 128, 0, DType::fp32, {{1, 128}}),
                     hb(128, 128, hbm_base + (e * n + k) * 64 * kKiB, DType::fp32, {{1, 128}})));
      dma[e]->clear();
      dma[e]->load(0, &q[e]);
    }
  }
  void start() {
    for (auto& d : dma) d->start();
  }
  sc_time last_done() const {
    sc_time t = sc_core::SC_ZERO_TIME;
    for (const auto& d : dma) t = std::max(t, d->last_done());
    return t;
  }
};

class two_cores : public sc_core::sc_module {
 public:
  hbm mem;
  dma_core c0, c1;
  two_cores(const sc_core::sc_module_name& n, const hbm_params& hp, const dma_params& dp)
      : sc_module(n), mem("hbm", hp), c0("core0", mem, dp), c1("core1", mem, dp) {}
};

TEST(HbmTiming, TwoCoresStreamingShareThePeak) {
  // HBM 240 B/ns over 8 channels; 16 engines per core at 10 B/ns = 160 B/ns per core:
  // one core alone is engine-bound, two cores (320 B/ns of demand) are HBM-bound.
  dma_params dp;
  dp.engines = 16;
  dp.queues_per_engine = 4;
  dp.bandwidth_bps = 10e9;
  dp.fixed_cost_s = 100e-9;
  dp.descriptor_cost_s = 0;
  dp.start_latency_s = 0;
  dp.queue_depth = 1;
  two_cores h("h", params(2, 4, 256, 240e9), dp);
  constexpr int kN = 4;                                 // transfers per engine
  constexpr double kCoreBytes = 16.0 * kN * 64 * kKiB;  // 4 MiB per core
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  // Alone: each engine 4 x (100 + 65536 / 10) = 26614.4 ns -> 4 MiB / 26614.4 ns =
  // 157.6 B/ns.
  h.c0.load_stream(0, kN);
  h.c0.start();
  sc_core::sc_start();
  const double alone_ns = h.c0.last_done().to_seconds() * 1e9;
  EXPECT_NEAR(alone_ns, 26614.4, 0.5);
  const double alone_bw = kCoreBytes / alone_ns;

  // Together (a second run): 8 MiB at 240 B/ns needs 34952.5 ns at least.
  const double t0 = test::now().to_seconds() * 1e9;
  h.c0.load_stream(0, kN);
  h.c1.load_stream(4 * kMiB, kN);
  h.c0.start();
  h.c1.start();
  sc_core::sc_start();
  const double end0 = h.c0.last_done().to_seconds() * 1e9 - t0;
  const double end1 = h.c1.last_done().to_seconds() * 1e9 - t0;
  const double both_ns = std::max(end0, end1);
  const double bw0 = kCoreBytes / end0, bw1 = kCoreBytes / end1;
  EXPECT_LT(bw0, alone_bw * 0.9);
  EXPECT_LT(bw1, alone_bw * 0.9);
  const double total = 2 * kCoreBytes / both_ns;
  EXPECT_LE(total, 240.0);
  EXPECT_NEAR(total / 240.0, 1.0, 0.03) << total << " B/ns";
  // Neither core is starved: they finish within 10 % of each other.
  EXPECT_NEAR(end0 / end1, 1.0, 0.1);
}

}  // namespace
}  // namespace trnsim::models
