// Kernels for matmul-like, convolution, pooling, normalisation and softmax ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"

namespace trnsim::interp {

void gemm_accumulate(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float* C, int64_t ldc) {
  // Block over N and K so a slab of B stays in cache while every row of A uses it;
  // the inner loop is a contiguous axpy the compiler vectorizes.
  constexpr int64_t kNB = 512, kKB = 128;
  for (int64_t n0 = 0; n0 < N; n0 += kNB) {
    const int64_t n1 = std::min(N, n0 + kNB);
    for (int64_t k0 = 0; k0 < K; k0 += kKB) {
      const int64_t k1 = std::min(K, k0 + kKB);
      for (int64_t i = 0; i < M; ++i) {
        float* __restrict c = C + i * ldc;
        const float* a = A + i * lda;
        for (int64_t k = k0; k < k1; ++k) {
          const float av = a[k];
          const float* __restrict b = B + k * ldb;
          for (int64_t j = n0; j < n1; ++j) c[j] += av * b[j];
        }
      }
    }
  }
}

namespace {

// Integer matmul with wrapping (C += A @ B).
void gemm_int(int64_t M, int64_t N, int64_t K, const int64_t* A, const int64_t* B, int64_t* C) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      uint64_t av = static_cast<uint64_t>(A[i * K + k]);
      for (int64_t j = 0; j < N; ++j)
        C[i * N + j] = static_cast<int64_t>(static_cast<uint64_t>(C[i * N + j]) +
                                            av * static_cast<uint64_t>(B[k * N + j]));
    }
}

// C += A[M,K] * B[K,N] in double (fp64 MatMul: a plain loop, exact order).
void gemm_double(int64_t M, int64_t N, int64_t K, const double* A, const double* B, double* C) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const double av = A[i * K + k];
      for (int64_t j = 0; j < N; ++j) C[i * N + j] += av * B[k * N + j];
    }
}

void matmul(const Node&, const Ins& in, Outs& out) {
  Shape a = in[0]->shape(), b = in[1]->shape();
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = ir::broadcast_shapes({ba, bb});
  // Batch offsets (in matrices) of A and B for every batch index.
  std::vector<int64_t> offa, offb;
  for_each_broadcast<2>(batch, {&ba, &bb}, [&](int64_t, const std::array<int64_t, 2>& off) {
    offa.push_back(off[0]);
    offb.push_back(off[1]);
  });
  Tensor& o = out[0];
  for (size_t bi = 0; bi < offa.size(); ++bi) {
    if (o.holds_doubles())
      gemm_double(M, N, K, in[0]->doubles().data() + offa[bi] * M * K,
                  in[1]->doubles().data() + offb[bi] * K * N, o.doubles().data() + bi * M * N);
    else if (o.holds_floats())
      gemm_accumulate(M, N, K, in[0]->floats().data() + offa[bi] * M * K, K,
                      in[1]->floats().data() + offb[bi] * K * N, N, o.floats().data() + bi * M * N,
                      N);
    else
      gemm_int(M, N, K, in[0]->ints().data() + offa[bi] * M * K,
               in[1]->ints().data() + offb[bi] * K * N, o.ints().data() + bi * M * N);
  }
}

std::vector<float> transposed(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}
std::vector<int64_t> transposed(const std::vector<int64_t>& x, int64_t rows, int64_t cols) {
  std::vector<int64_t> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

void gemm(const Node& n, const Ins& in, Outs& out) {
  const Shape& sa = in[0]->shape();
  const Shape& sb = in[1]->shape();
  bool ta = n.attr_int("transA") != 0, tb = n.attr_int("transB") != 0;
  const int64_t M = out[0].shape()[0], N = out[0].shape()[1], K = ta ? sa[0] : sa[1];
  const double alpha = n.attr_float("alpha"), beta = n.attr_float("beta");
  const Tensor* c = in.size() > 2 ? in[2] : nullptr;
  if (out[0].holds_floats()) {
    std::vector<float> A = ta ? transposed(in[0]->floats(), sa[0], sa[1]) : in[0]->floats();
    std::vector<float> B = tb ? transposed(in[1]->floats(), sb[0], sb[1]) : in[1]->floats();
    std::vector<float> prod(M * N, 0.0f);
    gemm_accumulate(M, N, K, A.data(), K, B.data(), N, prod.data(), N);
    auto& o = out[0].floats();
    for (int64_t k = 0; k < M * N; ++k) o[k] = static_cast<float>(alpha * prod[k]);
    if (c) {
      const auto& cd = c->floats();
      for_each_broadcast<1>(out[0].shape(), {&c->shape()},
                            [&](int64_t k, const std::array<int64_t, 1>& off) {
                              o[k] = static_cast<float>(o[k] + beta * cd[off[0]]);
                            });
    }
  } else {
    std::vector<int64_t> A = ta ? transposed(in[0]->ints(), sa[0], sa[1]) : in[0]->ints();
    std::vector<int64_t> B = tb ? transposed(in[1]->ints(), sb[0], sb[1]) : in[1]->ints();
    auto& o = out[0].ints();
    gemm_int(M, N, K, A.data(), B.data(), o.data());
    for (auto& v : o) v = static_cast<int64_t>(alpha * static_cast<double>(v));
    if (c) {
      const auto& cd = c->ints();
      for_each_broadcast<1>(out[0].shape(), {&c->shape()},
                            [&](int64_t k, const std::array<int64_t, 1>& off) {
                              o[k] += static_cast<int64_t>(beta * static_cast<double>(cd[off[0]]));
                            });
    }
  }
}

// For every kernel position kk (row-major over the kernel dims) and every output
// position p (row-major over the output dims), the flat spatial offset of the input
// element the window reads: >= 0 inside the input, kPad in the padding, kBeyond
// past the end padding (only ceil_mode windows reach there).
constexpr int64_t kPad = -1, kBeyond = -2;
struct WindowTable {
  int64_t kk_count = 1, p_count = 1, in_count = 1;
  std::vector<int64_t> off;  // [kk_count * p_count]
};

WindowTable window_table(const ir::WindowGeometry& g) {
  const size_t k = g.kernel.size();
  WindowTable t;
  for (size_t d = 0; d < k; ++d) {
    t.kk_count *= g.kernel[d];
    t.p_count *= g.out[d];
    t.in_count *= g.in[d];
  }
  t.off.assign(t.kk_count * t.p_count, 0);
  std::vector<int64_t> in_strides = ir::strides_of(g.in);
  std::vector<int64_t> kidx, oidx;
  kidx.resize(k);
  oidx.resize(k);
  for (int64_t kk = 0; kk < t.kk_count; ++kk) {
    std::fill(oidx.begin(), oidx.end(), 0);
    for (int64_t p = 0; p < t.p_count; ++p) {
      int64_t off = 0;
      for (size_t d = 0; d < k && off >= 0; ++d) {
        int64_t i = oidx[d] * g.strides[d] - g.pads_begin[d] + kidx[d] * g.dilations[d];
        if (i < 0)
          off = kPad;
        else if (i >= g.in[d])
          off = i >= g.in[d] + g.pads_end[d] ? kBeyond : kPad;
        else
          off += i * in_strides[d];
      }
      // A window position both in the begin padding of one dim and beyond the end
      // of another counts as beyond.
      if (off == kPad)
        for (size_t d = 0; d < k; ++d)
          if (oidx[d] * g.strides[d] - g.pads_begin[d] + kidx[d] * g.dilations[d] >=
              g.in[d] + g.pads_end[d])
            off = kBeyond;
      t.off[kk * t.p_count + p] = off;
      for (size_t d = k; d-- > 0;) {
        if (++oidx[d] < g.out[d]) break;
        oidx[d] = 0;
      }
    }
    for (size_t d = k; d-- > 0;) {
      if (++kidx[d] < g.kernel[d]) break;
      kidx[d] = 0;
    }
  }
  return t;
}

void conv(const Node& n, const Ins& in, Outs& out) {
  ir::WindowGeometry g = ir::window_geometry(n);
  WindowTable t = window_table(g);
  const Shape& xs = in[0]->shape();
  const Shape& ws = in[1]->shape();
  const int64_t N = xs[0], C = xs[1], M = ws[0], G = n.attr_int("group");
  const int64_t Cg = C / G, Mg = M / G, KK = t.kk_count, P = t.p_count, S = t.in_count;
  const auto& x = in[0]->floats();
  const auto& w = in[1]->floats();
  auto& y = out[0].floats();
  std::vector<float> col(Cg * KK * P);
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t gi = 0; gi < G; ++gi) {
      // im2col: row (c, kk), column p.
      for (int64_t c = 0; c < Cg; ++c) {
        const float* xc = x.data() + (b * C + gi * Cg + c) * S;
        for (int64_t kk = 0; kk < KK; ++kk) {
          float* row = col.data() + (c * KK + kk) * P;
          const int64_t* off = t.off.data() + kk * P;
          for (int64_t p = 0; p < P; ++p) row[p] = off[p] >= 0 ? xc[off[p]] : 0.0f;
        }
      }
      gemm_accumulate(Mg, P, Cg * KK, w.data() + gi * Mg * Cg * KK, Cg * KK, col.data(), P,
                      y.data() + (b * M + gi * Mg) * P, P);
    }
  }
  if (in.size() > 2 && in[2]) {
    const auto& bias = in[2]->floats();
    for (int64_t b = 0; b < N; ++b)
      for (int64_t m = 0; m < M; ++m) {
        float* ym = y.data() + (b * M + m) * P;
        for (int64_t p = 0; p < P; ++p) ym[p] += bias[m];
      }
  }
}

void conv_transpose(const Node& n, const Ins& in, Outs& out) {
  ir::WindowGeometry g = ir::window_geometry(n);
  const Shape& xs = in[0]->shape();
  const Shape& ws = in[1]->shape();
  const Shape& ys = out[0].shape();
  const size_t k = g.kernel.size();
  const int64_t N = xs[0], C = xs[1], G = n.attr_int("group"), Cg = C / G, Mg = ws[1], M = Mg * G;
  int64_t KK = 1, Pin = 1, Pout = 1;
  for (size_t d = 0; d < k; ++d) {
    KK *= g.kernel[d];
    Pin *= g.in[d];
    Pout *= ys[2 + d];
  }
  const auto& x = in[0]->floats();
  const auto& w = in[1]->floats();
  auto& y = out[0].floats();
  Shape out_sp(ys.begin() + 2, ys.end());
  std::vector<int64_t> ost = ir::strides_of(out_sp);
  std::vector<float> cols(Mg * KK * Pin);
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t gi = 0; gi < G; ++gi) {
      // cols[(m, kk), p] = sum_c W[c, m, kk] * X[c, p]
      std::vector<float> wt = transposed(
          std::vector<float>(w.begin() + gi * Cg * Mg * KK, w.begin() + (gi + 1) * Cg * Mg * KK),
          Cg, Mg * KK);
      std::fill(cols.begin(), cols.end(), 0.0f);
      gemm_accumulate(Mg * KK, Pin, Cg, wt.data(), Cg, x.data() + (b * C + gi * Cg) * Pin, Pin,
                      cols.data(), Pin);
      // col2im: scatter-add each (kk, p) to output position p*s - pb + kk*d.
      std::vector<int64_t> kidx, iidx;
      kidx.resize(k);
      iidx.resize(k);
      for (int64_t kk = 0; kk < KK; ++kk) {
        std::fill(iidx.begin(), iidx.end(), 0);
        for (int64_t p = 0; p < Pin; ++p) {
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < k; ++d) {
            int64_t o = iidx[d] * g.strides[d] - g.pads_begin[d] + kidx[d] * g.dilations[d];
            if (o < 0 || o >= ys[2 + d]) {
              inside = false;
              break;
            }
            off += o * ost[d];
          }
          if (inside)
            for (int64_t m = 0; m < Mg; ++m)
              y[(b * M + gi * Mg + m) * Pout + off] += cols[(m * KK + kk) * Pin + p];
          for (size_t d = k; d-- > 0;) {
            if (++iidx[d] < g.in[d]) break;
            iidx[d] = 0;
          }
        }
        for (size_t d = k; d-- > 0;) {
          if (++kidx[d] < g.kernel[d]) break;
          kidx[d] = 0;
        }
      }
    }
  }
  if (in.size() > 2 && in[2]) {
    const auto& bias = in[2]->floats();
    for (int64_t b = 0; b < N; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < Pout; ++p) y[(b * M + m) * Pout + p] += bias[m];
  }
}

template <typename T>
void max_pool_impl(const WindowTable& t, int64_t planes, const std::vector<T>& x, std::vector<T>& y,
                   std::vector<int64_t>* arg = nullptr) {
  const int64_t P = t.p_count, S = t.in_count;
  std::vector<char> seen(P);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x.data() + pl * S;
    T* yp = y.data() + pl * P;
    // The first maximum in window order wins; its offset counts from the tensor start.
    int64_t* ap = arg ? arg->data() + pl * P : nullptr;
    std::fill(seen.begin(), seen.end(), 0);
    for (int64_t kk = 0; kk < t.kk_count; ++kk) {
      const int64_t* off = t.off.data() + kk * P;
      for (int64_t p = 0; p < P; ++p) {
        if (off[p] < 0) continue;
        const T v = xp[off[p]];
        if (!seen[p]) {
          yp[p] = v;
          seen[p] = 1;
          if (ap) ap[p] = pl * S + off[p];
        } else if (yp[p] == yp[p] && (v > yp[p] || v != v)) {
          yp[p] = v;  // a NaN, once taken, stays (numpy's max propagates NaN)
          if (ap) ap[p] = pl * S + off[p];
        }
      }
    }
    // A window entirely in the padding (pads >= kernel) sees only -inf.
    for (int64_t p = 0; p < P; ++p)
      if (!seen[p])
        yp[p] = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                            : std::numeric_limits<T>::lowest();
  }
}

void max_pool(const Node& n, const Ins& in, Outs& out) {
  WindowTable t = window_table(ir::window_geometry(n));
  int64_t planes = in[0]->shape()[0] * in[0]->shape()[1];
  std::vector<int64_t>* arg = out.size() > 1 ? &out[1].ints() : nullptr;
  if (in[0]->holds_floats())
    max_pool_impl(t, planes, in[0]->floats(), out[0].floats(), arg);
  else
    max_pool_impl(t, planes, in[0]->ints(), out[0].ints(), arg);
  if (arg && n.attr_int("storage_order", 0) == 1) {
    // Column-major: the spatial offset with the dims' strides reversed.
    const Shape& xs = in[0]->shape();
    const Shape sp(xs.begin() + 2, xs.end());
    const std::vector<int64_t> row = ir::strides_of(sp);
    const int64_t S = t.in_count;
    for (int64_t& a : *arg) {
      int64_t rest = a % S, col = 0, stride = 1;
      std::vector<int64_t> idx(sp.size());
      for (size_t d = 0; d < sp.size(); ++d) {
        idx[d] = rest / row[d];
        rest %= row[d];
      }
      for (size_t d = 0; d < sp.size(); ++d) {
        col += idx[d] * stride;
        stride *= sp[d];
      }
      a = a - a % S + col;
    }
  }
}

void avg_pool(const Node& n, const Ins& in, Outs& out) {
  WindowTable t = window_table(ir::window_geometry(n));
  const bool include_pad = n.attr_int("count_include_pad") != 0;
  const int64_t planes = in[0]->shape()[0] * in[0]->shape()[1], P = t.p_count, S = t.in_count;
  // Divisor per output position: the window's input elements, plus its padding
  // elements with count_include_pad (never the part past the end padding).
  std::vector<double> count(P, 0.0);
  for (int64_t kk = 0; kk < t.kk_count; ++kk)
    for (int64_t p = 0; p < P; ++p) {
      int64_t off = t.off[kk * P + p];
      if (off >= 0 || (include_pad && off == kPad)) count[p] += 1;
    }
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  std::vector<double> acc(P);
  for (int64_t pl = 0; pl < planes; ++pl) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float* xp = x.data() + pl * S;
    for (int64_t kk = 0; kk < t.kk_count; ++kk) {
      const int64_t* off = t.off.data() + kk * P;
      for (int64_t p = 0; p < P; ++p)
        if (off[p] >= 0) acc[p] += xp[off[p]];
    }
    for (int64_t p = 0; p < P; ++p) y[pl * P + p] = static_cast<float>(acc[p] / count[p]);
  }
}

void global_pool(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t planes = s[0] * s[1], S = in[0]->numel() / std::max<int64_t>(planes, 1);
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  const bool is_max = n.op == "GlobalMaxPool";
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x.data() + pl * S;
    if (is_max) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < S; ++k) m = (xp[k] > m || xp[k] != xp[k]) ? xp[k] : m;
      y[pl] = m;
    } else {
      double acc = 0;
      for (int64_t k = 0; k < S; ++k) acc += xp[k];
      y[pl] = static_cast<float>(acc / static_cast<double>(S));
    }
  }
}

void batch_norm(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t N = s[0], C = s[1], S = ir::num_elements(Shape(s.begin() + 2, s.end()));
  const double eps = n.attr_float("epsilon");
  const auto& x = in[0]->floats();
  const auto &scale = in[1]->floats(), &bias = in[2]->floats(), &mean = in[3]->floats(),
             &var = in[4]->floats();
  auto& y = out[0].floats();
  for (int64_t c = 0; c < C; ++c) {
    const double a = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
    const double m = mean[c], b = bias[c];
    for (int64_t bi = 0; bi < N; ++bi) {
      const int64_t base = (bi * C + c) * S;
      for (int64_t k = 0; k < S; ++k) y[base + k] = static_cast<float>((x[base + k] - m) * a + b);
    }
  }
}

void instance_norm(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t N = s[0], C = s[1], S = ir::num_elements(Shape(s.begin() + 2, s.end()));
  const double eps = n.attr_float("epsilon");
  const auto& x = in[0]->floats();
  const auto &scale = in[1]->floats(), &bias = in[2]->floats();
  auto& y = out[0].floats();
  for (int64_t bi = 0; bi < N; ++bi)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (bi * C + c) * S;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < S; ++k) mean += x[base + k];
      mean /= static_cast<double>(S);
      for (int64_t k = 0; k < S; ++k) var += (x[base + k] - mean) * (x[base + k] - mean);
      var /= static_cast<double>(S);
      const double a = scale[c] / std::sqrt(var + eps);
      for (int64_t k = 0; k < S; ++k)
        y[base + k] = static_cast<float>((x[base + k] - mean) * a + bias[c]);
    }
}

// A parameter broadcast to the normalised inner shape.
std::vector<float> expand_to(const Tensor* p, const Shape& inner, float dflt) {
  std::vector<float> r(ir::num_elements(inner), dflt);
  if (!p) return r;
  const auto& pd = p->floats();
  for_each_broadcast<1>(inner, {&p->shape()},
                        [&](int64_t k, const std::array<int64_t, 1>& off) { r[k] = pd[off[0]]; });
  return r;
}

void layer_norm(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t axis = n.attr_int("axis");
  const Shape inner(s.begin() + axis, s.end());
  const int64_t I = ir::num_elements(inner),
                O = ir::num_elements(Shape(s.begin(), s.begin() + axis));
  const double eps = n.attr_float("epsilon");
  std::vector<float> scale = expand_to(in[1], inner, 1.0f);
  std::vector<float> bias = expand_to(in.size() > 2 ? in[2] : nullptr, inner, 0.0f);
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  for (int64_t o = 0; o < O; ++o) {
    const float* xo = x.data() + o * I;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < I; ++k) mean += xo[k];
    mean /= static_cast<double>(I);
    for (int64_t k = 0; k < I; ++k) var += (xo[k] - mean) * (xo[k] - mean);
    var /= static_cast<double>(I);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < I; ++k)
      y[o * I + k] = static_cast<float>((xo[k] - mean) * inv * scale[k] + bias[k]);
    if (out.size() > 1) out[1].floats()[o] = static_cast<float>(mean);
    if (out.size() > 2) out[2].floats()[o] = static_cast<float>(inv);
  }
}

void softmax(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t axis = n.attr_int("axis");
  const int64_t O = ir::num_elements(Shape(s.begin(), s.begin() + axis)), D = s[axis],
                I = ir::num_elements(Shape(s.begin() + axis + 1, s.end()));
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  const int mode = n.op == "Softmax" ? 0 : n.op == "LogSoftmax" ? 1 : 2;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      const int64_t base = o * D * I + i;
      double mx = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t d = 0; d < D; ++d)
        if (x[base + d * I] > mx) {
          mx = x[base + d * I];
          arg = d;
        }
      if (mode == 2) {
        for (int64_t d = 0; d < D; ++d) y[base + d * I] = d == arg ? 1.0f : 0.0f;
        continue;
      }
      double sum = 0;
      for (int64_t d = 0; d < D; ++d) sum += std::exp(x[base + d * I] - mx);
      for (int64_t d = 0; d < D; ++d) {
        double v = x[base + d * I] - mx;
        y[base + d * I] = static_cast<float>(mode == 0 ? std::exp(v) / sum : v - std::log(sum));
      }
    }
}

}  // namespace

void register_nn(KernelMap& m) {
  m["MatMul"] = matmul;
  m["Gemm"] = gemm;
  m["Conv"] = conv;
  m["ConvTranspose"] = conv_transpose;
  m["MaxPool"] = max_pool;
  m["AveragePool"] = avg_pool;
  m["GlobalAveragePool"] = global_pool;
  m["GlobalMaxPool"] = global_pool;
  m["BatchNormalization"] = batch_norm;
  m["InstanceNormalization"] = instance_norm;
  m["LayerNormalization"] = layer_norm;
  m["Softmax"] = softmax;
  m["LogSoftmax"] = softmax;
  m["Hardmax"] = softmax;
}

}  // namespace trnsim::interp
