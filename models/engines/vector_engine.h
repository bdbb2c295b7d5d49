// Vector engine: elementwise, tensor_tensor, reductions along the free axis,
// bn_stats/bn_aggr, select. Reads and writes SBUF and PSUM. First-order cost table
// of docs/hardware.md, Engines (N = free elements per partition): max(min_ii, N)
// for one-input ops; max(min_ii, 2N) for tensor_tensor with both inputs in SBUF;
// +min_ii with an accumulate; N/2 for bf16 add/max reductions and bf16 zero
// memsets; divides cost reciprocal_slowdown x; trn2 bf16 performance modes (2x/4x)
// when enabled. Not modelled yet: port sharing with GpSimd on NC-v2.
#pragma once

#include "models/engines/engine.h"

namespace trnsim::models {

class vector_engine : public engine {
 public:
  vector_engine(const sc_core::sc_module_name& name, const vector_engine_params& p,
                semaphores& sems, sim_context& ctx);

 protected:
  uint64_t cost_cycles(const isa::Instruction& in) override;

 private:
  vector_engine_params vparams_;
};

// The cost table shared by the vector and GpSimd engines (same lanes and rates);
// `vec` adds the vector engine's performance modes and divide cost.
uint64_t elementwise_cost(const isa::Instruction& in, uint32_t min_ii,
                          const vector_engine_params* vec = nullptr);

}  // namespace trnsim::models
