// Drives jobs through the contract-v1 pins of an rtl_block (docs/rtl-cosim.md), one
// clock cycle at a time: offers the stationary and moving frames on their valid/ready
// streams, takes the result frame with seeded random back-pressure, and stops a job
// that makes no progress (watchdog) with an error instead of hanging. Both adapter
// modes share it (tile_adapter.h).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "models/cosim/protocol_checker.h"
#include "models/cosim/rtl_block.h"

namespace trnsim::cosim {

// One job's frames, beats packed as bus words (rtl_block's widths), beat after beat.
struct rtl_job {
  uint64_t st_beats = 0, mv_beats = 0;
  std::vector<uint32_t> st_words, mv_words;
};

struct rtl_job_result {
  bool ok = false;
  std::string error;                // why not ok: watchdog, protocol violation
  std::vector<uint32_t> res_words;  // result beats received, packed like the job's
  uint64_t res_beats = 0;
  uint64_t cycles = 0;              // first stationary handshake to last result, inclusive
  uint64_t stall_cycles = 0;        // cycles a valid result was refused (res_ready low)
  uint64_t start_cycle = 0;         // clock cycle of the first stationary handshake
  std::vector<uint64_t> res_cycle;  // clock cycle of each result handshake
};

struct engine_limits {
  // Most consecutive cycles with no handshake on any stream while the block is not
  // back-pressured (the block's progress bound plus a margin).
  uint64_t watchdog_cycles = 64;
  // Most cycles one job may take in all, back-pressure included.
  uint64_t max_cycles = 1 << 20;
};

class protocol_engine {
 public:
  explicit protocol_engine(rtl_block& block, protocol_checker* checker = nullptr);

  // Back-pressure: each cycle res_ready is low with probability `stall_rate`, drawn
  // from a generator seeded with `seed` (deterministic per seed).
  void set_back_pressure(double stall_rate, uint64_t seed);
  // Test hooks: framing faults the environment injects.
  enum class fault { none, drop_st_last, drop_mv_last };
  void set_fault(fault f) { fault_ = f; }

  // Holds rst_n low for `cycles` cycles with every valid low.
  void reset(uint64_t cycles);
  rtl_job_result run(const rtl_job& job, const engine_limits& limits);

  // Rising edges of the private clock so far.
  uint64_t cycle() const { return now_; }
  void set_trace_window(uint64_t from, uint64_t to) {
    trace_from_ = from;
    trace_to_ = to;
  }

 private:
  // Evaluates the settled pre-edge values (the checker sees them), then the edge.
  void pre_edge();
  void edge();
  bool ready_draw();

  rtl_block& b_;
  protocol_checker* chk_;
  uint64_t now_ = 0;
  double stall_rate_ = 0;
  std::mt19937_64 rng_{1};
  fault fault_ = fault::none;
  uint64_t trace_from_ = 0, trace_to_ = UINT64_MAX;
};

}  // namespace trnsim::cosim
