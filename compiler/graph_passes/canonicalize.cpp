// canonicalize: simplify the graph into the one form the later passes and the
// lowering expect. Rules, applied to a fixed point:
//   - Identity (the front end's Dropout) and Cast to the input's own type are
//     removed;
//   - nodes whose inputs are all constants are folded (interp/fold.h);
//   - Flatten/Squeeze/Unsqueeze become Reshape; Reshape(Reshape(x)) reads x; a
//     Reshape to the input's own shape is removed;
//   - Transpose(Transpose(x)) becomes one Transpose; an identity perm is removed;
//     a Transpose that only moves dims of size 1 becomes a Reshape;
//   - x*1, 1*x, x/1, x+0, 0+x, x-0 are removed (only when x already has the
//     result's type, i.e. the constant does not broadcast x up);
//   - x - c becomes x + (-c) (exact) and x / c becomes x * (1/c) (within an ulp;
//     Div by a constant is slower than Mul on every engine); 1 / x becomes
//     Reciprocal(x); Add/Mul with a constant first operand put it second;
//   - Clip(Relu(x)) with min >= 0 reads x;
//   - Gemm becomes MatMul (+ Add of C) when transA = 0, alpha = 1, beta = 1 (or no
//     C) and B is a constant or transB = 0 (a constant B is transposed at compile
//     time). So torch's 2-D Linear (Gemm) and 3-D Linear (MatMul + Add) look the
//     same, and fuse_epilogue sees the bias add. Other Gemms stay.
//   - BatchNormalization (inference) whose input is a Conv used only by it is
//     folded into the Conv's weights and bias; any other BatchNormalization becomes
//     Mul + Add by per-channel constants;
//   - nodes that feed no output are erased.
// Float rules only touch floating-point values. Graph outputs keep their names.
#include <cmath>
#include <numeric>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/interp/fold.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Tensor;
using ir::Value;

constexpr std::string_view kPass = "canonicalize";

class Canonicalizer {
 public:
  Canonicalizer(ir::Graph& g, PassContext& ctx) : g_(g), ctx_(ctx), uses_(g) {}

  // One sweep over the nodes; returns whether anything changed.
  bool sweep() {
    uses_.refresh();
    bool changed = false;
    for (Node* n : g_.nodes_snapshot()) {
      if (dead(n)) continue;
      if (rewrite(n)) {
        changed = true;
        uses_.refresh();
      }
    }
    return changed;
  }

 private:
  bool dead(const Node* n) const {
    for (const Value* o : n->outputs)
      if (!uses_.unused(o)) return false;
    return true;
  }
  bool fp(const Value* v) const { return v && ir::is_float(v->elem()); }
  void count(std::string_view key) { bump(ctx_, kPass, key); }

  // Replaces n's single output by `v` when allowed (output names preserved).
  bool forward(Node* n, Value* v, std::string_view key) {
    if (!can_replace(g_, n->outputs[0], v)) return false;
    replace_value(g_, n->outputs[0], v, false);
    count(key);
    return true;
  }
  // Replaces n's single output by a fresh value, which takes the output's name.
  void substitute(Node* n, Value* fresh, std::string_view key) {
    replace_value(g_, n->outputs[0], fresh, true);
    count(key);
  }
  Value* constant(const std::string& base, Tensor t) {
    return g_.add_constant(g_.unique_name(base), std::move(t));
  }
  std::string tmp_name(const Node* n) const { return g_.unique_name(n->outputs[0]->name + ".c"); }

  bool rewrite(Node* n) {
    const std::string& op = n->op;
    if (op == "Identity") return forward(n, n->inputs[0], "identity");
    if (op == "Cast" && n->inputs[0]->type == n->outputs[0]->type)
      return forward(n, n->inputs[0], "cast_noop");
    if (op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
      Node* r = ir::make_node(g_, "Reshape", {n->inputs[0]}, {{"shape", n->outputs[0]->shape()}},
                              n->name, 1, {tmp_name(n)}, n);
      substitute(n, r->outputs[0], "to_reshape");
      return true;
    }
    if (op == "Reshape") return reshape(n);
    if (op == "Transpose") return transpose(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return arith(n);
    if (op == "Clip") {
      Node* relu = producer(n->inputs[0], "Relu");
      if (relu && n->attr_float("min") >= 0) {
        n->inputs[0] = relu->inputs[0];
        count("clip_relu");
        return true;
      }
      return false;
    }
    if (op == "Gemm") return gemm(n);
    if (op == "BatchNormalization") return batch_norm(n);
    return false;
  }

  bool reshape(Node* n) {
    Value* x = n->inputs[0];
    if (x->shape() == n->outputs[0]->shape()) return forward(n, x, "reshape_noop");
    if (Node* p = producer(x); p && (p->op == "Reshape" || p->op == "Flatten" ||
                                     p->op == "Squeeze" || p->op == "Unsqueeze")) {
      n->inputs[0] = p->inputs[0];
      count("reshape_chain");
      return true;
    }
    return false;
  }

  bool transpose(Node* n) {
    const std::vector<int64_t>& perm = n->attr_ints("perm");
    std::vector<int64_t> ident(perm.size());
    std::iota(ident.begin(), ident.end(), 0);
    if (perm == ident) return forward(n, n->inputs[0], "transpose_noop");
    if (Node* p = producer(n->inputs[0], "Transpose")) {
      // out[i] = mid[perm[i]] = in[inner[perm[i]]].
      const std::vector<int64_t>& inner = p->attr_ints("perm");
      std::vector<int64_t> composed(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) composed[i] = inner[perm[i]];
      n->inputs[0] = p->inputs[0];
      n->attrs["perm"] = composed;
      count("transpose_chain");
      return true;
    }
    if (size_one_moves(n)) return true;
    return false;
  }

  // A Transpose that keeps the order of the dims larger than 1 moves no element
  // ([1, S, D] -> [S, 1, D]): a Reshape, which is a view, not a copy.
  bool size_one_moves(Node* n) {
    const ir::Shape& in = n->inputs[0]->shape();
    const std::vector<int64_t>& perm = n->attr_ints("perm");
    int64_t last = -1;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(in.size())) return false;
      if (in[p] == 1) continue;
      if (p < last) return false;
      last = p;
    }
    n->op = "Reshape";
    n->attrs = {{"shape", n->outputs[0]->shape()}};
    count("transpose_to_reshape");
    return true;
  }

  bool arith(Node* n) {
    Value* a = n->inputs[0];
    Value* b = n->inputs[1];
    const Value* out = n->outputs[0];
    if (!fp(out)) return false;
    const std::string& op = n->op;
    // Neutral elements (only if the other operand already has the result's type).
    auto neutral = [&](Value* c, Value* x, double e) {
      return const_all(c, e) && x->type == out->type;
    };
    if ((op == "Add" && neutral(b, a, 0)) || (op == "Sub" && neutral(b, a, 0)) ||
        (op == "Mul" && neutral(b, a, 1)) || (op == "Div" && neutral(b, a, 1)))
      if (forward(n, a, "neutral")) return true;
    if ((op == "Add" && neutral(a, b, 0)) || (op == "Mul" && neutral(a, b, 1)))
      if (forward(n, b, "neutral")) return true;
    if (op == "Sub" && b->has_data()) {
      Tensor t = *b->data;
      for (float& f : t.floats()) f = -f;
      t.normalize();
      n->op = "Add";
      n->inputs[1] = constant(b->name + ".neg", std::move(t));
      count("sub_to_add");
      return true;
    }
    if (op == "Div" && b->has_data()) {
      Tensor t = *b->data;
      for (float& f : t.floats()) f = static_cast<float>(1.0 / static_cast<double>(f));
      t.normalize();
      n->op = "Mul";
      n->inputs[1] = constant(b->name + ".recip", std::move(t));
      count("div_to_mul");
      return true;
    }
    if (op == "Div" && const_all(a, 1) && b->type == out->type) {
      n->op = "Reciprocal";
      n->inputs = {b};
      count("div_to_reciprocal");
      return true;
    }
    if ((op == "Add" || op == "Mul") && a->has_data() && !b->is_constant) {
      std::swap(n->inputs[0], n->inputs[1]);
      count("constant_second");
      return true;
    }
    return false;
  }

  bool gemm(Node* n) {
    Value* a = n->inputs[0];
    Value* b = n->inputs[1];
    Value* c = n->input(2);
    if (!fp(a) || n->attr_int("transA") != 0 || n->attr_float("alpha") != 1.0f ||
        (c && n->attr_float("beta") != 1.0f))
      return false;
    if (n->attr_int("transB") != 0) {
      if (!b->has_data()) return false;
      const int64_t rows = b->shape()[0], cols = b->shape()[1];
      Tensor t(b->elem(), {cols, rows});
      const auto& src = b->data->floats();
      auto& dst = t.floats();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) dst[k * rows + r] = src[r * cols + k];
      b = constant(b->name + ".T", std::move(t));
    }
    std::map<std::string, ir::Attribute> attrs;
    if (n->has_attr("compute_dtype")) attrs["compute_dtype"] = n->attrs.at("compute_dtype");
    Node* mm = ir::make_node(g_, "MatMul", {a, b}, attrs, n->name, 1,
                             {g_.unique_name(n->outputs[0]->name + ".mm")}, n);
    Value* result = mm->outputs[0];
    if (c) {
      Node* add = ir::make_node(g_, "Add", {result, c}, {}, n->name + "/bias", 1, {tmp_name(n)}, n);
      result = add->outputs[0];
    }
    substitute(n, result, "gemm_to_matmul");
    return true;
  }

  bool batch_norm(Node* n) {
    Value* x = n->inputs[0];
    for (size_t k = 1; k < 5; ++k)
      if (!n->inputs[k]->has_data()) return false;
    const int64_t C = x->shape()[1];
    const double eps = n->attr_float("epsilon");
    const auto& scale = n->inputs[1]->data->floats();
    const auto& bias = n->inputs[2]->data->floats();
    const auto& mean = n->inputs[3]->data->floats();
    const auto& var = n->inputs[4]->data->floats();
    // y = (x - mean) * s + bias = x * s + t.
    std::vector<double> s(C), t(C);
    for (int64_t k = 0; k < C; ++k) {
      s[k] = scale[k] / std::sqrt(static_cast<double>(var[k]) + eps);
      t[k] = bias[k] - mean[k] * s[k];
    }
    Node* conv = producer(x, "Conv");
    if (conv && uses_.single_use(x) && conv->inputs[1]->has_data() &&
        (!conv->input(2) || conv->input(2)->has_data())) {
      const Value* w = conv->inputs[1];
      Tensor nw = *w->data;
      const int64_t per = nw.numel() / C;  // weights are [C_out, C_in/group, k...]
      for (int64_t i = 0; i < nw.numel(); ++i)
        nw.floats()[i] = static_cast<float>(nw.floats()[i] * s[i / per]);
      Tensor nb(x->elem(), {C});
      for (int64_t k = 0; k < C; ++k) {
        double b0 = conv->input(2) ? conv->input(2)->data->floats()[k] : 0.0;
        nb.floats()[k] = static_cast<float>(b0 * s[k] + t[k]);
      }
      nw.normalize();
      nb.normalize();
      Value* wv = constant(w->name + ".bn", std::move(nw));
      Value* bv =
          constant((conv->input(2) ? conv->input(2)->name : w->name) + ".bn_bias", std::move(nb));
      std::map<std::string, ir::Attribute> attrs = conv->attrs;
      Node* fused = ir::make_node(g_, "Conv", {conv->inputs[0], wv, bv}, attrs, conv->name, 1,
                                  {tmp_name(n)}, n);
      substitute(n, fused->outputs[0], "bn_into_conv");
      return true;
    }
    // Per-channel affine: constants shaped [C, 1, ..., 1] broadcast over [N, C, ...].
    ir::Shape cs(x->rank() - 1, 1);
    cs[0] = C;
    Tensor ts(x->elem(), cs), tt(x->elem(), cs);
    for (int64_t k = 0; k < C; ++k) {
      ts.floats()[k] = static_cast<float>(s[k]);
      tt.floats()[k] = static_cast<float>(t[k]);
    }
    ts.normalize();
    tt.normalize();
    Value* sv = constant(n->inputs[1]->name + ".bn_scale", std::move(ts));
    Value* tv = constant(n->inputs[2]->name + ".bn_shift", std::move(tt));
    Node* mul = ir::make_node(g_, "Mul", {x, sv}, {}, n->name + "/scale", 1,
                              {g_.unique_name(n->outputs[0]->name + ".scaled")}, n);
    Node* add = ir::make_node(g_, "Add", {mul->outputs[0], tv}, {}, n->name + "/shift", 1,
                              {tmp_name(n)}, n);
    substitute(n, add->outputs[0], "bn_to_affine");
    return true;
  }

  ir::Graph& g_;
  PassContext& ctx_;
  Uses uses_;
};

void run(ir::Graph& g, PassContext& ctx) {
  Canonicalizer c(g, ctx);
  // Each sweep only shrinks or simplifies the graph; the cap is a safety net.
  for (int iter = 0; iter < 64; ++iter) {
    int folded = interp::fold_constants(g);
    bump(ctx, kPass, "folded", folded);
    bool changed = c.sweep();
    int erased = g.erase_dead_nodes();
    bump(ctx, kPass, "dead", erased);
    if (!changed && folded == 0) break;
  }
}

}  // namespace

const PassInfo& canonicalize_pass() {
  static const PassInfo p{kPass,
                          "simplify: identities, constant folding, reshape/transpose chains, "
                          "x*1 / x+0, Sub/Div by constants, Gemm -> MatMul, BatchNorm into Conv, "
                          "dead nodes",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
