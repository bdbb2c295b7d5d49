// Megatron-style tensor parallelism (trnsim run MODEL.onnx --tp N): each rank of an
// SPMD launch gets the graph with its shard of the weights.
//
// A MatMul with a constant weight W1 [K,H] whose result can be carried, split, to
// a MatMul with a constant weight W2 [H',O] is split by columns (rank r keeps
// W1[:, r*H/N : (r+1)*H/N]); the second by rows, so each rank computes a partial
// sum of it, and a trn.AllReduce over the ranks completes it before whatever
// follows (its bias adds once, after it). Between them the split values go
// through elementwise nodes (constants along the split axis, e.g. a bias, sliced
// alike), Reshape (the split axis's outer factor: [B,S,H*D] -> [B,S,H,D] splits by
// heads), Transpose, Softmax over another axis, and MatMuls of two split values
// batched over the split axis: an MLP, and attention by heads (Q, K and V split,
// the output projection row-split). A MatMul whose split result would reach
// anything else (a graph output, a reduction over the split axis) stays whole.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace trnsim::graph_passes {

// Rewrites `g` for rank `rank` of `size`; returns the pairs split. The all-reduces'
// group is launch ranks first_rank .. first_rank + size - 1 (data parallel replicas
// of a tensor-parallel group: replica d starts at d x size). Throws
// ir::CompileError when size does not divide a pair's hidden size, or when no pair
// is found (the message names the MatMuls looked at).
int tensor_parallel(ir::Graph& g, int rank, int size, int first_rank = 0);

}  // namespace trnsim::graph_passes
