#include "models/engines/vector_engine.h"

#include <algorithm>

namespace trnsim::models {

vector_engine::vector_engine(const sc_core::sc_module_name& name, const vector_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::vector, p, sems, ctx), vparams_(p) {}

uint64_t elementwise_cost(const isa::Instruction& in, uint32_t min_ii,
                          const vector_engine_params* vec) {
  using isa::Opcode;
  const uint64_t n = in.nsrc > 0 ? in.src[0].free_elems() : in.dst.free_elems();
  const uint64_t one = std::max<uint64_t>(min_ii, n);
  const bool bf16_out = in.dst.dtype == isa::DType::bf16;
  auto sbuf_bf16 = [](const isa::AccessPattern& ap) {
    return ap.dtype == isa::DType::bf16 && ap.space == isa::MemSpace::sbuf;
  };
  // trn2 performance modes (docs/hardware.md, Engines): bf16 SBUF->SBUF copies and
  // tensor_scalar run 4x when contiguous, 2x otherwise; bf16 tensor_tensor from SBUF
  // runs 2x.
  const bool perf = vec && vec->perf_modes;
  const bool div = in.op0 == isa::AluOp::div || in.op1 == isa::AluOp::div;
  const uint64_t div_factor = vec && div ? vec->reciprocal_slowdown : 1;
  switch (in.op) {
    case Opcode::tensor_tensor: {
      const bool psum_in =
          in.src[0].space == isa::MemSpace::psum || in.src[1].space == isa::MemSpace::psum;
      const bool fast = perf && sbuf_bf16(in.src[0]) && sbuf_bf16(in.src[1]);
      return std::max<uint64_t>(min_ii, (psum_in || fast ? n : 2 * n) * div_factor);
    }
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy: {
      uint64_t c = n * div_factor;
      if (perf && sbuf_bf16(in.src[0]) && sbuf_bf16(in.dst))
        c = (in.src[0].free_contiguous() && in.dst.free_contiguous()) ? (c + 3) / 4 : (c + 1) / 2;
      return std::max<uint64_t>(min_ii, c) + (in.has_accum ? min_ii : 0);
    }
    case Opcode::tensor_reduce: {
      const bool fast = bf16_out && in.src[0].dtype == isa::DType::bf16 &&
                        (in.op0 == isa::AluOp::add || in.op0 == isa::AluOp::max);
      return std::max<uint64_t>(min_ii, fast ? (n + 1) / 2 : n);
    }
    case Opcode::memset: {
      const bool fast = bf16_out && in.arg0.imm == 0.0f;
      return std::max<uint64_t>(min_ii, fast ? (n + 1) / 2 : n);
    }
    default:  // select, bn_stats, bn_aggr, and the rest at 1 element/cycle
      return one;
  }
}

uint64_t vector_engine::cost_cycles(const isa::Instruction& in) {
  return elementwise_cost(in, params_.min_ii_cycles, &vparams_);
}

}  // namespace trnsim::models
