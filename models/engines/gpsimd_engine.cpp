#include "models/engines/gpsimd_engine.h"

#include "models/engines/vector_engine.h"

namespace trnsim::models {

gpsimd_engine::gpsimd_engine(const sc_core::sc_module_name& name, const gpsimd_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::gpsimd, p, sems, ctx), gparams_(p) {}

uint64_t gpsimd_engine::cost_cycles(const isa::Instruction& in) {
  using isa::Opcode;
  switch (in.op) {
    case Opcode::iota:
    case Opcode::affine_select:
    case Opcode::partition_reduce:
    case Opcode::partition_broadcast:
      return gparams_.start_cycles + in.dst.free_elems();
    default:
      return elementwise_cost(in, params_.min_ii_cycles);
  }
}

}  // namespace trnsim::models
