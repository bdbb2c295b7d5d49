// The protocol checker on hand-made pin sequences, and the protocol engine's
// watchdog and the checker on the real block.
#include <gtest/gtest.h>

#include "cosim_test_util.h"
#include "models/cosim/protocol_checker.h"
#include "models/cosim/tile_adapter.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

// A pin sequence builder: one call per cycle.
struct Pins {
  pins_in in;
  pins_out out;
  Pins() {
    in.rst_n = true;
    in.st_data.assign(1, 0);
    in.mv_data.assign(1, 0);
    out.res_data.assign(1, 0);
  }
};

bool has(const protocol_checker& c, const std::string& what) {
  for (const auto& v : c.violations())
    if (v.find(what) != std::string::npos) return true;
  return false;
}

TEST(ProtocolChecker, CleanJobPasses) {
  protocol_checker c(2);
  Pins p;
  uint64_t cyc = 0;
  p.in.rst_n = false;
  c.observe(cyc++, p.in, p.out);
  p.in.rst_n = true;
  // Two stationary beats, last on the second.
  p.in.st_valid = p.out.st_ready = true;
  c.observe(cyc++, p.in, p.out);
  p.in.st_last = true;
  c.observe(cyc++, p.in, p.out);
  p.in.st_valid = p.in.st_last = p.out.st_ready = false;
  // One moving beat with last, then one stalled result cycle, then the result.
  p.in.mv_valid = p.out.mv_ready = p.in.mv_last = true;
  c.observe(cyc++, p.in, p.out);
  p.in.mv_valid = p.out.mv_ready = false;
  p.out.res_valid = p.out.res_last = true;
  p.out.res_data[0] = 42;
  c.observe(cyc++, p.in, p.out);  // stalled: res_ready low
  p.in.res_ready = true;
  c.observe(cyc++, p.in, p.out);
  EXPECT_TRUE(c.ok()) << c.violations().front();
}

TEST(ProtocolChecker, ReportsEachRuleWithItsCycle) {
  {  // traffic during reset
    protocol_checker c(2);
    Pins p;
    p.in.rst_n = false;
    p.in.st_valid = true;
    p.out.res_valid = true;
    c.observe(7, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 7: input valid during reset"));
    EXPECT_TRUE(has(c, "cycle 7: res_valid during reset"));
  }
  {  // valid dropped, data changed, last changed while stalled
    protocol_checker c(2);
    Pins p;
    p.in.mv_valid = true;  // mv_ready low: stalled
    p.in.mv_data[0] = 1;
    c.observe(1, p.in, p.out);
    p.in.mv_data[0] = 2;
    c.observe(2, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 2: mv data changed while stalled"));
    p.in.mv_last = true;
    c.observe(3, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 3: mv last changed while stalled"));
    p.in.mv_valid = false;
    c.observe(4, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 4: mv valid dropped before ready"));
  }
  {  // stationary framing: last early, then missing
    protocol_checker c(3);
    Pins p;
    p.in.st_valid = p.out.st_ready = p.in.st_last = true;
    c.observe(1, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 1: st frame: last on beat 1 of 3"));
    p.in.st_last = false;
    for (uint64_t i = 2; i <= 4; ++i) c.observe(i, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 4: st frame: last on beat 3 of 3 missing"));
  }
  {  // result framing: more results than moving beats, last in the wrong place
    protocol_checker c(1);
    Pins p;
    p.in.mv_valid = p.out.mv_ready = true;
    c.observe(1, p.in, p.out);
    p.in.mv_last = true;
    c.observe(2, p.in, p.out);  // moving frame of 2
    p.in.mv_valid = p.out.mv_ready = false;
    p.out.res_valid = p.in.res_ready = p.out.res_last = true;
    c.observe(3, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 3: res frame: last on beat 1 of a moving frame of 2"));
    p.out.res_last = false;
    c.observe(4, p.in, p.out);  // answers the moving frame's second beat: fine
    EXPECT_FALSE(has(c, "cycle 4"));
    c.observe(5, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 5: result beat without a moving beat"));
  }
  {  // the block's err
    protocol_checker c(1);
    Pins p;
    p.out.err = true;
    c.observe(9, p.in, p.out);
    EXPECT_TRUE(has(c, "cycle 9: block raised err"));
  }
}

TEST(ProtocolEngine, ResetIsQuietAndJobsAreClean) {
  // The real block under 50 % back-pressure: the checker, watching every cycle from
  // the first reset cycle on, finds nothing.
  tile_adapter::options o;
  o.stall_rate = 0.5;
  o.reset_cycles = 5;
  tile_adapter a(make_rtl_pe_array_8x8(), o);
  EXPECT_EQ(a.rtl_cycles(), 0u);  // reset waits for the first job
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5; ++i) {
    const tile_run t = a.run_tile(test::random_bf16(rng, 64), test::random_bf16(rng, 80), 10);
    ASSERT_TRUE(t.ok) << t.error;
    // Reset took cycles 0..4; the block takes weights at once after it.
    if (i == 0) {
      EXPECT_EQ(t.start_cycle, 5u);
    }
  }
  EXPECT_TRUE(a.checker().ok()) << a.checker().violations().front();
}

TEST(ProtocolEngine, WatchdogTurnsAHangIntoAnError) {
  // Without mv_last the block waits for more moving data and never ends the result
  // frame: the watchdog stops the job with a message instead of hanging.
  tile_adapter::options o;
  tile_adapter a(make_rtl_pe_array_8x8(), o);
  a.engine().set_fault(protocol_engine::fault::drop_mv_last);
  std::mt19937_64 rng(4);
  const tile_run t = a.run_tile(test::random_bf16(rng, 64), test::random_bf16(rng, 32), 4);
  EXPECT_FALSE(t.ok);
  EXPECT_NE(t.error.find("pe_array_8x8: watchdog at cycle"), std::string::npos) << t.error;
  EXPECT_NE(t.error.find("no handshake for 49 unstalled cycles (limit 48)"), std::string::npos)
      << t.error;  // limit 2 (R + C) + 16 = 48
  EXPECT_NE(t.error.find("res 4/4 beats; waiting for the last result"), std::string::npos)
      << t.error;
}

TEST(ProtocolEngine, FramingFaultIsAnErrorNamingTheFirstViolation) {
  // Without st_last the block still loads R rows (it counts them) but raises err;
  // the job finishes and fails with the checker's first violation and its cycle.
  tile_adapter::options o;
  o.reset_cycles = 4;
  tile_adapter a(make_rtl_pe_array_8x8(), o);
  a.engine().set_fault(protocol_engine::fault::drop_st_last);
  std::mt19937_64 rng(6);
  const tile_run t = a.run_tile(test::random_bf16(rng, 64), test::random_bf16(rng, 16), 2);
  EXPECT_FALSE(t.ok);
  // Reset takes cycles 0..3, the weight rows 4..11: beat 8 at cycle 11.
  EXPECT_NE(t.error.find("pe_array_8x8: protocol violation: cycle 11: st frame: last on beat 8 "
                         "of 8 missing (and more)"),
            std::string::npos)
      << t.error;
  EXPECT_TRUE(a.checker().violations().size() >= 2);  // then the block's err
}

TEST(ProtocolEngine, RejectsATileOfTheWrongSize) {
  tile_adapter::options o;
  o.rows = o.cols = 16;
  EXPECT_THROW(tile_adapter(make_rtl_pe_array_8x8(), o), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::cosim
