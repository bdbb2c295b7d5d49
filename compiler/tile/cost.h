// First-order cost estimates of tile ops on the target (compiler/target.h), the
// numbers the engine-assignment, DMA-queue and scheduling passes compare. They
// mirror the simulator's cost models in shape, not in every detail.
#pragma once

#include "compiler/target.h"
#include "compiler/tile/ir.h"

namespace trnsim::tile {

// Whether `e` can run `op`: the opcode table, plus the memory rules the opcode
// table does not capture (gpsimd cannot touch PSUM).
bool engine_can_run(const Op& op, isa::Engine e);

// Estimated time of `op` on engine `e` [ns] (dma: one transfer on one engine).
double op_cost_ns(const compiler::Target& t, const Op& op, isa::Engine e);
inline double op_cost_ns(const compiler::Target& t, const Op& op) {
  return op_cost_ns(t, op, op.engine);
}

// Contiguous chunks (descriptors) a DMA moves for one side of a transfer.
uint64_t dma_descriptors(const isa::AccessPattern& ap);

}  // namespace trnsim::tile
