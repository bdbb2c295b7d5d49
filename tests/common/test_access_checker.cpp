// The access checker's happens-before rules, driven directly (no simulation): which
// semaphore increments a wait joins, what done- and start-signals publish, and each
// kind of conflict; poisoned reads and the host's writes.
#include "models/common/access_checker.h"

#include <gtest/gtest.h>

#include <vector>

namespace trnsim::models {
namespace {

using isa::AccessPattern;
using isa::MemSpace;
using kind = access_checker::access_kind;

// Partitions [0, 4), 16 fp32 at byte `offset` of each.
AccessPattern sbuf(uint64_t offset) {
  return isa::ap_2d(MemSpace::sbuf, isa::DType::fp32, 0, 4, offset, 16);
}

struct AccessChecker : ::testing::Test {
  access_checker c{{true, true}};
  std::vector<isa::Instruction> prog = std::vector<isa::Instruction>(8);
  const int core = 0;  // any address identifies the core
  int a = 0, b = 0, d = 0;
  int sems = 0;
  void SetUp() override {
    c.begin_run();
    a = c.add_agent("core0.vector", &core, &prog, true);
    b = c.add_agent("core0.scalar", &core, &prog, true);
    d = c.add_agent("core0.dma0.q0", &core, &prog, false);
  }
  // Instruction `pc` of `agent`: waits, issue, one access, completion + done-signals.
  void step(int agent, uint32_t pc, kind k, uint64_t offset,
            std::vector<std::pair<uint16_t, uint32_t>> waits = {},
            std::vector<uint16_t> signals = {}) {
    for (auto [s, v] : waits) c.acquire(agent, &sems, s, v);
    c.issue(agent, pc);
    c.access(agent, sbuf(offset), 0, k);
    c.complete(agent);
    for (uint16_t s : signals) c.release(agent, &sems, s, 1, isa::SignalWhen::done);
  }
};

TEST_F(AccessChecker, WaitOrdersTheProducer) {
  step(d, 0, kind::write, 0, {}, {0});
  step(a, 0, kind::read, 0, {{0, 1}});
  EXPECT_EQ(c.race_count(), 0u) << c.report();
  EXPECT_EQ(c.poison_count(), 0u) << c.report();
}

TEST_F(AccessChecker, EveryConflictKindWithoutAWait) {
  step(d, 0, kind::write, 0);  // d writes X
  step(a, 0, kind::read, 0);   // a reads X: read after write
  step(b, 0, kind::write, 0);  // b overwrites X: after d's write and a's read
  // Pairs: (d0 W, a0 R), (d0 W, b0 W), (a0 R, b0 W).
  EXPECT_EQ(c.race_count(), 3u) << c.report();
  const std::string r = c.report();
  EXPECT_NE(r.find("race (read after write)"), std::string::npos) << r;
  EXPECT_NE(r.find("race (write after write)"), std::string::npos) << r;
  EXPECT_NE(r.find("race (write after read)"), std::string::npos) << r;
  EXPECT_NE(r.find("partitions 0..3 bytes 0..63"), std::string::npos) << r;
}

TEST_F(AccessChecker, DisjointBytesDoNotConflict) {
  step(d, 0, kind::write, 0);
  step(a, 0, kind::write, 64);  // the next 16 fp32: no overlap
  EXPECT_EQ(c.race_count(), 0u) << c.report();
}

TEST_F(AccessChecker, AWaitJoinsOnlyTheIncrementsThatReleasedIt) {
  // Two producers each signal s0 once; a waits for s0 >= 1, which the first
  // increment (d's) satisfies. Reading b's data is a race even though b's increment
  // happened before the wait in this timing.
  step(d, 0, kind::write, 0, {}, {0});
  step(b, 0, kind::write, 64, {}, {0});
  step(a, 0, kind::read, 0, {{0, 1}});
  EXPECT_EQ(c.race_count(), 0u) << c.report();
  step(a, 1, kind::read, 64);
  EXPECT_EQ(c.race_count(), 1u) << c.report();
  EXPECT_NE(c.report().find("first:  core0.scalar instruction 0"), std::string::npos) << c.report();
}

TEST_F(AccessChecker, DoneSignalPublishesTheClockItsInstructionIssuedWith) {
  // a (pipelined) issues instruction 0, then instruction 1 after waiting for d; when
  // instruction 0 completes, its done-signal must not carry d's clock.
  step(d, 0, kind::write, 128, {}, {1});
  c.issue(a, 0);
  c.access(a, sbuf(0), 0, kind::write);
  c.acquire(a, &sems, 1, 1);
  c.issue(a, 1);
  c.complete(a);
  c.release(a, &sems, 2, 1, isa::SignalWhen::done);  // instruction 0's signal
  step(b, 0, kind::read, 0, {{2, 1}});               // ordered after a's instruction 0
  EXPECT_EQ(c.race_count(), 0u) << c.report();
  step(b, 1, kind::read, 128);  // d's write: not ordered through a's instruction 0
  EXPECT_EQ(c.race_count(), 1u) << c.report();
}

TEST_F(AccessChecker, StartSignalOrdersOnlyCompletedInstructions) {
  c.issue(a, 0);
  c.access(a, sbuf(0), 0, kind::write);
  c.release(a, &sems, 3, 1, isa::SignalWhen::start);  // instruction 0 has not completed
  step(b, 0, kind::read, 0, {{3, 1}});
  EXPECT_EQ(c.race_count(), 1u) << c.report();
}

TEST_F(AccessChecker, PoisonedReadsAndHostWrites) {
  step(a, 0, kind::read, 256);  // nobody wrote SBUF there
  EXPECT_EQ(c.poison_count(), 1u);
  EXPECT_NE(c.report().find("poisoned read of never-written core0.sbuf partitions 0..3 bytes "
                            "256..319"),
            std::string::npos)
      << c.report();
  // HBM: the host's writes count as written and ordered before everything.
  c.host_written(1000, 1064);
  const AccessPattern h = isa::ap_2d(MemSpace::hbm, isa::DType::fp32, 0, 1, 1000, 16);
  c.issue(d, 1);
  c.access(d, h, 0, kind::read);
  EXPECT_EQ(c.poison_count(), 1u) << c.report();
  // One byte past the host's range is poison.
  const AccessPattern h2 = isa::ap_2d(MemSpace::hbm, isa::DType::fp32, 0, 1, 1004, 16);
  c.access(d, h2, 0, kind::read);
  EXPECT_EQ(c.poison_count(), 2u) << c.report();
  EXPECT_NE(c.report().find("hbm bytes 0x428..0x42b"), std::string::npos) << c.report();
}

TEST_F(AccessChecker, TransposedHbmReadCoversADenseBlock) {
  // An 8x8 fp32 block read column by column (rows 1 element apart, elements 8 apart)
  // covers bytes [0, 256) exactly: after the host wrote them, nothing is poisoned.
  c.host_written(0, 256);
  AccessPattern t = isa::ap_2d(MemSpace::hbm, isa::DType::fp32, 0, 8, 0, 8);
  t.partition_stride = 1;
  t.dims[0].stride = 8;
  c.issue(d, 0);
  c.access(d, t, 0, kind::read);
  EXPECT_EQ(c.poison_count(), 0u) << c.report();
}

}  // namespace
}  // namespace trnsim::models
