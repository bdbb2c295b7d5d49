// Tensor engine: the systolic PE array. Reads SBUF, writes PSUM (accumulating for
// matmul with accumulate=1). First-order timing from hardware.md: a matmul costs its
// initiation interval max(N, min_ii) cycles (x fp32_slowdown for fp32 inputs); a
// transpose max(P, min(64, F)). Not modelled yet: load-stationary as its own step,
// fill/drain, background weight load, array tiling, throttling, fp8 double-row
// (fp8_double_row is carried but not used yet).
#pragma once

#include "models/engines/engine.h"

namespace trnsim::models {

class tensor_engine : public engine {
 public:
  tensor_engine(const sc_core::sc_module_name& name, const tensor_engine_params& p,
                semaphores& sems, sim_context& ctx);
  const tensor_engine_params& params() const { return tparams_; }

 protected:
  uint64_t cost_cycles(const isa::Instruction& in) override;

 private:
  tensor_engine_params tparams_;
};

}  // namespace trnsim::models
