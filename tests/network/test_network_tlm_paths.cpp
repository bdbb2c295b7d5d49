// The network of TLM links (models/network/network_tlm.h) on every path a
// collective takes (chip-to-chip ring and torus, the cores of one chip, nodes
// joined by their network ports) against the analytic model and closed-form
// arithmetic, contention between two collectives, and all_to_all/permute. Config
// `tiny`: 4 chips in a ring, 2 cores a chip; links 10 B/ns and 100 ns, the
// intra-chip path 20 B/ns and 50 ns, node ports 5 B/ns and 1 us, a core's DMA
// 16 engines x 10 B/ns = 160 B/ns. One SystemC elaboration per process: ctest runs
// each test in its own.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/collective_engine.h"
#include "models/network/network_tlm.h"
#include "models/network/topology.h"
#include "platform/config.h"
#include "tests/network/topology_fixture.h"

namespace {

using namespace trnsim;
using namespace trnsim::models::network;
using trnsim::test::order_sensitive_inputs;
using trnsim::test::tiny_topology;

std::vector<uint32_t> iota(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

struct both {
  double tlm = 0, analytic = 0;
  std::vector<std::vector<float>> tlm_data, analytic_data;
};

// Runs `c` with algorithm `a` on its own network and on the analytic engine.
both compare(tlm_network& net, const topology_params& p, Collective c, Algorithm a, uint64_t count,
             sc_core::sc_time at) {
  both b;
  b.tlm_data = b.analytic_data = order_sensitive_inputs(p.ranks, count);
  Topology topo(p);
  collective_plan plan = plan_collective(topo, c, a, count, isa::DType::fp32);
  b.tlm = net.run(plan, iota(p.ranks), at, isa::DType::fp32, &b.tlm_data).time_s;
  CollectiveEngine e(topo);
  b.analytic = e.run(c, a, count, isa::DType::fp32, &b.analytic_data).time_s;
  return b;
}

TEST(NetworkTlmPaths, ChipToChipRingAndOneChipAgreeWithAnalytic) {
  const topology_params ring_p = tiny_topology(4, 1), chip_p = tiny_topology(2, 2);
  tlm_network ring_net("ring_net", ring_p), chip_net("chip_net", chip_p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  // Ring, one rank a chip, 4096 fp32: blocks of 4096 B, one link a hop. A step is
  // 4096 B / 10 B/ns = 409.6 ns + 100 ns latency; all_reduce is 2 x 3 steps:
  // 6 x 509.6 = 3057.6 ns.
  both r = compare(ring_net, ring_p, Collective::all_reduce, Algorithm::ring, 4096,
                   sc_core::SC_ZERO_TIME);
  EXPECT_NEAR(r.tlm, 3057.6e-9, 1e-12);
  EXPECT_NEAR(r.tlm, r.analytic, 1e-12);
  EXPECT_EQ(r.tlm_data, r.analytic_data);
  // One chip, 2 ranks: the torus over the cores (choose_algorithm's pick), both
  // ways at once, each on half of a block: 4 transfers of 2048 fp32 / 2 = 4096 B a
  // phase on the one intra-chip path. The analytic model shares it four ways, the
  // TLM path serves them in turn; both drain 4 x 4096 B / 20 B/ns = 819.2 ns, + 50
  // ns latency, twice (reduce_scatter, all_gather): 1738.4 ns.
  Topology chip_topo(chip_p);
  ASSERT_EQ(choose_algorithm(chip_topo), Algorithm::torus);
  both c = compare(chip_net, chip_p, Collective::all_reduce, Algorithm::torus, 4096,
                   sc_core::SC_ZERO_TIME);
  EXPECT_NEAR(c.tlm, 1738.4e-9, 1e-12);
  EXPECT_NEAR(c.tlm, c.analytic, 1e-12);
  EXPECT_EQ(c.tlm_data, c.analytic_data);
}

TEST(NetworkTlmPaths, InterNodeAgreesWithAnalytic) {
  // 2 nodes of one chip each, one rank a chip: the torus algorithm's one dimension
  // is the nodes, both ways, each rank's two halves through its node's out port.
  // all_reduce of 4096 fp32: blocks of 8192 B, halves of 4096 B; a phase sends both
  // halves, 8192 B, through the port at 5 B/ns, in turn (TLM) or side by side
  // (analytic), + 1 us latency; 2 phases: 2 x (8192 / 5 + 1000) = 5276.8 ns.
  const topology_params p =
      tiny_topology(2, 1,
                    {"network.nodes=2", "network.chips=1", "network.torus_x=1", "network.torus_y=1",
                     "network.links_per_chip=0"});
  tlm_network net("net", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  ASSERT_EQ(choose_algorithm(topo), Algorithm::torus);
  both b = compare(net, p, Collective::all_reduce, Algorithm::torus, 4096, sc_core::SC_ZERO_TIME);
  EXPECT_NEAR(b.tlm, 5276.8e-9, 1e-12);
  EXPECT_NEAR(b.tlm, b.analytic, 1e-12);
  EXPECT_EQ(b.tlm_data, b.analytic_data);
}

TEST(NetworkTlmPaths, TorusAndRingOverNodesRunWithTheAnalyticNumerics) {
  // 2 nodes of 4 chips, one rank a chip: the torus goes along x (4 chips, both
  // ways), then across the nodes (their network ports); the ring crosses the node
  // ports twice a step.
  const topology_params p = tiny_topology(8, 1, {"network.nodes=2"});
  tlm_network torus_net("torus_net", p), ring_net("ring_net", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  ASSERT_EQ(choose_algorithm(topo), Algorithm::torus);
  for (auto [net, a] : {std::pair{&torus_net, Algorithm::torus}, {&ring_net, Algorithm::ring}}) {
    SCOPED_TRACE(algorithm_name(a));
    both b = compare(*net, p, Collective::all_reduce, a, 8192, sc_core::SC_ZERO_TIME);
    EXPECT_EQ(b.tlm_data, b.analytic_data);
    // The same schedule and routes; what differs is how a resource serves transfers
    // that overlap on it. A rank's next ring step may leave while its previous one
    // still drains through the slow node port (5 B/ns against 10 B/ns links): the
    // analytic model shares the port between them, so the older one, which the
    // next rank waits for, arrives later; TLM finishes it first. The torus's halves
    // meet likewise on each rank's DMA stage. So TLM is faster here (tlm 10946.4
    // against 11611.2 ns for the torus, 13611.2 against 17511.5 ns for the ring).
    std::cout << algorithm_name(a) << ": tlm " << b.tlm * 1e9 << " ns, analytic "
              << b.analytic * 1e9 << " ns\n";
    EXPECT_LT(b.tlm, b.analytic);
    EXPECT_GT(b.tlm, 0.7 * b.analytic);
  }
}

TEST(NetworkTlmPaths, TwoCollectivesOnSharedLinksQueue) {
  const topology_params p = tiny_topology(4, 1);
  tlm_network net("net", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  // Alone: 3057.6 ns (the ring arithmetic above).
  collective_plan a =
      plan_collective(topo, Collective::all_reduce, Algorithm::ring, 4096, isa::DType::fp32);
  collective_plan b = a;
  const double alone = net.run(a, iota(4), sc_core::SC_ZERO_TIME, isa::DType::fp32, nullptr).time_s;
  EXPECT_NEAR(alone, 3057.6e-9, 1e-12);
  // A second all_reduce over the same 4 chips starting at the same time crosses
  // the same links: each link serves the first one's reservations first (first come
  // first served), so the second waits behind it, here for the whole of it: its
  // first transfer on link k starts when the first collective's last transfer on
  // link k ends.
  const double second =
      net.run(b, iota(4), sc_core::SC_ZERO_TIME, isa::DType::fp32, nullptr).time_s;
  EXPECT_GT(second, 1.8 * alone);
  uint64_t queued_links = 0;
  for (size_t k = 0; k < net.size(); ++k)
    queued_links += net.link(k).stats().queued > sc_core::SC_ZERO_TIME;
  EXPECT_GT(queued_links, 0u);
  // Started after the first has finished, it takes the uncontended time again.
  collective_plan c =
      plan_collective(topo, Collective::all_reduce, Algorithm::ring, 4096, isa::DType::fp32);
  const sc_core::sc_time later(10, sc_core::SC_US);
  EXPECT_NEAR(net.run(c, iota(4), later, isa::DType::fp32, nullptr).time_s, alone, 1e-12);
}

TEST(NetworkTlmPaths, AllToAllAndPermuteAgreeWithRunDirect) {
  const topology_params p = tiny_topology(4, 1);
  tlm_network net("net", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  // permute: rank i -> i + 1, 4096 B each, one link each: 4096 / 10 + 100 = 509.6 ns.
  std::vector<direct_send> perm, a2a;
  for (uint32_t r = 0; r < 4; ++r) perm.push_back({r, (r + 1) % 4, 4096});
  collective_plan pp = plan_direct(topo, perm);
  const double tp = net.run(pp, iota(4), sc_core::SC_ZERO_TIME, isa::DType::fp32, nullptr).time_s;
  EXPECT_NEAR(tp, 509.6e-9, 1e-12);
  Topology t2(p);
  CollectiveEngine e(t2);
  EXPECT_NEAR(tp, e.run_direct(perm).time_s, 1e-12);
  // all_to_all: every pair at once; TLM serves the transfers sharing a link in turn,
  // the analytic model side by side: the last arrival is the same when every
  // transfer on the busiest link has the same route length.
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t q = 0; q < 4; ++q) a2a.push_back({r, q, 1024});
  collective_plan ap = plan_direct(topo, a2a);
  const double ta =
      net.run(ap, iota(4), sc_core::sc_time(10, sc_core::SC_US), isa::DType::fp32, nullptr).time_s;
  Topology t3(p);
  CollectiveEngine e3(t3);
  const double want = e3.run_direct(a2a).time_s;
  EXPECT_GT(ta, 0);
  EXPECT_NEAR(ta, want, 0.25 * want);
}

TEST(NetworkTlmPaths, RejectsAMemberBeyondTheNetwork) {
  const topology_params p = tiny_topology(2, 1);
  tlm_network net("net", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  collective_plan plan =
      plan_collective(topo, Collective::all_reduce, Algorithm::ring, 64, isa::DType::fp32);
  EXPECT_THROW(net.run(plan, {0, 5}, sc_core::SC_ZERO_TIME, isa::DType::fp32, nullptr),
               std::invalid_argument);
}

}  // namespace
