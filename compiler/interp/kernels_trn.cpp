// Kernels for the trnsim ops the graph passes create (compiler/ir/trn_ops.h). The
// activations and norms compute in double like the other float kernels; fused
// nodes run their body graph through the interpreter, so a fused node computes
// exactly what the ops it replaced did.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::interp {
namespace {

// `p` (null: absent) broadcast to `inner`, or `dflt` everywhere.
std::vector<float> expand_param(const Tensor* p, const Shape& inner, float dflt) {
  const int64_t n = ir::num_elements(inner);
  if (!p) return std::vector<float>(n, dflt);
  std::vector<float> r(n);
  const auto& src = p->floats();
  for_each_broadcast<1>(inner, {&p->shape()},
                        [&](int64_t k, const std::array<int64_t, 1>& off) { r[k] = src[off[0]]; });
  return r;
}

void gelu(const Node& n, const Ins& in, Outs& out) {
  const bool tanh_form = n.attr_string("approximate") == "tanh";
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  const double k_sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
  for (size_t k = 0; k < x.size(); ++k) {
    const double v = x[k];
    const double t = tanh_form ? std::tanh(k_sqrt_2_over_pi * (v + 0.044715 * v * v * v))
                               : std::erf(v / std::sqrt(2.0));
    y[k] = static_cast<float>(0.5 * v * (1.0 + t));
  }
}

void silu(const Node&, const Ins& in, Outs& out) {
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  for (size_t k = 0; k < x.size(); ++k) {
    const double v = x[k];
    y[k] = static_cast<float>(v / (1.0 + std::exp(-v)));
  }
}

// trn.LayerNorm and trn.RMSNorm: statistics over dims axis..rank-1, in double.
void norm(const Node& n, const Ins& in, Outs& out) {
  const bool rms = n.op == "trn.RMSNorm";
  const Shape& s = in[0]->shape();
  const int64_t axis = n.attr_int("axis");
  const Shape inner(s.begin() + axis, s.end());
  const int64_t I = ir::num_elements(inner);
  const int64_t O = ir::num_elements(Shape(s.begin(), s.begin() + axis));
  const double eps = n.attr_float("epsilon");
  const std::vector<float> scale = expand_param(in.size() > 1 ? in[1] : nullptr, inner, 1.0f);
  const std::vector<float> bias = expand_param(in.size() > 2 ? in[2] : nullptr, inner, 0.0f);
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  if (I == 0) return;
  for (int64_t o = 0; o < O; ++o) {
    const float* xo = x.data() + o * I;
    double mean = 0, sq = 0;
    if (!rms) {
      for (int64_t k = 0; k < I; ++k) mean += xo[k];
      mean /= static_cast<double>(I);
    }
    for (int64_t k = 0; k < I; ++k) sq += (xo[k] - mean) * (xo[k] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(I) + eps);
    for (int64_t k = 0; k < I; ++k)
      y[o * I + k] = static_cast<float>((xo[k] - mean) * inv * scale[k] + bias[k]);
  }
}

// trn.Elementwise / trn.MatMulEpilogue: run the body graph. Inputs 0 and 1 were
// already rounded by run() when emulating a compute_dtype; the body's anchor
// carries the same compute_dtype, and rounding twice changes nothing.
void fused(const Node& n, const Ins& in, Outs& out) {
  ir::Graph body = ir::fused_body(n, /*inline_constants=*/false);
  TensorMap feeds;
  for (const ir::Value* v : body.inputs()) feeds[v->name] = *in.at(std::stoul(v->name));
  TensorMap r = run(body, feeds);
  out[0] = std::move(r.at(body.outputs()[0]->name));
}

// trn.TileKernel: its tile IR has no host interpreter. eval_node adds the node's
// name, so a run that would need it on the host (fallback, `trnsim validate`) says why.
void tile_kernel(const Node&, const Ins&, Outs&) {
  throw ir::UnsupportedError(
      "trn.TileKernel runs on the device only (the reference interpreter cannot run tile IR)");
}

// trn.Attention: softmax(scale * q.k + mask) v per query, in double; masked keys
// (causal: j > i) take no part. Keys and values come in (K, V) segments, inputs
// 1, 2, then 3, 4, ...: key j is row j of their concatenation. seq_first and
// rotary inputs are first brought to [G, S, D] head-major rows (rotated).
void attention(const Node& n, const Ins& in, Outs& out) {
  const bool seq_first = n.attr_int("seq_first", 0) != 0;
  const bool rotary = n.attr_int("rotary", 0) != 0;
  const size_t nqkv = in.size() - (rotary ? 4 : 0);
  const Shape& qs = in[0]->shape();
  const size_t r = qs.size();
  const size_t sa = seq_first ? r - 3 : r - 2;  // the sequence axis
  const int64_t Sq = qs[sa], D = qs[r - 1], Dv = in[2]->shape()[r - 1];
  const int64_t H = seq_first ? qs[r - 2] : 1;  // heads between sequence and head size
  const int64_t G = ir::num_elements(Shape(qs.begin(), qs.begin() + sa)) * H;
  // Element (g, s, d) of a [.., S, W] input (seq_first: g = outer * H + h).
  auto at = [&](int64_t g, int64_t s, int64_t d, int64_t S, int64_t W) {
    return seq_first ? ((g / H * S + s) * H + g % H) * W + d : (g * S + s) * W + d;
  };
  // Input `i` as [G, S, W] rows; rotated with tables cos, sin [S, W] when given.
  auto rows = [&](size_t i, const Tensor* cos, const Tensor* sin) {
    const Shape& xs = in[i]->shape();
    const int64_t S = xs[sa], W = xs[r - 1];
    const auto& x = in[i]->floats();
    std::vector<float> y(static_cast<size_t>(G * S * W));
    for (int64_t g = 0; g < G; ++g)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < W; ++d) {
          double v = x[at(g, s, d, S, W)];
          if (cos) {
            const int64_t sw = d < W / 2 ? d + W / 2 : d - W / 2;
            v = v * cos->floats()[s * W + d] +
                static_cast<double>(x[at(g, s, sw, S, W)]) * sin->floats()[s * W + d];
          }
          y[(g * S + s) * W + d] = static_cast<float>(v);
        }
    return y;
  };
  struct Seg {
    std::vector<float> k, v;
    int64_t rows;
  };
  std::vector<Seg> segs;
  int64_t Skv = 0;
  for (size_t i = 1; i + 1 < nqkv; i += 2) {
    segs.push_back({rows(i, rotary ? in[5] : nullptr, rotary ? in[6] : nullptr),
                    rows(i + 1, nullptr, nullptr), in[i]->shape()[sa]});
    Skv += segs.back().rows;
  }
  const std::vector<float> q = rows(0, rotary ? in[3] : nullptr, rotary ? in[4] : nullptr);
  const double scale = n.attr_float("scale");
  const bool causal = n.attr_int("causal") != 0;
  auto& y = out[0].floats();
  std::vector<double> s(static_cast<size_t>(Skv)), acc(static_cast<size_t>(Dv));
  std::vector<const float*> krow(static_cast<size_t>(Skv)), vrow(static_cast<size_t>(Skv));
  for (int64_t g = 0; g < G; ++g) {
    int64_t j = 0;
    for (const Seg& sg : segs)
      for (int64_t t = 0; t < sg.rows; ++t, ++j) {
        krow[j] = sg.k.data() + (g * sg.rows + t) * D;
        vrow[j] = sg.v.data() + (g * sg.rows + t) * Dv;
      }
    for (int64_t i = 0; i < Sq; ++i) {
      const int64_t kv_end = causal ? i + 1 : Skv;
      const float* qi = q.data() + (g * Sq + i) * D;
      double mx = -INFINITY;
      for (j = 0; j < kv_end; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qi[d]) * krow[j][d];
        s[j] = scale * dot;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (j = 0; j < kv_end; ++j) {
        const double p = std::exp(s[j] - mx);
        sum += p;
        for (int64_t d = 0; d < Dv; ++d) acc[d] += p * vrow[j][d];
      }
      for (int64_t d = 0; d < Dv; ++d) y[at(g, i, d, Sq, Dv)] = static_cast<float>(acc[d] / sum);
    }
  }
}

// trn.AllReduce: a sum over ranks of an SPMD launch; one process holds one rank.
void all_reduce(const Node&, const Ins&, Outs&) {
  throw ir::UnsupportedError(
      "trn.AllReduce sums over the ranks of an SPMD launch: it runs on the device only");
}

}  // namespace

void register_trn(KernelMap& m) {
  m["trn.Gelu"] = gelu;
  m["trn.Silu"] = silu;
  m["trn.LayerNorm"] = norm;
  m["trn.RMSNorm"] = norm;
  m["trn.Elementwise"] = fused;
  m["trn.MatMulEpilogue"] = fused;
  m["trn.TileKernel"] = tile_kernel;
  m["trn.Attention"] = attention;
  m["trn.AllReduce"] = all_reduce;
}

}  // namespace trnsim::interp
