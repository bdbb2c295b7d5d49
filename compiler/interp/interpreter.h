// The fp32 reference interpreter: executes an ir::Graph on host tensors. It is the
// oracle every simulated result is compared with, so it follows ONNX semantics
// exactly and favours plain, checkable loops over speed (conv is im2col + a
// blocked matmul, so a 224x224 ResNet-18 runs in seconds).
//
// Tensors are ir::Tensor (compiler/ir/tensor.h): floats for fp32/fp16/bf16/fp8,
// int64 for integer and bool types. Kernels compute in float (reductions and
// normalisations accumulate in double) or int64, and every result is normalized
// into its element type (narrow floats rounded, narrow integers wrapped).
// Integer Div truncates toward zero and gives 0 for x/0 (the C++ operation would
// trap); integer Mod by 0 gives 0.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/tensor.h"

namespace trnsim::interp {

using ir::Tensor;
using TensorMap = std::map<std::string, Tensor>;

struct RunOptions {
  // Also return every intermediate value (by value name), not just the outputs.
  bool keep_intermediates = false;
  // false: the pure fp32 reference (compute_dtype attributes are ignored).
  // true: emulate the chip's precision policy -- on a node with compute_dtype
  // (MatMul/Gemm/Conv/ConvTranspose/trn.MatMulEpilogue, set by the autocast graph
  // pass) the operands, inputs 0 and 1, are rounded to that type (isa::round_to)
  // before the fp32 kernel runs; bias, accumulation and epilogue stay fp32. Use it
  // to compare a compiled graph with the simulator like with like.
  bool emulate_precision = false;
};

// Run `g` on `inputs` (one tensor per graph input, by name, with exactly the
// input's type). Returns the graph outputs by name (plus intermediates if asked).
// Throws ir::CompileError naming the node or input at fault.
TensorMap run(const ir::Graph& g, const TensorMap& inputs, const RunOptions& opts = {});

// Evaluate one node on input tensors (null for absent optional inputs). The output
// types are the node's output value types. Used by constant folding.
std::vector<Tensor> eval_node(const ir::Node& n, const std::vector<const Tensor*>& inputs);

// Whether the interpreter has a kernel for an op type (it has one for every op in
// ir::op_names(); this is for consistency checks).
bool has_kernel(std::string_view op);

}  // namespace trnsim::interp
