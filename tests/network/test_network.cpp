// The scale-out models: links, the topology's routes, and collectives' times
// against closed-form ring arithmetic and their numerics against a reduction
// written from the algorithm's description. Config `tiny`: 4 chips in a ring, links
// of 10 B/ns and 100 ns, an intra-chip path of 20 B/ns and 50 ns, node ports of
// 5 B/ns and 1 us, and a core DMA of 16 engines x 10 B/ns = 160 B/ns.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/collective_engine.h"
#include "models/network/collective_unit.h"
#include "models/network/link.h"
#include "models/network/topology.h"
#include "platform/config.h"
#include "tests/network/topology_fixture.h"

namespace {

using namespace trnsim;
using namespace trnsim::models::network;
using trnsim::test::tiny_topology;

double run_time(Collective c, Algorithm a, uint64_t count, const topology_params& p) {
  Topology t(p);
  CollectiveEngine e(t);
  return e.run(c, a, count, isa::DType::fp32, nullptr).time_s;
}

TEST(NetworkLink, CountsAndRejectsImpossibleParams) {
  Link l("l", {10e9, 100e-9});
  l.count_transfer(10000);
  l.count_transfer(5000);
  l.add_busy(1e-6);
  EXPECT_EQ(l.stats().transfers, 2u);
  EXPECT_EQ(l.stats().bytes, 15000u);
  EXPECT_DOUBLE_EQ(l.stats().busy_s, 1e-6);
  EXPECT_THROW(Link("z", {0, 0}), std::invalid_argument);
  EXPECT_THROW(Link("n", {1e9, -1}), std::invalid_argument);
}

TEST(NetworkTopology, PlacesRanksAndRoutesDimensionOrder) {
  // trn2's 4 x 4 torus, one rank per chip: chip 5 is (1, 1), chip 15 is (3, 3).
  const platform::platform_config cfg = platform::load_config("trn2");
  topology_params p;
  p.net = cfg.network;
  p.cores_per_chip = cfg.cores;
  p.ranks = 16;
  p.per_chip = 1;
  Topology t(p);
  EXPECT_EQ(t.place(5).x, 1u);
  EXPECT_EQ(t.place(5).y, 1u);
  // 0 -> 15: x 0 -> 3 is one hop going - (wrap), y 0 -> 3 one hop going -.
  const auto path = t.route(0, 15, 1);
  ASSERT_EQ(path.size(), 3u);  // DMA, x link, y link
  EXPECT_EQ(path[0]->name(), "rank0.dma");
  EXPECT_EQ(path[1]->name(), "node0.chip0.linkx-");
  EXPECT_EQ(path[2]->name(), "node0.chip3.linky-");
  // 0 -> 2 on a ring of 4: two hops either way; the direction hint picks.
  EXPECT_EQ(t.route(0, 2, 1)[1]->name(), "node0.chip0.linkx+");
  EXPECT_EQ(t.route(0, 2, -1)[1]->name(), "node0.chip0.linkx-");
}

TEST(NetworkTopology, RanksThatDoNotFitAreErrors) {
  EXPECT_THROW(Topology(tiny_topology(6, 3)), std::invalid_argument);   // tiny has 2 cores
  EXPECT_THROW(Topology(tiny_topology(3, 2)), std::invalid_argument);   // not a multiple
  EXPECT_THROW(Topology(tiny_topology(5, 1)), std::invalid_argument);   // 4 chips, 1 node
  EXPECT_NO_THROW(Topology(tiny_topology(8, 1, {"network.nodes=2"})));  // 2 nodes of 4 chips
  // The torus algorithm needs whole nodes: 3 chips of a 4-chip node.
  Topology t(tiny_topology(3, 1));
  CollectiveEngine e(t);
  EXPECT_THROW(e.run(Collective::all_reduce, Algorithm::torus, 64, isa::DType::fp32, nullptr),
               std::invalid_argument);
}

TEST(NetworkCollective, RingAllReduceIsClosedForm) {
  // 4 ranks, one per chip, 4096 fp32 = 16384 B: chunks of 16384 / 4 = 4096 B.
  // Ring all-reduce = 2(n-1) = 6 steps x (latency + chunk / bw)
  //                 = 6 x (100 ns + 4096 B / 10 B/ns) = 6 x 509.6 ns = 3057.6 ns.
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::ring, 4096, tiny_topology(4, 1)),
              3057.6e-9, 1e-12);
  // reduce_scatter and all_gather: n-1 = 3 steps each, 1528.8 ns.
  EXPECT_NEAR(run_time(Collective::reduce_scatter, Algorithm::ring, 4096, tiny_topology(4, 1)),
              1528.8e-9, 1e-12);
  EXPECT_NEAR(run_time(Collective::all_gather, Algorithm::ring, 4096, tiny_topology(4, 1)),
              1528.8e-9, 1e-12);
}

TEST(NetworkCollective, TorusRunsBothWaysOnHalfChunks) {
  // Same 16384 B on the 4-chip ring, both directions each carrying half a chunk,
  // 2048 B, on their own links; the two share the sending core's DMA (160 B/ns, 80
  // each), which the 10 B/ns links keep below: 6 steps x (100 ns + 2048 B / 10 B/ns)
  // = 6 x 304.8 ns = 1828.8 ns.
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::torus, 4096, tiny_topology(4, 1)),
              1828.8e-9, 1e-12);
}

TEST(NetworkCollective, UsesTheCoreDmaRate) {
  // One DMA engine at 5 B/ns is slower than the link (10 B/ns): each step is
  // 100 ns + 4096 B / 5 B/ns = 919.2 ns; 6 steps = 5515.2 ns.
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::ring, 4096,
                       tiny_topology(4, 1, {"core.dma.engines=1", "core.dma.bandwidth=5GB/s"})),
              5515.2e-9, 1e-12);
}

TEST(NetworkCollective, IntraChipTransfersShareTheChipPath) {
  // 2 ranks on one chip, 16384 B: chunks of 8192 B, both ranks' sends of a step at
  // once over the chip's one path (20 B/ns, 50 ns), 10 B/ns each: a step is
  // 50 ns + 8192 B / 10 B/ns = 869.2 ns; reduce_scatter + all_gather = 2 steps =
  // 1738.4 ns. Alone on the path a chunk would take 50 + 8192 / 20 = 459.6 ns.
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::ring, 4096, tiny_topology(2, 2)),
              1738.4e-9, 1e-12);
  // One rank's DMA sends both directions of the torus algorithm: with 1 engine of
  // 5 B/ns they share it (2.5 B/ns each, below the path's 10): 2 ranks, halves of
  // 4096 B: 2 steps x (50 ns + 4096 B / 2.5 B/ns) = 2 x 1688.4 = 3376.8 ns.
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::torus, 4096,
                       tiny_topology(2, 2, {"core.dma.engines=1", "core.dma.bandwidth=5GB/s"})),
              3376.8e-9, 1e-12);
}

TEST(NetworkCollective, NodesTalkOverTheirPorts) {
  // 2 nodes of 1 chip each, 1 rank per node, 16384 B: chunks of 8192 B over the
  // node ports (5 B/ns, 1 us), each direction its own port: 2 steps x
  // (1000 ns + 8192 / 5 ns) = 2 x 2638.4 = 5276.8 ns.
  const auto p = tiny_topology(
      2, 1,
      {"network.nodes=2", "network.chips=1", "network.torus_x=1", "network.links_per_chip=0"});
  EXPECT_NEAR(run_time(Collective::all_reduce, Algorithm::ring, 4096, p), 5276.8e-9, 1e-12);
}

// The ring's reduction written from its description: block c's sum starts at the
// rank after c and adds each rank in ring order, c last, rounding each sum to the dtype.
std::vector<float> ring_reference(const std::vector<std::vector<float>>& in, isa::DType dt) {
  const size_t n = in.size(), count = in[0].size();
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t c = [&] {  // the block of element i
      size_t b = 0;
      while ((b + 1) * (count / n) + std::min(b + 1, count % n) <= i) ++b;
      return b;
    }();
    float acc = in[(c + 1) % n][i];
    for (size_t k = 2; k <= n; ++k) acc = isa::round_to(dt, acc + in[(c + k) % n][i]);
    out[i] = acc;
  }
  return out;
}

TEST(NetworkCollective, RingAllReduceNumericsFollowTheRingOrder) {
  for (isa::DType dt : {isa::DType::fp32, isa::DType::bf16}) {
    SCOPED_TRACE(isa::dtype_size(dt));
    const uint32_t n = 4;
    const uint64_t count = 103;  // uneven blocks: 26, 26, 26, 25
    std::vector<std::vector<float>> data(n, std::vector<float>(count));
    for (uint32_t r = 0; r < n; ++r)
      for (uint64_t i = 0; i < count; ++i)
        data[r][i] = isa::round_to(dt, 1.0f / float(3 + r + 7 * i) + float(r) * 1.7f);
    const auto want = ring_reference(data, dt);
    Topology t(tiny_topology(n, 1));
    CollectiveEngine e(t);
    e.run(Collective::all_reduce, Algorithm::ring, count, dt, &data);
    for (uint32_t r = 0; r < n; ++r)
      for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(data[r][i], want[i]) << r << " " << i;
  }
}

TEST(NetworkCollective, ReduceScatterAndAllGatherOwnTheirBlocks) {
  const uint32_t n = 8;  // 2 per chip on 4 chips: torus over cores then chips
  const uint64_t count = 64;
  std::vector<std::vector<float>> rs(n, std::vector<float>(count)), ag = rs;
  for (uint32_t r = 0; r < n; ++r)
    for (uint64_t i = 0; i < count; ++i) {
      rs[r][i] = float(r + 1);        // sums are exact: 1 + ... + 8 = 36
      ag[r][i] = float(r * 100 + i);  // block r of rank r is its own
    }
  Topology t1(tiny_topology(n, 2));
  CollectiveEngine(t1).run(Collective::reduce_scatter, Algorithm::torus, count, isa::DType::fp32,
                           &rs);
  Topology t2(tiny_topology(n, 2));
  CollectiveEngine(t2).run(Collective::all_gather, Algorithm::torus, count, isa::DType::fp32, &ag);
  for (uint32_t r = 0; r < n; ++r)
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t owner = uint32_t(i / (count / n));
      if (owner == r) {
        EXPECT_EQ(rs[r][i], 36.0f) << r << " " << i;
      }
      EXPECT_EQ(ag[r][i], float(owner * 100 + i)) << r << " " << i;
    }
}

}  // namespace

namespace {

// run_group: the API for callers holding buffers (data parallel training). Ranks
// {2, 3} of a launch on tiny (2 cores a chip) sit on one chip: 2 ring steps of
// 1024 x 4 B = 4096 B each way over the 20 B/ns chip path (10 B/ns each) + 50 ns:
// 2 x (409.6 + 50) = 919.2 ns, the same as ranks {0, 1}.
TEST(NetworkCollectiveGroup, AllReducesBuffersOfTheGivenRanks) {
  topology_params base = tiny_topology(1, 1);
  std::vector<std::vector<float>> data{std::vector<float>(2048, 1.5f),
                                       std::vector<float>(2048, -0.25f)};
  const collective_result r =
      run_group(Collective::all_reduce, base, {2, 3}, 2048, isa::DType::fp32, &data);
  EXPECT_NEAR(r.time_s * 1e9, 919.2, 1e-6);
  for (const auto& b : data)
    for (float v : b) ASSERT_EQ(v, 1.25f);
  // Ranks 1 and 2 straddle chips 0 and 1: each way on its own link, 10 B/ns + 100 ns:
  // 2 x (409.6 + 100) = 1019.2 ns.
  EXPECT_NEAR(
      run_group(Collective::all_reduce, base, {1, 2}, 2048, isa::DType::fp32, nullptr).time_s * 1e9,
      1019.2, 1e-6);
  // Uneven placement (2 ranks on chip 0, 1 on chip 1) is an error naming the group.
  try {
    run_group(Collective::all_reduce, base, {0, 1, 2}, 2048, isa::DType::fp32, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("group [0,1,2]"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// The algorithm a placement takes (collbench and the collective instructions):
// torus on one chip or on whole nodes (tiny: 4 chips a node), else ring.
TEST(NetworkCollective, ChoosesTorusWhereItFits) {
  EXPECT_EQ(choose_algorithm(Topology(tiny_topology(2, 2))), Algorithm::torus);  // one chip
  EXPECT_EQ(choose_algorithm(Topology(tiny_topology(4, 1))), Algorithm::torus);  // the node
  EXPECT_EQ(choose_algorithm(Topology(tiny_topology(2, 1))), Algorithm::ring);   // half of it
  EXPECT_EQ(choose_algorithm(Topology(tiny_topology(6, 1, {"network.nodes=2"}))), Algorithm::ring);
  EXPECT_EQ(group_algorithm(tiny_topology(1, 1), {0, 1, 2, 3, 4, 5, 6, 7}), Algorithm::torus);
  EXPECT_EQ(group_algorithm(tiny_topology(1, 1), {2, 3, 4, 5}), Algorithm::ring);  // 2 chips
  // The instruction path's time for 8 ranks (2 a chip, the whole node) is the torus
  // algorithm's, faster than the ring's there.
  const topology_params base = tiny_topology(1, 1);
  const std::vector<uint32_t> all{0, 1, 2, 3, 4, 5, 6, 7};
  const double torus = run_group(Collective::all_reduce, Algorithm::torus, base, all, 8192,
                                 isa::DType::fp32, nullptr)
                           .time_s;
  const double ring =
      run_group(Collective::all_reduce, base, all, 8192, isa::DType::fp32, nullptr).time_s;
  EXPECT_LT(torus, ring);
}

// Point-to-point sends all at once (all_to_all, permute). 4 ranks one per chip of
// tiny's ring: 1024 B from each rank to each other. Each + link carries three sends
// (c -> c+1, c -> c+2 first hop, c-1 -> c+1 second hop), 10/3 B/ns each: 307.2 ns,
// then two hops of latency for the longest: 507.2 ns. Each rank sent 3 x 1024 B.
TEST(NetworkCollective, DirectSendsShareTheirLinks) {
  Topology t(tiny_topology(4, 1));
  CollectiveEngine e(t);
  std::vector<direct_send> sends;
  for (uint32_t p = 0; p < 4; ++p)
    for (uint32_t q = 0; q < 4; ++q) sends.push_back({p, q, 1024});
  const collective_result r = e.run_direct(sends);
  EXPECT_NEAR(r.time_s * 1e9, 507.2, 1e-6);
  EXPECT_EQ(r.transfers, 12u);
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(r.sent[p], 3072u);
    EXPECT_EQ(r.received[p], 3072u);
  }
  // The + link of chip 0 was shared for all of its busy time: 307.2 ns.
  for (const Link& l : t.links())
    if (l.name() == "node0.chip0.linkx+") {
      EXPECT_NEAR(l.stats().busy_s * 1e9, 307.2, 1e-6);
      EXPECT_NEAR(l.stats().contended_s * 1e9, 307.2, 1e-6);
    }
  EXPECT_THROW(e.run_direct({{0, 9, 8}}), std::invalid_argument);
}

}  // namespace
