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

bool graph_input(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.inputs().begin(), g.inputs().end(), v) != g.inputs().end();
}

std::string shape_str(const ir::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// The regions found by one sweep: values split along an axis, the MatMuls that
// split their weight by columns (entries) or rows (exits, followed by an all-reduce).
struct Plan {
  std::map<const ir::Value*, int> axis;
  // Split graph inputs (e.g. a KV cache met by a value split by heads): each rank
  // declares and reads only its slice. `odd`: values whose split axis maps but which
  // --tp does not divide (heads a Reshape cannot share out evenly).
  std::set<const ir::Value*> inputs, odd;
  std::map<const ir::Value*, std::set<const ir::Node*>> readers;  // of a split input
  std::map<const ir::Value*, std::set<ir::Node*>> from;           // value -> its entries
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
        if (p.inputs.count(in)) p.readers[in].insert(n);
      }
    const auto fail = [&](const std::string& w) {
      why = n->label() + ": " + w;
      return from;
    };
    // A graph input read along with a split value (Concat, elementwise, batched
    // MatMul), of the output's rank and size along the split axis: it splits too.
    const auto join_inputs = [&](int a) {
      const ir::Shape& os = n->outputs[0]->shape();
      for (const ir::Value* in : n->inputs) {
        const int ia = in ? a - int(os.size() - in->rank()) : -1;
        if (ia >= 0 && !p.axis.count(in) && graph_input(g, in) &&
            in->shape()[size_t(ia)] == os[size_t(a)] && os[size_t(a)] != 1) {
          p.axis[in] = ia;
          p.from[in] = from;
          p.inputs.insert(in);
          p.readers[in].insert(n);
          for (const ir::Value* k : known)
            if (p.odd.count(k)) p.odd.insert(in);
        }
      }
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
    const int kax = p.axis[known[0]];  // a split input's axis
    std::optional<int> oa;
    if (n->op == "MatMul" && ax == int(x->rank()) - 1 && const_2d(n->input(1)) &&
        !p.axis.count(n->input(1))) {
      p.exits.push_back(n);  // its output is whole again after the all-reduce
      continue;
    } else if (n->op == "MatMul" && known.size() == 2 && ax >= 0 && ax < int(x->rank()) - 2 &&
               p.axis[n->input(1)] == ax && x->rank() == out->rank()) {
      oa = ax;  // batched over the split axis (attention: per head)
    } else if (n->op == "MatMul" && known.size() == 1 && n->inputs.size() == 2 && kax >= 0 &&
               kax < int(out->rank()) - 2 && x->rank() == out->rank() &&
               n->input(1)->rank() == out->rank()) {
      oa = kax;  // batched over heads, one operand a graph input (a KV cache)
      join_inputs(kax);
      if (!p.axis.count(n->input(0)) || !p.axis.count(n->input(1)))
        return fail("reads a value neither split nor a graph input");
    } else if (n->op == "Concat" &&
               (n->attr_int("axis") + int64_t(out->rank())) % int64_t(out->rank()) != kax) {
      oa = kax;  // e.g. a KV cache and the new token's keys, split by heads
      join_inputs(kax);
      for (const ir::Value* in : n->inputs)
        if (!p.axis.count(in) || p.axis[in] != kax)
          return fail("concatenates '" + in->name + "', not split along axis " +
                      std::to_string(kax));
    } else if (n->op == "Slice" && ax >= 0 && [&] {
                 for (int64_t a : n->attr_ints("axes"))
                   if ((a + int64_t(x->rank())) % int64_t(x->rank()) == ax) return false;
                 return true;
               }()) {
      oa = ax;  // slices other axes only
    } else if (is_elementwise(n->op)) {
      const int64_t r = out->rank();
      int a = -1;
      for (const ir::Value* in : n->inputs) {
        if (!in) continue;
        if (p.axis.count(in)) {
          const int ia = p.axis[in] + int(r - in->rank());
          if (a >= 0 && ia != a) return fail("operands split along different axes");
          a = ia;
        } else if (!graph_input(g, in) && (!in->has_data() || !in->data->holds_floats())) {
          return fail("reads '" + in->name + "', neither split nor a constant");
        }
      }
      join_inputs(a);  // a graph input of the output's shape along the axis splits too
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
      // Maps, but --tp does not divide it (4 heads on 8 ranks): decided at the end.
      if (!oa && (oa = reshape_axis(x->shape(), ax, out->shape(), 1))) p.odd.insert(out);
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
    for (const ir::Value* k : known)
      if (p.odd.count(k)) p.odd.insert(out);
  }
  // A graph input splits only if every reader reads it split, and --tp divides it:
  // left whole, a KV cache would be read in full by every rank.
  for (const ir::Value* in : p.inputs) {
    const int a = p.axis[in];
    if (p.odd.count(in))
      throw ir::CompileError("tensor parallel: input '" + in->name + "' " + shape_str(in->shape()) +
                             " would split along axis " + std::to_string(a) + " (" +
                             std::to_string(in->shape()[size_t(a)]) +
                             ", e.g. heads), not a multiple of --tp " + std::to_string(size));
    if (g.is_output(in)) {
      why = "input '" + in->name + "' is also a graph output";
      return p.from[in];
    }
    for (const auto& [u, k] : g.users(in))
      if (!p.readers[in].count(u)) {
        why = "input '" + in->name + "' is also read whole by " + u->label();
        return p.from[in];
      }
  }
  // Heads --tp does not divide: their entries stay whole.
  std::set<ir::Node*> odd;
  for (const ir::Value* v : p.odd) {
    why = "'" + v->name + "' has " + std::to_string(v->shape()[size_t(p.axis[v])]) +
          " along its split axis, not a multiple of --tp " + std::to_string(size);
    odd.insert(p.from[v].begin(), p.from[v].end());
  }
  if (!odd.empty()) return odd;
  // Split graph outputs (e.g. the new token's keys, by heads) are left to the
  // runtime, which gathers them from the ranks (TensorParallelSplit).
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

int tensor_parallel(ir::Graph& g, int rank, int size, int first_rank, TensorParallelSplit* split) {
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
  if (split) {
    *split = {};
    for (const ir::Value* in : p.inputs) split->inputs[in->name] = p.axis.at(in);
    for (const auto& [v, a] : p.axis)
      if (g.is_output(v)) split->outputs[v->name] = a;
  }
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
