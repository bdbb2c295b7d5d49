// expose_attention_scores: attention scores as exporters also write them, brought to
// the form fuse_patterns' Attention matcher takes: S = MatMul(Q, Transpose(K)) with
// the last two axes swapped and the scale on S.
//   Q * c (nn.MultiheadAttention scales Q)  -> MatMul(Q, .) * c: exact up to fp32
//                                              rounding, the scale moves to the scores
//   Transpose(K', perm) with perm = the heads' permutation then the last-two swap
//   (one Transpose, [B, S, H, D] -> [B, H, D, S])  -> Transpose(Transpose(K', perm'),
//                                              last two swapped)
// Only for a MatMul whose result reaches, through single-use Mul / Div / Add / Where,
// a last-axis Softmax that is itself the A operand of a MatMul (an attention); when the
// matcher then declines, the scale Mul fuses into the MatMul's evacuation and the
// split Transpose costs one more copy.
#include "compiler/graph_passes/attention_forms.h"

#include <string>
#include <utility>

#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {

using ir::Node;
using ir::Value;

void expose_attention_scores(ir::Graph& g, PassContext& ctx) {
  const Uses uses(g);  // each rewrite touches one attention's nodes only
  bool changed = false;
  for (Node* sm : g.nodes_snapshot()) {
    if (sm->op != "Softmax" || sm->inputs[0]->rank() < 2 ||
        sm->attr_int("axis") != sm->inputs[0]->rank() - 1 || !uses.single_use(sm->outputs[0]))
      continue;
    const auto& [pv, slot] = uses.of(sm->outputs[0])[0];
    if (pv->op != "MatMul" || slot != 0) continue;
    // Up from the Softmax to the scores' MatMul.
    Value* s = sm->inputs[0];
    Node* qk = nullptr;
    for (int depth = 0; depth < 4 && s && uses.single_use(s); ++depth) {
      Node* p = producer(s);
      if (!p) break;
      if (p->op == "MatMul") {
        qk = p;
        break;
      }
      if (p->op != "Mul" && p->op != "Div" && p->op != "Add" && p->op != "Where") break;
      Value* next = nullptr;  // the one non-constant operand with s's type
      for (Value* in : p->inputs)
        if (in && !in->has_data() && in->type == s->type) next = next ? nullptr : in;
      s = next;
    }
    if (!qk) continue;
    const int64_t r = qk->outputs[0]->rank();
    Value* q = qk->inputs[0];
    Value* kt = qk->inputs[1];
    if (q->rank() != r || kt->rank() != r) continue;
    // Q = scale * Q'.
    double scale = 1.0;
    if (producer(q) && uses.single_use(q)) {
      Product p = flatten_product(uses, q);
      if (!p.nodes.empty() && p.factors.size() == 1 && p.factors[0].exp == 1 && p.scale > 0 &&
          p.factors[0].v->type == q->type) {
        scale = p.scale;
        q = p.factors[0].v;
      }
    }
    // K^T = Transpose(K', perm), perm not just the last-two swap.
    std::vector<int64_t> perm_k;
    if (Node* tr = producer(kt, "Transpose")) {
      const std::vector<int64_t>& perm = tr->attr_ints("perm");
      std::vector<int64_t> pk(perm.begin(), perm.end());
      if (static_cast<int64_t>(pk.size()) == r && r >= 2) {
        std::swap(pk[r - 2], pk[r - 1]);
        bool identity = true;
        for (int64_t i = 0; i < r; ++i) identity = identity && pk[i] == i;
        if (!identity) perm_k = pk;
      }
    }
    if (scale == 1.0 && perm_k.empty()) continue;
    const std::string base = qk->name;
    changed = true;  // nodes are made below; any left unused are erased at the end
    if (!perm_k.empty()) {
      std::vector<int64_t> swap(r);
      for (int64_t i = 0; i < r; ++i) swap[i] = i;
      std::swap(swap[r - 2], swap[r - 1]);
      Node* tr = producer(kt);
      Node* heads = ir::make_node(g, "Transpose", {tr->inputs[0]}, {{"perm", perm_k}},
                                  tr->name + "_heads", 1, {g.unique_name(kt->name + ".heads")}, qk);
      Node* last = ir::make_node(g, "Transpose", {heads->outputs[0]}, {{"perm", swap}}, tr->name, 1,
                                 {g.unique_name(kt->name + ".t")}, qk);
      heads->merge_origin(*tr);
      last->merge_origin(*tr);
      kt = last->outputs[0];
      bump(ctx, "fuse_patterns", "AttentionKTransposeSplit");
    }
    std::map<std::string, ir::Attribute> attrs = qk->attrs;
    Node* mm = ir::make_node(g, "MatMul", {q, kt}, attrs, base, 1,
                             {g.unique_name(qk->outputs[0]->name + ".s")}, qk);
    mm->merge_origin(*qk);
    Value* out = mm->outputs[0];
    if (scale != 1.0) {
      Value* c = g.add_constant(g.unique_name(base + ".scale"),
                                ir::Tensor::scalar(static_cast<float>(scale)));
      Node* mul = ir::make_node(g, "Mul", {out, c}, {}, base + "_scale", 1,
                                {g.unique_name(out->name + ".scaled")}, qk);
      mul->merge_origin(*producer(qk->inputs[0]));
      out = mul->outputs[0];
      bump(ctx, "fuse_patterns", "AttentionScaleMoved");
    }
    if (out->type != qk->outputs[0]->type) continue;  // left dead, erased below
    replace_value(g, qk->outputs[0], out, true);
  }
  if (changed) g.erase_dead_nodes();
}

}  // namespace trnsim::graph_passes
