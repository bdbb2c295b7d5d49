// fold_norm_affine: y = norm(x) * s + beta (trn.LayerNorm, trn.RMSNorm over the last
// axis, s and beta constant rows) read only as the left operand of MatMuls with
// constant weights W [C, N] (a transformer block's q/k/v projections and its MLP's
// first Linear) becomes y' = norm(x) with every reader computing
//     y' @ (diag(s) W) + beta @ W
// The constant products are made here once; beta @ W joins the MatMul's constant
// bias Add when it has one, else a new Add follows it (fuse_epilogue takes either
// into the evacuation). The norm then skips its scale and bias passes over the whole
// activation and its parameter rows are never loaded: only its statistics and one
// (x - mean) * rstd pass remain before the MatMul's operand load. Exact in real
// arithmetic; diag(s) W is rounded once to the matmul's operand type as W was.
#include "compiler/graph_passes/fold_norm_affine.h"

#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Value;

// A float constant with data that is a row of c elements or one value.
bool param_ok(const Value* v, int64_t c) {
  return v && v->has_data() && v->elem() == ir::ElemType::fp32 &&
         (v->type.numel() == c || v->type.numel() == 1);
}

double param_at(const Value* v, int64_t k) {
  return v->data->at(v->type.numel() == 1 ? 0 : k);
}

// The constant bias Add that alone reads `o` (MatMul's [.., N] result), if any, and
// the slot of its bias.
Node* bias_add(const Uses& uses, const Value* o, int& slot) {
  if (!uses.single_use(o)) return nullptr;
  Node* add = uses.of(o)[0].first;
  if (add->op != "Add" || add->inputs.size() != 2 || add->outputs[0]->type != o->type)
    return nullptr;
  Value* b = other_input(add, o);
  const int64_t n = o->shape().back();
  if (!b || !b->has_data() || b->elem() != ir::ElemType::fp32 || b->rank() < 1 ||
      b->shape().back() != n || b->type.numel() != n)
    return nullptr;
  slot = add->inputs[0] == b ? 0 : 1;
  return add;
}

}  // namespace

void fold_norm_affine(ir::Graph& g, PassContext& ctx) {
  const Uses uses(g);  // each rewrite edits only its own norm's readers
  bool changed = false;
  for (Node* n : g.nodes_snapshot()) {
    const bool layer = n->op == "trn.LayerNorm";
    if (!layer && n->op != "trn.RMSNorm") continue;
    Value* y = n->outputs[0];
    const int64_t r = y->rank();
    if (r < 1 || y->elem() != ir::ElemType::fp32) continue;
    int64_t axis = n->attr_int("axis");
    if (axis < 0) axis += r;
    const int64_t c = y->shape().back();
    if (axis != r - 1 || c < 1) continue;
    Value* s = n->input(1);
    Value* beta = layer ? n->input(2) : nullptr;
    if ((!s && !beta) || (s && !param_ok(s, c)) || (beta && !param_ok(beta, c))) continue;
    if (uses.is_output(y) || uses.of(y).empty()) continue;
    bool ok = true;
    for (const auto& [mm, slot] : uses.of(y)) {
      const Value* w = mm->input(1);
      ok = ok && mm->op == "MatMul" && slot == 0 && mm->inputs.size() == 2 && w != y &&
           w->has_data() && w->elem() == ir::ElemType::fp32 && w->rank() == 2 &&
           w->shape()[0] == c && mm->outputs[0]->elem() == ir::ElemType::fp32;
    }
    if (!ok) continue;
    for (const auto& [mm, slot] : uses.of(y)) {
      Value* w = mm->inputs[1];
      const int64_t nn = w->shape()[1];
      const std::vector<float>& wf = w->data->floats();
      std::vector<float> ws(wf.size());
      std::vector<double> shift(static_cast<size_t>(nn), 0.0);
      for (int64_t k = 0; k < c; ++k) {
        const double sk = s ? param_at(s, k) : 1.0;
        const double bk = beta ? param_at(beta, k) : 0.0;
        for (int64_t j = 0; j < nn; ++j) {
          const float v = wf[static_cast<size_t>(k * nn + j)];
          ws[static_cast<size_t>(k * nn + j)] = static_cast<float>(sk * v);
          shift[static_cast<size_t>(j)] += bk * v;
        }
      }
      if (s)
        mm->inputs[1] = g.add_constant(g.unique_name(w->name + ".normscaled"),
                                       ir::Tensor::from_floats(w->shape(), std::move(ws)));
      if (!beta) continue;
      Value* o = mm->outputs[0];
      int bslot = 0;
      if (Node* add = bias_add(uses, o, bslot)) {
        const Value* b = add->inputs[static_cast<size_t>(bslot)];
        std::vector<float> nb(static_cast<size_t>(nn));
        for (int64_t j = 0; j < nn; ++j)
          nb[static_cast<size_t>(j)] = static_cast<float>(b->data->at(j) + shift[j]);
        add->inputs[static_cast<size_t>(bslot)] = g.add_constant(
            g.unique_name(b->name + ".normshifted"), ir::Tensor::from_floats(b->shape(), nb));
        continue;
      }
      // No bias to join: the MatMul is remade with an Add of beta @ W after it.
      std::vector<float> nb(shift.begin(), shift.end());
      Value* bv = g.add_constant(g.unique_name(n->name + ".shift"),
                                 ir::Tensor::from_floats({nn}, std::move(nb)));
      Node* pm = ir::make_node(g, "MatMul", mm->inputs, mm->attrs, mm->name, 1,
                               {g.unique_name(o->name + ".unshifted")}, mm);
      pm->merge_origin(*mm);
      Node* pa = ir::make_node(g, "Add", {pm->outputs[0], bv}, {}, mm->name + ".shift", 1,
                               {g.unique_name(o->name + ".shifted")}, mm);
      pa->merge_origin(*n);
      replace_value(g, o, pa->outputs[0], true);
    }
    n->inputs.resize(1);
    changed = true;
    bump(ctx, "fuse_patterns", "NormAffineFolded");
  }
  if (changed) g.erase_dead_nodes();
}

}  // namespace trnsim::graph_passes
