// fuse_patterns: recognise the subgraphs torch.onnx.export (1.13) writes for
// common activations and norms and replace each with one node:
//   GELU, erf form    x * (1 + erf(x / sqrt2)) * 0.5   (any order of the Mul tree;
//                     x * 0.70710678 as canonicalize writes the Div) -> trn.Gelu{none}
//   GELU, tanh form   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), the
//                     cube as x*(x*x) (torch) or Pow(x, 3) (hand-written)
//                     -> trn.Gelu{tanh}
//   LayerNorm         d = x - ReduceMean(x); d / Sqrt(ReduceMean(d^2) + eps)
//                     [* gamma] [+ beta] (Div, or Mul by Reciprocal), and the opset-17
//                     LayerNormalization op with unused statistics -> trn.LayerNorm
//   RMSNorm           x / Sqrt(ReduceMean(x^2) + eps) [* weight] (Div, Reciprocal,
//                     or torch's rsqrt export 1 / Sqrt) -> trn.RMSNorm
//   SiLU              x * Sigmoid(x) -> trn.Silu
//   HardSwish         x * Clip(x + 3, 0, 6) / 6 (Relu + Clip as torch writes relu6),
//                     x * HardSigmoid(x){1/6, 1/2} -> the ONNX HardSwish op
//   Attention forms   before matching, a scale on Q moves to the scores and a Transpose
//                     that also moves the heads of K is split (attention_forms.cpp)
//   Split projection  MatMul(x, constant W) [+ b] read only by last-axis Split/Slice
//                     -> one MatMul per part (split_projection.cpp)
//   Patch Conv        a Conv whose windows tile the input -> MatMul of the patches
//                     (patchify.cpp)
//   Attention         Softmax(S * scale [+ mask], last axis) @ V with S = Q @ Transpose(K)
//                     (the last two axes swapped), scale a positive scalar constant, the
//                     mask absent or causal: an additive constant that is 0 on and below
//                     the diagonal and <= -1e9 (or -inf) above it, or Where(constant
//                     causal pattern, fill <= -1e9, S * scale) as masked_fill writes it
//                     -> trn.Attention{scale, causal}; K and V each a Concat along the
//                     sequence in the same parts become the node's (K, V) pairs. A mask value of
//                     -1e9 or below adds nothing after exp in fp32 unless a score is near 1e9
//                     itself.
//   rotate_half sign  Concat(Neg(x2), x1) * constant over the last axis (rotary
//                     embeddings) -> Concat(x2, x1) * the constant negated over x2's
//                     part (fold_rotate_sign)
//   Attention extras  rotary embeddings on Q and K (x * cos + Concat(x2, x1) * sin,
//                     the tables constant [S, D]) go into trn.Attention (rotary=1), and
//                     Transposes swapping sequence and heads around Q, K, V and the
//                     output too (seq_first=1)
//   Norm affine fold  last, a LayerNorm/RMSNorm read only as the left operand of
//                     MatMuls with constant weights: its scale and bias move into
//                     those weights and biases (fold_norm_affine.cpp)
// Matching is exact: every constant is checked up to fp32 rounding (near_fp32),
// reductions must be ReduceMean with keepdims over the trailing axes, gamma and
// beta must broadcast to the normalized dims, every intermediate value must be
// used only inside the pattern, and the fused result must have the replaced
// value's type. Anything else is left alone. The fused node takes the replaced
// value's name and a node name like "/norm1/LayerNorm" (the root node's scope).
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "compiler/graph_passes/attention_forms.h"
#include "compiler/graph_passes/fold_norm_affine.h"
#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/patchify.h"
#include "compiler/graph_passes/split_projection.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Value;

constexpr std::string_view kPass = "fuse_patterns";

struct Match {
  std::string op;
  std::string short_name;  // for the node name and the stats key
  std::vector<Value*> inputs;
  std::map<std::string, ir::Attribute> attrs;
  std::vector<Node*> nodes;   // every node the fused node replaces
  bool new_type = false;      // the result's type is not input 0's (checked after making it)
  bool k_heads_last = false;  // inputs[1] is K [..., S, H, D] (attention_seq_first only)
};

class PatternFuser {
 public:
  PatternFuser(ir::Graph& g, PassContext& ctx) : g_(g), ctx_(ctx), uses_(g) {}

  void run() {
    // Outermost roots come last in topological order: visiting in reverse fuses a
    // whole pattern before any part of it could be taken for a smaller one.
    std::vector<Node*> nodes = g_.nodes_snapshot();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (consumed_.count(n) || dead(n)) continue;
      // Each matcher fills a fresh Match, so a failed attempt leaves nothing behind.
      Match m;
      auto attempt = [&](auto&& matcher) {
        Match t;
        if (!matcher(t)) return false;
        m = std::move(t);
        return true;
      };
      bool found = false;
      if (n->op == "LayerNormalization")
        found = attempt([&](Match& t) { return layer_norm_op(n, t); });
      else if (n->op == "Add")
        found = attempt([&](Match& t) { return norm_with_beta(n, t); });
      else if (n->op == "Mul" || n->op == "Div")
        found = attempt([&](Match& t) { return norm(n->outputs[0], nullptr, t); }) ||
                attempt([&](Match& t) { return gelu(n, t); }) ||
                attempt([&](Match& t) { return silu(n, t); }) ||
                attempt([&](Match& t) { return hard_swish(n, t); });
      if (!found && n->op == "MatMul") found = attempt([&](Match& t) { return attention(n, t); });
      if (!found && n->op == "Transpose")
        found = attempt([&](Match& t) { return attention_seq_first(n, t); });
      if (found) commit(n, m);  // updates uses_
    }
    g_.erase_dead_nodes();
  }

 private:
  bool dead(const Node* n) const {
    for (const Value* o : n->outputs)
      if (!uses_.unused(o)) return false;
    return true;
  }

  // Replaces root->outputs[0] by the fused node if the match is self-contained.
  bool commit(Node* root, const Match& m) {
    Value* out = root->outputs[0];
    if (m.inputs.empty() || (!m.new_type && m.inputs[0]->type != out->type)) return false;
    std::unordered_set<const Node*> inside(m.nodes.begin(), m.nodes.end());
    inside.insert(root);
    for (const Node* n : inside) {
      if (n == root) continue;
      for (const Value* o : n->outputs) {
        if (uses_.is_output(o)) return false;
        for (const auto& [user, slot] : uses_.of(o))
          if (!inside.count(user)) return false;
      }
    }
    // The root's scope + the pattern: "/norm1/Add_1" -> "/norm1/LayerNorm".
    size_t slash = root->name.rfind('/');
    std::string name =
        (slash == std::string::npos ? "" : root->name.substr(0, slash + 1)) + m.short_name;
    Node* f = ir::make_node(g_, m.op, m.inputs, m.attrs, name, 1,
                            {g_.unique_name(out->name + ".fused")}, root);
    if (f->outputs[0]->type != out->type) {
      g_.erase_node(f);
      return false;
    }
    for (const Node* n : m.nodes) f->merge_origin(*n);
    replace_value(g_, out, f->outputs[0], true);
    uses_.added(f);
    uses_.replaced(out, f->outputs[0]);
    consumed_.insert(inside.begin(), inside.end());
    bump(ctx_, kPass, m.short_name);
    return true;
  }

  static void add_nodes(Match& m, const Product& p) {
    m.nodes.insert(m.nodes.end(), p.nodes.begin(), p.nodes.end());
  }

  // `v` = Add(other, c) or Add(c, other) with c a scalar constant near `c_want`;
  // returns the Add node and sets `other`.
  static Node* add_const(const Value* v, double c_want, Value*& other) {
    Node* a = producer(v, "Add");
    if (!a) return nullptr;
    for (int k = 0; k < 2; ++k) {
      auto c = scalar_const(a->inputs[k]);
      if (c && near_fp32(*c, c_want)) {
        other = a->inputs[1 - k];
        return a;
      }
    }
    return nullptr;
  }

  // --- GELU ------------------------------------------------------------------
  bool gelu(Node* root, Match& m) {
    Product p = flatten_product(uses_, root->outputs[0]);
    if (p.factors.size() != 2 || !near_fp32(p.scale, 0.5)) return false;
    for (int k = 0; k < 2; ++k) {
      Value* x = p.factors[k].v;
      Value* a = p.factors[1 - k].v;
      if (p.factors[k].exp != 1 || p.factors[1 - k].exp != 1) return false;
      Value* e = nullptr;
      Node* add1 = add_const(a, 1.0, e);
      if (!add1) continue;
      Match t;
      add_nodes(t, p);
      t.nodes.push_back(add1);
      if (Node* erf = producer(e, "Erf")) {
        // erf(x / sqrt 2): a product of x alone with scale 1/sqrt 2.
        Product z = flatten_product(uses_, erf->inputs[0]);
        if (z.factors.size() != 1 || z.factors[0].v != x || z.factors[0].exp != 1 ||
            !near_fp32(z.scale, 1.0 / std::sqrt(2.0)))
          continue;
        t.nodes.push_back(erf);
        add_nodes(t, z);
        t.attrs["approximate"] = "none";
      } else if (Node* th = producer(e, "Tanh")) {
        // tanh(sqrt(2/pi) * (x + 0.044715 * x^3)).
        Product u = flatten_product(uses_, th->inputs[0]);
        if (u.factors.size() != 1 || u.factors[0].exp != 1 ||
            !near_fp32(u.scale, std::sqrt(2.0 / M_PI)))
          continue;
        Node* s = producer(u.factors[0].v, "Add");
        Value* q = other_input(s, x);
        if (!q) continue;
        Product c = flatten_product(uses_, q);
        if (!near_fp32(c.scale, 0.044715) || !is_cube_of(c, x, t)) continue;
        t.nodes.push_back(th);
        add_nodes(t, u);
        t.nodes.push_back(s);
        add_nodes(t, c);
        t.attrs["approximate"] = "tanh";
      } else {
        continue;
      }
      t.op = "trn.Gelu";
      t.short_name = "Gelu";
      t.inputs = {x};
      m = std::move(t);
      return true;
    }
    return false;
  }

  // The product's factors are x^3: x, x, x or Pow(x, 3) (whose node joins `m`).
  bool is_cube_of(const Product& c, const Value* x, Match& m) const {
    if (c.factors.size() == 3) {
      for (const Factor& f : c.factors)
        if (f.v != x || f.exp != 1) return false;
      return true;
    }
    if (c.factors.size() != 1 || c.factors[0].exp != 1) return false;
    Node* pw = producer(c.factors[0].v, "Pow");
    auto e = pw ? scalar_const(pw->inputs[1]) : std::nullopt;
    if (!pw || pw->inputs[0] != x || !e || *e != 3.0) return false;
    m.nodes.push_back(pw);
    return true;
  }

  // --- SiLU, HardSwish ---------------------------------------------------------
  bool silu(Node* root, Match& m) {
    Product p = flatten_product(uses_, root->outputs[0]);
    if (p.factors.size() != 2 || p.scale != 1.0) return false;
    for (int k = 0; k < 2; ++k) {
      Value* x = p.factors[k].v;
      Node* sig = producer(p.factors[1 - k].v, "Sigmoid");
      if (p.factors[0].exp != 1 || p.factors[1].exp != 1 || !sig || sig->inputs[0] != x) continue;
      m.op = "trn.Silu";
      m.short_name = "Silu";
      m.inputs = {x};
      add_nodes(m, p);
      m.nodes.push_back(sig);
      return true;
    }
    return false;
  }

  bool hard_swish(Node* root, Match& m) {
    Product p = flatten_product(uses_, root->outputs[0]);
    if (p.factors.size() != 2 || p.factors[0].exp != 1 || p.factors[1].exp != 1) return false;
    for (int k = 0; k < 2; ++k) {
      Value* x = p.factors[k].v;
      Value* h = p.factors[1 - k].v;
      Match t;
      add_nodes(t, p);
      if (Node* hs = producer(h, "HardSigmoid")) {
        if (hs->inputs[0] != x || !near_fp32(hs->attr_float("alpha"), 1.0 / 6.0) ||
            !near_fp32(hs->attr_float("beta"), 0.5) || !near_fp32(p.scale, 1.0))
          continue;
        t.nodes.push_back(hs);
      } else if (Node* clip = producer(h, "Clip")) {
        // relu6(x + 3) / 6; torch writes relu6 as Relu then Clip(0, 6).
        if (clip->attr_float("min") != 0.0f || clip->attr_float("max") != 6.0f ||
            !near_fp32(p.scale, 1.0 / 6.0))
          continue;
        t.nodes.push_back(clip);
        Value* in = clip->inputs[0];
        if (Node* relu = producer(in, "Relu")) {
          t.nodes.push_back(relu);
          in = relu->inputs[0];
        }
        Value* y = nullptr;
        Node* add3 = add_const(in, 3.0, y);
        if (!add3 || y != x) continue;
        t.nodes.push_back(add3);
      } else {
        continue;
      }
      t.op = "HardSwish";
      t.short_name = "HardSwish";
      t.inputs = {x};
      m = std::move(t);
      return true;
    }
    return false;
  }

  // --- LayerNorm, RMSNorm ------------------------------------------------------
  // A ReduceMean with keepdims over the trailing axes of its input; returns the
  // first reduced axis, or -1.
  static int64_t trailing_mean_axis(const Node* r) {
    if (!r || r->op != "ReduceMean" || r->attr_int("keepdims") != 1) return -1;
    const auto& axes = r->attr_ints("axes");
    const int64_t rank = r->inputs[0]->rank();
    if (axes.empty()) return rank == 0 ? -1 : 0;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return -1;
    return axes.front();
  }

  // A scale/bias operand for dims axis..: its shape must broadcast to those dims
  // exactly; a constant with leading 1s beyond them is reshaped. Null if not.
  Value* norm_param(Value* p, const Value* x, int64_t axis) {
    const ir::Shape inner(x->shape().begin() + axis, x->shape().end());
    if (p->elem() != x->elem()) return nullptr;
    auto fits = [&](const ir::Shape& s) {
      try {
        return ir::broadcast_shapes({inner, s}) == inner;
      } catch (const ir::CompileError&) {
        return false;
      }
    };
    if (fits(p->shape())) return p;
    if (!p->has_data()) return nullptr;
    ir::Shape s = p->shape();
    while (!s.empty() && s.front() == 1 && s.size() > inner.size()) s.erase(s.begin());
    if (!fits(s)) return nullptr;
    return g_.add_constant(g_.unique_name(p->name + ".r"), p->data->reshaped(s));
  }

  bool norm_with_beta(Node* add, Match& m) {
    for (int k = 0; k < 2; ++k) {
      Value* core = add->inputs[k];
      if (!uses_.single_use(core)) continue;
      Match t;
      if (!norm(core, add->inputs[1 - k], t) || t.op != "trn.LayerNorm") continue;
      m = std::move(t);
      return true;
    }
    return false;
  }

  // LayerNorm / RMSNorm whose product root is `v`, with an optional beta.
  bool norm(Value* v, Value* beta, Match& m) {
    if (!producer(v)) return false;
    Product p = flatten_product(uses_, v);
    if (p.nodes.empty() || !near_fp32(p.scale, 1.0)) return false;
    // One divisor: Sqrt(ReduceMean(t^2) + eps); the numerator t; maybe gamma.
    Value* den = nullptr;
    std::vector<Value*> num;
    for (const Factor& f : p.factors) {
      if (f.exp == -1 && !den)
        den = f.v;
      else if (f.exp == 1)
        num.push_back(f.v);
      else
        return false;
    }
    if (!den || num.empty() || num.size() > 2) return false;
    Node* sqrt = producer(den, "Sqrt");
    if (!sqrt) return false;
    Node* add_eps = producer(sqrt->inputs[0], "Add");
    if (!add_eps) return false;
    Value* var = nullptr;
    double eps = 0;
    for (int k = 0; k < 2 && !var; ++k)
      if (auto c = scalar_const(add_eps->inputs[k]); c && *c >= 0) {
        var = add_eps->inputs[1 - k];
        eps = *c;
      }
    Node* mean_sq = producer(var, "ReduceMean");
    const int64_t axis = trailing_mean_axis(mean_sq);
    if (axis < 0) return false;
    Node* sq = producer(mean_sq->inputs[0]);
    Value* t = nullptr;
    if (sq && sq->op == "Pow" && scalar_const(sq->inputs[1]) == 2.0)
      t = sq->inputs[0];
    else if (sq && sq->op == "Mul" && sq->inputs[0] == sq->inputs[1])
      t = sq->inputs[0];
    if (!t) return false;
    Value* gamma = nullptr;
    if (num[0] == t && num.size() == 2)
      gamma = num[1];
    else if (num.size() == 2 && num[1] == t)
      gamma = num[0];
    else if (num.size() != 1 || num[0] != t)
      return false;
    // LayerNorm if t = x - ReduceMean(x) over the same axes.
    Value* x = t;
    Node* sub = producer(t, "Sub");
    bool layer = false;
    if (sub) {
      Node* mean = producer(sub->inputs[1], "ReduceMean");
      if (mean && mean->inputs[0] == sub->inputs[0] && trailing_mean_axis(mean) == axis &&
          mean->attr_ints("axes") == mean_sq->attr_ints("axes")) {
        x = sub->inputs[0];
        layer = true;
        m.nodes.push_back(sub);
        m.nodes.push_back(mean);
      }
    }
    if (beta && !layer) return false;
    if (x->rank() != t->rank() || !ir::is_float(x->elem())) return false;
    if (gamma && !(gamma = norm_param(gamma, x, axis))) return false;
    if (beta && !(beta = norm_param(beta, x, axis))) return false;
    add_nodes(m, p);
    m.nodes.insert(m.nodes.end(), {sqrt, add_eps, mean_sq, sq});
    m.op = layer ? "trn.LayerNorm" : "trn.RMSNorm";
    m.short_name = layer ? "LayerNorm" : "RMSNorm";
    m.inputs = {x};
    if (gamma || beta) m.inputs.push_back(gamma);
    if (beta) m.inputs.push_back(beta);
    m.attrs = {{"axis", axis}, {"epsilon", static_cast<float>(eps)}};
    return true;
  }

  bool layer_norm_op(Node* n, Match& m) {
    for (size_t k = 1; k < n->outputs.size(); ++k)
      if (!uses_.unused(n->outputs[k])) return false;
    m.op = "trn.LayerNorm";
    m.short_name = "LayerNorm";
    m.inputs = n->inputs;
    m.attrs = {{"axis", n->attrs.at("axis")}, {"epsilon", n->attrs.at("epsilon")}};
    return true;
  }

  // --- Attention ---------------------------------------------------------------
  static bool masked_value(double v) { return v <= -1e9; }

  // A constant [1.., S, S] whose element (i, j) is `below` when j <= i and satisfies
  // `above` when j > i.
  template <typename Below, typename Above>
  static bool causal_const(const Value* c, int64_t S, const Below& below, const Above& above) {
    if (!c || !c->has_data() || c->rank() < 2) return false;
    const ir::Shape& s = c->shape();
    for (size_t i = 0; i + 2 < s.size(); ++i)
      if (s[i] != 1) return false;
    if (s[s.size() - 2] != S || s.back() != S) return false;
    const ir::Tensor f = c->data->holds_floats() ? *c->data : c->data->cast(ir::ElemType::fp32);
    const std::vector<float>& v = f.floats();
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j)
        if (!(j <= i ? below(v[i * S + j]) : above(v[i * S + j]))) return false;
    return true;
  }

  // Softmax(scale * Q @ Transpose(K) [+ causal mask]) @ V rooted at the MatMul `root`.
  bool attention(Node* root, Match& m) {
    Node* sm = producer(root->inputs[0], "Softmax");
    if (!sm || !uses_.single_use(root->inputs[0])) return false;
    Value* v = root->inputs[1];
    Value* x = sm->inputs[0];
    const int64_t r = x->rank();
    if (r < 2 || sm->attr_int("axis") != r - 1 || !ir::is_float(x->elem())) return false;
    const int64_t sq = x->shape()[r - 2], skv = x->shape()[r - 1];
    Value* y = x;
    int64_t causal = 0;
    auto zero = [](float f) { return f == 0.0f; };
    auto masked = [](float f) { return masked_value(f); };
    if (Node* add = producer(x, "Add")) {
      for (int k = 0; k < 2 && !causal; ++k)
        if (sq == skv && causal_const(add->inputs[k], sq, zero, masked)) {
          y = add->inputs[1 - k];
          causal = 1;
          m.nodes.push_back(add);
        }
      if (!causal) return false;
    } else if (Node* w = producer(x, "Where")) {
      // Where(c, fill, s): c true above the diagonal; Where(c, s, fill): true on and below.
      auto t = [](float f) { return f != 0.0f; };
      auto f = [](float f) { return f == 0.0f; };
      for (int k = 1; k < 3 && !causal; ++k) {
        auto fill = scalar_const(w->inputs[k]);
        if (!fill || !masked_value(*fill) || sq != skv) continue;
        const bool ok =
            k == 1 ? causal_const(w->inputs[0], sq, f, t) : causal_const(w->inputs[0], sq, t, f);
        if (!ok) continue;
        y = w->inputs[3 - k];
        causal = 1;
        m.nodes.push_back(w);
      }
      if (!causal) return false;
    }
    if (!uses_.single_use(y) || y->type != x->type) return false;
    Product p = flatten_product(uses_, y);
    if (p.factors.size() != 1 || p.factors[0].exp != 1 || !(p.scale > 0)) return false;
    Node* qk = producer(p.factors[0].v, "MatMul");
    if (!qk || (!p.nodes.empty() && !uses_.single_use(p.factors[0].v))) return false;
    Value* q = qk->inputs[0];
    Value* kt = qk->inputs[1];
    Node* tr = producer(kt, "Transpose");
    if (!tr) return false;
    const std::vector<int64_t>& perm = tr->attr_ints("perm");
    if (static_cast<int64_t>(perm.size()) != r) return false;
    // One Transpose taking K [..., S, H, D] to [..., H, D, S] (as torch exports it
    // when K's heads move too): only when the caller reads K in that layout.
    const bool k_heads_last = k_heads_last_ok_ && r >= 3 && perm[r - 3] == r - 2 &&
                              perm[r - 2] == r - 1 && perm[r - 1] == r - 3;
    for (int64_t i = 0; i < r; ++i)
      if (perm[i] != (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2) && !(k_heads_last && i >= r - 3))
        return false;
    Value* k = tr->inputs[0];
    for (const Value* t : {q, k, v})
      if (t->rank() != r || !ir::is_float(t->elem()) || t->elem() != x->elem()) return false;
    ir::Shape ks = k->shape();  // heads first
    if (k_heads_last) std::swap(ks[r - 3], ks[r - 2]);
    const ir::Shape &qs = q->shape(), &vs = v->shape();
    for (int64_t i = 0; i < r - 2; ++i)
      if (qs[i] != x->shape()[i] || ks[i] != qs[i] || vs[i] != qs[i]) return false;
    if (qs[r - 2] != sq || ks[r - 2] != skv || vs[r - 2] != skv || ks[r - 1] != qs[r - 1])
      return false;
    m.nodes.push_back(sm);
    add_nodes(m, p);
    m.nodes.push_back(qk);
    m.inputs = {q, k, v};
    m.k_heads_last = k_heads_last;
    if (k_heads_last) {
      if (!uses_.single_use(kt)) return false;
      m.nodes.push_back(tr);
    } else if (uses_.single_use(kt)) {
      m.nodes.push_back(tr);
      // K and V concatenated along the sequence in the same parts (a KV cache and the
      // new token's): the fused node reads the parts, no concatenated copy is made.
      Node* kc = producer(k, "Concat");
      Node* vc = producer(v, "Concat");
      if (kc && vc && uses_.single_use(k) && uses_.single_use(v) && kc->attr_int("axis") == r - 2 &&
          vc->attr_int("axis") == r - 2 && kc->inputs.size() == vc->inputs.size()) {
        bool same = true;
        for (size_t i = 0; i < kc->inputs.size() && same; ++i)
          same = kc->inputs[i] && vc->inputs[i] && kc->inputs[i]->rank() == r &&
                 vc->inputs[i]->rank() == r &&
                 kc->inputs[i]->shape()[r - 2] == vc->inputs[i]->shape()[r - 2] &&
                 kc->inputs[i]->elem() == x->elem() && vc->inputs[i]->elem() == x->elem();
        if (same) {
          m.inputs = {q};
          for (size_t i = 0; i < kc->inputs.size(); ++i)
            m.inputs.insert(m.inputs.end(), {kc->inputs[i], vc->inputs[i]});
          m.nodes.insert(m.nodes.end(), {kc, vc});
        }
      }
    }
    m.op = "trn.Attention";
    m.short_name = "Attention";
    m.attrs = {{"scale", static_cast<float>(p.scale)}, {"causal", causal}};
    m.new_type = true;
    if (!k_heads_last) absorb_rotary(m);
    return true;
  }

  // The perm that swaps the sequence and head axes of a rank-r [..., S, H, D].
  static bool heads_swap(const Node* t, int64_t r) {
    if (!t || r < 3) return false;
    const std::vector<int64_t>& perm = t->attr_ints("perm");
    if (static_cast<int64_t>(perm.size()) != r) return false;
    for (int64_t i = 0; i < r; ++i)
      if (perm[i] != (i == r - 3 ? r - 2 : i == r - 2 ? r - 3 : i)) return false;
    return true;
  }

  // Transpose(attention(Transpose(Q), Transpose(K), Transpose(V))) with each
  // Transpose swapping the sequence and head axes (the projections' [B, S, H, D] to
  // heads first and back): trn.Attention{seq_first=1} on the untransposed tensors,
  // no head transpose goes through HBM.
  bool attention_seq_first(Node* root, Match& m) {
    const int64_t r = root->outputs[0]->rank();
    Node* pv = producer(root->inputs[0], "MatMul");
    if (!heads_swap(root, r) || !pv || !uses_.single_use(root->inputs[0])) return false;
    k_heads_last_ok_ = true;
    const bool found = attention(pv, m);
    k_heads_last_ok_ = false;
    if (!found) return false;
    const bool rotary = m.attrs.count("rotary") != 0;
    if (m.inputs.size() != (rotary ? 7u : 3u)) return false;  // no KV-cache parts
    for (int i = 0; i < 3; ++i) {
      if (i == 1 && m.k_heads_last) continue;  // K^T's Transpose is in m.nodes already
      Node* t = producer(m.inputs[i], "Transpose");
      if (!heads_swap(t, r)) return false;
      m.nodes.push_back(t);
      m.inputs[i] = t->inputs[0];
    }
    m.nodes.push_back(pv);
    m.attrs["seq_first"] = int64_t{1};
    return true;
  }

  // x[..., a:b] along the last axis (step 1, bounds clamped as ONNX does).
  static bool last_axis_slice(const Node* s, Value*& x, int64_t& a, int64_t& b) {
    if (!s || s->inputs.size() != 1 || !s->has_attr("starts") || !s->has_attr("ends")) return false;
    x = s->inputs[0];
    const int64_t r = x->rank();
    if (r < 1) return false;
    const std::vector<int64_t>& st = s->attr_ints("starts");
    const std::vector<int64_t>& en = s->attr_ints("ends");
    std::vector<int64_t> axes{r - 1}, steps{1};
    if (s->has_attr("axes")) axes = s->attr_ints("axes");
    if (s->has_attr("steps")) steps = s->attr_ints("steps");
    if (st.size() != 1 || en.size() != 1 || axes.size() != 1 || steps.size() != 1 ||
        steps[0] != 1 || (axes[0] != r - 1 && axes[0] != -1))
      return false;
    const int64_t n = x->shape().back();
    auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
    a = clamp(st[0]);
    b = clamp(en[0]);
    return true;
  }

  // An fp32 constant [S, D] (only 1s before) for rows of `x` [..., S, D].
  static bool rotary_table(const Value* c, const Value* x) {
    if (!c || !c->has_data() || !c->data->holds_floats() || c->elem() != ir::ElemType::fp32 ||
        c->rank() < 2 || x->rank() < 2)
      return false;
    const ir::Shape &cs = c->shape(), &xs = x->shape();
    for (size_t i = 0; i + 2 < cs.size(); ++i)
      if (cs[i] != 1) return false;
    return cs.size() <= xs.size() && cs[cs.size() - 2] == xs[xs.size() - 2] &&
           cs.back() == xs.back();
  }

  // y = x * cos + Concat(x[..., h:], x[..., :h]) * sin over the last axis (rotary
  // embeddings once fold_rotate_sign took rotate_half's Neg into sin), cos and sin
  // constant tables [S, D]; sets x, cos, sin and the nodes.
  bool rotary_of(Value* y, Value*& x, Value*& cos, Value*& sin, std::vector<Node*>& nodes) const {
    Node* add = producer(y, "Add");
    if (!add || add->inputs.size() != 2 || y->rank() < 2) return false;
    for (int k = 0; k < 2; ++k) {
      Node* direct = producer(add->inputs[k], "Mul");
      Node* rot = producer(add->inputs[1 - k], "Mul");
      if (!direct || !rot || !uses_.single_use(add->inputs[0]) || !uses_.single_use(add->inputs[1]))
        continue;
      for (int j = 0; j < 2; ++j) {
        Node* cat = producer(rot->inputs[j], "Concat");
        Value* s = rot->inputs[1 - j];
        if (!cat || cat->inputs.size() != 2 || !uses_.single_use(rot->inputs[j]) ||
            (cat->attr_int("axis") != y->rank() - 1 && cat->attr_int("axis") != -1))
          continue;
        Node* s0 = producer(cat->inputs[0], "Slice");
        Node* s1 = producer(cat->inputs[1], "Slice");
        Value *x0 = nullptr, *x1 = nullptr;
        int64_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;
        if (!last_axis_slice(s0, x0, a0, b0) || !last_axis_slice(s1, x1, a1, b1) || x0 != x1 ||
            !uses_.single_use(cat->inputs[0]) || !uses_.single_use(cat->inputs[1]))
          continue;
        const int64_t d = x0->shape().back();
        if (d % 2 != 0 || a0 != d / 2 || b0 != d || a1 != 0 || b1 != d / 2) continue;
        if (x0->type != y->type || !rotary_table(s, x0)) continue;
        Value* c = other_input(direct, x0);
        if (!c || !rotary_table(c, x0)) continue;
        x = x0;
        cos = c;
        sin = s;
        nodes.insert(nodes.end(), {add, direct, rot, cat, s0, s1});
        return true;
      }
    }
    return false;
  }

  // Rotary embeddings on both Q and K of a single (K, V) pair go into the kernel's
  // load of the rows (rotary=1 and the four tables): no rotated copy through HBM.
  void absorb_rotary(Match& m) const {
    if (m.inputs.size() != 3) return;
    Value *xq = nullptr, *cq = nullptr, *sq = nullptr, *xk = nullptr, *ck = nullptr, *sk = nullptr;
    std::vector<Node*> nodes;
    if (!rotary_of(m.inputs[0], xq, cq, sq, nodes) || !rotary_of(m.inputs[1], xk, ck, sk, nodes))
      return;
    if (xq->elem() != m.inputs[0]->elem() || xk->elem() != m.inputs[1]->elem()) return;
    m.inputs = {xq, xk, m.inputs[2], cq, sq, ck, sk};
    m.nodes.insert(m.nodes.end(), nodes.begin(), nodes.end());
    m.attrs["rotary"] = int64_t{1};
  }

  ir::Graph& g_;
  PassContext& ctx_;
  Uses uses_;
  std::unordered_set<const Node*> consumed_;  // replaced by a fused node (dead, not erased yet)
  bool k_heads_last_ok_ = false;              // attention() may take K [..., S, H, D]
};

// Rotary embeddings' rotate_half(x) * sin, Concat(Neg(x2), x1) * c along the last
// axis with c a constant over the whole axis: the sign goes into the constant,
// Concat(x2, x1) * c' with c' negated over the first part. Exact ((-a) * s is
// a * (-s)), and one HBM pass (the Neg) less.
void fold_rotate_sign(ir::Graph& g, PassContext& ctx) {
  const Uses uses(g);  // a fold only changes values no other fold looks at
  for (Node* m : g.nodes_snapshot()) {
    if (m->op != "Mul" || m->inputs.size() != 2) continue;
    for (int k = 0; k < 2; ++k) {
      Value* cv = m->inputs[1 - k];
      Node* cat = producer(m->inputs[k], "Concat");
      if (!cat || cat->inputs.size() != 2 || !cv->has_data() || !cv->data->holds_floats() ||
          cv->elem() != ir::ElemType::fp32)
        continue;
      const Value* y = cat->outputs[0];
      if (y->rank() < 1 || cat->attr_int("axis") != y->rank() - 1 || !uses.single_use(y) ||
          cv->rank() < 1 || cv->shape().back() != y->shape().back())
        continue;
      Node* neg = producer(cat->inputs[0], "Neg");
      if (!neg || !uses.single_use(neg->outputs[0])) continue;
      const int64_t last = cv->shape().back(), h = cat->inputs[0]->shape().back();
      ir::Tensor t = *cv->data;
      std::vector<float>& f = t.floats();
      for (size_t i = 0; i < f.size(); ++i)
        if (static_cast<int64_t>(i) % last < h) f[i] = -f[i];
      m->inputs[1 - k] = g.add_constant(g.unique_name(cv->name + ".signed"), std::move(t));
      cat->inputs[0] = neg->inputs[0];
      m->merge_origin(*neg);
      bump(ctx, kPass, "RotateSign");
      break;
    }
  }
  g.erase_dead_nodes();  // the Negs, so the Slices they read count one use each
}

void run(ir::Graph& g, PassContext& ctx) {
  patchify_convs(g, ctx);
  split_projections(g, ctx);
  fold_rotate_sign(g, ctx);
  expose_attention_scores(g, ctx);
  PatternFuser(g, ctx).run();
  fold_norm_affine(g, ctx);
}

}  // namespace

const PassInfo& fuse_patterns_pass() {
  static const PassInfo p{kPass,
                          "fuse torch-exported GELU (erf/tanh), LayerNorm, RMSNorm, SiLU, "
                          "HardSwish and attention subgraphs into one node each",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
