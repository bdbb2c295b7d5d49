#include "compiler/tile/cost.h"

#include <algorithm>

namespace trnsim::tile {

namespace {

bool touches_psum(const Op& op) {
  for (const Operand& o : operands(op))
    if (o.ap->space == isa::MemSpace::psum) return true;
  return false;
}

bool sbuf_bf16(const isa::AccessPattern& ap) {
  return ap.dtype == isa::DType::bf16 && ap.space == isa::MemSpace::sbuf;
}

// Vector/gpsimd elementwise cycles (without the static overhead).
double elementwise_cycles(const compiler::Target& t, const isa::Instruction& in, uint32_t min_ii,
                          bool vector) {
  using isa::Opcode;
  const double n = static_cast<double>(in.nsrc > 0 ? in.src[0].free_elems() : in.dst.free_elems());
  const bool perf = vector && t.vector_perf_modes;
  const bool div = in.op0 == isa::AluOp::div || in.op1 == isa::AluOp::div;
  const double divf = vector && div ? t.vector_divide_slowdown : 1;
  const double ii = min_ii;
  switch (in.op) {
    case Opcode::tensor_tensor: {
      const bool psum_in =
          in.src[0].space == isa::MemSpace::psum || in.src[1].space == isa::MemSpace::psum;
      const bool fast = perf && sbuf_bf16(in.src[0]) && sbuf_bf16(in.src[1]);
      return std::max(ii, (psum_in || fast ? n : 2 * n) * divf);
    }
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy: {
      double c = n * divf;
      if (perf && sbuf_bf16(in.src[0]) && sbuf_bf16(in.dst))
        c = in.src[0].free_contiguous() && in.dst.free_contiguous() ? c / 4 : c / 2;
      return std::max(ii, c) + (in.has_accum ? ii : 0);
    }
    case Opcode::tensor_reduce: {
      const bool fast = in.dst.dtype == isa::DType::bf16 && in.src[0].dtype == isa::DType::bf16;
      return std::max(ii, fast ? n / 2 : n);
    }
    default:
      return std::max(ii, n);
  }
}

}  // namespace

bool engine_can_run(const Op& op, isa::Engine e) {
  if (!isa::engine_allows(e, op.ins.op)) return false;
  if (e == isa::Engine::gpsimd && touches_psum(op)) return false;
  return true;
}

uint64_t dma_descriptors(const isa::AccessPattern& ap) {
  if (ap.free_contiguous()) return ap.partition_count;
  const int inner = ap.innermost_dim();
  const uint64_t run = inner >= 0 && ap.dims[inner].stride == 1 ? ap.dims[inner].size : 1;
  return ap.elems() / std::max<uint64_t>(run, 1);
}

double op_cost_ns(const compiler::Target& t, const Op& op, isa::Engine e) {
  const isa::Instruction& in = op.ins;
  if (e == isa::Engine::dma) {
    if (in.op != isa::Opcode::dma_copy) return t.dma_fixed_ns;
    const double bytes = static_cast<double>(std::max(in.dst.bytes(), in.src[0].bytes()));
    const double desc =
        static_cast<double>(std::max(dma_descriptors(in.dst), dma_descriptors(in.src[0])));
    // With every engine busy each gets 1/engines of the chip's HBM and of the core's
    // shared DMA rate, and each descriptor holds that rate for engines x its cost.
    const double engines = std::max<uint32_t>(1, t.dma_engines);
    const double bw =
        std::min({t.dma_bandwidth_bytes_per_ns, t.hbm_bandwidth_bytes_per_ns / engines,
                  t.dma_core_bandwidth_bytes_per_ns / engines});
    const double desc_ns = std::max(t.dma_descriptor_ns, t.dma_core_descriptor_ns * engines);
    return t.dma_fixed_ns + desc * desc_ns + bytes / bw;
  }
  const compiler::EngineCost& c = t.engine_cost(e);
  const double ii = c.min_ii_cycles;
  double cycles = c.overhead_cycles;
  const double n = static_cast<double>(in.nsrc > 0 ? in.src[0].free_elems() : in.dst.free_elems());
  switch (e) {
    case isa::Engine::tensor:
      if (in.op == isa::Opcode::matmul) {
        const bool fp32 =
            in.src[0].dtype == isa::DType::fp32 || in.src[1].dtype == isa::DType::fp32;
        const double mov = static_cast<double>(isa::matmul_dims(in).N);
        cycles = (t.tensor_pipelined ? 0 : cycles) +
                 std::max(mov, ii) * (fp32 ? t.matmul_fp32_slowdown : 1);
      } else if (in.op == isa::Opcode::transpose) {
        const double p = in.src[0].partition_count;
        cycles += std::max(p, std::min(ii, n));
      }
      break;
    case isa::Engine::vector:
      cycles += elementwise_cycles(t, in, c.min_ii_cycles, true);
      break;
    case isa::Engine::scalar:
      cycles += std::max(ii, n) + (in.has_accum ? ii : 0);
      break;
    case isa::Engine::gpsimd:
      switch (in.op) {
        case isa::Opcode::iota:
        case isa::Opcode::affine_select:
        case isa::Opcode::partition_reduce:
        case isa::Opcode::partition_broadcast:
          cycles += t.gpsimd_start_cycles + static_cast<double>(in.dst.free_elems());
          break;
        default:
          cycles += elementwise_cycles(t, in, c.min_ii_cycles, false);
      }
      break;
    default:
      break;
  }
  return cycles / c.clock_hz * 1e9;
}

}  // namespace trnsim::tile
