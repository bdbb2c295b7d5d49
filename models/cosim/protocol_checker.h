// Watches the contract-v1 pins (docs/rtl-cosim.md) cycle by cycle and records every
// violation with its cycle:
// - no traffic during reset: while rst_n is low nobody drives a valid and the block
//   drives no ready;
// - valid held until ready: a stalled beat (valid && !ready) stays valid with the
//   same data and last at the next cycle;
// - framing: `last` on beat `st_beats` of every stationary frame and nowhere else;
//   a result frame has as many beats as its moving frame, `last` on the final one,
//   and a result never runs ahead of the moving beats received;
// - the block's err output stays low.
// observe() takes the values the rising edge samples (after the pre-edge eval).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/cosim/rtl_block.h"

namespace trnsim::cosim {

class protocol_checker {
 public:
  // `st_beats`: the stationary frame length the block expects (R for the PE array).
  explicit protocol_checker(uint64_t st_beats) : st_beats_(st_beats) {}

  void observe(uint64_t cycle, const pins_in& in, const pins_out& out);

  bool ok() const { return violations_.empty(); }
  const std::vector<std::string>& violations() const { return violations_; }
  // Kept at most this many messages (the count keeps going).
  uint64_t violation_count() const { return count_; }

 private:
  struct beat {
    bool stalled = false;  // valid && !ready at the previous cycle
    bool last = false;
    std::vector<uint32_t> data;
  };
  void held(uint64_t cycle, const char* stream, beat& prev, bool valid, bool ready, bool last,
            const std::vector<uint32_t>& data);
  void report(uint64_t cycle, const std::string& what);

  uint64_t st_beats_;
  beat st_, mv_, res_;
  uint64_t st_count_ = 0;        // beats of the current stationary frame
  uint64_t mv_count_ = 0;        // beats of the current moving frame
  uint64_t mv_total_ = 0;        // moving beats not yet answered by a result
  std::deque<uint64_t> frames_;  // lengths of complete moving frames, oldest first
  uint64_t res_count_ = 0;       // beats of the current result frame
  bool err_seen_ = false;
  std::vector<std::string> violations_;
  uint64_t count_ = 0;
};

}  // namespace trnsim::cosim
