// Kernels written with the builder: reusable building blocks for lowering graph
// ops, and the kernels the back-end tests run. Each returns the tile IR; compile it
// with codegen::compile. Shapes that a kernel does not handle yet get a
// KernelError saying what it needs.
#pragma once

#include <cstdint>

#include "compiler/kernels/builder.h"

namespace trnsim::kernels {

// C[M,N] = act(A[M,K] @ W[K,N] + b[N]) with tensors "A", "W", "b" ([1,N], fp32) and
// "C" (`out`). Computes C^T in 128-column chunks so that the bias is per partition
// and the scalar engine applies bias + act while it evacuates PSUM. K and N must be
// multiples of 128; M at most 512 (the moving free size).
tile::Kernel matmul_bias_act(int64_t M, int64_t K, int64_t N, isa::ActFunc act,
                             isa::DType in = isa::DType::bf16, isa::DType out = isa::DType::fp32);

struct GemmOptions {
  bool lhs_transposed = true;  // input "AT" [K,M] (as NKI's matmul kernels take it); else
                               // "A" [M,K], transposed on the tensor engine (matmuls
                               // against an identity, ~1/8 more tensor time at N=512)
  isa::DType in = isa::DType::bf16;
  isa::DType out = isa::DType::bf16;
  int group_m = 0;  // 128-row m-tiles accumulated together (0: up to 8, what fits)
  int n_chunk = 512;
  uint64_t sbuf_bytes = 192 * 1024;  // SBUF per partition the kernel may plan for
};
// C[M,N] = A @ B with "B" [K,N], "C" [M,N]. Blocks of group_m m-tiles x one
// n_chunk accumulate over K in PSUM (k outermost, so the first matmuls need little
// data); the A^T block stays in SBUF for every n-chunk (and the next block's k-tiles
// load as this block's last uses finish); B streams through rotating buffers; PSUM
// is evacuated (cast to `out`) on vector/scalar while the tensor engine works on.
// M, K multiples of 128; N a multiple of n_chunk; group_m shrinks until the block
// fits sbuf_bytes.
tile::Kernel gemm(int64_t M, int64_t K, int64_t N, const GemmOptions& o = {});

// Y = softmax(X) along rows; X, Y [rows, cols] fp32. Rows in tiles of up to 128
// partitions (a shorter last tile); cols up to what a tile holds.
tile::Kernel softmax(int64_t rows, int64_t cols);

// Y = (X - mean) / sqrt(var + eps) * gamma + beta over the last axis; X, Y
// [rows, cols] fp32, gamma/beta [cols].
tile::Kernel layernorm(int64_t rows, int64_t cols, float eps);

}  // namespace trnsim::kernels
