// Timed mode: the same tile adapter and protocol engine over a `verilator --sc`
// model on a real sc_clock. Same data and cycles as the decoupled mode, and the
// cycles take SystemC time: one clock period each.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <systemc>

#include "cosim_test_util.h"
#include "models/cosim/systolic_reference.h"
#include "models/cosim/tile_adapter.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

struct Result {
  tile_run run;
  std::vector<uint32_t> want;
  sc_core::sc_time returned;  // SystemC time when run_tile returned
};

// One random tile of S moving vectors through `rtl`, with the reference result.
Result run_random_tile(tile_adapter& rtl, std::mt19937_64& rng, uint32_t S) {
  const auto w = test::random_bf16(rng, 64);
  const auto x = test::random_bf16(rng, size_t{S} * 8);
  Result r;
  r.run = rtl.run_tile(w, x, S);
  r.returned = sc_core::sc_time_stamp();
  r.want = systolic_reference(w, 8, 8, x, S);
  return r;
}

SC_MODULE(TimedTop) {
  tile_adapter rtl;
  std::vector<Result> results;

  SC_HAS_PROCESS(TimedTop);
  TimedTop(const sc_core::sc_module_name& n, const tile_adapter::options& o)
      : sc_module(n), rtl(make_rtl_pe_array_8x8_sc("pe_array", 1e9), o) {
    SC_THREAD(run);
  }

  void run() {
    std::mt19937_64 rng(12);
    for (uint32_t S : {1u, 5u, 64u}) results.push_back(run_random_tile(rtl, rng, S));
    sc_core::sc_stop();  // the clock would run for ever
  }
};

TEST(Timed, SameDataAndCyclesOnARealClock) {
  tile_adapter::options o;
  o.stall_rate = 0.3;
  TimedTop top("top", o);
  // The thread stops the simulation; the bound keeps a bug from spinning for ever.
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_SEC));
  ASSERT_EQ(top.results.size(), 3u);
  const sc_core::sc_time period(1, sc_core::SC_NS);  // 1 GHz
  for (const Result& r : top.results) {
    ASSERT_TRUE(r.run.ok) << r.run.error;
    EXPECT_EQ(r.run.out, r.want);
    const uint64_t S = r.want.size() / 8;
    EXPECT_EQ(r.run.cycles, 2 * 8 + 8 + S - 2 + r.run.stall_cycles);  // fold + stalls
    // Cycle k's rising edge is at (k + 1) periods: the clock's first edge, at 0,
    // comes before the first cycle. run_tile returns at its last result's edge.
    EXPECT_EQ(r.returned, period * double(r.run.res_cycle.back() + 1));
  }
  EXPECT_TRUE(top.rtl.checker().ok()) << top.rtl.checker().violations().front();
}

// The gated clock (what the platform uses): the same edges, driven by the adapter
// only while a job runs, so sc_start() returns by itself when the thread is done.
SC_MODULE(GatedTop) {
  tile_adapter rtl;
  std::vector<Result> results;

  SC_HAS_PROCESS(GatedTop);
  explicit GatedTop(const sc_core::sc_module_name& n)
      : sc_module(n), rtl(make_rtl_pe_array_8x8_sc("pe_array", 1e9, true), options()) {
    SC_THREAD(run);
  }
  static tile_adapter::options options() {
    tile_adapter::options o;
    o.stall_rate = 0.3;
    return o;
  }
  void run() {
    std::mt19937_64 rng(13);
    for (uint32_t S : {1u, 9u, 64u}) {
      results.push_back(run_random_tile(rtl, rng, S));
      sc_core::wait(100, sc_core::SC_NS);  // idle: no clock edge in between
    }
  }
};

TEST(Timed, GatedClockStopsWhenIdle) {
  GatedTop top("top");
  sc_core::sc_start();  // returns once the thread has finished: nothing else ticks
  ASSERT_EQ(top.results.size(), 3u);
  const sc_core::sc_time period(1, sc_core::SC_NS);
  sc_core::sc_time idle = sc_core::SC_ZERO_TIME;
  for (const Result& r : top.results) {
    ASSERT_TRUE(r.run.ok) << r.run.error;
    EXPECT_EQ(r.run.out, r.want);
    const uint64_t S = r.want.size() / 8;
    EXPECT_EQ(r.run.cycles, 2 * 8 + 8 + S - 2 + r.run.stall_cycles);  // fold + stalls
    // Each cycle takes one period; the clock stands still during the 100 ns waits.
    EXPECT_EQ(r.returned, period * double(r.run.res_cycle.back() + 1) + idle);
    idle += sc_core::sc_time(100, sc_core::SC_NS);
  }
  EXPECT_EQ(sc_core::sc_time_stamp(), period * double(top.rtl.rtl_cycles()) + idle);
  EXPECT_TRUE(top.rtl.checker().ok()) << top.rtl.checker().violations().front();
}

}  // namespace
}  // namespace trnsim::cosim
