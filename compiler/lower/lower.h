// Lowering: an ir::Graph (after the default graph pipeline) -> one kernel-builder
// program (tile IR) that the tile passes and codegen compile.
//
// Every graph input, output, constant and intermediate value gets an HBM tensor
// (intermediates are scratch tensors: each node is its own kernel that loads its
// operands from HBM and stores its result there). Values are fp32 in HBM; the
// compute_dtype autocast puts on tensor-engine ops is applied on chip (operands
// cast to bf16/fp8 in SBUF, accumulation in fp32 PSUM).
//
// Lowerable ops (lowerable_ops()): MatMul (2-D, or 3-D batched by looping) and
// trn.MatMulEpilogue with elementwise epilogue steps; elementwise unary/binary ops
// and trn.Elementwise on [rows, cols] layouts (leading dims flattened onto
// partitions; activations, Clip, Pow, rounding, comparisons/logic as 0/1, Where as
// a select: elementwise.cpp); Softmax/LogSoftmax on any axis, trn.LayerNorm,
// trn.RMSNorm and Reduce{Sum,Mean,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp}
// over any axes (rows of any length, in column chunks: rowwise.cpp);
// Reshape/Flatten/Squeeze/Unsqueeze/Identity as HBM aliases; Transpose as a
// strided HBM -> HBM DMA. Conv (1-D/2-D, any groups; trn.MatMulEpilogue on a Conv) as
// implicit GEMM (depthwise on the vector engines); MaxPool/AveragePool (1-D/2-D)
// and GlobalAveragePool/GlobalMaxPool. Operands of binary ops may broadcast as a full tensor,
// a row vector over the last axis, a column (last dim 1) or a scalar (other
// broadcasts: expanded once into an HBM scratch copy).
// Concat/Split/Slice/Pad/Expand/Tile and constant-index Gather as HBM DMAs, Gather
// of runtime indices on axis 0 as a one-hot matmul (only when the indices are proven
// in range), Cast between fp32/int/bool (integers and bools are fp32 0/1 on the
// device, see hbm_type; nodes whose integers are not provably exact are refused,
// int_range.h). trn.TileKernel (a user kernel's tile IR) is spliced in with its
// input/output tensors bound to the node's values' tensors. Tiles follow the target's partition
// count. Anything else throws ir::UnsupportedError naming the node, its op type and the lowerable
// set.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/target.h"
#include "compiler/tile/ir.h"

namespace trnsim::lower {

tile::Kernel lower_graph(const ir::Graph& g, const compiler::Target& t);

// The HBM tensor name of a graph value: characters outside [A-Za-z0-9_.] become
// '_', a leading digit or '.' gets "t_" in front, and "_N" keeps names unique among
// `used` (which it extends). Graph inputs and outputs keep their names when valid.
std::string tensor_name(const std::string& value_name, std::set<std::string>& used);

// The program tensor names lower_graph gives the graph's inputs and outputs, by
// value name (tensor_name applied to inputs, then outputs, in graph order).
std::map<std::string, std::string> io_tensor_names(const ir::Graph& g);

// The op types lower_graph handles, sorted.
const std::vector<std::string>& lowerable_ops();

}  // namespace trnsim::lower
