// Scalar (activation) engine: func(in*scale+bias) with optional add-reduce, copies,
// memsets. First-order cost (docs/hardware.md, Engines): max(min_ii, N), +min_ii
// with reduce, plus func_switch_cycles whenever the activation function differs
// from the previous one (its table is reloaded). Not modelled yet: PSUM port
// sharing with the vector engine on NC-v2.
#pragma once

#include "models/engines/engine.h"

namespace trnsim::models {

class scalar_engine : public engine {
 public:
  scalar_engine(const sc_core::sc_module_name& name, const scalar_engine_params& p,
                semaphores& sems, sim_context& ctx);

 protected:
  uint64_t cost_cycles(const isa::Instruction& in) override;

 private:
  scalar_engine_params sparams_;
  int last_func_ = -1;  // no table loaded yet
};

}  // namespace trnsim::models
