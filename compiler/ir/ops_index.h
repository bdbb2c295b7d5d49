// Helpers shared by shape inference (ops.cpp) and the interpreter kernels
// (compiler/interp/kernels_index.cpp) of the index/resampling ops: Einsum's
// equation parser.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/types.h"

namespace trnsim::ir {

// A parsed Einsum equation over concrete input shapes. Every subscript letter and
// every dim an ellipsis covers is a label; labels index `label_size`.
struct EinsumSpec {
  std::vector<int64_t> label_size;
  std::vector<std::vector<int>> in_labels;  // per input, per dim
  std::vector<int> out_labels;              // per output dim
};

// Parses `equation` ("ij,jk->ik", "...ii->...i", implicit "ij,jk") for inputs of
// `shapes`. Ellipsis dims broadcast (numpy rules); a letter must have one size.
// Without "->" the output is the ellipsis dims, then the letters used exactly once
// in ASCII order. Throws CompileError naming the problem.
EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes);

}  // namespace trnsim::ir
