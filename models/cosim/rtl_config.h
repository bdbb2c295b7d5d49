// The `<block>.impl: cpp | rtl` selection and its `rtl:` section (docs/rtl-cosim.md,
// "Config"), e.g. under core.tensor:
//
//   impl: rtl
//   rtl:
//     block: pe_array_8x8            # built by trnsim_add_rtl_block (required)
//     top: pe_array                  # optional: checked against the build
//     sources: [pe_array.sv]         # optional: each must be one the block was built from
//     parameters: {R: 8, C: 8}       # optional: checked against the build
//     clock: 1.4GHz                  # Hz, kHz, MHz or GHz (default: the engine's)
//     mode: decoupled                # decoupled | timed
//     reset_cycles: 4
//     back_pressure: 0               # result stall rate, 0..0.95 (tests)
//     seed: 1
//     waveform: {path: te.fst, depth: 2, from: 0, to: 10000}   # off when absent
//
// Verilator runs at build time, so the section selects a compiled block and checks
// that it is what the config describes; it cannot compile new RTL.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/cosim/rtl_registry.h"
#include "models/cosim/tile_adapter.h"

namespace trnsim::cosim {

struct rtl_config {
  bool rtl = false;  // impl: rtl
  std::string block, top;
  std::vector<std::string> sources;
  std::map<std::string, std::string> parameters;
  double clock_hz = 0;  // 0: the engine's clock
  bool timed = false;   // mode: timed
  uint64_t reset_cycles = 4;
  double back_pressure = 0;
  uint64_t seed = 1;
  std::string waveform_path;
  int waveform_depth = 0;
  uint64_t waveform_from = 0, waveform_to = UINT64_MAX;
};

// Parses `impl` and `rtl` of a block's node; `where` names the node in messages
// ("core.tensor"). Throws std::runtime_error naming the key on bad input.
rtl_config parse_rtl_config(const YAML::Node& block, const std::string& where);
// Parses the `rtl` section alone (the platform's config loader reads `impl` as a
// schema key); `rtl` stays false.
rtl_config parse_rtl_section(const YAML::Node& rtl, const std::string& where);
// The section as one line of YAML flow, which parse_rtl_section reads back.
std::string to_flow(const rtl_config& c);

// Checks the section against the blocks the build made (rtl_blocks()) and returns
// the selected one; throws std::runtime_error naming the key on a mismatch.
const rtl_block_info& check_rtl_build(const rtl_config& c,
                                      const std::vector<rtl_block_info>& blocks,
                                      const std::string& where);

// The tile adapter a config selects, for the engine's rows x cols array.
// Decoupled: the --cc block. Timed: the --sc block as the SystemC module
// `sc_instance` on a gated clock of `clock_hz` (the section's clock, else this), so
// call it during elaboration; without an instance, timed mode is refused.
// Inline: it needs the registry, which only Verilator builds link (trnsim_rtl).
inline std::unique_ptr<tile_adapter> make_tile_adapter(const rtl_config& c, uint32_t rows,
                                                       uint32_t cols, const std::string& where,
                                                       const char* sc_instance = nullptr,
                                                       double clock_hz = 1e9) {
  check_rtl_build(c, rtl_blocks(), where);
  if (c.timed && !sc_instance)
    throw std::runtime_error(where + ".rtl.mode: timed needs a SystemC elaboration");
  tile_adapter::options o;
  o.rows = rows;
  o.cols = cols;
  o.reset_cycles = c.reset_cycles;
  o.stall_rate = c.back_pressure;
  o.seed = c.seed;
  o.fst_path = c.waveform_path;
  o.fst_depth = c.waveform_depth;
  o.fst_from = c.waveform_from;
  o.fst_to = c.waveform_to;
  try {
    std::unique_ptr<rtl_block> b =
        c.timed
            ? make_rtl_block_sc(c.block, sc_instance, c.clock_hz > 0 ? c.clock_hz : clock_hz, true)
            : make_rtl_block(c.block);
    return std::make_unique<tile_adapter>(std::move(b), o);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(where + ".rtl.block: " + e.what());
  }
}

}  // namespace trnsim::cosim
