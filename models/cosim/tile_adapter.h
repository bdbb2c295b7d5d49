// Adapter for a PE array tile (models/rtl/pe_array.sv, contract v1): packs bf16
// weights and vectors into beats, runs the job through the protocol engine and
// unpacks the fp32 results. Its mode is its block's:
// - decoupled (default): a `verilator --cc` model (verilated_block) with a private
//   clock the adapter steps inside each call; the call returns the RTL cycles so the
//   caller annotates them on its TLM delay (cycles / clock_hz). No SystemC process,
//   no sc_clock: fast, free of SystemC time.
// - timed: a `verilator --sc` model (timed_block) on a real sc_clock; run_tile() must
//   then be called from an SC_THREAD and consumes one clock period per cycle.
// The block is reset (reset_cycles) at the first run_tile().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/cosim/protocol_checker.h"
#include "models/cosim/protocol_engine.h"
#include "models/cosim/rtl_block.h"

namespace trnsim::cosim {

struct tile_run {
  bool ok = false;
  std::string error;
  std::vector<uint32_t> out;        // S x C fp32 bits, out[j * C + c]
  uint64_t cycles = 0;              // first weight handshake to last result, inclusive
  uint64_t stall_cycles = 0;        // cycles a valid result was refused
  uint64_t start_cycle = 0;         // private-clock cycle of the first weight handshake
  std::vector<uint64_t> res_cycle;  // private-clock cycle of each result handshake
};

class tile_adapter {
 public:
  struct options {
    uint32_t rows = 8, cols = 8;  // the tile the block was built for
    uint64_t reset_cycles = 4;
    double stall_rate = 0;  // result back-pressure, 0..1
    uint64_t seed = 1;
    uint64_t watchdog_cycles = 0;  // 0: from the latency bound, 2 (R + C) + 16
    // FST waveform, off when empty (the block must be built with TRACE): scope depth
    // (0 = all) and the private-clock cycle window [from, to) dumped.
    std::string fst_path;
    int fst_depth = 0;
    uint64_t fst_from = 0, fst_to = UINT64_MAX;
  };
  // Throws std::invalid_argument when the block's buses do not fit rows x cols.
  tile_adapter(std::unique_ptr<rtl_block> block, const options& o);

  // One job: weights w[r * C + c] and S vectors x[j * R + r] (bf16 bits).
  tile_run run_tile(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                    uint32_t vectors);

  // The contract's cycle count of a job with S vectors, no back-pressure:
  // load R + stream S + drain R + C - 2.
  uint64_t fold_cycles(uint64_t vectors) const { return 2ull * o_.rows + o_.cols + vectors - 2; }

  const options& opts() const { return o_; }
  rtl_block& block() { return *block_; }
  protocol_checker& checker() { return checker_; }
  protocol_engine& engine() { return engine_; }
  // Totals over every run_tile call.
  uint64_t rtl_cycles() const { return engine_.cycle(); }
  double host_seconds() const { return host_s_; }

 private:
  options o_;
  std::unique_ptr<rtl_block> block_;
  protocol_checker checker_;
  protocol_engine engine_;
  double host_s_ = 0;
  bool reset_done_ = false;
};

}  // namespace trnsim::cosim
