#include "compiler/graph_passes/tensor_parallel.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/ir/error.h"

namespace trnsim::graph_passes {

namespace {

bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "Add",  "Sub",       "Mul",        "Div",      "Max",       "Min",  "Pow",
      "Relu", "Erf",       "Tanh",       "Exp",      "Log",       "Neg",  "Abs",
      "Sqrt", "Elu",       "Softplus",   "Sigmoid",  "LeakyRelu", "Selu", "Identity",
      "Cast", "HardSwish", "Reciprocal", "trn.Gelu", "trn.Silu"};
  return ops.count(op) != 0;
}

// A float constant of 2 dims.
bool const_2d(const ir::Value* v) {
  return v && v->has_data() && v->data->holds_floats() && v->rank() == 2;
}

// Indices [lo, lo + n) of axis `axis`.
ir::Tensor slice(const ir::Tensor& t, int64_t axis, int64_t lo, int64_t n) {
  ir::Shape shape = t.shape();
  int64_t inner = 1;
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t len = shape[size_t(axis)], outer = t.numel() / (len * inner);
  const std::vector<float>& f = t.floats();
  std::vector<float> out;
  out.reserve(size_t(outer * n * inner));
  for (int64_t o = 0; o < outer; ++o)
    out.insert(out.end(), f.begin() + (o * len + lo) * inner,
               f.begin() + (o * len + lo + n) * inner);
  shape[size_t(axis)] = n;
  return ir::Tensor::from_floats(shape, std::move(out), t.elem());
}

// The split axis of a Reshape's output, given its input's: the output axis whose
// outer part holds the same contiguous blocks (the shard is a range of the split
// axis's outer factor, e.g. heads of [B,S,H*D] -> [B,S,H,D]); nullopt if none.
std::optional<int> reshape_axis(const ir::Shape& in, int a, const ir::Shape& out, int size) {
  int64_t prefix = 1, inner = 1;
  for (int i = 0; i < a; ++i) prefix *= in[size_t(i)];
  for (size_t i = size_t(a) + 1; i < in.size(); ++i) inner *= in[i];
  const int64_t block = in[size_t(a)] / size * inner;  // a shard's elements per prefix
  int64_t p = 1;
  for (size_t j = 0; j < out.size(); ++j) {
    if (p == prefix) {
      int64_t out_inner = 1;
      for (size_t k = j + 1; k < out.size(); ++k) out_inner *= out[k];
      if (out[j] * out_inner == in[size_t(a)] * inner && out[j] % size == 0 &&
          block % out_inner == 0 && out[j] > 1)
        return int(j);
    }
    p *= out[j];
  }
  return std::nullopt;
}

// The regions found by one sweep: values split along an axis, the MatMuls that
// split their weight by columns (entries) or rows (exits, followed by an all-reduce).
struct Plan {
  std::map<const ir::Value*, int> axis;
  std::map<const ir::Value*, std::set<ir::Node*>> from;  // value -> its entries
  std::vector<ir::Node*> entries, inner, exits;
};

// One sweep in graph order; returns the entries to ban (with why) or none.
std::set<ir::Node*> sweep(const ir::Graph& g, int size, const std::set<ir::Node*>& banned, Plan& p,
                          std::string& why) {
  p = {};
  for (const auto& np : g.nodes()) {
    ir::Node* n = np.get();
    std::set<ir::Node*> from;
    std::vector<const ir::Value*> known;
    for (const ir::Value* in : n->inputs)
      if (in && p.axis.count(in)) {
        known.push_back(in);
        from.insert(p.from[in].begin(), p.from[in].end());
      }
    const auto fail = [&](const std::string& w) {
      why = n->label() + ": " + w;
      return from;
    };
    if (known.empty()) {
      if (n->op == "MatMul" && const_2d(n->input(1)) && !banned.count(n) &&
          n->input(1)->shape()[1] % size == 0) {
        p.entries.push_back(n);
        p.axis[n->outputs[0]] = int(n->outputs[0]->rank()) - 1;
        p.from[n->outputs[0]] = {n};
      }
      continue;
    }
    if (n->outputs.size() != 1) return fail("more than one output");
    const ir::Value* out = n->outputs[0];
    const ir::Value* x = n->input(0);
    const int ax = p.axis.count(x) ? p.axis[x] : -1;
    std::optional<int> oa;
    if (n->op == "MatMul" && ax == int(x->rank()) - 1 && const_2d(n->input(1)) &&
        !p.axis.count(n->input(1))) {
      p.exits.push_back(n);  // its output is whole again after the all-reduce
      continue;
    } else if (n->op == "MatMul" && known.size() == 2 && ax >= 0 && ax < int(x->rank()) - 2 &&
               p.axis[n->input(1)] == ax && x->rank() == out->rank()) {
      oa = ax;  // batched over the split axis (attention: per head)
    } else if (is_elementwise(n->op)) {
      const int64_t r = out->rank();
      int a = -1;
      for (const ir::Value* in : n->inputs) {
        if (!in) continue;
        if (p.axis.count(in)) {
          const int ia = p.axis[in] + int(r - in->rank());
          if (a >= 0 && ia != a) return fail("operands split along different axes");
          a = ia;
        } else if (!in->has_data() || !in->data->holds_floats()) {
          return fail("reads '" + in->name + "', neither split nor a constant");
        }
      }
      for (const ir::Value* in : n->inputs) {
        if (!in || p.axis.count(in)) continue;
        const int k = a - int(r - in->rank());
        if (k >= 0 && in->shape()[size_t(k)] != 1 &&
            in->shape()[size_t(k)] != out->shape()[size_t(a)])
          return fail("constant '" + in->name + "' does not follow the split axis");
      }
      oa = a;
    } else if (n->op == "Reshape" && ax >= 0) {
      oa = reshape_axis(x->shape(), ax, out->shape(), size);
      if (!oa) return fail("the split axis does not map onto the new shape");
    } else if (n->op == "Transpose" && ax >= 0) {
      const auto& perm = n->attr_ints("perm");
      oa = int(std::find(perm.begin(), perm.end(), ax) - perm.begin());
    } else if ((n->op == "Softmax" || n->op == "LogSoftmax") && ax >= 0 &&
               n->attr_int("axis", -1) != ax && n->attr_int("axis", -1) + x->rank() != ax) {
      oa = ax;
    } else {
      return fail("op " + n->op + " is not split");
    }
    p.axis[out] = *oa;
    p.from[out] = from;
    p.inner.push_back(n);
  }
  // A split value that leaves the region other than through an exit.
  for (const auto& [v, a] : p.axis)
    if (g.is_output(v)) {
      why = "'" + v->name + "' would be a split graph output";
      return p.from[v];
    }
  // Entries no exit collects: left whole.
  std::set<ir::Node*> used;
  for (ir::Node* e : p.exits) used.insert(p.from[e->input(0)].begin(), p.from[e->input(0)].end());
  std::set<ir::Node*> unused;
  for (ir::Node* e : p.entries)
    if (!used.count(e)) unused.insert(e);
  if (!unused.empty()) why = "no row-split MatMul collects it";
  return unused;
}

}  // namespace

int tensor_parallel(ir::Graph& g, int rank, int size, int first_rank) {
  if (size < 1 || rank < 0 || rank >= size || first_rank < 0)
    throw ir::CompileError("tensor parallel: rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " ranks");
  std::vector<int64_t> group;
  for (int r = 0; r < size; ++r) group.push_back(first_rank + r);
  // Sweep, banning entries whose split values cannot be carried to a row-split
  // MatMul, until a sweep bans nothing.
  std::set<ir::Node*> banned;
  std::string looked;
  Plan p;
  for (;;) {
    std::string why;
    const std::set<ir::Node*> ban = sweep(g, size, banned, p, why);
    if (ban.empty()) break;
    for (ir::Node* e : ban) looked += "\n  " + e->label() + ": " + why;
    banned.insert(ban.begin(), ban.end());
  }
  for (ir::Node* m : g.nodes_snapshot())
    if (m->op == "MatMul" && const_2d(m->input(1)) && m->input(1)->shape()[1] % size != 0 &&
        p.exits.empty())
      throw ir::CompileError("tensor parallel: " + m->label() + " has hidden size " +
                             std::to_string(m->input(1)->shape()[1]) + ", not a multiple of --tp " +
                             std::to_string(size));
  if (p.exits.empty())
    throw ir::CompileError(
        "tensor parallel: no MatMul pair (MatMul -> elementwise/attention -> MatMul, constant "
        "weights) to split" +
        (looked.empty() ? std::string(" (no MatMul with a constant 2-D weight)") : ":" + looked));
  // Check every split size divides before changing anything.
  for (const auto& [v, a] : p.axis)
    if (v->shape()[size_t(a)] % size != 0)
      throw ir::CompileError("tensor parallel: '" + v->name + "' has " +
                             std::to_string(v->shape()[size_t(a)]) + " along its split axis, " +
                             "not a multiple of --tp " + std::to_string(size));
  const auto shard_const = [&](ir::Node* node, size_t k, int axis) {
    const ir::Value* w = node->input(k);
    const int64_t n = w->shape()[size_t(axis)] / size;
    node->inputs[k] = g.add_constant(g.unique_name(w->name + ".tp" + std::to_string(rank)),
                                     slice(*w->data, axis, rank * n, n));
  };
  for (ir::Node* e : p.entries) shard_const(e, 1, 1);
  for (ir::Node* n : p.inner) {
    const ir::Value* out = n->outputs[0];
    const int a = p.axis.at(out);
    if (is_elementwise(n->op))
      for (size_t k = 0; k < n->inputs.size(); ++k) {
        const ir::Value* in = n->inputs[k];
        if (!in || p.axis.count(in)) continue;
        const int ka = a - int(out->rank() - in->rank());
        if (ka >= 0 && in->shape()[size_t(ka)] == out->shape()[size_t(a)] &&
            out->shape()[size_t(a)] != 1)
          shard_const(n, k, ka);
      }
    if (n->op == "Reshape") {
      ir::Shape s = out->shape();
      s[size_t(a)] /= size;
      n->attrs["shape"] = ir::Attribute(std::vector<int64_t>(s.begin(), s.end()));
    }
  }
  for (const auto& [v, a] : p.axis) const_cast<ir::Value*>(v)->type.shape[size_t(a)] /= size;
  for (ir::Node* x : p.exits) {
    shard_const(x, 1, 0);
    // The partial sums take a name of their own; the all-reduced sum keeps the old
    // one (it may be a graph output).
    ir::Value* partial = x->outputs[0];
    const std::string name = partial->name;
    const auto users = g.users(partial);
    const bool output = g.is_output(partial);
    g.rename_value(partial, g.unique_name(name + ".partial"));
    ir::Node* ar = g.add_node("trn.AllReduce", {partial}, {{name, partial->type}},
                              {{"group", ir::Attribute(group)}}, x->name + ".allreduce");
    ir::Value* sum = ar->outputs[0];
    for (auto [u, idx] : users) u->inputs[idx] = sum;
    if (output) {
      std::vector<ir::Value*> outs = g.outputs();
      std::replace(outs.begin(), outs.end(), partial, sum);
      g.set_outputs(outs);
    }
  }
  g.topo_sort();
  g.erase_dead_nodes();
  return int(p.exits.size());
}

}  // namespace trnsim::graph_passes
