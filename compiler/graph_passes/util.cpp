#include "compiler/graph_passes/util.h"

#include <cmath>

#include "compiler/ir/error.h"

namespace trnsim::graph_passes {

void Uses::refresh() {
  // Passes refresh after every rewrite, so this runs O(nodes) times: the lists are
  // emptied in place and refilled, keeping their storage, rather than freed and
  // allocated again (which dominated the compile of a 512-step unrolled LSTM). A
  // value no longer read keeps an empty list, which of() treats as no entry.
  for (auto& [v, list] : users_) list.clear();
  outputs_.clear();
  for (const auto& n : g_.nodes())
    for (size_t k = 0; k < n->inputs.size(); ++k)
      if (n->inputs[k]) users_[n->inputs[k]].emplace_back(n.get(), static_cast<int>(k));
  for (const ir::Value* v : g_.outputs()) outputs_.insert(v);
}

void Uses::added(const ir::Node* n) {
  for (size_t k = 0; k < n->inputs.size(); ++k)
    if (n->inputs[k])
      users_[n->inputs[k]].emplace_back(const_cast<ir::Node*>(n), static_cast<int>(k));
}

void Uses::replaced(const ir::Value* old, const ir::Value* repl) {
  if (old == repl) return;
  auto it = users_.find(old);
  if (it != users_.end() && !it->second.empty()) {
    std::vector<std::pair<ir::Node*, int>> moved = std::move(it->second);
    it->second.clear();
    auto& dst = users_[repl];
    dst.insert(dst.end(), moved.begin(), moved.end());
  }
  if (outputs_.erase(old)) outputs_.insert(repl);
}

const std::vector<std::pair<ir::Node*, int>>& Uses::of(const ir::Value* v) const {
  static const std::vector<std::pair<ir::Node*, int>> kNone;
  auto it = users_.find(v);
  return it == users_.end() ? kNone : it->second;
}

ir::Node* producer(const ir::Value* v, std::string_view op) {
  if (!v || !v->producer) return nullptr;
  if (!op.empty() && v->producer->op != op) return nullptr;
  return v->producer;
}

std::optional<double> scalar_const(const ir::Value* v) {
  if (!v || !v->has_data() || !ir::is_float(v->elem()) || v->data->numel() != 1)
    return std::nullopt;
  return v->data->floats()[0];
}

bool const_all(const ir::Value* v, double x) {
  if (!v || !v->has_data() || !ir::is_float(v->elem())) return false;
  for (float f : v->data->floats())
    if (f != x) return false;
  return true;
}

bool near_fp32(double a, double b, double ulps) {
  // fp32 has 24 significant bits: one ulp of b is 2^(exponent(b) - 23).
  if (b == 0) return a == 0;
  int e = 0;
  std::frexp(b, &e);
  return std::fabs(a - b) <= ulps * std::ldexp(1.0, e - 24);
}

bool can_replace(const ir::Graph& g, const ir::Value* old, const ir::Value* repl) {
  if (old == repl || old->type != repl->type) return false;
  if (!g.is_output(old)) return true;
  return repl->producer && !g.is_output(repl);
}

void replace_value(ir::Graph& g, ir::Value* old, ir::Value* repl, bool take_name) {
  if (!can_replace(g, old, repl))
    throw ir::CompileError("internal: cannot replace '" + old->name + "' by '" + repl->name + "'");
  const bool rename = g.is_output(old) || (take_name && repl->producer);
  g.replace_all_uses(old, repl);
  if (rename) {
    const std::string name = old->name;
    g.rename_value(old, g.unique_name(name + ".replaced"));
    g.rename_value(repl, name);
  }
}

namespace {

void expand(const Uses& uses, ir::Value* v, int exp, bool root, Product& p) {
  ir::Node* n = v->producer;
  const bool interior = n && ir::is_float(v->elem()) && (root || uses.single_use(v));
  if (interior && (n->op == "Mul" || n->op == "Div") && n->input(0) && n->input(1)) {
    p.nodes.push_back(n);
    expand(uses, n->inputs[0], exp, false, p);
    expand(uses, n->inputs[1], n->op == "Div" ? -exp : exp, false, p);
    return;
  }
  if (interior && n->op == "Reciprocal") {
    p.nodes.push_back(n);
    expand(uses, n->inputs[0], -exp, false, p);
    return;
  }
  if (auto c = scalar_const(v)) {
    p.scale *= exp > 0 ? *c : 1.0 / *c;
    return;
  }
  p.factors.push_back({v, exp});
}

}  // namespace

Product flatten_product(const Uses& uses, ir::Value* root) {
  Product p;
  expand(uses, root, 1, true, p);
  return p;
}

ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (!n || n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

void bump(PassContext& ctx, std::string_view pass, std::string_view key, double n) {
  ctx.stats[std::string(pass) + "." + std::string(key)] += n;
}

}  // namespace trnsim::graph_passes
