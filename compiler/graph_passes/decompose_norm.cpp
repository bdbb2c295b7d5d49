// InstanceNormalization -> trn.LayerNorm over the spatial dims + per-channel Mul/Add.
//
// Instance norm of x [N, C, D1, ...] normalises every (n, c) row over D1... with the
// population variance and eps inside the sqrt: trn.LayerNorm with axis 2 (the
// row-wise lowering). Its scale and bias are per channel, which LayerNorm's
// parameters (over the normalised dims) cannot express, so they follow as a Mul and
// an Add by [C, 1, ...] (fuse_elementwise merges them; canonicalize drops the
// all-ones scale and all-zeros bias torch's GroupNorm export passes). Refused:
// integer inputs (the op is float only, so none yet) and inputs without spatial dims.
#include "compiler/graph_passes/decompose.h"

namespace trnsim::graph_passes {

namespace {

using ir::Value;

// p [C] as [C, 1, ...] to broadcast against x of rank `rank` (a reshaped constant
// when p has data).
Value* per_channel(Emitter& e, Value* p, int64_t rank, const std::string& tag) {
  ir::Shape s{p->shape()[0]};
  s.resize(static_cast<size_t>(rank - 1), 1);
  if (p->has_data()) {
    return e.constant(tag, p->data->reshaped(s));
  }
  return e.reshape(p, s, tag);
}

}  // namespace

std::string instance_norm_refusal(const ir::Node& n) {
  if (!ir::is_float(n.outputs[0]->elem()))
    return "InstanceNormalization of " + std::string(ir::elem_type_name(n.outputs[0]->elem())) +
           " is not rewritten";
  if (n.inputs[0]->rank() < 3)
    return "InstanceNormalization of " + n.inputs[0]->type.str() + " has no spatial dims";
  return "";
}

Value* decompose_instance_norm(ir::Graph& g, ir::Node* n) {
  Emitter e(g, n);
  Value* x = n->inputs[0];
  const int64_t rank = x->rank();
  Value* y = e.node("trn.LayerNorm", {x},
                    {{"axis", int64_t{2}}, {"epsilon", n->attr_float("epsilon")}}, "norm");
  Value* scale = n->inputs[1];
  Value* bias = n->inputs[2];
  y = e.node("Mul", {y, per_channel(e, scale, rank, "scale")}, {}, "mul");
  y = e.node("Add", {y, per_channel(e, bias, rank, "bias")}, {}, "add");
  return y;
}

}  // namespace trnsim::graph_passes
