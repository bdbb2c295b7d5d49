// Internal to the interpreter: the kernel table and helpers the kernel files share.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/tensor.h"

namespace trnsim::interp {

using ir::ElemType;
using ir::Node;
using ir::Shape;
using ir::Tensor;

// A kernel reads `in` (null = absent optional input) and fills `out`, which the
// caller allocated with the node's output types (zero-filled). Normalization of
// narrow types happens after the kernel returns.
using Ins = std::vector<const Tensor*>;
using Outs = std::vector<Tensor>;
using Kernel = std::function<void(const Node&, const Ins&, Outs&)>;
using KernelMap = std::map<std::string, Kernel, std::less<>>;

void register_elementwise(KernelMap& m);
void register_nn(KernelMap& m);
void register_reduce(KernelMap& m);
void register_shape(KernelMap& m);
void register_trn(KernelMap& m);  // trn.* ops of the graph passes (kernels_trn.cpp)
// Scatter/gather, data-shaped, quantisation, loss and window ops (kernels_scatter.cpp).
void register_scatter(KernelMap& m);
void register_index(KernelMap& m);    // Resize, TopK, Einsum, GridSample, ... (kernels_index.cpp)
void register_rnn(KernelMap& m);      // LSTM, GRU, RNN (kernels_rnn.cpp)
void register_control(KernelMap& m);  // If, Loop, Scan (kernels_control.cpp)

[[noreturn]] inline void kfail(const std::string& msg) {
  throw ir::CompileError(msg);
}

// Calls f(std::vector<T>& out_data, const std::vector<T>& in_data) with T = float,
// double (fp64) or int64_t according to the storage kind (both tensors must share it).
template <typename F>
void with_storage(const Tensor& in, Tensor& out, F&& f) {
  if (in.holds_floats() != out.holds_floats() || in.holds_doubles() != out.holds_doubles())
    kfail("internal: storage kinds differ");
  if (in.holds_doubles())
    f(out.doubles(), in.doubles());
  else if (in.holds_floats())
    f(out.floats(), in.floats());
  else
    f(out.ints(), in.ints());
}

// Strides of `in` aligned to an output shape of rank >= in's, 0 on broadcast dims.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Visit every element of `out` in row-major order with the matching flat offsets
// of N broadcast inputs: f(out_index, offsets) where offsets[i] indexes input i.
template <size_t N, typename F>
void for_each_broadcast(const Shape& out, const std::array<const Shape*, N>& ins, F&& f) {
  const size_t rank = out.size();
  int64_t total = ir::num_elements(out);
  if (total == 0) return;
  std::array<std::vector<int64_t>, N> st;
  bool same = true;
  for (size_t i = 0; i < N; ++i) {
    st[i] = broadcast_strides(*ins[i], out);
    same = same && *ins[i] == out;
  }
  std::array<int64_t, N> off{};
  if (same) {
    for (int64_t k = 0; k < total; ++k) {
      off.fill(k);
      f(k, off);
    }
    return;
  }
  if (rank == 0) {
    f(0, off);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const int64_t inner = out[rank - 1];
  std::array<int64_t, N> inner_st;
  for (size_t i = 0; i < N; ++i) inner_st[i] = st[i][rank - 1];
  for (int64_t k = 0; k < total; k += inner) {
    std::array<int64_t, N> base{};
    for (size_t i = 0; i < N; ++i)
      for (size_t d = 0; d + 1 < rank; ++d) base[i] += idx[d] * st[i][d];
    for (int64_t j = 0; j < inner; ++j) {
      for (size_t i = 0; i < N; ++i) off[i] = base[i] + j * inner_st[i];
      f(k + j, off);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
}

// C += A[M,K] * B[K,N] (row-major, leading dims lda/ldb/ldc), blocked so the inner
// loop runs over contiguous N.
void gemm_accumulate(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float* C, int64_t ldc);

}  // namespace trnsim::interp
