// Equivalence of the PE array RTL (models/rtl/pe_array.sv) with the C++ systolic
// numerics and the fold formula, through the decoupled tile adapter in lockstep; the
// mutant (fp32 adder without its sticky bit) must be caught.
#include <gtest/gtest.h>

#include <random>

#include "cosim_test_util.h"
#include "models/cosim/lockstep.h"
#include "models/cosim/systolic_reference.h"
#include "models/cosim/tile_adapter.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

using test::random_bf16;

struct Case {
  uint32_t size;  // R = C
  double stall;   // result back-pressure
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.size << "x" << c.size << " stall " << c.stall;
}

std::unique_ptr<rtl_block> make(uint32_t size) {
  return size == 8 ? make_rtl_pe_array_8x8() : make_rtl_pe_array_16x16();
}

class Equivalence : public ::testing::TestWithParam<Case> {};

TEST_P(Equivalence, RandomTilesBitExactAndFoldFormula) {
  const auto [n, stall] = GetParam();
  tile_adapter::options o;
  o.rows = o.cols = n;
  o.stall_rate = stall;
  o.seed = 1000 + n;
  tile_adapter rtl(make(n), o);
  lockstep ls(rtl);
  std::mt19937_64 rng(n * 31 + uint64_t(stall * 100));
  // Back-to-back transactions on one adapter: the block goes LOAD -> STREAM -> DRAIN
  // and back every time.
  for (uint32_t S : {1u, 2u, 3u, 7u, 64u, 200u}) {
    const auto w = random_bf16(rng, n * n);
    const auto x = random_bf16(rng, size_t{S} * n);
    ASSERT_TRUE(ls.step(w, x, S)) << *ls.first_mismatch();
    const tile_run& t = ls.last_run();
    const uint64_t fold = 2ull * n + n + S - 2;  // 2R + C + S - 2
    if (stall == 0) {
      EXPECT_EQ(t.cycles, fold) << "S=" << S;
      EXPECT_EQ(t.stall_cycles, 0u);
      // Result j leaves R + C - 2 cycles after moving beat j entered at cycle R + j.
      for (uint32_t j = 0; j < S; ++j)
        ASSERT_EQ(t.res_cycle[j] - t.start_cycle, n + j + (2ull * n - 2)) << "vector " << j;
    } else {
      // Every refused valid result holds the whole array one cycle, nothing else.
      EXPECT_EQ(t.cycles, fold + t.stall_cycles) << "S=" << S;
      EXPECT_GE(t.cycles, fold);
      // Refusals can only happen while results are valid: at most once per cycle
      // of the S-beat result frame stretched by stalls, p/(1-p) per beat on average;
      // 8x that is a generous bound that still catches a runaway.
      EXPECT_LE(t.stall_cycles, 8 * (S + 4) * stall / (1 - stall) + 16) << "S=" << S;
      if (S >= 64) {
        EXPECT_GT(t.stall_cycles, 0u);
      }
    }
  }
  EXPECT_TRUE(rtl.checker().ok()) << rtl.checker().violations().front();
  EXPECT_EQ(ls.transactions(), 6u);
}

INSTANTIATE_TEST_SUITE_P(Tiles, Equivalence,
                         ::testing::Values(Case{8, 0.0}, Case{8, 0.3}, Case{8, 0.5}, Case{16, 0.0},
                                           Case{16, 0.3}, Case{16, 0.5}),
                         [](const auto& i) {
                           return std::to_string(i.param.size) + "x" +
                                  std::to_string(i.param.size) + "_stall" +
                                  std::to_string(int(i.param.stall * 100));
                         });

TEST(EquivalenceSpecials, ZerosDenormalsInfNan) {
  // Special values scattered through random data: flushes, signed zeros, inf - inf
  // and NaN propagation match the documented numerics bit for bit.
  tile_adapter::options o;
  tile_adapter rtl(make_rtl_pe_array_8x8(), o);
  lockstep ls(rtl);
  std::mt19937_64 rng(5);
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80,
                               0x7FC0, 0xFFC1, 0x0080, 0x7F7F, 0x0100, 0x8080};
  for (int t = 0; t < 20; ++t) {
    auto w = random_bf16(rng, 64, 60);
    auto x = random_bf16(rng, 32 * 8, 60);
    for (auto* v : {&w, &x})
      for (auto& h : *v)
        if (rng() % 6 == 0) h = specials[rng() % std::size(specials)];
    ASSERT_TRUE(ls.step(w, x, 32)) << *ls.first_mismatch();
  }
  // All-negative-zero products sum to +0: the column starts from +0.
  std::vector<uint16_t> w(64, 0x8000), x(8, 0x3F80);
  ASSERT_TRUE(ls.step(w, x, 1)) << *ls.first_mismatch();
  EXPECT_EQ(ls.last_run().out[0], 0x00000000u);
}

TEST(EquivalenceOrder, AccumulationIsRowZeroFirst) {
  // 2^24 + 1 - 2^24: row order (2^24 + 1) rounds to 2^24 (tie to even), then - 2^24
  // gives 0; any other order would give 1. Weights 1.0, moving (2^24, 1, -2^24, 0...).
  tile_adapter::options o;
  tile_adapter rtl(make_rtl_pe_array_8x8(), o);
  std::vector<uint16_t> w(64, 0x3F80), x(8, 0);
  x[0] = 0x4B80;  // 2^24
  x[1] = 0x3F80;  // 1
  x[2] = 0xCB80;  // -2^24
  const tile_run t = rtl.run_tile(w, x, 1);
  ASSERT_TRUE(t.ok) << t.error;
  for (uint32_t c = 0; c < 8; ++c) EXPECT_EQ(t.out[c], 0u) << "column " << c;
  x[0] = 0x3F80, x[1] = 0x4B80;  // 1 first: (1 + 2^24) still ties to 2^24
  x[2] = 0xCB80;
  EXPECT_EQ(rtl.run_tile(w, x, 1).out[0], 0u);
  x[0] = 0x4B80, x[1] = 0xCB80, x[2] = 0x3F80;  // cancel first, then + 1 = 1
  EXPECT_EQ(rtl.run_tile(w, x, 1).out[0], 0x3F800000u);
}

TEST(Mutant, CaughtWithTransactionAndCycle) {
  // The same harness and data that pass on the reference block must report the
  // mutant's first wrong sum, naming the transaction, vector, column and RTL cycle.
  tile_adapter::options o;
  tile_adapter good(make_rtl_pe_array_8x8(), o);
  tile_adapter bad(make_rtl_pe_array_8x8_mutant(), o);
  lockstep ls_good(good), ls_bad(bad);
  std::mt19937_64 rng(99);
  bool caught = false;
  for (int t = 0; t < 50 && !caught; ++t) {
    const auto w = random_bf16(rng, 64);
    const auto x = random_bf16(rng, 64 * 8);
    ASSERT_TRUE(ls_good.step(w, x, 64)) << *ls_good.first_mismatch();
    caught = !ls_bad.step(w, x, 64);
  }
  ASSERT_TRUE(caught) << "the mutant passed 50 transactions";
  const std::string& m = *ls_bad.first_mismatch();
  EXPECT_NE(m.find("transaction "), std::string::npos) << m;
  EXPECT_NE(m.find("RTL cycle "), std::string::npos) << m;
  EXPECT_NE(m.find("rtl 0x"), std::string::npos) << m;
  std::printf("mutant caught: %s\n", m.c_str());
}

}  // namespace
}  // namespace trnsim::cosim
