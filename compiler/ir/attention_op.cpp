// trn.Attention's shape rule (compiler/ir/trn_ops.h).
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::ir {

std::vector<TensorType> infer_trn_attention(const Node& n) {
  if (n.inputs.size() < 3 || n.inputs.size() % 2 != 1)
    throw CompileError("inputs are Q and (K, V) pairs, got " + std::to_string(n.inputs.size()));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* x = n.input(i);
    if (!x) throw CompileError("input " + std::to_string(i) + " is required");
    if (!is_float(x->elem()))
      throw CompileError("'" + x->name + "' must be floating point, got " + x->type.str());
    if (x->rank() < 2)
      throw CompileError("'" + x->name + "' " + x->type.str() + " needs rank >= 2");
  }
  const Value* q = n.input(0);
  const Shape& qs = q->shape();
  const size_t r = qs.size();
  int64_t skv = 0, dv = -1;
  for (size_t i = 1; i < n.inputs.size(); i += 2) {
    const Value* k = n.input(i);
    const Value* v = n.input(i + 1);
    const std::string what = q->type.str() + ", " + k->type.str() + ", " + v->type.str();
    if (k->rank() != q->rank() || v->rank() != q->rank())
      throw CompileError("Q, K, V must have one rank, got " + what);
    const Shape &ks = k->shape(), &vs = v->shape();
    for (size_t d = 0; d + 2 < r; ++d)
      if (ks[d] != qs[d] || vs[d] != qs[d])
        throw CompileError("Q, K, V must have the same leading dims, got " + what);
    if (ks[r - 1] != qs[r - 1])
      throw CompileError("K's last dim must be Q's (the head size), got " + what);
    if (vs[r - 2] != ks[r - 2]) throw CompileError("V must have K's sequence length, got " + what);
    if (dv >= 0 && vs[r - 1] != dv)
      throw CompileError("every V must have one head size, got " + what);
    dv = vs[r - 1];
    skv += ks[r - 2];
  }
  const int64_t causal = n.attr_int("causal");
  if (causal != 0 && causal != 1) throw CompileError("causal must be 0 or 1");
  if (causal && qs[r - 2] != skv)
    throw CompileError("causal needs as many queries as keys, got " + std::to_string(qs[r - 2]) +
                       " and " + std::to_string(skv));
  if (!(n.attr_float("scale") > 0)) throw CompileError("scale must be positive");
  Shape out = qs;
  out[r - 1] = dv;
  return {TensorType{q->elem(), out}};
}

}  // namespace trnsim::ir
