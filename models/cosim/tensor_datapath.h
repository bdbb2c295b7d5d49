// The tensor engine's matmul data paths other than its C++ sgemm
// (models::matmul_datapath, set by the platform; docs/rtl-cosim.md):
// - systolic_datapath: `core.tensor.numerics: systolic`, the C++ model in the PE
//   array's accumulation order (systolic_reference), folded on the engine's rows x
//   cols array exactly as the RTL path folds, so both give the same bits;
// - rtl_datapath: `core.tensor.impl: rtl`, each matmul through
//   rtl_matmul_transport() to the RTL block behind a tile_adapter (decoupled or
//   timed), its elapsed RTL cycles timing the matmul.
// Both take bf16 x bf16 -> fp32 only: other dtypes are an error naming the dtypes,
// which the engine prefixes with the instruction.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "models/common/stats.h"
#include "models/cosim/rtl_config.h"
#include "models/cosim/tile_adapter.h"
#include "models/cosim/tlm_matmul.h"
#include "models/engines/tensor_engine.h"

namespace trnsim::cosim {

class systolic_datapath final : public models::matmul_datapath {
 public:
  systolic_datapath(uint32_t rows, uint32_t cols) : rows_(rows), cols_(cols) {}
  uint64_t matmul(const isa::Instruction& in, const models::Tile& stationary,
                  const models::Tile& moving, models::Tile& dst) override;
  double array_clock_hz() const override { return 0; }

 private:
  uint32_t rows_, cols_;
  std::vector<uint16_t> st_, mv_;
};

class rtl_datapath final : public models::matmul_datapath {
 public:
  // `clock_hz`: the block's clock, at which its cycles become time.
  rtl_datapath(std::unique_ptr<tile_adapter> rtl, double clock_hz, bool timed);
  uint64_t matmul(const isa::Instruction& in, const models::Tile& stationary,
                  const models::Tile& moving, models::Tile& dst) override;
  double array_clock_hz() const override { return clock_hz_; }

  tile_adapter& adapter() { return *rtl_; }
  bool timed() const { return timed_; }
  // Since the last reset_stats(): RTL cycles, tile jobs, back-pressure stalls, and
  // host time spent in the RTL (adapter, protocol engine and model).
  uint64_t rtl_cycles() const { return cycles_; }
  uint64_t tile_jobs() const { return jobs_; }
  uint64_t stall_cycles() const { return stalls_; }
  double host_seconds() const { return host_s_; }
  void reset_stats() {
    cycles_ = jobs_ = stalls_ = 0;
    host_s_ = 0;
  }
  // The counters above, plus RTL cycles per host second, into `g`.
  void register_stats(stats::group& g);

 private:
  std::unique_ptr<tile_adapter> rtl_;
  double clock_hz_;
  bool timed_;
  std::vector<uint8_t> st_, mv_;
  std::vector<float> out_;
  uint64_t cycles_ = 0, jobs_ = 0, stalls_ = 0;
  double host_s_ = 0;
};

// The RTL data path a config selects, for the engine's rows x cols array: the
// block from the build's registry (check_rtl_build), decoupled or timed. A timed
// block is a SystemC module named `sc_instance`, created now (call it during
// elaboration) on a gated clock. `engine_clock_hz` is the clock when the section
// gives none. Inline: the registry links only with trnsim_rtl (Verilator builds) or
// the empty one (without). Throws std::runtime_error naming the key.
inline std::unique_ptr<rtl_datapath> make_rtl_datapath(const rtl_config& c, uint32_t rows,
                                                       uint32_t cols, double engine_clock_hz,
                                                       const char* sc_instance,
                                                       const std::string& where) {
  const double hz = c.clock_hz > 0 ? c.clock_hz : engine_clock_hz;
  return std::make_unique<rtl_datapath>(make_tile_adapter(c, rows, cols, where, sc_instance, hz),
                                        hz, c.timed);
}

}  // namespace trnsim::cosim
