// What the compiler knows for a roofline: each graph op's FLOPs and the HBM bytes
// it must move at minimum, grouped by op kind, and which kind each instruction of
// the compiled program came from (the runtime attributes simulated time with it).
//
// Kinds are op types the user wrote: a node of the lowered graph belongs to the
// ONNX op type of its principal origin (ir::Node::origin; the tensor-engine op of a
// fused node, else its first origin), so a fused MatMul + Add + Relu counts as
// MatMul, with Add and Relu listed as fused into it.
//
// FLOPs (counted on the lowered graph, fused bodies step by step): MatMul/Gemm
// 2 x M x K x N (batched: x batch) at the node's compute dtype; Conv 2 x output
// elements x Cin/group x kernel elements, ConvTranspose 2 x input elements x
// Cout/group x kernel elements; every other FLOP is fp32 (vector/scalar engines):
// elementwise ops 1 per output element, Softmax/LogSoftmax 5, LayerNorm 8, RMSNorm
// 4 per element, reductions 1 per input element, pools 1 per window element per
// output; data movement (Reshape, Transpose, Concat, Slice, Gather, Cast, ...) and
// user tile kernels 0.
//
// Minimum HBM bytes: only what must live in HBM does, the rest could stay on chip.
// An op: its inputs that are graph inputs or weights (constants), seen through
// Reshape-like aliases, plus its outputs that are graph outputs. The program: every
// graph input and weight read once plus every graph output written once. Bytes are
// of the values as the program stores them (bf16/fp16 2, everything else 4: the
// device holds integers and bools as fp32); an fp32 constant weight of a matmul or
// convolution with a narrower compute_dtype counts at that dtype's size (lowering
// casts it once at compile time; the program reads only the cast copy).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tile/ir.h"
#include "models/isa/dtype.h"
#include "models/isa/program.h"

namespace trnsim::compiler {

using FlopsByDtype = std::array<double, isa::kNumDTypes>;

struct RooflineKind {
  std::string name;    // ONNX op type ("MatMul"), or the graph op type without an origin
  uint64_t count = 0;  // ONNX nodes of this kind (distinct principal origins)
  FlopsByDtype flops{};
  uint64_t min_bytes = 0;
  std::map<std::string, uint64_t> fused;  // other ONNX op types fused into its nodes
  double total_flops() const;
};

struct ProgramRoofline {
  std::vector<RooflineKind> kinds;
  // Per queue of the program, per instruction: index into `kinds`, -1 for none.
  // Empty when the program's queues do not match the kernel (no attribution).
  std::vector<std::vector<int32_t>> instr_kind;
  FlopsByDtype flops{};    // whole program: every node's
  uint64_t min_bytes = 0;  // graph inputs + weights read once + graph outputs written once
  double total_flops() const;
};

// FLOPs of one node of a lowered graph, added to `out` by dtype (see the top).
void node_flops(const ir::Node& n, FlopsByDtype& out);

// `g`: the graph lower_graph lowered; `k`: the kernel after the tile passes (its
// ops' `node` index g's nodes); `p`: the program codegen made of `k`.
ProgramRoofline analyse_roofline(const ir::Graph& g, const tile::Kernel& k, const isa::Program& p);

}  // namespace trnsim::compiler
