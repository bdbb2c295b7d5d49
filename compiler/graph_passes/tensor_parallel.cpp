#include "compiler/graph_passes/tensor_parallel.h"

#include <algorithm>
#include <set>

#include "compiler/ir/error.h"

namespace trnsim::graph_passes {

namespace {

bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "Add",        "Sub",      "Mul",      "Div",       "Max", "Min",  "Pow",
      "Relu",       "Erf",      "Tanh",     "Exp",       "Log", "Neg",  "Abs",
      "Sqrt",       "Softplus", "Sigmoid",  "LeakyRelu", "Elu", "Selu", "Identity",
      "Reciprocal", "trn.Gelu", "trn.Silu", "HardSwish"};
  return ops.count(op) != 0;
}

// A float constant of 2 dims.
bool const_2d(const ir::Value* v) {
  return v && v->has_data() && v->data->holds_floats() && v->rank() == 2;
}

// A constant that broadcasts along a hidden axis of `h`: 1 or h last, 1 elsewhere.
bool hidden_broadcast(const ir::Value* v, int64_t h) {
  if (!v->has_data() || !v->data->holds_floats()) return false;
  const ir::Shape& s = v->shape();
  if (s.empty()) return true;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return s.back() == 1 || s.back() == h;
}

// Columns [lo, lo + n) of the last axis (rows [lo, lo + n) of axis 0 when `rows`).
ir::Tensor slice(const ir::Tensor& t, int64_t lo, int64_t n, bool rows) {
  ir::Shape shape = t.shape();
  const std::vector<float>& f = t.floats();
  std::vector<float> out;
  if (rows) {
    const int64_t row = t.numel() / shape[0];
    out.assign(f.begin() + lo * row, f.begin() + (lo + n) * row);
    shape[0] = n;
  } else {
    const int64_t last = shape.back();
    for (int64_t r = 0; r < t.numel() / last; ++r)
      out.insert(out.end(), f.begin() + r * last + lo, f.begin() + r * last + lo + n);
    shape.back() = n;
  }
  return ir::Tensor::from_floats(shape, std::move(out), t.elem());
}

struct Pair {
  ir::Node* first = nullptr;
  ir::Node* second = nullptr;
  std::vector<ir::Node*> between;  // elementwise nodes, in graph order
};

// The pair starting at MatMul `m1`, if there is one; `why` says what stopped it.
bool find_pair(const ir::Graph& g, ir::Node* m1, Pair& p, std::string& why) {
  const int64_t h = m1->input(1)->shape()[1];
  p = {m1, nullptr, {}};
  std::set<const ir::Value*> region{m1->outputs[0]};
  std::vector<const ir::Value*> todo{m1->outputs[0]};
  std::set<ir::Node*> nodes;
  while (!todo.empty()) {
    const ir::Value* v = todo.back();
    todo.pop_back();
    if (g.is_output(v)) {
      why = "'" + v->name + "' inside the pair is a graph output";
      return false;
    }
    if (v->shape().empty() || v->shape().back() != h) {
      why = "'" + v->name + "' does not keep the hidden size " + std::to_string(h) + " last";
      return false;
    }
    for (auto [n, idx] : g.users(v)) {
      if (n->op == "MatMul" && idx == 0 && const_2d(n->input(1)) && n->input(1)->shape()[0] == h) {
        if (p.second && p.second != n) {
          why = "the hidden values reach two MatMuls";
          return false;
        }
        p.second = n;
        continue;
      }
      if (!is_elementwise(n->op) || n->outputs.size() != 1) {
        why = "'" + v->name + "' is read by " + n->label() + ", not an elementwise node";
        return false;
      }
      if (nodes.insert(n).second && region.insert(n->outputs[0]).second)
        todo.push_back(n->outputs[0]);
    }
  }
  // Every other operand of the region's nodes: a constant along the hidden axis.
  for (const ir::Node* n : nodes)
    for (const ir::Value* in : n->inputs)
      if (in && !region.count(in) && !hidden_broadcast(in, h)) {
        why =
            n->label() + " reads '" + in->name + "', which is not a constant along the hidden axis";
        return false;
      }
  if (!p.second) {
    why = "no second MatMul with a [" + std::to_string(h) + ", O] constant weight follows";
    return false;
  }
  for (const auto& np : g.nodes())
    if (nodes.count(np.get())) p.between.push_back(np.get());
  return true;
}

}  // namespace

int tensor_parallel(ir::Graph& g, int rank, int size, int first_rank) {
  if (size < 1 || rank < 0 || rank >= size || first_rank < 0)
    throw ir::CompileError("tensor parallel: rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " ranks");
  std::vector<int64_t> group;
  for (int r = 0; r < size; ++r) group.push_back(first_rank + r);
  int pairs = 0;
  std::string looked;
  std::set<const ir::Node*> done;
  for (ir::Node* m1 : g.nodes_snapshot()) {
    if (m1->op != "MatMul" || done.count(m1) || !const_2d(m1->input(1))) continue;
    Pair p;
    std::string why;
    if (!find_pair(g, m1, p, why)) {
      looked += "\n  " + m1->label() + ": " + why;
      continue;
    }
    const int64_t h = m1->input(1)->shape()[1];
    if (h % size != 0)
      throw ir::CompileError("tensor parallel: " + m1->label() + " has hidden size " +
                             std::to_string(h) + ", not a multiple of --tp " +
                             std::to_string(size));
    const int64_t n = h / size, lo = rank * n;
    const auto shard = [&](ir::Node* node, size_t k, bool rows) {
      const ir::Value* w = node->input(k);
      node->inputs[k] = g.add_constant(g.unique_name(w->name + ".tp" + std::to_string(rank)),
                                       slice(*w->data, lo, n, rows));
    };
    shard(m1, 1, false);
    m1->outputs[0]->type.shape.back() = n;
    for (ir::Node* e : p.between) {
      for (size_t k = 0; k < e->inputs.size(); ++k) {
        const ir::Value* in = e->inputs[k];
        if (in && in->has_data() && !in->shape().empty() && in->shape().back() == h && h != 1)
          shard(e, k, false);
      }
      e->outputs[0]->type.shape.back() = n;
    }
    shard(p.second, 1, true);
    // The partial sums take a name of their own; the all-reduced sum keeps the old
    // one (it may be a graph output).
    ir::Value* partial = p.second->outputs[0];
    const std::string name = partial->name;
    const auto users = g.users(partial);
    const bool output = g.is_output(partial);
    g.rename_value(partial, g.unique_name(name + ".partial"));
    ir::Node* ar = g.add_node("trn.AllReduce", {partial}, {{name, partial->type}},
                              {{"group", ir::Attribute(group)}}, p.second->name + ".allreduce");
    ir::Value* sum = ar->outputs[0];
    for (auto [u, idx] : users) u->inputs[idx] = sum;
    if (output) {
      std::vector<ir::Value*> outs = g.outputs();
      std::replace(outs.begin(), outs.end(), partial, sum);
      g.set_outputs(outs);
    }
    done.insert(p.second);
    ++pairs;
  }
  if (pairs == 0)
    throw ir::CompileError(
        "tensor parallel: no MatMul pair (MatMul -> elementwise -> MatMul, constant weights) "
        "to split" +
        (looked.empty() ? std::string(" (no MatMul with a constant 2-D weight)") : ":" + looked));
  g.topo_sort();
  g.erase_dead_nodes();
  return pairs;
}

}  // namespace trnsim::graph_passes
