// Tensor engine: a weight-stationary systolic array of rows x cols PEs. Reads SBUF,
// writes PSUM (accumulating for matmul with accumulate=1). Cycle model, in engine
// cycles, with R x C the array (or the tile a small matmul runs in):
//
// - A matmul stationary[K,M]^T @ moving[K,N] folds onto the array in
//   ceil(K / R') x ceil(M / C) passes, R' = 2R for fp8 with fp8_double_row (two K
//   rows per PE at bf16 time), else R. A pass loads the stationary tile, streams
//   S = max(N, min_ii) moving columns (x fp32_slowdown when an input is fp32), and
//   drains: the last result leaves the array R + C - 2 cycles after the last column
//   entered it.
// - background_load off: a pass shifts its weights in row by row (R cycles) once the
//   previous pass has drained, so a pass takes R + S + (R + C - 2) = 2R + C + S - 2
//   cycles, the weight-stationary fold formula (SCALE-Sim's), and the sequencer waits
//   for the instruction to complete.
// - background_load on: a pass's weights load into a shadow buffer in
//   ceil(M_pass / fast_load_speedup) cycles while the previous pass streams (hidden
//   when shorter), and it streams as soon as they are in and the previous stream has
//   ended: fill and drain overlap the next stream, so back-to-back multiplies issue
//   every max(N, min_ii) cycles. The sequencer takes the next instruction once this
//   one's last pass starts loading (the shadow buffer holds one pending tile), so the
//   static overhead of the next instruction overlaps the running multiply.
// - The static overhead comes before an instruction's first load; the port time of
//   its SBUF/PSUM accesses bounds the span from its first load to its last stream's
//   end (with the presets' ports, one column per cycle at the TE clock, it never
//   binds without background load).
// - Array tiling (tile_size < min(rows, cols)): min(rows, cols) / tile_size tile
//   slots. A matmul with K, M <= tile_size (not fp8 double-row, which needs the whole
//   array) runs in the earliest free slot with R = C = tile_size, others take every
//   slot; the sequencer moves on once a tiled matmul starts, so small matmuls overlap.
// - Transpose [P,F] (a matmul against the identity): ceil(P / rows) x ceil(F / cols)
//   passes of max(P', min(min_ii, F')) cycles (P', F' the pass's share) streaming on
//   the whole array after the previous stream (or drain, without background load);
//   not pipelined.
// - Throttling: streaming runs at a rate that ramps linearly from throttle_start to
//   full over throttle_ramp from the first stream; the ramp restarts at a stream that
//   starts after a throttle_idle window (entirely after the current ramp began) in
//   which the array's utilisation was below throttle_reengage. Utilisation counts
//   stream time, a tile's stream weighted by its share of the PEs.
// - Another matmul data path (set_matmul_datapath, docs/rtl-cosim.md): the C++
//   systolic numerics, or an RTL block. A data path that reports array cycles (the
//   RTL's) replaces the fold formula: the matmul starts after the static overhead and
//   the previous instruction's last result, and its array time is the data path's
//   cycles at its clock, bounded below by the port time as above (the RTL has no
//   background load, throttle or tiling: the platform refuses those with impl: rtl).
//   Transposes and timing-only runs (no data to compute on) keep the C++ path.
#pragma once

#include <memory>
#include <vector>

#include "models/common/worker_pool.h"
#include "models/engines/engine.h"
#include "models/memory/psum.h"

namespace trnsim::models {

// The matmul arithmetic of the tensor engine when it is not the C++ sgemm: the
// platform installs one for `core.tensor.numerics: systolic` or `core.tensor.impl:
// rtl` (models/cosim/tensor_datapath.h). An interface, so that models/engines needs
// neither models/cosim nor Verilator.
class matmul_datapath {
 public:
  virtual ~matmul_datapath() = default;
  // dst = stationary^T @ moving for the matmul `in` (its patterns give shapes and
  // dtypes), from the operand tiles as the engine read them: fp32 values, exact
  // images of the operands' elements. Fills dst as [M, N]; PSUM applies `accumulate`.
  // Returns the array cycles the matmul took at array_clock_hz(). Throws
  // std::runtime_error on what it cannot compute (the engine names the instruction).
  virtual uint64_t matmul(const isa::Instruction& in, const Tile& stationary, const Tile& moving,
                          Tile& dst) = 0;
  // > 0: the cycles matmul() returns are the array's time at this clock and replace
  // the cost model's; 0: the data path only computes (the cost model times it).
  virtual double array_clock_hz() const = 0;
};

class tensor_engine : public engine {
 public:
  tensor_engine(const sc_core::sc_module_name& name, const tensor_engine_params& p,
                semaphores& sems, sim_context& ctx);
  const tensor_engine_params& params() const { return tparams_; }

  // How a matmul maps onto the array.
  struct mapping {
    uint32_t rows = 0, cols = 0;  // array or tile it runs on [PEs]
    bool tiled = false;           // runs in one tile slot
    uint64_t k_passes = 0;        // folds along K (rows)
    uint64_t m_passes = 0;        // folds along M (columns)
    uint64_t stream = 0;          // cycles one pass streams the moving tile
  };
  mapping map_matmul(const isa::Instruction& in) const;
  uint32_t tile_slots() const { return static_cast<uint32_t>(slots_.size()); }

  // Another matmul data path (not owned; nullptr: the C++ sgemm). Set before the run.
  void set_matmul_datapath(matmul_datapath* d) { datapath_ = d; }
  // Functional matmuls on `pool`'s workers (nullptr or no workers: here, at once),
  // their products held by `p` (this core's PSUM) until something reads PSUM; at
  // most `in_flight` at a time. Results and timing are those of the serial run.
  void compute_on(worker_pool* pool, psum* p, size_t in_flight);
  matmul_datapath* datapath() const { return datapath_; }
  // Matmuls the data path computed, the array cycles it reported for them and the
  // cost model's cycles for the same matmuls (the fold formula: cost_cycles), since
  // the last reset_datapath_stats().
  uint64_t datapath_matmuls() const { return dp_matmuls_; }
  uint64_t datapath_cycles() const { return dp_cycles_; }
  uint64_t datapath_model_cycles() const { return dp_model_cycles_; }
  void reset_datapath_stats() { dp_matmuls_ = dp_cycles_ = dp_model_cycles_ = 0; }

 protected:
  // Cycles of one instruction alone on an idle, unthrottled array without background
  // load (the fold formula for a matmul), not counting the static overhead.
  uint64_t cost_cycles(const isa::Instruction& in) override;
  timing instruction_timing(const isa::Instruction& in, const sc_core::sc_time& port) override;
  sc_core::sc_time execute(const isa::Instruction& in) override;
  // A matmul through the data path when there is one; else the ALU.
  void compute(const isa::Instruction& in, ExecArgs& args, ExecResult& res) override;
  bool defer(const isa::Instruction& in, ExecArgs& args) override;

 private:
  // Pipeline state of the whole array (one slot) or of one tile.
  struct slot {
    sc_core::sc_time shadow_free;  // the weight shadow buffer takes the next tile
    sc_core::sc_time stream_free;  // the last stream has entered the array
    sc_core::sc_time done;         // the last result has left the array
  };
  struct activity {
    sc_core::sc_time start, end;
    double weight;  // share of the PEs
  };
  // Time that `cycles` cycles of full-rate streaming starting at `at` take under the
  // throttle; records the stream for the utilisation window.
  sc_core::sc_time stream_time(const sc_core::sc_time& at, uint64_t cycles, double weight);
  double utilisation(const sc_core::sc_time& from, const sc_core::sc_time& to) const;
  timing transpose_timing(const isa::Instruction& in, const sc_core::sc_time& port);
  // A matmul timed by the data path's array cycles (last_array_cycles_).
  timing datapath_timing(const sc_core::sc_time& port);

  tensor_engine_params tparams_;
  std::vector<slot> slots_;
  std::vector<activity> activity_;  // recent streams (throttle on only)
  bool ramping_ = false;            // a throttle ramp has begun
  sc_core::sc_time window_;         // throttle_idle_s, once computed
  bool window_valid_ = false;
  sc_core::sc_time ramp_origin_ = sc_core::SC_ZERO_TIME;

  matmul_datapath* datapath_ = nullptr;
  bool array_timed_ = false;        // the last execute() has array cycles to time
  uint64_t last_array_cycles_ = 0;  // ... these, at the data path's clock
  sc_core::sc_time exec_start_;     // when that execute() began (a timed RTL block
                                    // takes SystemC time inside it)
  uint64_t dp_matmuls_ = 0, dp_cycles_ = 0, dp_model_cycles_ = 0;

  // A matmul handed to a worker: its operands and product (buffers reused).
  struct job {
    isa::Instruction in;
    ExecArgs args;
    ExecResult res;
  };
  worker_pool* pool_ = nullptr;
  psum* psum_ = nullptr;
  size_t in_flight_ = 0;
  std::vector<std::shared_ptr<job>> spare_;  // jobs whose products are in PSUM
};

}  // namespace trnsim::models
