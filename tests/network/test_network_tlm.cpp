// The TLM link and the ring over TLM links (models/network/link_tlm.h,
// ring_tlm.h) against the analytic model and closed-form arithmetic. Config `tiny`:
// 4 chips in a ring, links of 10 B/ns and 100 ns, a core DMA of 16 engines x
// 10 B/ns = 160 B/ns. Each test elaborates its own SystemC model, so ctest runs
// each in its own process.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/collective_engine.h"
#include "models/network/link_tlm.h"
#include "models/network/ring_tlm.h"
#include "models/network/topology.h"
#include "platform/config.h"
#include "tests/network/topology_fixture.h"

namespace {

using namespace trnsim;
using namespace trnsim::models::network;
using trnsim::test::order_sensitive_inputs;
using trnsim::test::tiny_topology;

// The ring's sum of element i of block b, written from the algorithm's description:
// fp32 additions starting at the rank after the owner, in ring order, owner last.
float ring_sum(const std::vector<std::vector<float>>& x, uint32_t b, uint64_t i) {
  const auto n = static_cast<uint32_t>(x.size());
  float acc = x[(b + 1) % n][i];
  for (uint32_t k = 2; k <= n; ++k) acc = acc + x[(b + k) % n][i];
  return acc;
}

uint32_t owner_of(uint64_t i, uint64_t count, uint32_t n) {
  uint32_t b = 0;
  while (i >= (b + 1) * (count / n) + std::min<uint64_t>(b + 1, count % n)) ++b;
  return b;
}

// A sink at a link's far end: the transfer is done when its last byte arrives.
struct sink : sc_core::sc_module {
  tlm_utils::simple_target_socket<sink> in;
  explicit sink(const sc_core::sc_module_name& n) : sc_module(n), in("in") {
    in.register_b_transport(this, &sink::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    link_transfer_ext* ext = nullptr;
    t.get_extension(ext);
    if (ext && ext->tail > sc_core::sc_time_stamp() + delay)
      delay = ext->tail - sc_core::sc_time_stamp();
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

// Offers `count` transfers of `bytes` to its socket at time 0; keeps their ends.
struct offerer : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<offerer> out;
  uint64_t bytes;
  int count;
  std::vector<double> ends;
  offerer(const sc_core::sc_module_name& n, uint64_t b, int c)
      : sc_module(n), out("out"), bytes(b), count(c) {
    sc_core::sc_spawn([this] { run(); }, "run");
  }
  void run() {
    for (int k = 0; k < count; ++k) {
      tlm::tlm_generic_payload t;
      t.set_command(tlm::TLM_WRITE_COMMAND);
      t.set_data_length(bytes);
      t.set_streaming_width(bytes);
      t.set_data_ptr(nullptr);
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      out->b_transport(t, d);
      ends.push_back((sc_core::sc_time_stamp() + d).to_seconds());
    }
  }
};

TEST(NetworkTlm, TwoTransfersOnOneLinkDoubleTheDrainTime) {
  // 4000 B at 10 B/ns drain in 400 ns; two offered at once drain in 800 ns. Each
  // arrives 100 ns after its last byte left: 500 ns and 900 ns.
  EXPECT_THROW(link_tlm("bad", {0, 0}), std::invalid_argument);
  EXPECT_THROW(link_tlm("neg", {1e9, -1}), std::invalid_argument);
  const topology_params p = tiny_topology(2, 1);
  link_tlm l("l", {p.net.link_bandwidth_bps, p.net.link_latency_s});
  offerer o("o", 4000, 2);
  sink s("s");
  o.out.bind(l.in);
  l.out.bind(s.in);
  sc_core::sc_start();
  ASSERT_EQ(o.ends.size(), 2u);
  EXPECT_NEAR(o.ends[0], 500e-9, 1e-12);
  EXPECT_NEAR(o.ends[1], 900e-9, 1e-12);
  EXPECT_EQ(l.stats().bytes, 8000u);
  EXPECT_EQ(l.stats().transfers, 2u);
  EXPECT_EQ(l.stats().busy, sc_core::sc_time(800, sc_core::SC_NS));
  EXPECT_EQ(l.stats().queued, sc_core::sc_time(400, sc_core::SC_NS));
  // The analytic model shares the link fairly instead: both drain at 800 ns, so the
  // last arrival is the same.
  Topology t(p);
  CollectiveEngine e(t);
  EXPECT_NEAR(e.run_direct({{0, 1, 4000}, {0, 1, 4000}}).time_s, o.ends[1], 1e-12);
}

TEST(NetworkTlm, RingMatchesAnalyticTimesAndNumerics) {
  // 4 ranks, 4096 fp32 values: blocks of 1024 values = 4096 B. A step is 4096 B at
  // the link's 10 B/ns (the DMA's 160 B/ns is faster) = 409.6 ns, + 100 ns latency
  // = 509.6 ns. all_reduce is 2 x 3 steps = 3057.6 ns; the others 3 steps = 1528.8 ns.
  const topology_params p = tiny_topology(4, 1);
  tlm_ring ring("ring", tlm_ring_of(p));
  const uint64_t count = 4096;
  const double want[3] = {3057.6e-9, 1528.8e-9, 1528.8e-9};
  for (Collective c :
       {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
    SCOPED_TRACE(collective_name(c));
    const std::vector<std::vector<float>> x = order_sensitive_inputs(4, count);
    std::vector<std::vector<float>> tlm = x, analytic = x;
    const double t = ring.run({c, count, isa::DType::fp32, &tlm});
    Topology topo(p);
    CollectiveEngine e(topo);
    const double ta = e.run(c, Algorithm::ring, count, isa::DType::fp32, &analytic).time_s;
    EXPECT_NEAR(t, want[static_cast<int>(c)], 1e-12);
    EXPECT_NEAR(t, ta, 1e-12);
    EXPECT_EQ(tlm, analytic);
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t b = owner_of(i, count, 4);
      for (uint32_t r = 0; r < 4; ++r) {
        if (c == Collective::all_reduce || (c == Collective::reduce_scatter && r == b)) {
          ASSERT_EQ(tlm[r][i], ring_sum(x, b, i)) << "rank " << r << " element " << i;
        }
        if (c == Collective::all_gather) {
          ASSERT_EQ(tlm[r][i], x[b][i]) << "rank " << r;
        }
      }
    }
  }
  // Every hop carried 3 + 3 + 3 + 3 blocks of 4096 B: 12 transfers.
  for (uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(ring.link(k)->stats().transfers, 12u);
    EXPECT_EQ(ring.link(k)->stats().bytes, 12u * 4096);
    EXPECT_EQ(ring.link(k)->stats().queued, sc_core::SC_ZERO_TIME);  // uncontended
  }
  // Timing only, an uneven split (10 values over 4 ranks) as the analytic model has it.
  Topology topo(p);
  CollectiveEngine e(topo);
  EXPECT_NEAR(ring.run({Collective::all_reduce, 10, isa::DType::bf16, nullptr}),
              e.run(Collective::all_reduce, Algorithm::ring, 10, isa::DType::bf16, nullptr).time_s,
              1e-12);
}

// A block an RTL team binds in place of one link: it sees every transfer of the
// hop, here forwarding each unchanged after a fixed time of its own.
struct user_hop : sc_core::sc_module {
  tlm_utils::simple_target_socket<user_hop> in;
  tlm_utils::simple_initiator_socket<user_hop> out;
  sc_core::sc_time hold;
  std::vector<uint64_t> bytes;
  std::vector<bool> reduce;
  user_hop(const sc_core::sc_module_name& n, sc_core::sc_time h)
      : sc_module(n), in("in"), out("out"), hold(h) {
    in.register_b_transport(this, &user_hop::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    link_transfer_ext* ext = nullptr;
    t.get_extension(ext);
    bytes.push_back(t.get_data_length());
    reduce.push_back(ext && ext->reduce);
    if (ext) ext->tail += hold;
    delay += hold;
    out->b_transport(t, delay);
  }
};

TEST(NetworkTlm, UserTargetInPlaceOfALinkSeesTheTransfers) {
  const topology_params p = tiny_topology(4, 1);
  tlm_ring ring("ring", tlm_ring_of(p), {2});
  // Hop 2 delivers 1 us after the DMA stage has moved the block (4096 B at 160 B/ns
  // = 25.6 ns): 1025.6 ns, the other hops 509.6 ns. A step waits for the previous
  // step's data, so each phase lasts its longest chain of 3 consecutive hops, which
  // crosses hop 2 once: 2 x (2 x 509.6 + 1025.6) = 4089.6 ns.
  user_hop hop("hop", sc_core::sc_time(1, sc_core::SC_US));
  ring.hop_source(2).bind(hop.in);
  hop.out.bind(ring.hop_sink(2));
  EXPECT_EQ(ring.link(2), nullptr);
  const uint64_t count = 4096;
  const std::vector<std::vector<float>> x = order_sensitive_inputs(4, count);
  std::vector<std::vector<float>> d = x;
  EXPECT_NEAR(ring.run({Collective::all_reduce, count, isa::DType::fp32, &d}), 4089.6e-9, 1e-12);
  ASSERT_EQ(hop.bytes.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(hop.bytes[k], 4096u);
    EXPECT_EQ(hop.reduce[k], k < 3);  // reduce_scatter, then all_gather
  }
  for (uint64_t i = 0; i < count; ++i)
    for (uint32_t r = 0; r < 4; ++r) ASSERT_EQ(d[r][i], ring_sum(x, owner_of(i, count, 4), i));
}

// A hop that refuses every transfer (its `out` goes unused).
struct failing_hop : sc_core::sc_module {
  tlm_utils::simple_target_socket<failing_hop> in;
  tlm_utils::simple_initiator_socket<failing_hop> out;
  explicit failing_hop(const sc_core::sc_module_name& n) : sc_module(n), in("in"), out("out") {
    in.register_b_transport(this, &failing_hop::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
    t.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
  }
};

TEST(NetworkTlm, AHopAnsweringAnErrorIsReportedNotAHang) {
  tlm_ring ring("ring", tlm_ring_of(tiny_topology(4, 1)), {1});
  failing_hop hop("hop");
  ring.hop_source(1).bind(hop.in);
  hop.out.bind(ring.hop_sink(1));
  try {
    ring.run({Collective::all_reduce, 16, isa::DType::fp32, nullptr});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: hop 1 answered a transfer with "
                                         "TLM_GENERIC_ERROR_RESPONSE"),
              std::string::npos)
        << e.what();
  }
}

TEST(NetworkTlm, RingRejectsWhatItDoesNotModel) {
  topology_params p = tiny_topology(4, 1);
  p.per_chip = 2;
  p.cores_per_chip = 2;
  EXPECT_THROW(tlm_ring_of(p), std::invalid_argument);
  EXPECT_THROW(tlm_ring_of(tiny_topology(8, 1)), std::invalid_argument);  // more ranks than chips
  tlm_ring ring("ring", tlm_ring_of(tiny_topology(2, 1)));
  std::vector<std::vector<float>> wrong(2, std::vector<float>(3));
  EXPECT_THROW(ring.run({Collective::all_reduce, 4, isa::DType::fp32, &wrong}),
               std::invalid_argument);
  EXPECT_THROW(ring.run({Collective::all_reduce, 4, isa::DType::int32, nullptr}),
               std::invalid_argument);
}

}  // namespace
