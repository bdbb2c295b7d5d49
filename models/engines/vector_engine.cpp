#include "models/engines/vector_engine.h"

#include <algorithm>

namespace trnsim::models {

vector_engine::vector_engine(const sc_core::sc_module_name& name, const vector_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::vector, p, sems, ctx), vparams_(p) {}

uint64_t elementwise_cost(const isa::Instruction& in, uint32_t min_ii) {
  using isa::Opcode;
  const uint64_t n = in.nsrc > 0 ? in.src[0].free_elems() : in.dst.free_elems();
  const uint64_t one = std::max<uint64_t>(min_ii, n);
  const bool bf16_out = in.dst.dtype == isa::DType::bf16;
  switch (in.op) {
    case Opcode::tensor_tensor: {
      const bool psum_in =
          in.src[0].space == isa::MemSpace::psum || in.src[1].space == isa::MemSpace::psum;
      return psum_in ? one : std::max<uint64_t>(min_ii, 2 * n);
    }
    case Opcode::tensor_scalar:
      return one + (in.has_accum ? min_ii : 0);
    case Opcode::tensor_reduce: {
      const bool fast = bf16_out && in.src[0].dtype == isa::DType::bf16 &&
                        (in.op0 == isa::AluOp::add || in.op0 == isa::AluOp::max);
      return std::max<uint64_t>(min_ii, fast ? (n + 1) / 2 : n);
    }
    case Opcode::memset: {
      const bool fast = bf16_out && in.arg0.imm == 0.0f;
      return std::max<uint64_t>(min_ii, fast ? (n + 1) / 2 : n);
    }
    default:  // tensor_copy, select, bn_stats, bn_aggr, and the rest at 1 element/cycle
      return one;
  }
}

uint64_t vector_engine::cost_cycles(const isa::Instruction& in) {
  return elementwise_cost(in, params_.min_ii_cycles);
}

}  // namespace trnsim::models
