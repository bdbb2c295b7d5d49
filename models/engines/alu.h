// Functional semantics of every compute opcode, on fp32 tiles. No SystemC and no
// timing: the engine modules read operands through their TLM sockets into tiles,
// call execute(), round and write the results back. Loops are plain and
// vectorisable; the semantics are those of docs/isa.md.
#pragma once

#include <cstdint>
#include <vector>

#include "models/isa/instruction.h"

namespace trnsim::models {

// An operand read from memory: `parts` rows of `cols` fp32 values, row-major, in
// the access pattern's iteration order.
struct Tile {
  uint32_t parts = 0;
  uint64_t cols = 0;
  std::vector<float> v;
  void resize(uint32_t p, uint64_t c) { parts = p, cols = c, v.assign(size_t(p) * c, 0.0f); }
  float& at(uint32_t p, uint64_t c) { return v[size_t(p) * cols + c]; }
  float at(uint32_t p, uint64_t c) const { return v[size_t(p) * cols + c]; }
};

struct ExecArgs {
  Tile src[3];  // sources in opcode-table order (matmul: stationary, moving)
  Tile arg0;    // per-partition arg0/scale when in.arg0.is_ap ([P,1])
  Tile arg1;    // per-partition arg1/bias when in.arg1.is_ap
};

struct ExecResult {
  Tile dst;    // shaped as the dst pattern: [dst.partition_count, dst.free_elems()];
               // matmul gives the product only: PSUM adds it when accumulate is set
  Tile accum;  // [P,1] when in.has_accum
};

float eval_act(isa::ActFunc f, float x);
float eval_alu(isa::AluOp op, float a, float b);

// Computes the result of a compute-engine instruction (everything but nop and
// dma_copy). Shapes have been checked by isa::validate.
void execute(const isa::Instruction& in, const ExecArgs& args, ExecResult& out);

}  // namespace trnsim::models
