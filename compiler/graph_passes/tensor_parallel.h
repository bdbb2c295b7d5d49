// Megatron-style tensor parallelism (trnsim run MODEL.onnx --tp N): each rank of an
// SPMD launch gets the graph with its shard of every MatMul pair's weights.
//
// A pair is MatMul(x, W1) -> elementwise nodes -> MatMul(h, W2) with W1 [K,H] and
// W2 [H,O] constants (after canonicalize: Gemm is MatMul + Add). The first MatMul
// is split by columns (rank r keeps W1[:, r*H/N : (r+1)*H/N]) and the elementwise
// nodes run on that slice of the hidden axis (their constants along it, e.g. the
// bias, sliced alike); the second by rows (W2[r*H/N : (r+1)*H/N, :]), so each rank
// computes a partial sum of the second MatMul, and a trn.AllReduce over the ranks
// completes it before whatever follows (the second bias adds once, after it).
// Elementwise nodes: unary ones and binary ones whose other operand is a constant
// that broadcasts along the hidden axis (size 1 or H there, 1 elsewhere); nothing
// outside the pair may read a value inside it.
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
