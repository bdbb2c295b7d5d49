// split_projections: y = MatMul(x, W) [+ b] with W a constant [K, N] (and b a
// constant over the last axis), read only by Split / Slice nodes along the last axis
// (a fused q/k/v projection: GPT-2's c_attn, nn.MultiheadAttention's in_proj):
// every part becomes MatMul(x, W[:, s:e]) [+ b[s:e]]. Each part is then written
// where its readers take it, instead of the whole y written and copied again part by
// part; the price is x read once per part. Exact: a column of a product depends
// only on that column of W.
#include "compiler/graph_passes/split_projection.h"

#include <algorithm>

#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Value;

struct Part {
  Value* out;
  int64_t start, end;  // columns of y
};

// Columns [s, e) of a float constant whose last axis has n elements, as a constant.
Value* columns(ir::Graph& g, const Value* c, int64_t s, int64_t e, const std::string& name) {
  const ir::Shape& shape = c->shape();
  const int64_t n = shape.back(), rows = c->type.numel() / n;
  const std::vector<float>& f = c->data->floats();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(rows * (e - s)));
  for (int64_t r = 0; r < rows; ++r)
    out.insert(out.end(), f.begin() + r * n + s, f.begin() + r * n + e);
  ir::Shape os = shape;
  os.back() = e - s;
  return g.add_constant(g.unique_name(name),
                        ir::Tensor::from_floats(os, std::move(out), c->elem()));
}

// The parts of y that `user` takes, if it only cuts y along the last axis.
bool parts_of(const Node* user, const Value* y, std::vector<Part>& parts) {
  const int64_t r = y->rank(), n = y->shape().back();
  auto last_axis = [&](int64_t a) { return a == r - 1 || a == -1; };
  if (user->op == "Split") {
    if (user->inputs.size() != 1 || !last_axis(user->attr_int("axis"))) return false;
    int64_t s = 0;
    for (Value* o : user->outputs) {
      const int64_t w = o->shape().back();
      parts.push_back({o, s, s + w});
      s += w;
    }
    return s == n;
  }
  if (user->op == "Slice") {
    if (user->inputs.size() != 1 || user->attr_ints("axes").size() != 1 ||
        !last_axis(user->attr_ints("axes")[0]))
      return false;
    const auto& steps = user->attr_ints("steps");
    if (!steps.empty() && steps[0] != 1) return false;
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
    const int64_t s = clamp(user->attr_ints("starts")[0]), e = clamp(user->attr_ints("ends")[0]);
    if (e - s != user->outputs[0]->shape().back() || e <= s) return false;
    parts.push_back({user->outputs[0], s, e});
    return true;
  }
  return false;
}

}  // namespace

void split_projections(ir::Graph& g, PassContext& ctx) {
  const Uses uses(g);  // each rewrite only touches its own projection's nodes
  bool changed = false;
  for (Node* mm : g.nodes_snapshot()) {
    if (mm->op != "MatMul" || mm->inputs.size() != 2) continue;
    Value* w = mm->inputs[1];
    Value* y = mm->outputs[0];
    if (!w->has_data() || w->rank() != 2 || w->elem() != ir::ElemType::fp32 || y->rank() < 2 ||
        y->elem() != ir::ElemType::fp32)
      continue;
    const int64_t n = y->shape().back();
    Node* add = nullptr;
    Value* b = nullptr;
    if (uses.single_use(y)) {
      Node* u = uses.of(y)[0].first;
      Value* o = u->op == "Add" ? other_input(u, y) : nullptr;
      if (o && o->has_data() && o->elem() == y->elem() && o->rank() >= 1 &&
          o->shape().back() == n && o->type.numel() == n && u->outputs[0]->type == y->type) {
        add = u;
        b = o;
        y = u->outputs[0];
      }
    }
    if (uses.is_output(y) || uses.of(y).empty()) continue;
    std::vector<Part> parts;
    bool ok = true;
    for (const auto& [user, slot] : uses.of(y)) ok = ok && parts_of(user, y, parts);
    for (const Part& p : parts) ok = ok && p.start < p.end;  // no empty part
    if (!ok) continue;
    for (const Part& p : parts) {
      if (uses.unused(p.out)) continue;
      const std::string tag = "_" + std::to_string(p.start);
      Node* pm = ir::make_node(
          g, "MatMul", {mm->inputs[0], columns(g, w, p.start, p.end, w->name + tag)}, mm->attrs,
          mm->name + tag, 1, {g.unique_name(mm->outputs[0]->name + tag)}, p.out->producer);
      pm->merge_origin(*mm);
      Value* v = pm->outputs[0];
      if (add) {
        Node* pa =
            ir::make_node(g, "Add", {v, columns(g, b, p.start, p.end, b->name + tag)}, {},
                          add->name + tag, 1, {g.unique_name(y->name + tag)}, p.out->producer);
        pa->merge_origin(*add);
        v = pa->outputs[0];
      }
      replace_value(g, p.out, v, true);
    }
    changed = true;
    bump(ctx, "fuse_patterns", "SplitProjection");
  }
  if (changed) g.erase_dead_nodes();
}

}  // namespace trnsim::graph_passes
