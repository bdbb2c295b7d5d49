// SBUF and PSUM (models/memory/partitioned_memory.*, sbuf.*, psum.*): strided
// gather/scatter through access-pattern transactions, bounds errors, PSUM fp32
// accumulation, port-time arithmetic, timing-only transactions, statistics.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "models/memory/psum.h"
#include "models/memory/sbuf.h"
#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using isa::DType;
using sc_core::sc_time;
using test::ns;
using test::sb;

// 128 partitions x 4 KiB of SBUF and 128 x 16 KiB of PSUM, both ports at 1 GHz
// and 128 elements/cycle: a lane moves 128/128 = 1 element per cycle = 1 ns.
sbuf_params test_sbuf_params() {
  sbuf_params p;
  p.partitions = 128;
  p.partition_bytes = 4096;
  p.clock_hz = 1e9;
  p.port_elems_per_cycle = 128;
  return p;
}
psum_params test_psum_params() {
  psum_params p;
  p.partitions = 128;
  p.partition_bytes = 16 * 1024;
  p.bank_bytes = 2048;
  p.clock_hz = 1e9;
  p.port_elems_per_cycle = 128;
  return p;
}

// Binds one driver to the SBUF and one to the PSUM; `run` executes a body in the
// SBUF driver's thread at time 0 (the body may use both drivers).
class mem_harness : public sc_core::sc_module {
 public:
  sbuf sbuf_mem;
  psum psum_mem;
  test::driver to_sbuf, to_psum;

  explicit mem_harness(const sc_core::sc_module_name& n, const sbuf_params& sp = test_sbuf_params(),
                       const psum_params& pp = test_psum_params())
      : sc_module(n),
        sbuf_mem("sbuf", sp),
        psum_mem("psum", pp),
        to_sbuf("to_sbuf"),
        to_psum("to_psum") {
    to_sbuf.socket.bind(sbuf_mem.tgt_socket);
    to_psum.socket.bind(psum_mem.tgt_socket);
  }
  void run(std::function<void()> body) {
    to_sbuf.body = std::move(body);
    sc_core::sc_start();
  }
  // Fills every SBUF partition's first `n` fp32 values with 1000*p + i.
  void fill_sbuf_f32(uint32_t n) {
    for (uint32_t p = 0; p < sbuf_mem.partitions(); ++p)
      for (uint32_t i = 0; i < n; ++i) test::put_f32(sbuf_mem.row(p) + 4 * i, float(1000 * p + i));
  }
};

float sbuf_f32(mem_harness& h, uint32_t p, int64_t byte) {
  return test::f32_at(h.sbuf_mem.row(p) + byte);
}

TEST(PartitionedMemory, ContiguousRoundTripTouchesOnlyItsPartitions) {
  mem_harness h("h");
  std::vector<float> in(4 * 16), out(4 * 16, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5f * float(i) - 3.0f;
  const auto ap = sb(8, 4, 64, DType::fp32, {{1, 16}});  // sbuf[8:12, 64, fp32, [1,16]]
  h.run([&] {
    h.to_sbuf.write(ap, in.data());
    h.to_sbuf.read(ap, out.data());
  });
  EXPECT_EQ(out, in);
  // Partition-major packing: element i of partition 8+p sits at byte 64 + 4i.
  for (uint32_t p = 0; p < 4; ++p)
    for (uint32_t i = 0; i < 16; ++i) EXPECT_EQ(sbuf_f32(h, 8 + p, 64 + 4 * i), in[p * 16 + i]);
  // Neighbouring partitions and bytes are untouched.
  for (uint32_t p : {7u, 12u})
    for (uint32_t b = 0; b < 4096; ++b) ASSERT_EQ(h.sbuf_mem.row(p)[b], 0) << p << ":" << b;
  for (uint32_t b = 0; b < 64; ++b) EXPECT_EQ(h.sbuf_mem.row(8)[b], 0);
  EXPECT_EQ(h.sbuf_mem.row(8)[128], 0);
}

TEST(PartitionedMemory, StridedGatherWithNegativeStridesAndSeveralDims) {
  mem_harness h("h");
  h.fill_sbuf_f32(1024);
  // sbuf[2:5, 400, fp32, [-32,3],[3,4],[-1,2]]: element (a,b,c) of partition p is
  // the fp32 at byte 400 + 4*(-32a + 3b - c), i.e. value 1000p + 100 - 32a + 3b - c.
  const auto ap = sb(2, 3, 400, DType::fp32, {{-32, 3}, {3, 4}, {-1, 2}});
  ASSERT_EQ(ap.free_elems(), 24u);
  std::vector<float> out(3 * 24);
  h.run([&] { h.to_sbuf.read(ap, out.data()); });
  size_t k = 0;
  for (uint32_t p = 2; p < 5; ++p)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 2; ++c)
          EXPECT_EQ(out[k++], float(1000 * p + 100 - 32 * a + 3 * b - c)) << p << a << b << c;
}

TEST(PartitionedMemory, StridedScatterRoundTripsAndLeavesGapsAlone) {
  mem_harness h("h");
  // bf16, 4 dims, a negative outer stride, no element written twice:
  // sbuf[32:64, 1000, bf16, [-200,2],[40,3],[1,2],[4,5]] (60 elements per partition).
  const auto ap = sb(32, 32, 1000, DType::bf16, {{-200, 2}, {40, 3}, {1, 2}, {4, 5}});
  ASSERT_EQ(ap.free_elems(), 60u);
  ASSERT_EQ(ap.min_byte(), 1000 - 400);  // -200 elements x 2 B
  std::vector<uint16_t> in(32 * 60), out(32 * 60, 0xffff);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint16_t(0x3f80 + i);
  h.run([&] {
    h.to_sbuf.write(ap, in.data());
    h.to_sbuf.read(ap, out.data());
  });
  EXPECT_EQ(out, in);
  // Independent check of where each element went, and that nothing else changed.
  for (uint32_t p = 0; p < 32; ++p) {
    std::vector<bool> touched(4096, false);
    size_t k = 0;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 2; ++c)
          for (int d = 0; d < 5; ++d) {
            const int64_t byte = 1000 + 2 * (-200 * a + 40 * b + c + 4 * d);
            EXPECT_EQ(test::u16_at(h.sbuf_mem.row(32 + p) + byte), in[p * 60 + k]);
            touched[byte] = touched[byte + 1] = true;
            ++k;
          }
    for (uint32_t b = 0; b < 4096; ++b) {
      if (touched[b]) continue;
      ASSERT_EQ(h.sbuf_mem.row(32 + p)[b], 0) << "partition " << 32 + p << " byte " << b;
    }
  }
}

TEST(PartitionedMemory, PartitionRangesAndOutOfBoundsErrors) {
  mem_harness h("h");
  std::vector<float> buf(64 * 32, 1.0f);
  std::string top_ok, past_end, too_far, below_zero, wrong_space, zero_parts;
  h.run([&] {
    // The last 32 partitions: fine.
    top_ok = test::driver::error_of([&] {
      h.to_sbuf.write(sb(96, 32, 0, DType::fp32, {{1, 4}}), buf.data());
    });
    // Partitions 120..130 of 128.
    past_end = test::driver::error_of([&] {
      h.to_sbuf.read(sb(120, 10, 0, DType::fp32, {{1, 4}}), buf.data());
    });
    // 16 fp32 from byte 4090: bytes [4090, 4154) of a 4096-byte partition.
    too_far = test::driver::error_of([&] {
      h.to_sbuf.write(sb(0, 1, 4090, DType::fp32, {{1, 16}}), buf.data());
    });
    // Stride -4 from byte 8: lowest element at 8 - 3*4*4 = -40.
    below_zero = test::driver::error_of([&] {
      h.to_sbuf.read(sb(0, 2, 8, DType::fp32, {{-4, 4}}), buf.data());
    });
    // A PSUM pattern sent to the SBUF.
    wrong_space = test::driver::error_of([&] {
      h.to_sbuf.read(test::ps(0, 1, 0, DType::fp32, {{1, 4}}), buf.data());
    });
    zero_parts = test::driver::error_of([&] {
      h.to_psum.read(test::ps(0, 0, 0, DType::fp32, {{1, 4}}), buf.data());
    });
  });
  EXPECT_EQ(top_ok, "");
  EXPECT_NE(past_end.find("read of sbuf[120:130, 0, fp32, [1,4]] failed"), std::string::npos)
      << past_end;
  EXPECT_NE(past_end.find("partitions 120..130 exceed 128"), std::string::npos) << past_end;
  EXPECT_NE(too_far.find("write of sbuf[0:1, 4090, fp32, [1,16]] failed"), std::string::npos)
      << too_far;
  EXPECT_NE(too_far.find("bytes [4090, 4154) outside the partition size 4096"), std::string::npos)
      << too_far;
  EXPECT_NE(below_zero.find("bytes [-40, 12) outside the partition size 4096"), std::string::npos)
      << below_zero;
  EXPECT_NE(wrong_space.find("access pattern for psum sent to sbuf"), std::string::npos)
      << wrong_space;
  EXPECT_NE(zero_parts.find("partitions"), std::string::npos) << zero_parts;
  // The refused write changed nothing.
  for (uint32_t b = 4000; b < 4096; ++b) EXPECT_EQ(h.sbuf_mem.row(0)[b], 0);
}

TEST(PartitionedMemory, MalformedPayloadsGetErrorResponses) {
  mem_harness h("h");
  tlm::tlm_response_status no_ext = tlm::TLM_OK_RESPONSE, short_len = tlm::TLM_OK_RESPONSE;
  std::string short_msg;
  h.run([&] {
    std::vector<uint8_t> data(64);
    sc_time d = sc_core::SC_ZERO_TIME;
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_data_ptr(data.data());
    gp.set_data_length(64);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    h.to_sbuf.socket->b_transport(gp, d);  // plain TLM without an ap_extension
    no_ext = gp.get_response_status();
    ap_extension ext;
    ext.ap = sb(0, 1, 0, DType::fp32, {{1, 32}});  // 128 bytes, but 64 offered
    gp.set_extension(&ext);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    h.to_sbuf.socket->b_transport(gp, d);
    gp.clear_extension(&ext);
    short_len = gp.get_response_status();
    short_msg = ext.error;
  });
  EXPECT_EQ(no_ext, tlm::TLM_GENERIC_ERROR_RESPONSE);
  EXPECT_EQ(short_len, tlm::TLM_BURST_ERROR_RESPONSE);
  EXPECT_EQ(short_msg, "data length 64 != pattern bytes 128");
}

TEST(PartitionedMemory, PsumAccumulateAddsFp32) {
  mem_harness h("h");
  // psum[0:4, 2048, fp32, [2,8]]: every other fp32 of bank 1.
  const auto ap = test::ps(0, 4, 2048, DType::fp32, {{2, 8}});
  std::vector<float> a(32), b(32), out(32);
  for (int i = 0; i < 32; ++i) a[i] = float(i) + 0.25f, b[i] = -2.0f * float(i) + 1.5f;
  std::string bf16_err;
  h.run([&] {
    h.to_psum.write(ap, a.data());        // overwrite
    h.to_psum.write(ap, b.data(), true);  // accumulate
    h.to_psum.write(ap, b.data(), true);  // accumulate again
    h.to_psum.read(ap, out.data());
    std::vector<uint16_t> half(32);
    bf16_err = test::driver::error_of([&] {
      h.to_psum.write(test::ps(0, 4, 0, DType::bf16, {{1, 8}}), half.data(), true);
    });
  });
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], a[i] + b[i] + b[i]) << i;
  // The gaps between the strided elements stay 0.
  for (uint32_t p = 0; p < 4; ++p)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(test::f32_at(h.psum_mem.row(p) + 2048 + 8 * i + 4), 0.0f);
  EXPECT_NE(bf16_err.find("PSUM accumulates fp32 only, got bf16"), std::string::npos) << bf16_err;
}

// Contiguous rows (a matmul's dst) take the accumulate's fast path: the same sums,
// and nothing outside the rows changes.
TEST(PartitionedMemory, PsumAccumulateContiguousRows) {
  mem_harness h("h");
  // psum[1:3, 64, fp32, [8,2][1,8]]: 16 consecutive fp32 of each of partitions 1..3.
  const auto ap = test::ps(1, 3, 64, DType::fp32, {{8, 2}, {1, 8}});
  std::vector<float> a(48), b(48), out(48);
  for (int i = 0; i < 48; ++i) a[i] = float(i) * 0.5f - 3.0f, b[i] = 1.0f / float(i + 1);
  h.run([&] {
    h.to_psum.write(ap, a.data());
    h.to_psum.write(ap, b.data(), true);
    h.to_psum.read(ap, out.data());
  });
  for (int i = 0; i < 48; ++i) EXPECT_EQ(out[i], a[i] + b[i]) << i;
  for (uint32_t p = 0; p < 5; ++p) {
    EXPECT_EQ(test::f32_at(h.psum_mem.row(p) + 60), 0.0f) << p;
    EXPECT_EQ(test::f32_at(h.psum_mem.row(p) + 128), 0.0f) << p;
  }
  EXPECT_EQ(test::f32_at(h.psum_mem.row(0) + 64), 0.0f);
  EXPECT_EQ(test::f32_at(h.psum_mem.row(4) + 64), 0.0f);
}

// Held writes (matmul products computed on worker threads) go in oldest first before
// any access that moves PSUM data; a timing-only access leaves them held.
TEST(PartitionedMemory, PsumHeldWritesGoInBeforeAnyDataAccess) {
  mem_harness h("h");
  const auto ap = test::ps(0, 2, 0, DType::fp32, {{1, 4}});
  std::vector<float> a(8), b(8), c(8), out(8);
  for (int i = 0; i < 8; ++i) a[i] = float(i), b[i] = 0.5f * float(i) - 1.0f, c[i] = 7.0f;
  std::vector<int> order;
  int done = 0;
  const auto held = [&](const std::vector<float>& v, bool acc, int id) {
    return psum::held_write{ap, acc,
                            [&v, &order, id] {
                              order.push_back(id);
                              return reinterpret_cast<const uint8_t*>(v.data());
                            },
                            [&done] { ++done; }};
  };
  h.psum_mem.hold(held(a, false, 1));  // overwrite
  h.psum_mem.hold(held(b, true, 2));   // then accumulate
  EXPECT_EQ(h.psum_mem.held(), 2u);
  h.run([&] {
    h.to_psum.timing_only(tlm::TLM_READ_COMMAND, ap);  // nothing applied
    EXPECT_EQ(h.psum_mem.held(), 2u);
    h.to_psum.read(ap, out.data());
  });
  EXPECT_EQ(h.psum_mem.held(), 0u);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(done, 2);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], a[i] + b[i]) << i;
  // drain(keep) applies the oldest until `keep` are left.
  h.psum_mem.hold(held(c, false, 3));
  h.psum_mem.hold(held(a, true, 4));
  h.psum_mem.drain(1);
  EXPECT_EQ(h.psum_mem.held(), 1u);
  EXPECT_EQ(order.back(), 3);
  h.psum_mem.drain();
  EXPECT_EQ(test::f32_at(h.psum_mem.row(1) + 4), c[5] + a[5]);
}

TEST(PartitionedMemory, SbufRefusesAccumulate) {
  mem_harness h("h");
  std::vector<float> v(8, 3.0f);
  std::string err;
  h.run([&] {
    h.to_sbuf.write(sb(0, 1, 0, DType::fp32, {{1, 8}}), v.data());
    err = test::driver::error_of([&] {
      h.to_sbuf.write(sb(0, 1, 0, DType::fp32, {{1, 8}}), v.data(), true);
    });
  });
  EXPECT_NE(err.find("accumulating writes are only supported by PSUM"), std::string::npos) << err;
  EXPECT_EQ(sbuf_f32(h, 0, 0), 3.0f);  // not 6
}

TEST(PartitionedMemory, PortTimeArithmetic) {
  // Extra memories with other port widths, elaborated alongside the harness.
  sbuf_params half = test_sbuf_params();
  half.port_elems_per_cycle = 64;  // lane rate 64/128 = 0.5 element/cycle
  sbuf_params odd = test_sbuf_params();
  odd.port_elems_per_cycle = 96;  // lane rate 96/128 = 0.75 element/cycle
  sbuf_params slow = test_sbuf_params();
  slow.clock_hz = 0.5e9;  // 2 ns per cycle
  mem_harness h("h");
  sbuf half_mem("half", half), odd_mem("odd", odd), slow_mem("slow", slow);
  auto& m = h.sbuf_mem;
  // Lane rate 128/128 = 1 element/cycle at 1 GHz: N elements take N ns, whatever the
  // partition count (all lanes run in parallel).
  EXPECT_EQ(m.port_time(sb(0, 128, 0, DType::fp32, {{1, 512}})), ns(512));
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::fp32, {{1, 512}})), ns(512));
  EXPECT_EQ(m.port_time(sb(0, 128, 0, DType::fp32, {{8, 4}, {1, 16}})), ns(64));  // 4*16 = 64
  EXPECT_EQ(m.port_time(sb(0, 128, 0, DType::fp32)), ns(1));  // no dims: one element
  // Innermost stride 4 fp32 = 16 B: not above 16 B, rate unchanged: 100 ns.
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::fp32, {{4, 100}})), ns(100));
  // Innermost stride 5 fp32 = 20 B > 16 B: halved rate, 2 x 100 = 200 ns.
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::fp32, {{5, 100}})), ns(200));
  // Negative strides count by magnitude: |-5| x 4 B = 20 B > 16: 200 ns.
  EXPECT_EQ(m.port_time(sb(0, 1, 2000, DType::fp32, {{-5, 100}})), ns(200));
  // bf16: stride 8 = 16 B -> 100 ns; stride 9 = 18 B -> 200 ns.
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::bf16, {{8, 100}})), ns(100));
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::bf16, {{9, 100}})), ns(200));
  // Only the innermost stride matters: outer stride 64 elements, inner 1 -> 4*8 = 32 ns.
  EXPECT_EQ(m.port_time(sb(0, 1, 0, DType::fp32, {{64, 4}, {1, 8}})), ns(32));
  // Lane rate 0.5: 100 elements / 0.5 = 200 cycles = 200 ns; strided 2 x 200 = 400 ns.
  EXPECT_EQ(half_mem.port_time(sb(0, 128, 0, DType::fp32, {{1, 100}})), ns(200));
  EXPECT_EQ(half_mem.port_time(sb(0, 128, 0, DType::fp32, {{6, 100}})), ns(400));
  // Lane rate 0.75: 10 / 0.75 = 13.33 cycles, rounded up to 14 = 14 ns.
  EXPECT_EQ(odd_mem.port_time(sb(0, 1, 0, DType::fp32, {{1, 10}})), ns(14));
  // 0.5 GHz: 100 cycles x 2 ns = 200 ns.
  EXPECT_EQ(slow_mem.port_time(sb(0, 1, 0, DType::fp32, {{1, 100}})), ns(200));
  // PSUM uses the same rule with its own geometry: 512 fp32 = 512 ns.
  EXPECT_EQ(h.psum_mem.port_time(test::ps(0, 128, 0, DType::fp32, {{1, 512}})), ns(512));
}

// Regression test: port_time once looked at the last dim's stride even when that
// dim has size 1 and so never steps; [1,64],[100,1] reads 64 contiguous fp32 (the pattern
// is free_contiguous()) and should take 64 ns, not 2 x 64.
TEST(PartitionedMemory, PortTimeIgnoresSizeOneInnerDims) {
  mem_harness h("h");
  const auto ap = sb(0, 128, 0, DType::fp32, {{1, 64}, {100, 1}});
  ASSERT_TRUE(ap.free_contiguous());
  EXPECT_EQ(h.sbuf_mem.port_time(ap), ns(64));
  // The innermost dim that moves decides: stride 8 fp32 = 32 B > 16 B -> 2 x 64 = 128 ns.
  EXPECT_EQ(h.sbuf_mem.port_time(sb(0, 128, 0, DType::fp32, {{8, 64}, {1, 1}})), ns(128));
}

TEST(PartitionedMemory, TransactionsAnnotatePortTimeOnTopOfTheIncomingDelay) {
  mem_harness h("h");
  std::vector<float> buf(128 * 64);
  sc_time w, r, strided;
  h.run([&] {
    // 64 fp32 per partition: 64 ns, added to an incoming 7 ns: 71 ns.
    w = h.to_sbuf.write(sb(0, 128, 0, DType::fp32, {{1, 64}}), buf.data(), false, ns(7));
    r = h.to_sbuf.read(sb(0, 128, 0, DType::fp32, {{1, 64}}), buf.data());
    // Stride 8 fp32 = 32 B > 16 B: 2 x 64 = 128 ns.
    strided = h.to_psum.read(test::ps(0, 128, 0, DType::fp32, {{8, 64}}), buf.data());
  });
  EXPECT_EQ(w, ns(71));
  EXPECT_EQ(r, ns(64));
  EXPECT_EQ(strided, ns(128));
  // b_transport only annotates: simulated time did not move.
  EXPECT_EQ(test::now(), ns(0));
}

TEST(PartitionedMemory, TimingOnlyTransactionsMoveNoData) {
  mem_harness h("h");
  h.fill_sbuf_f32(64);
  const auto ap = sb(0, 128, 0, DType::fp32, {{1, 64}});
  sc_time wt, rt, pt;
  h.run([&] {
    wt = h.to_sbuf.timing_only(tlm::TLM_WRITE_COMMAND, ap);
    rt = h.to_sbuf.timing_only(tlm::TLM_READ_COMMAND, sb(0, 128, 0, DType::fp32, {{5, 64}}));
    pt = h.to_psum.timing_only(tlm::TLM_WRITE_COMMAND, test::ps(0, 128, 0, DType::fp32, {{1, 64}}));
  });
  EXPECT_EQ(wt, ns(64));   // 64 elements at 1/cycle
  EXPECT_EQ(rt, ns(128));  // stride 20 B > 16: 2 x 64
  EXPECT_EQ(pt, ns(64));
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(sbuf_f32(h, p, 4 * i), float(1000 * p + i));
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t b = 0; b < 256; ++b) ASSERT_EQ(h.psum_mem.row(p)[b], 0);
}

TEST(PartitionedMemory, StatsCountTransactionsAndFootprint) {
  mem_harness h("h");
  stats::group g("mem");
  h.sbuf_mem.register_stats(g.child("sbuf"));
  h.psum_mem.register_stats(g.child("psum"));
  std::vector<float> buf(128 * 64);
  h.run([&] {
    h.to_sbuf.write(sb(0, 128, 0, DType::fp32, {{1, 64}}), buf.data());  // 128*64*4 = 32768 B
    h.to_sbuf.read(sb(0, 4, 1024, DType::bf16, {{1, 100}}),
                   buf.data());  // 4*100*2 = 800 B, ends at 1224
    h.to_sbuf.timing_only(tlm::TLM_READ_COMMAND, sb(0, 1, 0, DType::fp32, {{1, 10}}));  // 40 B
    h.to_psum.write(test::ps(0, 2, 0, DType::fp32, {{1, 8}}), buf.data(), true);        // 64 B
  });
  EXPECT_EQ(g.value("sbuf.write_bytes"), 32768.0);
  EXPECT_EQ(g.value("sbuf.read_bytes"), 840.0);  // 800 + 40 (timing-only reads count)
  EXPECT_EQ(g.value("sbuf.writes"), 1.0);
  EXPECT_EQ(g.value("sbuf.reads"), 2.0);
  // Highest byte end 1224 (1024 + 100*2) times 128 partitions = 156672.
  EXPECT_EQ(g.value("sbuf.high_water_bytes"), 156672.0);
  // Touched: bytes 0..255 of 128 partitions (the write; the 40 B read is inside it)
  // and bytes 1024..1223 of partitions 0..3: 128 x 256 + 4 x 200 = 33568.
  EXPECT_EQ(g.value("sbuf.touched_bytes"), 33568.0);
  EXPECT_EQ(g.value("psum.write_bytes"), 64.0);
  EXPECT_EQ(g.value("psum.writes"), 1.0);
  EXPECT_EQ(g.value("psum.high_water_bytes"), 32.0 * 128);  // 8 fp32 = 32 B
  EXPECT_EQ(g.value("psum.touched_bytes"), 2.0 * 32);       // 2 partitions x 32 B
}

// A strided pattern touches only its elements, and each partition its own bytes:
// touched counts distinct bytes, however often and in whatever order accessed.
TEST(PartitionedMemory, TouchedBytesCountEachByteOnce) {
  mem_harness h("h");
  stats::group g("mem");
  h.sbuf_mem.register_stats(g.child("sbuf"));
  h.run([&] {
    // Partitions 32..63, 16 fp32 every 4th element from byte 64: 16 x 4 B each.
    h.to_sbuf.timing_only(tlm::TLM_WRITE_COMMAND, sb(32, 32, 64, DType::fp32, {{4, 16}}));
    // Again, and partition 0's whole first 64 B twice.
    h.to_sbuf.timing_only(tlm::TLM_READ_COMMAND, sb(32, 32, 64, DType::fp32, {{4, 16}}));
    h.to_sbuf.timing_only(tlm::TLM_WRITE_COMMAND, sb(0, 1, 0, DType::bf16, {{1, 32}}));
    h.to_sbuf.timing_only(tlm::TLM_READ_COMMAND, sb(0, 1, 0, DType::fp32, {{1, 16}}));
  });
  // 32 partitions x 16 x 4 B + 64 B = 2112.
  EXPECT_EQ(g.value("sbuf.touched_bytes"), 2112.0);
  // Strided end: 64 + (15 x 4 + 1) x 4 = 308 B, x 128 partitions.
  EXPECT_EQ(g.value("sbuf.high_water_bytes"), 308.0 * 128);
  h.sbuf_mem.reset_stats();
  EXPECT_EQ(g.value("sbuf.touched_bytes"), 0.0);
}

// More distinct patterns than the access cache holds, each seen twice (evicted and
// back, as DMA shares are): touched still counts each byte once; after
// reset_stats() the same patterns count again.
TEST(PartitionedMemory, TouchedBytesSurviveAccessCacheEviction) {
  mem_harness h("h");
  stats::group g("mem");
  h.sbuf_mem.register_stats(g.child("sbuf"));
  const auto pass = [&] {
    for (int round = 0; round < 2; ++round)
      for (uint32_t k = 0; k < 100; ++k)  // partition k % 128, bytes 32k..32k+31
        h.to_sbuf.timing_only(tlm::TLM_READ_COMMAND, sb(k % 128, 1, 32 * k, DType::fp32, {{1, 8}}));
  };
  double first = -1, cleared = -1, again = -1;
  h.run([&] {
    pass();
    first = g.value("sbuf.touched_bytes");
    h.sbuf_mem.reset_stats();
    cleared = g.value("sbuf.touched_bytes");
    pass();
    again = g.value("sbuf.touched_bytes");
  });
  EXPECT_EQ(first, 100.0 * 32);  // 100 patterns x 8 fp32
  EXPECT_EQ(cleared, 0.0);
  EXPECT_EQ(again, 100.0 * 32);
}

TEST(PartitionedMemory, ClearZeroesAndGeometryIsReported) {
  mem_harness h("h");
  h.fill_sbuf_f32(16);
  EXPECT_EQ(h.sbuf_mem.partitions(), 128u);
  EXPECT_EQ(h.sbuf_mem.partition_bytes(), 4096u);
  EXPECT_EQ(h.psum_mem.partition_bytes(), 16384u);
  EXPECT_EQ(h.psum_mem.params().bank_bytes, 2048u);
  EXPECT_EQ(sbuf_f32(h, 127, 60), 127015.0f);
  h.sbuf_mem.clear();
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t b = 0; b < 64; ++b) ASSERT_EQ(h.sbuf_mem.row(p)[b], 0);
}

}  // namespace
}  // namespace trnsim::models
