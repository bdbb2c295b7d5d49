// unroll_rnn: LSTM, GRU and RNN nodes (ONNX semantics, static sequence length)
// become their cells unrolled over time, in ops the device lowers: the input
// projection of every timestep is one MatMul over [T*B, I] plus the folded biases,
// sliced per step; each step is a MatMul of the previous state by R^T, an Add,
// Slices for the gates (LSTM iofc, GRU zrh), the gate activations, and Mul/Add/Sub
// for the state update. Y is the Concat of the steps' states, Y_h/Y_c the last
// ones; layout 1 transposes in and out; the reverse direction walks t = T-1..0.
// Weights are sliced and transposed by graph ops that canonicalize folds when
// they are constants. An absent initial state is a zero constant (the first
// step's MatMul by it folds away).
//
// Left in place (and refused by the lowering with the reason, so the node runs on
// the host): clip, LSTM input_forget, sequence_lens that is not a constant equal
// to T everywhere, non-float types, and more than kMaxSteps unrolled steps.
#include "compiler/graph_passes/unroll_rnn.h"

#include <algorithm>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Shape;
using ir::Tensor;
using ir::Value;
using Attrs = std::map<std::string, ir::Attribute>;

constexpr std::string_view kPass = "unroll_rnn";
// Steps (timesteps x directions) beyond which the unrolled graph (~15 nodes a
// step) takes too long to compile (the later passes grow quadratically with the
// node count: a 512-step LSTM compiles in ~25 s): such a node stays whole and
// runs on the host.
constexpr int64_t kMaxSteps = 1024;

bool is_rnn(const std::string& op) {
  return op == "LSTM" || op == "GRU" || op == "RNN";
}

// Builds nodes for the recurrent node `at`, named after it. They are appended
// (inserting thousands of nodes mid-list is quadratic); run() restores the
// order once with topo_sort().
class Builder {
 public:
  Builder(ir::Graph& g, const Node* at, const std::string& base, ir::ElemType elem)
      : g_(g), at_(at), base_(base), elem_(elem) {}

  Value* op(const std::string& op, std::vector<Value*> ins, Attrs attrs = {}) {
    Node* m =
        ir::make_node(g_, op, std::move(ins), std::move(attrs), at_->name, 1, {fresh_name(op)});
    return m->outputs[0];
  }
  Value* slice(Value* v, int64_t axis, int64_t start, int64_t end) {
    return op("Slice", {v},
              {{"starts", std::vector<int64_t>{start}},
               {"ends", std::vector<int64_t>{end}},
               {"axes", std::vector<int64_t>{axis}},
               {"steps", std::vector<int64_t>{1}}});
  }
  Value* reshape(Value* v, Shape s) {
    if (v->shape() == s) return v;
    return op("Reshape", {v}, {{"shape", std::move(s)}});
  }
  Value* transpose(Value* v, std::vector<int64_t> perm) {
    return op("Transpose", {v}, {{"perm", std::move(perm)}});
  }
  Value* concat(std::vector<Value*> vs, int64_t axis) {
    if (vs.size() == 1) return vs[0];
    return op("Concat", std::move(vs), {{"axis", axis}});
  }
  Value* constant(const std::string& what, Tensor t) {
    t.normalize();
    return g_.add_constant(fresh_name(what), std::move(t));
  }
  Value* zeros(Shape s) { return constant("zeros", Tensor(elem_, std::move(s))); }
  Value* scalar(float x) { return constant("c", Tensor::from_floats({}, {x}, elem_)); }

  // Row `d` of a [D, ...] tensor, without the leading axis.
  Value* row(Value* v, int64_t d) {
    Shape s(v->shape().begin() + 1, v->shape().end());
    return reshape(slice(v, 0, d, d + 1), s);
  }

  Value* activation(Value* x, const ir::RnnActivation& a) {
    const std::string& f = a.name;
    if (f == "Sigmoid" || f == "Tanh" || f == "Relu" || f == "Softsign" || f == "Softplus")
      return op(f, {x});
    if (f == "LeakyRelu" || f == "ThresholdedRelu" || f == "Elu")
      return op(f, {x}, {{"alpha", a.alpha}});
    if (f == "HardSigmoid") return op(f, {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
    if (f == "Affine") return op("Add", {op("Mul", {x, scalar(a.alpha)}), scalar(a.beta)});
    if (f == "ScaledTanh")
      return op("Mul", {op("Tanh", {op("Mul", {x, scalar(a.beta)})}), scalar(a.alpha)});
    throw ir::CompileError(at_->label() + ": unknown activation '" + f + "'");
  }

 private:
  // A numbered name: unique_name() alone would probe base_1, base_2, ... each time.
  std::string fresh_name(const std::string& what) {
    return g_.unique_name(base_ + "." + what + std::to_string(next_++));
  }

  ir::Graph& g_;
  const Node* at_;
  std::string base_;
  ir::ElemType elem_;
  int64_t next_ = 0;
};

struct Dims {
  int64_t T, B, I, H, D, G;
};

// One direction of a node: returns the state after every timestep (indexed by t)
// and the final cell state (LSTM).
struct DirResult {
  std::vector<Value*> h;  // [B, H] per timestep
  Value* last_h = nullptr;
  Value* last_c = nullptr;
};

DirResult unroll_direction(Builder& b, const Node& n, const Dims& k, int64_t d, bool reverse,
                           Value* x2, const std::vector<ir::RnnActivation>& acts, Value* h0,
                           Value* c0) {
  const std::string& op = n.op;
  const int64_t H = k.H, GH = k.G * k.H;
  const bool lbr = op == "GRU" && n.attr_int("linear_before_reset") != 0;
  Value* w = b.row(n.inputs[1], d);  // [GH, I]
  Value* r = b.row(n.inputs[2], d);  // [GH, H]
  // Biases: Wb + Rb go into the input projection, except GRU's Rb_h with
  // linear_before_reset, which is added to the recurrent h projection.
  Value* xbias = nullptr;
  Value* rbias_h = nullptr;
  if (Value* bb = n.input(3)) {
    Value* bd = b.row(bb, d);  // [2 GH]
    Value* wb = b.slice(bd, 0, 0, GH);
    Value* rb = b.slice(bd, 0, GH, 2 * GH);
    if (lbr) {
      rbias_h = b.slice(rb, 0, 2 * H, 3 * H);
      rb = b.concat({b.slice(rb, 0, 0, 2 * H), b.zeros({H})}, 0);
    }
    xbias = b.op("Add", {wb, rb});
  }
  // Input projection for every timestep: [T*B, GH].
  Value* xw = b.op("MatMul", {x2, b.transpose(w, {1, 0})});
  if (xbias) xw = b.op("Add", {xw, xbias});
  Value* p_i = nullptr;
  Value* p_o = nullptr;
  Value* p_f = nullptr;
  if (op == "LSTM" && n.input(7)) {
    Value* p = b.row(n.input(7), d);  // [3H]: i, o, f
    p_i = b.slice(p, 0, 0, H);
    p_o = b.slice(p, 0, H, 2 * H);
    p_f = b.slice(p, 0, 2 * H, 3 * H);
  }
  // Recurrent weights, transposed: [H, GH] (GRU without linear_before_reset: the
  // z/r part [H, 2H] and the h part [H, H] separately).
  Value* rt = b.transpose(r, {1, 0});
  Value* rt_zr = nullptr;
  Value* rt_h = nullptr;
  if (op == "GRU" && !lbr) {
    rt_zr = b.slice(rt, 1, 0, 2 * H);
    rt_h = b.slice(rt, 1, 2 * H, 3 * H);
  }

  DirResult res;
  res.h.assign(static_cast<size_t>(k.T), nullptr);
  Value* h = h0;
  Value* c = c0;
  for (int64_t s = 0; s < k.T; ++s) {
    const int64_t t = reverse ? k.T - 1 - s : s;
    Value* xt = b.slice(xw, 0, t * k.B, (t + 1) * k.B);  // [B, GH]
    if (op == "RNN") {
      h = b.activation(b.op("Add", {xt, b.op("MatMul", {h, rt})}), acts[0]);
    } else if (op == "LSTM") {
      Value* gates = b.op("Add", {xt, b.op("MatMul", {h, rt})});
      Value* gi = b.slice(gates, 1, 0, H);
      Value* go = b.slice(gates, 1, H, 2 * H);
      Value* gf = b.slice(gates, 1, 2 * H, 3 * H);
      Value* gc = b.slice(gates, 1, 3 * H, 4 * H);
      if (p_i) {
        gi = b.op("Add", {gi, b.op("Mul", {c, p_i})});
        gf = b.op("Add", {gf, b.op("Mul", {c, p_f})});
      }
      Value* i = b.activation(gi, acts[0]);
      Value* f = b.activation(gf, acts[0]);
      Value* cc = b.activation(gc, acts[1]);
      c = b.op("Add", {b.op("Mul", {f, c}), b.op("Mul", {i, cc})});
      if (p_o) go = b.op("Add", {go, b.op("Mul", {c, p_o})});
      Value* o = b.activation(go, acts[0]);
      h = b.op("Mul", {o, b.activation(c, acts[2])});
    } else {  // GRU
      Value* x_zr = b.slice(xt, 1, 0, 2 * H);
      Value* x_h = b.slice(xt, 1, 2 * H, 3 * H);
      Value* zr;
      Value* hh;
      if (lbr) {
        Value* hr = b.op("MatMul", {h, rt});  // [B, 3H]
        zr = b.op("Add", {x_zr, b.slice(hr, 1, 0, 2 * H)});
        Value* rh = b.slice(hr, 1, 2 * H, 3 * H);
        if (rbias_h) rh = b.op("Add", {rh, rbias_h});
        Value* rg = b.activation(b.slice(zr, 1, H, 2 * H), acts[0]);
        hh = b.activation(b.op("Add", {x_h, b.op("Mul", {rg, rh})}), acts[1]);
      } else {
        zr = b.op("Add", {x_zr, b.op("MatMul", {h, rt_zr})});
        Value* rg = b.activation(b.slice(zr, 1, H, 2 * H), acts[0]);
        hh =
            b.activation(b.op("Add", {x_h, b.op("MatMul", {b.op("Mul", {rg, h}), rt_h})}), acts[1]);
      }
      Value* z = b.activation(b.slice(zr, 1, 0, H), acts[0]);
      // (1 - z) * hh + z * h = hh + z * (h - hh).
      h = b.op("Add", {hh, b.op("Mul", {z, b.op("Sub", {h, hh})})});
    }
    res.h[static_cast<size_t>(t)] = h;
  }
  res.last_h = h;
  res.last_c = c;
  return res;
}

void unroll(ir::Graph& g, Node* n, PassContext& ctx, const Uses& uses) {
  const std::string op = n->op;  // a copy: the node is erased at the end
  Value* x = n->inputs[0];
  const bool layout1 = n->attr_int("layout") != 0;
  const std::string& direction = n->attr_string("direction");
  Dims k{};
  k.T = layout1 ? x->shape()[1] : x->shape()[0];
  k.B = layout1 ? x->shape()[0] : x->shape()[1];
  k.I = x->shape()[2];
  k.H = n->attr_int("hidden_size");
  k.D = direction == "bidirectional" ? 2 : 1;
  k.G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const std::string base = n->outputs[0]->name;
  Builder b(g, n, base, x->elem());
  const auto acts = ir::rnn_activations(*n);

  // Time-major: X [T, B, I] -> [T*B, I]; states [D, B, H].
  Value* xt = layout1 ? b.transpose(x, {1, 0, 2}) : x;
  Value* x2 = b.reshape(xt, {k.T * k.B, k.I});
  auto state = [&](Value* v) -> Value* {
    if (!v) return nullptr;
    return layout1 ? b.transpose(v, {1, 0, 2}) : v;
  };
  Value* h0 = state(n->input(5));
  Value* c0 = op == "LSTM" ? state(n->input(6)) : nullptr;

  std::vector<DirResult> dirs;
  for (int64_t d = 0; d < k.D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    Value* hd = h0 ? b.row(h0, d) : b.zeros({k.B, k.H});
    Value* cd = op == "LSTM" ? (c0 ? b.row(c0, d) : b.zeros({k.B, k.H})) : nullptr;
    dirs.push_back(
        unroll_direction(b, *n, k, d, reverse, x2, acts[static_cast<size_t>(d)], hd, cd));
  }

  auto used = [&](size_t i) { return i < n->outputs.size() && !uses.unused(n->outputs[i]); };
  std::vector<Value*> repl(n->outputs.size(), nullptr);
  if (used(0)) {
    // Y [T, D, B, H] (layout 1: [B, T, D, H]).
    std::vector<Value*> per_dir;
    for (const DirResult& r : dirs)
      per_dir.push_back(b.reshape(b.concat(r.h, 0), {k.T, 1, k.B, k.H}));
    Value* y = b.concat(per_dir, 1);
    repl[0] = layout1 ? b.transpose(y, {2, 0, 1, 3}) : y;
  }
  auto last = [&](Value* DirResult::*member) {
    std::vector<Value*> vs;
    for (const DirResult& r : dirs) vs.push_back(b.reshape(r.*member, {1, k.B, k.H}));
    Value* v = b.concat(vs, 0);  // [D, B, H]
    return layout1 ? b.transpose(v, {1, 0, 2}) : v;
  };
  if (used(1)) repl[1] = last(&DirResult::last_h);
  if (used(2)) repl[2] = last(&DirResult::last_c);
  for (size_t i = 0; i < repl.size(); ++i) {
    if (!repl[i]) continue;
    // Only a node output that is not already a graph output can take the name.
    Value* v = repl[i];
    if (!v->producer || g.is_output(v)) v = b.op("Identity", {v});
    replace_value(g, n->outputs[i], v, true);
  }
  g.erase_node(n);
  bump(ctx, kPass, op);
  bump(ctx, kPass, "steps", static_cast<double>(k.T * k.D));
}

void run(ir::Graph& g, PassContext& ctx) {
  Uses uses(g);
  bool changed = false;
  for (Node* n : g.nodes_snapshot()) {
    if (!is_rnn(n->op)) continue;
    if (!rnn_unroll_refusal(*n).empty()) {
      bump(ctx, kPass, "refused");
      continue;
    }
    unroll(g, n, ctx, uses);
    uses.refresh();
    changed = true;
  }
  if (changed) g.topo_sort();
}

}  // namespace

std::string rnn_unroll_refusal(const Node& n) {
  if (!is_rnn(n.op)) return "";
  const Value* x = n.inputs.at(0);
  if (!ir::is_float(x->elem()))
    return "input X is " + x->type.str() + "; only floating-point recurrences are unrolled";
  if (n.has_attr("clip"))
    return "attribute 'clip' (cell clipping) is not unrolled; it runs on the host";
  if (n.op == "LSTM" && n.attr_int("input_forget") != 0)
    return "attribute 'input_forget' = 1 (coupled input and forget gates) is not unrolled";
  const bool layout1 = n.attr_int("layout") != 0;
  const int64_t T = layout1 ? x->shape()[1] : x->shape()[0];
  if (const Value* lens = n.input(4)) {
    bool all_t = lens->has_data();
    if (all_t)
      for (int64_t v : lens->data->to_int64s()) all_t = all_t && v == T;
    if (!all_t)
      return "input 'sequence_lens' ('" + lens->name +
             "') is not a constant equal to the sequence length " + std::to_string(T) +
             " everywhere; varying lengths are not unrolled";
  }
  const int64_t D = n.attr_string("direction") == "bidirectional" ? 2 : 1;
  if (T < 1) return "an empty sequence is not unrolled";
  if (T * D > kMaxSteps)
    return std::to_string(T * D) + " steps (timesteps x directions) exceed the unroll limit of " +
           std::to_string(kMaxSteps);
  return "";
}

const PassInfo& unroll_rnn_pass() {
  static const PassInfo p{kPass,
                          "LSTM/GRU/RNN with a static sequence length -> per-timestep cells "
                          "(MatMul, Add, gate activations, Mul/Sub, Concat)",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
