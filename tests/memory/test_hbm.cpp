// HBM (models/memory/hbm.*): paged storage across the 1 MiB page boundary, zero
// reads of unwritten bytes, range errors, latency + bandwidth timing and the
// serialisation of concurrent transfers on the shared bandwidth, statistics.
#include "models/memory/hbm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using isa::DType;
using sc_core::sc_time;
using test::hb;
using test::ns;

constexpr uint64_t kMiB = 1ull << 20;

// 8 MiB at 64 B/ns (64e9 B/s) with a 100 ns access latency: 4096 B take
// 100 + 4096/64 = 164 ns. One channel, so every transfer sees the whole bandwidth
// (channels and interleaving: test_hbm_timing.cpp).
hbm_params test_hbm_params() {
  hbm_params p;
  p.size_bytes = 8 * kMiB;
  p.bandwidth_bps = 64e9;
  p.latency_s = 100e-9;
  p.stacks = 1;
  p.channels_per_stack = 1;
  return p;
}

// Two drivers on the HBM's multi-target socket (two DMA engines sharing it).
class hbm_harness : public sc_core::sc_module {
 public:
  hbm mem;
  test::driver a, b;
  explicit hbm_harness(const sc_core::sc_module_name& n, const hbm_params& p = test_hbm_params())
      : sc_module(n), mem("hbm", p), a("a"), b("b") {
    a.socket.bind(mem.tgt_socket);
    b.socket.bind(mem.tgt_socket);
  }
};

std::vector<uint8_t> ramp(size_t n, uint8_t start = 1) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(start + i * 7);
  return v;
}

TEST(Hbm, DirectAccessAcrossPageBoundaryAndUnwrittenZeros) {
  hbm_harness h("h");
  const auto data = ramp(300);
  // Bytes [1 MiB - 100, 1 MiB + 200): the last 100 of page 0, the first 200 of page 1.
  h.mem.write(kMiB - 100, data.data(), data.size());
  std::vector<uint8_t> back(300);
  h.mem.read(kMiB - 100, back.data(), back.size());
  EXPECT_EQ(back, data);
  // Around the written range, and in never-touched pages, bytes read as 0.
  std::vector<uint8_t> around(1000, 0xaa);
  h.mem.read(kMiB - 600, around.data(), around.size());
  for (size_t i = 0; i < 1000; ++i) {
    const bool written = i >= 500 && i < 800;
    EXPECT_EQ(around[i], written ? data[i - 500] : 0) << i;
  }
  std::vector<uint8_t> far(4096, 0xaa);
  h.mem.read(5 * kMiB + 12345, far.data(), far.size());
  EXPECT_TRUE(std::all_of(far.begin(), far.end(), [](uint8_t x) { return x == 0; }));
  // A read spanning the last byte of the device.
  std::vector<uint8_t> last(16, 0xaa);
  h.mem.read(8 * kMiB - 16, last.data(), last.size());
  EXPECT_TRUE(std::all_of(last.begin(), last.end(), [](uint8_t x) { return x == 0; }));
}

// Scratch pages go once the last DMA copy spanning them is done; partial pages, and
// pages another instruction reaches, stay.
TEST(Hbm, PlannedPagesDropAfterTheirLastCopy) {
  hbm_harness h("h");
  const auto data = ramp(6 * kMiB);
  h.mem.write(0, data.data(), data.size());
  EXPECT_EQ(h.mem.pages(), 6u);
  const auto sbuf = test::sb(0, 1, 0, DType::fp32, {{1, 4}});
  // c1 spans page 1; c2 pages 1 and 2; the tensor_copy reaches page 2; c3 page 3.
  const std::vector<isa::Instruction> q = {
      test::dma_copy(sbuf, hb(1, 0, kMiB, DType::fp32, {{1, 4}})),
      test::dma_copy(hb(1, 0, 2 * kMiB - 8, DType::fp32, {{1, 4}}), sbuf),
      test::instr(isa::Opcode::tensor_copy, hb(1, 0, 2 * kMiB + 64, DType::fp32, {{1, 4}}), {sbuf}),
      test::dma_copy(sbuf, hb(1, 0, 3 * kMiB, DType::fp32, {{1, 4}})),
  };
  // Freeable: [1 MiB, 4 MiB - 1): whole pages 1 and 2 (page 3 is partial).
  h.mem.plan_release({{kMiB, 4 * kMiB - 1}}, {{&q, 0}});
  h.mem.copy_done(q[0], 0);
  EXPECT_EQ(h.mem.pages(), 6u);  // page 1 has c2 to come
  h.mem.copy_done(q[1], 0);
  EXPECT_EQ(h.mem.pages(), 5u);  // page 1 gone, page 2 kept for the tensor_copy
  h.mem.copy_done(q[3], 0);
  EXPECT_EQ(h.mem.pages(), 5u);  // page 3 is partial
  std::vector<uint8_t> back(3 * kMiB);
  h.mem.read(0, back.data(), back.size());
  for (uint64_t i = 0; i < back.size(); i += 4093) {
    const bool dropped = i >= kMiB && i < 2 * kMiB;
    EXPECT_EQ(back[i], dropped ? 0 : data[i]) << i;
  }
  // With a program base of 4 MiB, c1 and c2 span page 5.
  h.mem.plan_release({{5 * kMiB, 6 * kMiB}}, {{&q, 4 * kMiB}});
  h.mem.copy_done(q[0], 4 * kMiB);
  EXPECT_EQ(h.mem.pages(), 5u);
  h.mem.copy_done(q[1], 4 * kMiB);
  EXPECT_EQ(h.mem.pages(), 4u);
  EXPECT_EQ(h.mem.peak_pages(), 6u);
  // An empty plan drops nothing.
  h.mem.plan_release({}, {{&q, 0}});
  h.mem.copy_done(q[3], 0);
  EXPECT_EQ(h.mem.pages(), 4u);
}

TEST(Hbm, PatternTransactionsAcrossThePageBoundary) {
  hbm_harness h("h");
  // hbm[4x64, 1 MiB - 300, fp32, [1,64]]: rows of 256 B; row 1 spans [1 MiB - 44, 1 MiB + 212).
  const auto rows = hb(4, 64, kMiB - 300, DType::fp32, {{1, 64}});
  std::vector<float> in(256), out(256), strided(2 * 16);
  for (int i = 0; i < 256; ++i) in[i] = float(i) * 1.5f - 7.0f;
  h.a.body = [&] {
    h.a.write(rows, in.data());
    h.a.read(rows, out.data());
    // hbm[2x100, 1 MiB - 300, fp32, [-2,16]] from +30 elements: row r, element i at
    // element 30 + 100r - 2i of the block above.
    h.a.read(hb(2, 100, kMiB - 300 + 120, DType::fp32, {{-2, 16}}), strided.data());
  };
  sc_core::sc_start();
  EXPECT_EQ(out, in);
  std::vector<uint8_t> raw(1024);
  h.mem.read(kMiB - 300, raw.data(), raw.size());
  EXPECT_EQ(test::bytes_f32(raw), in);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(strided[r * 16 + i], in[30 + 100 * r - 2 * i]) << r << "," << i;
}

TEST(Hbm, BroadcastAndNegativeRowStrides) {
  hbm_harness h("h");
  std::vector<float> src(64);
  for (int i = 0; i < 64; ++i) src[i] = float(i);
  h.mem.write(4096, test::f32_bytes(src).data(), 256);
  std::vector<float> bcast(4 * 8), back(3 * 8);
  h.a.body = [&] {
    h.a.read(hb(4, 0, 4096, DType::fp32, {{1, 8}}), bcast.data());  // row 0 four times
    // Rows at elements 40, 24, 8 (partition stride -16) from byte 4096 + 160.
    h.a.read(hb(3, -16, 4096 + 160, DType::fp32, {{1, 8}}), back.data());
  };
  sc_core::sc_start();
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(bcast[r * 8 + i], float(i));
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(back[r * 8 + i], float(40 - 16 * r + i));
}

TEST(Hbm, OutOfRangeAccessesGetErrors) {
  hbm_harness h("h");
  std::vector<float> buf(64, 2.0f);
  std::string past_end, below_zero, wrong_space, fits;
  h.a.body = [&] {
    // 4 fp32 from 8 MiB - 8: bytes [8388600, 8388616) of 8388608.
    past_end = test::driver::error_of([&] {
      h.a.write(hb(1, 0, 8 * kMiB - 8, DType::fp32, {{1, 4}}), buf.data());
    });
    // Row stride -64 elements from byte 128: row 2 starts at 128 - 2*256 = -384.
    below_zero = test::driver::error_of([&] {
      h.a.read(hb(3, -64, 128, DType::fp32, {{1, 4}}), buf.data());
    });
    wrong_space = test::driver::error_of([&] {
      h.a.read(test::sb(0, 1, 0, DType::fp32, {{1, 4}}), buf.data());
    });
    // The last 16 bytes exactly: fine.
    fits = test::driver::error_of([&] {
      h.a.write(hb(1, 0, 8 * kMiB - 16, DType::fp32, {{1, 4}}), buf.data());
    });
  };
  sc_core::sc_start();
  EXPECT_NE(past_end.find("write of hbm[1x0, 8388600, fp32, [1,4]] failed"), std::string::npos)
      << past_end;
  EXPECT_NE(past_end.find("HBM bytes [8388600, 8388616) outside the device's 8388608 bytes"),
            std::string::npos)
      << past_end;
  EXPECT_NE(below_zero.find("HBM bytes [-384, 144)"), std::string::npos) << below_zero;
  EXPECT_NE(wrong_space.find("non-HBM access pattern sent to HBM"), std::string::npos)
      << wrong_space;
  EXPECT_EQ(fits, "");
  std::vector<uint8_t> tail(8, 0xaa);
  h.mem.read(8 * kMiB - 8, tail.data(), 8);
  EXPECT_EQ(test::f32_at(tail.data()), 2.0f);  // the fitting write landed
  // Direct accesses beyond the last page throw instead of corrupting memory.
  EXPECT_THROW(h.mem.write(8 * kMiB, reinterpret_cast<uint8_t*>(buf.data()), 4), std::out_of_range);
}

TEST(Hbm, TimingIsLatencyPlusBytesOverBandwidth) {
  hbm_harness h("h");
  std::vector<uint8_t> buf(8192);
  sc_time t1, t2, t3;
  h.a.body = [&] {
    // 4096 B: latency 100 + 4096 B / 64 B/ns = 100 + 64 = 164 ns.
    t1 = h.a.read(hb(1, 0, 0, DType::fp32, {{1, 1024}}), buf.data());
    sc_core::wait(ns(1000));  // the bandwidth is idle again
    // Incoming delay 50 ns: offered at 50 + 100 = 150, + 8192/64 = 128 -> 278 ns.
    t2 = h.a.write(hb(2, 1024, 0, DType::bf16, {{1, 2048}}), buf.data(), false, ns(50));
    sc_core::wait(ns(1000));
    // 64 B: 100 + 1 = 101 ns.
    t3 = h.a.read(hb(16, 1, 0, DType::fp32), buf.data());
  };
  sc_core::sc_start();
  EXPECT_EQ(t1, ns(164));
  EXPECT_EQ(t2, ns(278));
  EXPECT_EQ(t3, ns(101));
  EXPECT_EQ(test::now(), ns(2000));  // only the driver's own waits advanced time
}

TEST(Hbm, BackToBackTransfersSerializeOnTheBandwidth) {
  hbm_harness h("h");
  std::vector<uint8_t> buf(4096);
  const auto ap = hb(4, 256, 0, DType::fp32, {{1, 256}});  // 4 x 1 KiB = 4096 B
  sc_time first, second, after_gap;
  h.a.body = [&] {
    // Both offered at 0 + 100 ns latency: the first holds the bandwidth [100, 164),
    // the second follows [164, 228): latency + 2 x 4096/64 = 100 + 128 = 228 ns.
    first = h.a.read(ap, buf.data());
    second = h.a.write(ap, buf.data());
    // From 1000 ns the resource is free again: 164 ns.
    sc_core::wait(ns(1000));
    after_gap = h.a.read(ap, buf.data());
  };
  sc_core::sc_start();
  EXPECT_EQ(first, ns(164));
  EXPECT_EQ(second, ns(228));
  EXPECT_EQ(after_gap, ns(164));
}

TEST(Hbm, TwoInitiatorsShareTheBandwidth) {
  hbm_harness h("h");
  std::vector<uint8_t> ba(4096), bb(4096);
  const auto ap = hb(1, 0, 0, DType::fp32, {{1, 1024}});  // 4096 B
  sc_time ta, tb;
  h.a.body = [&] { ta = h.a.read(ap, ba.data()); };
  h.b.body = [&] { tb = h.b.read(ap, bb.data()); };
  sc_core::sc_start();
  // Whichever is served first: 100 + 64 = 164 ns; the other 100 + 2 x 64 = 228 ns.
  EXPECT_EQ(std::min(ta, tb), ns(164));
  EXPECT_EQ(std::max(ta, tb), ns(228));
}

TEST(Hbm, TimingOnlyMovesNoDataAndStatsCount) {
  hbm_harness h("h");
  stats::group g("hbm");
  h.mem.register_stats(g);
  const auto data = ramp(1024);
  h.mem.write(0, data.data(), data.size());
  std::vector<uint8_t> buf(2048, 0x55);
  sc_time t_only, t_read;
  h.a.body = [&] {
    t_only =
        h.a.timing_only(tlm::TLM_WRITE_COMMAND, hb(1, 0, 0, DType::fp32, {{1, 256}}));  // 1024 B
    t_read = h.a.read(hb(2, 256, 0, DType::bf16, {{1, 512}}), buf.data());              // 2048 B
    h.a.write(hb(1, 0, 4096, DType::uint8, {{1, 512}}), buf.data());                    // 512 B
  };
  sc_core::sc_start();
  // Timing only: 100 + 1024/64 = 116 ns, and the ramp is still there.
  EXPECT_EQ(t_only, ns(116));
  std::vector<uint8_t> back(1024);
  h.mem.read(0, back.data(), back.size());
  EXPECT_EQ(back, data);
  // Queued behind the first: offered at 100, bandwidth free at 116: 116 + 2048/64 = 148 ns.
  EXPECT_EQ(t_read, ns(148));
  EXPECT_EQ(g.value("read_bytes"), 2048.0);
  EXPECT_EQ(g.value("write_bytes"), 1024.0 + 512.0);  // timing-only writes count too
  EXPECT_EQ(g.value("transfers"), 3.0);
  // Bandwidth busy: (1024 + 2048 + 512) / 64 = 16 + 32 + 8 = 56 ns.
  EXPECT_DOUBLE_EQ(g.value("busy_ns"), 56.0);
  EXPECT_EQ(h.mem.read_bytes(), 2048u);
  EXPECT_EQ(h.mem.write_bytes(), 1536u);
}

}  // namespace
}  // namespace trnsim::models
