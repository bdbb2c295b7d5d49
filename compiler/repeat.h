// Repeated blocks: the first step of compiling a stack of identical layers once.
//
// A model that is a stack of layers (GPT-2's 12 blocks, Llama's 32) lists, after the
// graph passes, the same run of nodes once per layer: same ops, attributes, value
// types and wiring, different weights. find_repeated_blocks finds the longest such
// run of equal consecutive blocks. Today each block is still lowered and scheduled
// on its own (compile time grows with the layer count); the figures go to the
// compile stats ("repeat.*") and `trnsim compile` names them. README "Compile and
// simulation speed" describes how a block's program would be reused.
#pragma once

#include <cstddef>

#include "compiler/ir/graph.h"

namespace trnsim::compiler {

struct RepeatedBlocks {
  size_t start = 0;  // index of the first block's first node in Graph::nodes()
  size_t nodes = 0;  // nodes per block
  size_t count = 0;  // blocks (0: none; else >= 2)
};

// Blocks are equal when node by node they have the same op, attributes and output
// types, read the same values of their own block (by position), the same-typed
// outside values in the same order of first use, and constants of the same type
// (small constants, up to 64 elements, of the same data: they may steer lowering).
// The run covering the most nodes wins; on a tie, the shorter block.
RepeatedBlocks find_repeated_blocks(const ir::Graph& g);

}  // namespace trnsim::compiler
