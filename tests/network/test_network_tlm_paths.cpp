// The network of TLM links (models/network/network_tlm.h), driven by the chips'
// collective engines (collective_engine_tlm.h, on SystemC threads, every rank's DMA
// its link of the network, as collbench --tlm runs them) on every path a
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
#include <memory>
#include <string>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/collective_engine.h"
#include "models/network/collective_engine_tlm.h"
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

// A topology's TLM network and its chips' collective engines, named under one
// module so that several of them live in one simulation.
struct rig : sc_core::sc_module {
  tlm_network net;
  chip_collectives engines;
  rig(const sc_core::sc_module_name& name, const topology_params& p)
      : sc_module(name), net("net", p), engines(net, nullptr) {}
};

// Starts `plan` (position q on network rank members[q]) at absolute time `at` (not
// before now) on the engines, `data` one buffer per position or empty; run() the
// simulation to see it complete.
std::shared_ptr<tlm_collective> start(rig& r, collective_plan plan,
                                      const std::vector<uint32_t>& members, sc_core::sc_time at,
                                      std::vector<std::vector<float>> data = {}) {
  if (at > sc_core::sc_time_stamp()) sc_core::sc_start(at - sc_core::sc_time_stamp());
  auto c = std::make_shared<tlm_collective>();
  c->plan = std::move(plan);
  c->members = members;
  c->dt = isa::DType::fp32;
  c->data = std::move(data);
  c->failed = [](const std::string& why) { ADD_FAILURE() << why; };
  r.engines.start(c);
  return c;
}

// Runs the simulation until every started transfer has arrived.
void run() {
  sc_core::sc_start();
}

collective_result finished(const tlm_collective& c) {
  EXPECT_EQ(c.done, c.plan.xfers.size()) << "the collective did not complete";
  return c.res;
}

struct both {
  double tlm = 0, analytic = 0;
  std::vector<std::vector<float>> tlm_data, analytic_data;
};

// Runs `c` with algorithm `a` on the engines of `r` from `at` and on the analytic
// engine.
both compare(rig& r, const topology_params& p, Collective c, Algorithm a, uint64_t count,
             sc_core::sc_time at) {
  both b;
  b.analytic_data = order_sensitive_inputs(p.ranks, count);
  Topology topo(p);
  auto t = start(r, plan_collective(topo, c, a, count, isa::DType::fp32), iota(p.ranks), at,
                 b.analytic_data);
  run();
  b.tlm = finished(*t).time_s;
  b.tlm_data = t->data;
  CollectiveEngine e(topo);
  b.analytic = e.run(c, a, count, isa::DType::fp32, &b.analytic_data).time_s;
  return b;
}

TEST(NetworkTlmPaths, ChipToChipRingAndOneChipAgreeWithAnalytic) {
  const topology_params ring_p = tiny_topology(4, 1), chip_p = tiny_topology(2, 2);
  rig ring_net("ring", ring_p), chip_net("chip", chip_p);
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
  rig net("rig", p);
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
  rig torus_net("torus", p), ring_net("ring", p);
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
    // meet likewise on each rank's DMA stage. So TLM is faster here (tlm 10662.4
    // against 11611.2 ns for the torus, 13611.2 against 17511.5 ns for the ring).
    std::cout << algorithm_name(a) << ": tlm " << b.tlm * 1e9 << " ns, analytic "
              << b.analytic * 1e9 << " ns\n";
    EXPECT_LT(b.tlm, b.analytic);
    EXPECT_GT(b.tlm, 0.7 * b.analytic);
  }
}

TEST(NetworkTlmPaths, TwoCollectivesOnSharedLinksQueue) {
  const topology_params p = tiny_topology(4, 1);
  rig net("rig", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  const collective_plan plan =
      plan_collective(topo, Collective::all_reduce, Algorithm::ring, 4096, isa::DType::fp32);
  // Alone: 3057.6 ns (the ring arithmetic above).
  auto a = start(net, plan, iota(4), sc_core::SC_ZERO_TIME);
  run();
  const double alone = finished(*a).time_s;
  EXPECT_NEAR(alone, 3057.6e-9, 1e-12);
  // Two all_reduces over the same 4 chips started together at 10 us cross the same
  // links. Each chip's engine starts the first one's transfer first: on every link
  // the first one's block takes [0, 409.6] ns, the second one's [409.6, 819.2],
  // arriving at 509.6 and 919.2. From then on each step finds the link holding the
  // other one's block (a link serves a transfer whole in its earliest idle
  // stretch): the first one's step 2, ready at 509.6, runs [819.2, 1228.8] and the
  // two alternate, each step 2 x 409.6 = 819.2 ns after the previous (the 100 ns
  // latency hidden behind the other's block). First: 509.6 + 5 x 819.2 = 4605.6 ns;
  // second, one block behind: 4605.6 + 409.6 = 5015.2 ns.
  const sc_core::sc_time at(10, sc_core::SC_US);
  auto first = start(net, plan, iota(4), at);
  auto second = start(net, plan, iota(4), at);
  run();
  EXPECT_NEAR(finished(*first).time_s, 4605.6e-9, 1e-12);
  EXPECT_NEAR(finished(*second).time_s, 5015.2e-9, 1e-12);
  uint64_t queued_links = 0;
  for (size_t k = 0; k < net.net.size(); ++k)
    queued_links += net.net.link(k).stats().queued > sc_core::SC_ZERO_TIME;
  EXPECT_GT(queued_links, 0u);
  // Started after both have finished, it takes the uncontended time again.
  auto later = start(net, plan, iota(4), sc_core::sc_time(20, sc_core::SC_US));
  run();
  EXPECT_NEAR(finished(*later).time_s, alone, 1e-12);
}

TEST(NetworkTlmPaths, AllToAllAndPermuteAgreeWithRunDirect) {
  const topology_params p = tiny_topology(4, 1);
  rig net("rig", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  // permute: rank i -> i + 1, 4096 B each, one link each: 4096 / 10 + 100 = 509.6 ns.
  std::vector<direct_send> perm, a2a;
  for (uint32_t r = 0; r < 4; ++r) perm.push_back({r, (r + 1) % 4, 4096});
  auto pp = start(net, plan_direct(topo, perm), iota(4), sc_core::SC_ZERO_TIME);
  run();
  const double tp = finished(*pp).time_s;
  EXPECT_NEAR(tp, 509.6e-9, 1e-12);
  Topology t2(p);
  CollectiveEngine e(t2);
  EXPECT_NEAR(tp, e.run_direct(perm).time_s, 1e-12);
  // all_to_all: every pair at once; TLM serves the transfers sharing a link in turn,
  // the analytic model side by side: the last arrival is the same when every
  // transfer on the busiest link has the same route length.
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t q = 0; q < 4; ++q) a2a.push_back({r, q, 1024});
  auto ap = start(net, plan_direct(topo, a2a), iota(4), sc_core::sc_time(10, sc_core::SC_US));
  run();
  const double ta = finished(*ap).time_s;
  Topology t3(p);
  CollectiveEngine e3(t3);
  const double want = e3.run_direct(a2a).time_s;
  EXPECT_GT(ta, 0);
  EXPECT_NEAR(ta, want, 0.25 * want);
}

TEST(NetworkTlmPaths, AllToAllPairwiseOrderAvoidsIncast) {
  // Every pair once; rank p's k-th send goes to p + k (mod n).
  const std::vector<direct_send> a2a = all_to_all_sends(3, 1024);
  ASSERT_EQ(a2a.size(), 9u);
  for (uint32_t p = 0; p < 3; ++p)
    for (uint32_t k = 0; k < 3; ++k) {
      EXPECT_EQ(a2a[p * 3 + k].src, p);
      EXPECT_EQ(a2a[p * 3 + k].dst, (p + k) % 3);
      EXPECT_EQ(a2a[p * 3 + k].bytes, 1024u);
    }
  // A ring of 3 chips, a DMA as slow as a link (10 B/ns): each rank's 2 sends of
  // 1024 B leave one after the other, 102.4 ns each, round 1 one hop forward, round 2
  // one hop back, every link used once. The last byte leaves the DMA at 2 x 102.4 =
  // 204.8 ns and arrives a link latency later: 304.8 ns, the sender's DMA bound.
  topology_params p = tiny_topology(3, 1, {"network.chips=3", "network.torus_x=3"});
  p.dma_bps = 10e9;
  // The 4-chip ring, same DMA: rounds 1 and 3 one hop (forward, back), round 2 two
  // hops forward. Round 2 leaves the DMA over [102.4, 204.8] ns onto its first link,
  // reaches the second at 102.4 + 100 = 202.4 ns, where the next rank's round 2 holds
  // [102.4, 204.8], and takes [204.8, 307.2]: it arrives at 407.2 ns with round 3, the
  // DMA bound again. Each link is booked when a transfer's head reaches it: booked
  // at its start, a round-2 transfer held its second link from 202.4 ns against the
  // next rank's round 2, which needs it from 102.4 ns, and the exchange took 607.2 ns.
  // trn2's 16 chips (4 x 4 torus), 64 KiB blocks: in destination order every rank
  // sends to rank 0 first, then rank 1, ...: the first sends of all ranks converge on
  // the links into one chip; pairwise they spread over the torus and finish sooner.
  const platform::platform_config trn2 = platform::load_config("trn2", {});
  topology_params q;
  q.net = trn2.network;
  q.cores_per_chip = trn2.cores;
  q.dma_bps = trn2.core.dma.engines * trn2.core.dma.bandwidth_bps;
  q.ranks = 16;
  q.per_chip = 1;
  topology_params p4 = tiny_topology(4, 1);
  p4.dma_bps = 10e9;
  rig ring("ring", p), ring4("ring4", p4), pair_net("pair", q), dest_net("dest", q);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  auto r3 = start(ring, plan_direct(Topology(p), a2a), iota(3), sc_core::SC_ZERO_TIME);
  auto r4 = start(ring4, plan_direct(Topology(p4), all_to_all_sends(4, 1024)), iota(4),
                  sc_core::SC_ZERO_TIME);
  std::vector<direct_send> by_dest;
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t d = 0; d < 16; ++d) by_dest.push_back({r, d, 64 << 10});
  Topology topo(q);
  auto pair = start(pair_net, plan_direct(topo, all_to_all_sends(16, 64 << 10)), iota(16),
                    sc_core::SC_ZERO_TIME);
  auto dest = start(dest_net, plan_direct(topo, by_dest), iota(16), sc_core::SC_ZERO_TIME);
  run();
  EXPECT_NEAR(finished(*r3).time_s, 304.8e-9, 1e-12);
  EXPECT_NEAR(finished(*r4).time_s, 407.2e-9, 1e-12);
  std::cout << "trn2 all_to_all 64 KiB blocks: pairwise " << finished(*pair).time_s * 1e6
            << " us, by destination " << finished(*dest).time_s * 1e6 << " us\n";
  EXPECT_LT(finished(*pair).time_s, finished(*dest).time_s);
}

TEST(NetworkTlmPaths, RejectsAMemberBeyondTheNetwork) {
  const topology_params p = tiny_topology(2, 1);
  rig net("rig", p);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Topology topo(p);
  collective_plan plan =
      plan_collective(topo, Collective::all_reduce, Algorithm::ring, 64, isa::DType::fp32);
  EXPECT_THROW(start(net, plan, {0, 5}, sc_core::SC_ZERO_TIME), std::invalid_argument);
}

}  // namespace
