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
// the output projection row-split). A graph input read with a split value along
// the split axis (a KV cache concatenated with the new token's keys, split by
// heads) splits too: each rank declares only its slice. A split graph output (the
// new token's keys) holds each rank's slice; the runtime gathers them. A MatMul
// whose split result would reach anything else (a reduction over the split axis)
// stays whole; so does a graph input also read whole elsewhere.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace trnsim::graph_passes {

// Rewrites `g` for rank `rank` of `size`; returns the pairs split. The all-reduces'
// group is launch ranks first_rank .. first_rank + size - 1 (data parallel replicas
// of a tensor-parallel group: replica d starts at d x size). Throws
// ir::CompileError when size does not divide a pair's hidden size, or when no pair
// is found (the message names the MatMuls looked at).
// `split`, if given, receives the graph inputs and outputs split across the ranks.
struct TensorParallelSplit {
  // Value name -> axis; rank r of N holds indices [r x n/N, (r+1) x n/N) of it.
  std::map<std::string, int> inputs, outputs;
};
// Also throws when a graph input would split along an axis `size` does not divide
// (a KV cache of 4 heads on 8 ranks), naming the input and its shape.
int tensor_parallel(ir::Graph& g, int rank, int size, int first_rank = 0,
                    TensorParallelSplit* split = nullptr);

}  // namespace trnsim::graph_passes
