#include "models/engines/tensor_engine.h"

#include <algorithm>

namespace trnsim::models {

tensor_engine::tensor_engine(const sc_core::sc_module_name& name, const tensor_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::tensor, p, sems, ctx), tparams_(p) {}

uint64_t tensor_engine::cost_cycles(const isa::Instruction& in) {
  switch (in.op) {
    case isa::Opcode::matmul: {
      const uint64_t n = in.src[1].free_elems();
      const bool fp32 = in.src[0].dtype == isa::DType::fp32 || in.src[1].dtype == isa::DType::fp32;
      return std::max<uint64_t>(n, params_.min_ii_cycles) * (fp32 ? tparams_.fp32_slowdown : 1);
    }
    case isa::Opcode::transpose: {
      const uint64_t p = in.src[0].partition_count, f = in.src[0].free_elems();
      return std::max<uint64_t>(p, std::min<uint64_t>(64, f));
    }
    default:
      return 1;
  }
}

}  // namespace trnsim::models
