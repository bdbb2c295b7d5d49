#include "models/engines/scalar_engine.h"

#include <algorithm>

namespace trnsim::models {

scalar_engine::scalar_engine(const sc_core::sc_module_name& name, const scalar_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::scalar, p, sems, ctx), sparams_(p) {}

uint64_t scalar_engine::cost_cycles(const isa::Instruction& in) {
  const uint64_t n = in.nsrc > 0 ? in.src[0].free_elems() : in.dst.free_elems();
  uint64_t c = std::max<uint64_t>(params_.min_ii_cycles, n);
  if (in.has_accum) c += params_.min_ii_cycles;
  if (in.op == isa::Opcode::activation) {
    if (last_func_ != static_cast<int>(in.func)) c += sparams_.func_switch_cycles;
    last_func_ = static_cast<int>(in.func);
  }
  return c;
}

}  // namespace trnsim::models
