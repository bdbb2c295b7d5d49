// Scatter/gather by index (ScatterElements, ScatterND, GatherND, OneHot), the ops
// whose output shape depends on data (NonZero, Unique, Compress: shape inference
// has already read their constant input), linear quantisation (QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul, QLinearConv), ReverseSequence, the NLL / softmax cross-entropy
// losses and the Hann/Hamming/Blackman windows.
//
// Every index read from data is checked against its dim before use: an index out
// of range is an error naming the index and the dim (eval_node adds the node).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"

namespace trnsim::interp {
namespace {

int64_t checked_index(int64_t i, int64_t dim, const char* what) {
  if (i < -dim || i >= dim)
    kfail(std::string(what) + " " + std::to_string(i) + " is out of range for a dim of size " +
          std::to_string(dim));
  return i < 0 ? i + dim : i;
}

// Combine an update into a destination element per a scatter `reduction`. Integer
// add/mul wrap (through uint64_t, as the narrow types wrap in normalize()).
struct Combine {
  enum Mode { kNone, kAdd, kMul, kMax, kMin } mode = kNone;
  explicit Combine(const std::string& r)
      : mode(r == "add"   ? kAdd
             : r == "mul" ? kMul
             : r == "max" ? kMax
             : r == "min" ? kMin
                          : kNone) {}
  void operator()(float& d, float u) const {
    switch (mode) {
      case kNone:
        d = u;
        break;
      case kAdd:
        d += u;
        break;
      case kMul:
        d *= u;
        break;
      case kMax:
        d = std::max(d, u);
        break;
      case kMin:
        d = std::min(d, u);
        break;
    }
  }
  void operator()(int64_t& d, int64_t u) const {
    const uint64_t a = static_cast<uint64_t>(d), b = static_cast<uint64_t>(u);
    switch (mode) {
      case kNone:
        d = u;
        break;
      case kAdd:
        d = static_cast<int64_t>(a + b);
        break;
      case kMul:
        d = static_cast<int64_t>(a * b);
        break;
      case kMax:
        d = std::max(d, u);
        break;
      case kMin:
        d = std::min(d, u);
        break;
    }
  }
};

// Same storage kind of two tensors: f(out_data, update_data).
template <typename F>
void with_pair(Tensor& out, const Tensor& upd, F&& f) {
  if (out.holds_floats())
    f(out.floats(), upd.floats());
  else
    f(out.ints(), upd.ints());
}

// Updates are applied in index order, so with reduction "none" the last of
// duplicate indices wins (ONNX leaves the order open; its reference does this).
void scatter_elements(const Node& n, const Ins& in, Outs& out) {
  out[0] = *in[0];
  const Shape& ds = in[0]->shape();
  const Shape& is = in[1]->shape();
  const int64_t axis = n.attr_int("axis");
  const std::vector<int64_t> dst = ir::strides_of(ds);
  const auto& ind = in[1]->ints();
  const Combine comb(n.attr_string("reduction"));
  with_pair(out[0], *in[2], [&](auto& o, const auto& u) {
    std::vector<int64_t> idx(is.size(), 0);
    for (size_t k = 0; k < ind.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < is.size(); ++d)
        off += (static_cast<int64_t>(d) == axis ? checked_index(ind[k], ds[d], "index") : idx[d]) *
               dst[d];
      comb(o[off], u[k]);
      for (size_t d = is.size(); d-- > 0;) {
        if (++idx[d] < is[d]) break;
        idx[d] = 0;
      }
    }
  });
}

void scatter_nd(const Node& n, const Ins& in, Outs& out) {
  out[0] = *in[0];
  const Shape& ds = in[0]->shape();
  const Shape& is = in[1]->shape();
  const int64_t k = is.back();
  const int64_t M = ir::num_elements(Shape(is.begin(), is.end() - 1));
  const int64_t slice = ir::num_elements(Shape(ds.begin() + k, ds.end()));
  const std::vector<int64_t> dst = ir::strides_of(ds);
  const auto& ind = in[1]->ints();
  const Combine comb(n.attr_string("reduction"));
  with_pair(out[0], *in[2], [&](auto& o, const auto& u) {
    for (int64_t m = 0; m < M; ++m) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) off += checked_index(ind[m * k + j], ds[j], "index") * dst[j];
      for (int64_t e = 0; e < slice; ++e) comb(o[off + e], u[m * slice + e]);
    }
  });
}

void gather_nd(const Node& n, const Ins& in, Outs& out) {
  const Shape& ds = in[0]->shape();
  const Shape& is = in[1]->shape();
  const int64_t b = n.attr_int("batch_dims"), k = is.back();
  const int64_t B = ir::num_elements(Shape(ds.begin(), ds.begin() + b));
  const Shape inner(ds.begin() + b, ds.end());
  const int64_t Db = ir::num_elements(inner);
  const int64_t Mb = ir::num_elements(Shape(is.begin() + b, is.end() - 1));
  const int64_t slice = ir::num_elements(Shape(ds.begin() + b + k, ds.end()));
  const std::vector<int64_t> st = ir::strides_of(inner);
  const auto& ind = in[1]->ints();
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t m = 0; m < Mb; ++m) {
        const int64_t row = bi * Mb + m;
        int64_t off = bi * Db;
        for (int64_t j = 0; j < k; ++j)
          off += checked_index(ind[row * k + j], inner[j], "index") * st[j];
        std::copy(x.begin() + off, x.begin() + off + slice, o.begin() + row * slice);
      }
  });
}

// Indices outside [-depth, depth-1] give a row of off values (ONNX); float indices
// truncate toward zero as a cast to int64 does.
void one_hot(const Node& n, const Ins& in, Outs& out) {
  const Tensor& ind = *in[0];
  const int64_t depth = n.attr_int("depth"), axis = n.attr_int("axis");
  const Shape& is = ind.shape();
  const int64_t outer = ir::num_elements(Shape(is.begin(), is.begin() + axis));
  const int64_t inner = ir::num_elements(Shape(is.begin() + axis, is.end()));
  std::vector<int64_t> hot(ind.numel(), -1);
  for (int64_t k = 0; k < ind.numel(); ++k) {
    const double v = std::trunc(ind.at(k));
    if (v >= -static_cast<double>(depth) && v < static_cast<double>(depth))
      hot[k] = v < 0 ? static_cast<int64_t>(v) + depth : static_cast<int64_t>(v);
  }
  with_storage(*in[1], out[0], [&](auto& o, const auto& vals) {
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t i = 0; i < inner; ++i)
          o[(a * depth + d) * inner + i] = hot[a * inner + i] == d ? vals[1] : vals[0];
  });
}

void non_zero(const Node&, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  const Shape& s = x.shape();
  const int64_t nz = out[0].shape()[1];
  const std::vector<int64_t> st = ir::strides_of(s);
  auto& o = out[0].ints();
  int64_t c = 0;
  for (int64_t k = 0; k < x.numel(); ++k) {
    if (x.at(k) == 0) continue;
    for (size_t d = 0; d < s.size(); ++d) o[d * nz + c] = (k / st[d]) % s[d];
    ++c;
  }
}

void unique(const Node& n, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  const int64_t axis = n.has_attr("axis") ? n.attr_int("axis") : -1;
  const ir::UniqueSlices u = ir::unique_slices(x, axis, n.attr_int("sorted") != 0);
  const Shape& s = x.shape();
  const int64_t S = axis < 0 ? x.numel() : s[axis];
  const int64_t inner = axis < 0 ? 1 : ir::num_elements(Shape(s.begin() + axis + 1, s.end()));
  const int64_t outer = axis < 0 ? 1 : ir::num_elements(Shape(s.begin(), s.begin() + axis));
  const int64_t cnt = static_cast<int64_t>(u.first.size());
  with_storage(x, out[0], [&](auto& o, const auto& xv) {
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t g = 0; g < cnt; ++g)
        for (int64_t i = 0; i < inner; ++i)
          o[(a * cnt + g) * inner + i] = xv[(a * S + u.first[g]) * inner + i];
  });
  if (out.size() > 1) out[1].ints() = u.first;
  if (out.size() > 2) out[2].ints() = u.inverse;
  if (out.size() > 3) out[3].ints() = u.counts;
}

void compress(const Node& n, const Ins& in, Outs& out) {
  const auto& cond = n.attr_ints("condition");
  std::vector<int64_t> kept;
  for (size_t j = 0; j < cond.size(); ++j)
    if (cond[j] != 0) kept.push_back(static_cast<int64_t>(j));
  const Shape& s = in[0]->shape();
  const bool has_axis = n.has_attr("axis");
  const int64_t axis = has_axis ? n.attr_int("axis") : 0;
  const int64_t D = has_axis ? s[axis] : in[0]->numel();
  const int64_t outer = has_axis ? ir::num_elements(Shape(s.begin(), s.begin() + axis)) : 1;
  const int64_t inner = has_axis ? ir::num_elements(Shape(s.begin() + axis + 1, s.end())) : 1;
  const int64_t K = static_cast<int64_t>(kept.size());
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t j = 0; j < K; ++j)
        for (int64_t i = 0; i < inner; ++i)
          o[(a * K + j) * inner + i] = x[(a * D + kept[j]) * inner + i];
  });
}

// --- quantisation ------------------------------------------------------------

std::pair<int64_t, int64_t> quant_range(ElemType e) {
  return e == ElemType::int8 ? std::pair<int64_t, int64_t>{-128, 127}
                             : std::pair<int64_t, int64_t>{0, 255};
}

// Round half to even (the default rounding mode), add the zero point, saturate.
// NaN maps to the zero point.
int64_t quantize(double v, int64_t zp, ElemType e) {
  const auto [lo, hi] = quant_range(e);
  if (std::isnan(v)) return std::clamp<int64_t>(zp, lo, hi);
  const double r = std::nearbyint(v) + static_cast<double>(zp);
  return static_cast<int64_t>(std::clamp(r, static_cast<double>(lo), static_cast<double>(hi)));
}

// Channel of flat element k for a per-axis parameter, 0 when per tensor.
struct AxisIndex {
  int64_t inner = 1, dim = 1;
  bool per_axis = false;
  AxisIndex(const Node& n, const Shape& x, const Tensor& scale) {
    per_axis = !(scale.numel() == 1 && scale.rank() <= 1);
    if (!per_axis) return;
    const int64_t axis = n.attr_int("axis");
    dim = x[axis];
    inner = ir::num_elements(Shape(x.begin() + axis + 1, x.end()));
  }
  int64_t operator()(int64_t k) const { return per_axis ? (k / inner) % dim : 0; }
};

int64_t zero_point(const Tensor* zp, int64_t c) {
  if (!zp) return 0;
  return zp->numel() == 1 ? zp->ints()[0] : zp->ints()[c];
}

void quantize_linear(const Node& n, const Ins& in, Outs& out) {
  const auto& x = in[0]->floats();
  const auto& s = in[1]->floats();
  const AxisIndex ch(n, in[0]->shape(), *in[1]);
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  auto& o = out[0].ints();
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t c = ch(static_cast<int64_t>(k));
    o[k] = quantize(x[k] / s[c], zero_point(zp, c), out[0].elem());
  }
}

void dequantize_linear(const Node& n, const Ins& in, Outs& out) {
  const auto& x = in[0]->ints();
  const auto& s = in[1]->floats();
  const AxisIndex ch(n, in[0]->shape(), *in[1]);
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  auto& o = out[0].floats();
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t c = ch(static_cast<int64_t>(k));
    o[k] = static_cast<float>(x[k] - zero_point(zp, c)) * s[c];
  }
}

// uint8 with scale (max(0, max x) - min(0, min x)) / 255; an all-zero input (range
// 0) takes scale 1/255 rather than dividing by zero.
void dynamic_quantize_linear(const Node&, const Ins& in, Outs& out) {
  const auto& x = in[0]->floats();
  float lo = 0, hi = 0;
  for (float v : x) {
    if (std::isnan(v)) kfail("input holds NaN, which has no quantisation range");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (std::isinf(lo) || std::isinf(hi)) kfail("input holds an infinity");
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float izp = 0.0f - lo / scale;
  const int64_t zp = static_cast<int64_t>(std::nearbyint(std::clamp(izp, 0.0f, 255.0f)));
  auto& y = out[0].ints();
  for (size_t k = 0; k < x.size(); ++k) y[k] = quantize(x[k] / scale, zp, ElemType::uint8);
  out[1].floats()[0] = scale;
  if (out.size() > 2) out[2].ints()[0] = zp;
}

// a - zero point, the zero point per row (`per` = the row count) of the matrix
// dims, or one value.
std::vector<int64_t> minus_zp_rows(const Tensor& a, const Tensor* zp) {
  std::vector<int64_t> r = a.ints();
  if (!zp) return r;
  const Shape& s = a.shape();
  const int64_t K = s.back(), M = s.size() >= 2 ? s[s.size() - 2] : 1;
  for (size_t k = 0; k < r.size(); ++k)
    r[k] -= zero_point(zp, zp->numel() == 1 ? 0 : (static_cast<int64_t>(k) / K) % M);
  return r;
}
std::vector<int64_t> minus_zp_cols(const Tensor& b, const Tensor* zp) {
  std::vector<int64_t> r = b.ints();
  if (!zp) return r;
  const int64_t N = b.shape().back();
  for (size_t k = 0; k < r.size(); ++k)
    r[k] -= zero_point(zp, zp->numel() == 1 ? 0 : static_cast<int64_t>(k) % N);
  return r;
}

// numpy matmul of int64 data (batch dims broadcast); returns C and its [M, N].
std::vector<int64_t> int_matmul(Shape a, const std::vector<int64_t>& A, Shape b,
                                const std::vector<int64_t>& B, int64_t& M, int64_t& N) {
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  M = a[a.size() - 2];
  N = b.back();
  const int64_t K = a.back();
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape batch = ir::broadcast_shapes({ba, bb});
  std::vector<int64_t> C(ir::num_elements(batch) * M * N, 0);
  for_each_broadcast<2>(batch, {&ba, &bb}, [&](int64_t bi, const std::array<int64_t, 2>& off) {
    const int64_t* pa = A.data() + off[0] * M * K;
    const int64_t* pb = B.data() + off[1] * K * N;
    int64_t* pc = C.data() + bi * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t kk = 0; kk < K; ++kk)
        for (int64_t j = 0; j < N; ++j) pc[i * N + j] += pa[i * K + kk] * pb[kk * N + j];
  });
  return C;
}

void matmul_integer(const Node&, const Ins& in, Outs& out) {
  int64_t M, N;
  std::vector<int64_t> C =
      int_matmul(in[0]->shape(), minus_zp_rows(*in[0], in.size() > 2 ? in[2] : nullptr),
                 in[1]->shape(), minus_zp_cols(*in[1], in.size() > 3 ? in[3] : nullptr), M, N);
  out[0].ints() = std::move(C);
}

// y = saturate(round(C * (a_scale * b_scale / y_scale)) + y_zero_point); scales per
// row of a / per column of b when given so.
void qlinear_matmul(const Node&, const Ins& in, Outs& out) {
  int64_t M, N;
  std::vector<int64_t> C = int_matmul(in[0]->shape(), minus_zp_rows(*in[0], in[2]), in[3]->shape(),
                                      minus_zp_cols(*in[3], in[5]), M, N);
  const auto& as = in[1]->floats();
  const auto& bs = in[4]->floats();
  const float ys = in[6]->floats()[0];
  const int64_t yzp = in[7]->ints()[0];
  auto& y = out[0].ints();
  for (size_t k = 0; k < C.size(); ++k) {
    const int64_t i = (static_cast<int64_t>(k) / N) % M, j = static_cast<int64_t>(k) % N;
    const float mult = as[as.size() == 1 ? 0 : i] * bs[bs.size() == 1 ? 0 : j] / ys;
    y[k] = quantize(static_cast<double>(C[k]) * mult, yzp, out[0].elem());
  }
}

// Integer convolution of (x - x_zp) with (w - w_zp[m]); the padding is 0 after the
// zero point is taken off (padding holds the zero point). Accumulates in int64.
std::vector<int64_t> int_conv(const Node& n, const Tensor& x, const Tensor* xzp, const Tensor& w,
                              const Tensor* wzp) {
  const ir::WindowGeometry g = ir::window_geometry(n);
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t N = xs[0], C = xs[1], M = ws[0], G = n.attr_int("group");
  const int64_t Cg = C / G, Mg = M / G;
  const size_t k = g.kernel.size();
  const int64_t S = ir::num_elements(g.in), P = ir::num_elements(g.out),
                KK = ir::num_elements(g.kernel);
  const int64_t xz = zero_point(xzp, 0);
  const auto& xv = x.ints();
  const auto& wv = w.ints();
  const std::vector<int64_t> ist = ir::strides_of(g.in);
  std::vector<int64_t> y(N * M * P, 0);
  std::vector<int64_t> oi(k), ki(k);
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t d = static_cast<int64_t>(k) - 1, r = p; d >= 0; --d) {
      oi[d] = r % g.out[d];
      r /= g.out[d];
    }
    for (int64_t kk = 0; kk < KK; ++kk) {
      int64_t off = 0;
      bool inside = true;
      for (int64_t d = static_cast<int64_t>(k) - 1, r = kk; d >= 0; --d) {
        ki[d] = r % g.kernel[d];
        r /= g.kernel[d];
      }
      for (size_t d = 0; d < k; ++d) {
        const int64_t i = oi[d] * g.strides[d] - g.pads_begin[d] + ki[d] * g.dilations[d];
        if (i < 0 || i >= g.in[d]) {
          inside = false;
          break;
        }
        off += i * ist[d];
      }
      if (!inside) continue;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t m = 0; m < M; ++m) {
          const int64_t gi = m / Mg, wz = zero_point(wzp, wzp && wzp->numel() > 1 ? m : 0);
          int64_t acc = 0;
          for (int64_t c = 0; c < Cg; ++c)
            acc += (xv[(b * C + gi * Cg + c) * S + off] - xz) * (wv[(m * Cg + c) * KK + kk] - wz);
          y[(b * M + m) * P + p] += acc;
        }
    }
  }
  return y;
}

void conv_integer(const Node& n, const Ins& in, Outs& out) {
  out[0].ints() =
      int_conv(n, *in[0], in.size() > 2 ? in[2] : nullptr, *in[1], in.size() > 3 ? in[3] : nullptr);
}

void qlinear_conv(const Node& n, const Ins& in, Outs& out) {
  std::vector<int64_t> acc = int_conv(n, *in[0], in[2], *in[3], in[5]);
  const int64_t M = in[3]->shape()[0],
                P = out[0].numel() / std::max<int64_t>(1, out[0].shape()[0] * M);
  const float xs = in[1]->floats()[0], ys = in[6]->floats()[0];
  const auto& ws = in[4]->floats();
  const int64_t yzp = in[7]->ints()[0];
  const Tensor* bias = in.size() > 8 ? in[8] : nullptr;
  auto& y = out[0].ints();
  for (size_t k = 0; k < acc.size(); ++k) {
    const int64_t m = (static_cast<int64_t>(k) / P) % M;
    const int64_t v = acc[k] + (bias ? bias->ints()[m] : 0);
    const float mult = xs * ws[ws.size() == 1 ? 0 : m] / ys;
    y[k] = quantize(static_cast<double>(v) * mult, yzp, out[0].elem());
  }
}

// --- sequences, losses, windows ----------------------------------------------

void reverse_sequence(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t b_ax = n.attr_int("batch_axis"), t_ax = n.attr_int("time_axis");
  const int64_t T = s[t_ax], B = s[b_ax];
  const int64_t inner = ir::num_elements(Shape(s.begin() + 2, s.end()));
  const std::vector<int64_t> st = ir::strides_of(s);
  const auto& lens = in[1]->ints();
  for (int64_t b = 0; b < B; ++b)
    if (lens[b] < 0 || lens[b] > T)
      kfail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) +
            " is outside [0, " + std::to_string(T) + "] (the time dim)");
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
        const int64_t d = b * st[b_ax] + t * st[t_ax], sidx = b * st[b_ax] + src * st[t_ax];
        for (int64_t i = 0; i < inner; ++i) o[d + i] = x[sidx + i];
      }
  });
}

// NLL over log-probabilities lp [N, C, d...] (SoftmaxCrossEntropyLoss computes them
// first). A target equal to ignore_index contributes 0 and no weight; any other
// target must be a class in [0, C).
void nll(const Node& n, const std::vector<float>& lp, const Shape& s, const Ins& in, Tensor& out) {
  const int64_t N = s[0], C = s[1];
  const int64_t D = ir::num_elements(Shape(s.begin() + 2, s.end()));
  const auto& t = in[1]->ints();
  const Tensor* w = in.size() > 2 ? in[2] : nullptr;
  const bool has_ii = n.has_attr("ignore_index");
  const int64_t ii = has_ii ? n.attr_int("ignore_index") : 0;
  const std::string& red = n.attr_string("reduction");
  std::vector<double> loss(N * D, 0.0);
  double wsum = 0, lsum = 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t c = t[b * D + d];
      if (has_ii && c == ii) continue;
      if (c < 0 || c >= C)
        kfail("target " + std::to_string(c) + " is not a class in [0, " + std::to_string(C) + ")" +
              (has_ii ? " nor ignore_index " + std::to_string(ii) : ""));
      const double wc = w ? w->floats()[c] : 1.0;
      const double l = -static_cast<double>(lp[(b * C + c) * D + d]) * wc;
      loss[b * D + d] = l;
      lsum += l;
      wsum += wc;
    }
  auto& o = out.floats();
  if (red == "none") {
    for (size_t k = 0; k < loss.size(); ++k) o[k] = static_cast<float>(loss[k]);
  } else if (red == "sum") {
    o[0] = static_cast<float>(lsum);
  } else {
    // Mean over the weights of the counted targets; every target ignored gives 0/0.
    o[0] = static_cast<float>(wsum == 0 ? std::numeric_limits<double>::quiet_NaN() : lsum / wsum);
  }
}

void nll_loss(const Node& n, const Ins& in, Outs& out) {
  nll(n, in[0]->floats(), in[0]->shape(), in, out[0]);
}

void softmax_cross_entropy(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t N = s[0], C = s[1], D = ir::num_elements(Shape(s.begin() + 2, s.end()));
  const auto& x = in[0]->floats();
  std::vector<float> lp(x.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t d = 0; d < D; ++d) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c) mx = std::max<double>(mx, x[(b * C + c) * D + d]);
      double sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(x[(b * C + c) * D + d] - mx);
      const double ls = std::log(sum);
      for (int64_t c = 0; c < C; ++c)
        lp[(b * C + c) * D + d] = static_cast<float>(x[(b * C + c) * D + d] - mx - ls);
    }
  nll(n, lp, s, in, out[0]);
  if (out.size() > 1) out[1].floats() = lp;
}

// Generalised cosine windows: w[i] = a0 - a1 cos(2 pi i / L) + a2 cos(4 pi i / L),
// L = size (periodic) or size - 1 (symmetric).
void window(const Node& n, const Ins&, Outs& out) {
  const int64_t size = n.attr_int("size");
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (n.op == "HammingWindow") a0 = 25.0 / 46.0, a1 = 21.0 / 46.0;
  if (n.op == "BlackmanWindow") a0 = 0.42, a1 = 0.5, a2 = 0.08;
  const double L = static_cast<double>(n.attr_int("periodic") != 0 ? size : size - 1);
  auto value = [&](int64_t i) {
    if (L <= 0) return 1.0;  // a one-point symmetric window
    const double ph = 2 * std::numbers::pi * static_cast<double>(i) / L;
    return a0 - a1 * std::cos(ph) + a2 * std::cos(2 * ph);
  };
  Tensor& o = out[0];
  for (int64_t i = 0; i < size; ++i) {
    if (o.holds_floats())
      o.floats()[i] = static_cast<float>(value(i));
    else
      o.ints()[i] = static_cast<int64_t>(value(i));
  }
}

}  // namespace

void register_scatter(KernelMap& m) {
  m["ScatterElements"] = scatter_elements;
  m["ScatterND"] = scatter_nd;
  m["GatherND"] = gather_nd;
  m["OneHot"] = one_hot;
  m["NonZero"] = non_zero;
  m["Unique"] = unique;
  m["Compress"] = compress;
  m["QuantizeLinear"] = quantize_linear;
  m["DequantizeLinear"] = dequantize_linear;
  m["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  m["MatMulInteger"] = matmul_integer;
  m["QLinearMatMul"] = qlinear_matmul;
  m["ConvInteger"] = conv_integer;
  m["QLinearConv"] = qlinear_conv;
  m["ReverseSequence"] = reverse_sequence;
  m["NegativeLogLikelihoodLoss"] = nll_loss;
  m["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) m[op] = window;
}

}  // namespace trnsim::interp
