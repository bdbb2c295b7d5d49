// Kernels for the trnsim ops the graph passes create (compiler/ir/trn_ops.h). The
// activations and norms compute in double like the other float kernels; fused
// nodes run their body graph through the interpreter, so a fused node computes
// exactly what the ops it replaced did.
#include <cmath>
#include <string>

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
  m["trn.AllReduce"] = all_reduce;
}

}  // namespace trnsim::interp
