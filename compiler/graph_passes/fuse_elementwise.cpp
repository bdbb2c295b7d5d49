// fuse_elementwise: trees of elementwise ops whose intermediate results are used
// once become one trn.Elementwise node, which the back end lowers as one kernel
// (one pass over the data, intermediates kept in SBUF).
//
// A fusible elementwise node (ir::is_fusible_elementwise) joins the node reading
// its result when that result is used by exactly that one node (not a graph
// output), the reader is fusible elementwise too, and both results have the same
// type -- so every step of a group computes on the output's shape and only
// operands from outside the group broadcast (bias vectors, scalar constants).
// Groups of two or more nodes are fused; a lone elementwise op stays as it is.
// Run after fuse_epilogue, which takes the chains that follow a matmul.
//
// Representation (compiler/ir/trn_ops.h): inputs are the group's operands from
// outside, in order of first use; `expr` lists the steps in graph order, e.g.
//   %y = trn.Elementwise(%a, %b, %c) {expr="Mul(%0, %1); Sigmoid($0); Add($1, %2)"}
// The fused node takes the group root's node name and value name.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Value;

constexpr std::string_view kPass = "fuse_elementwise";

bool fusible(const Node* n) {
  return ir::is_fusible_elementwise(n->op) && ir::is_float(n->outputs[0]->elem());
}

// The node `n` is absorbed into: the single reader of its result, if that joins.
Node* absorbed_into(const Uses& uses, const Node* n) {
  const Value* out = n->outputs[0];
  if (!fusible(n) || !uses.single_use(out)) return nullptr;
  Node* user = uses.of(out)[0].first;
  if (!fusible(user) || user->outputs[0]->type != out->type) return nullptr;
  return user;
}

void run(ir::Graph& g, PassContext& ctx) {
  Uses uses(g);
  std::vector<Node*> order = g.nodes_snapshot();
  std::unordered_map<const Node*, size_t> pos;
  for (size_t k = 0; k < order.size(); ++k) pos[order[k]] = k;
  std::unordered_set<const Node*> consumed;  // replaced by a fused node, not erased yet
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* root = *it;
    if (consumed.count(root) || !fusible(root) || uses.unused(root->outputs[0]) ||
        absorbed_into(uses, root))
      continue;
    // Collect the producers absorbed into the group, transitively.
    std::vector<Node*> group{root};
    for (size_t k = 0; k < group.size(); ++k)
      for (Value* v : group[k]->inputs)
        if (v && v->producer && absorbed_into(uses, v->producer) == group[k])
          group.push_back(v->producer);
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end(),
              [&](const Node* a, const Node* b) { return pos.at(a) < pos.at(b); });
    std::unordered_map<const Value*, int> step_of;
    for (size_t j = 0; j < group.size(); ++j) step_of[group[j]->outputs[0]] = static_cast<int>(j);
    std::vector<Value*> ins;
    std::vector<ir::FusedStep> steps;
    for (const Node* n : group) {
      ir::FusedStep st;
      st.op = n->op;
      st.attrs = n->attrs;
      for (Value* v : n->inputs) {
        if (auto s = step_of.find(v); s != step_of.end()) {
          st.args.push_back({true, s->second});
          continue;
        }
        auto at = std::find(ins.begin(), ins.end(), v);
        if (at == ins.end()) at = ins.insert(ins.end(), v);
        st.args.push_back({false, static_cast<int>(at - ins.begin())});
      }
      steps.push_back(std::move(st));
    }
    Value* out = root->outputs[0];
    Node* fused = ir::make_node(g, "trn.Elementwise", ins, {{"expr", ir::format_fused_expr(steps)}},
                                root->name, 1, {g.unique_name(out->name + ".fused")}, root);
    fused->origin.clear();  // the group's, in graph order
    for (const Node* n : group) fused->merge_origin(*n);
    replace_value(g, out, fused->outputs[0], true);
    uses.added(fused);
    uses.replaced(out, fused->outputs[0]);
    consumed.insert(group.begin(), group.end());
    bump(ctx, kPass, "fused");
    bump(ctx, kPass, "ops", static_cast<double>(group.size()));
  }
  g.erase_dead_nodes();
}

}  // namespace

const PassInfo& fuse_elementwise_pass() {
  static const PassInfo p{kPass,
                          "trees of single-use elementwise ops -> trn.Elementwise with an "
                          "expression list",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
