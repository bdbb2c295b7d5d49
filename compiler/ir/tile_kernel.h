// trn.TileKernel: a user kernel written in tile IR (trnsim.kernels in Python,
// traced at ONNX export) standing as one graph node.
//
//   trn.TileKernel(X0, X1, ...){tir, inputs, outputs} -> Y0, Y1, ...
//       tir: the kernel's tile-IR text (compiler/tile/text.cpp), traced for
//       exactly these input shapes and types. inputs / outputs: comma-separated
//       names of the kernel's HBM tensors bound to the node's inputs / outputs in
//       order; every tensor of role input or output is bound exactly once.
//       Output types are the bound tensors' shapes and types.
//
// The device lowering splices the kernel's ops into the program with its bound
// tensors addressing the node's values (compiler/lower/lower.cpp); the reference
// interpreter cannot run tile IR, so on the host the node is refused.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tile/ir.h"

namespace trnsim::ir {

struct TileKernelOp {
  // Parsed once per text: shape inference asks for it on every pass.
  std::shared_ptr<const tile::Kernel> kernel;
  std::vector<int> inputs, outputs;  // kernel tensor index per node input / output
};

// Parses and checks the node's kernel against its inputs (count, shapes, types).
// Throws CompileError saying what is wrong (without the node label).
TileKernelOp tile_kernel_of(const Node& n);

std::vector<TensorType> infer_trn_tile_kernel(const Node& n);

}  // namespace trnsim::ir
