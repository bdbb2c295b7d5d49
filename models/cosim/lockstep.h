// Lockstep equivalence for a PE array tile: every transaction (one tile job) goes to
// the RTL through a tile_adapter and to the C++ systolic numerics
// (systolic_reference), and the two are compared: data bit-exactly, cycles against
// the fold formula (exactly without back-pressure; with it, formula + the cycles the
// consumer refused a valid result, which the contract makes exact too). The first
// mismatch is reported with its transaction, vector, column and RTL cycle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/cosim/tile_adapter.h"

namespace trnsim::cosim {

class lockstep {
 public:
  explicit lockstep(tile_adapter& rtl) : rtl_(rtl) {}

  // Runs one transaction; false (and first_mismatch() set, once) on any difference
  // or adapter error.
  bool step(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x, uint32_t vectors);

  uint64_t transactions() const { return count_; }
  const std::optional<std::string>& first_mismatch() const { return first_; }
  const tile_run& last_run() const { return last_; }

 private:
  void fail(const std::string& what);

  tile_adapter& rtl_;
  uint64_t count_ = 0;
  std::optional<std::string> first_;
  tile_run last_;
};

}  // namespace trnsim::cosim
