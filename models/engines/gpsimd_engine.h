// GpSimd engine: 8 general-purpose SIMD cores over SBUF (no PSUM access): iota,
// affine_select, partition reductions and broadcasts, and the vector engine's
// elementwise ops. First-order cost (docs/hardware.md, Engines): start_cycles + N
// for iota and affine_select; the vector engine's table otherwise; partition
// reduce/broadcast also start_cycles + N (no public figure). Not modelled yet:
// custom kernels.
#pragma once

#include "models/engines/engine.h"

namespace trnsim::models {

class gpsimd_engine : public engine {
 public:
  gpsimd_engine(const sc_core::sc_module_name& name, const gpsimd_engine_params& p,
                semaphores& sems, sim_context& ctx);

 protected:
  uint64_t cost_cycles(const isa::Instruction& in) override;

 private:
  gpsimd_engine_params gparams_;
};

}  // namespace trnsim::models
