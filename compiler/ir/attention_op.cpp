// trn.Attention's shape rule (compiler/ir/trn_ops.h), and two optional attributes:
//   seq_first=1: Q, K, V and the output are [..., S, H, D] (sequence before heads,
//     as the projections write them) instead of [..., H, S, D].
//   rotary=1 (one (K, V) pair): the inputs end with four tables cos_q, sin_q [Sq, D]
//     and cos_k, sin_k [Skv, D] (leading 1s allowed); Q and K are first rotated,
//     x * cos + swap_halves(x) * sin (rotate_half's sign folded into sin).
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::ir {

namespace {

// A rotary table: [S, D] with only 1s before.
void check_table(const Value* t, int64_t S, int64_t D, const std::string& what) {
  const Shape& s = t->shape();
  bool ok = s.size() >= 2 && s[s.size() - 2] == S && s.back() == D;
  for (size_t i = 0; ok && i + 2 < s.size(); ++i) ok = s[i] == 1;
  if (!ok)
    throw CompileError("rotary table " + what + " '" + t->name + "' must be [" + std::to_string(S) +
                       ", " + std::to_string(D) + "] (leading 1s allowed), got " + t->type.str());
}

}  // namespace

std::vector<TensorType> infer_trn_attention(const Node& n) {
  const bool rotary = n.attr_int("rotary", 0) != 0;
  const bool seq_first = n.attr_int("seq_first", 0) != 0;
  if (n.attr_int("rotary", 0) != 0 && n.attr_int("rotary", 0) != 1)
    throw CompileError("rotary must be 0 or 1");
  if (n.attr_int("seq_first", 0) != 0 && n.attr_int("seq_first", 0) != 1)
    throw CompileError("seq_first must be 0 or 1");
  const size_t nqkv = n.inputs.size() - (rotary ? 4 : 0);
  if (rotary && n.inputs.size() != 7)
    throw CompileError("rotary=1 takes Q, K, V and four tables, got " +
                       std::to_string(n.inputs.size()) + " inputs");
  if (n.inputs.size() < 3 || nqkv % 2 != 1)
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
  if (seq_first && r < 3)
    throw CompileError("seq_first needs Q, K, V of rank >= 3, got " + q->type.str());
  // The sequence and head-size axes; with seq_first the heads sit between them.
  const size_t sa = seq_first ? r - 3 : r - 2;
  int64_t skv = 0, dv = -1;
  for (size_t i = 1; i < nqkv; i += 2) {
    const Value* k = n.input(i);
    const Value* v = n.input(i + 1);
    const std::string what = q->type.str() + ", " + k->type.str() + ", " + v->type.str();
    if (k->rank() != q->rank() || v->rank() != q->rank())
      throw CompileError("Q, K, V must have one rank, got " + what);
    const Shape &ks = k->shape(), &vs = v->shape();
    for (size_t d = 0; d + 1 < r; ++d)
      if (d != sa && (ks[d] != qs[d] || vs[d] != qs[d]))
        throw CompileError("Q, K, V must have the same leading dims, got " + what);
    if (ks[r - 1] != qs[r - 1])
      throw CompileError("K's last dim must be Q's (the head size), got " + what);
    if (vs[sa] != ks[sa]) throw CompileError("V must have K's sequence length, got " + what);
    if (dv >= 0 && vs[r - 1] != dv)
      throw CompileError("every V must have one head size, got " + what);
    dv = vs[r - 1];
    skv += ks[sa];
  }
  const int64_t causal = n.attr_int("causal");
  if (causal != 0 && causal != 1) throw CompileError("causal must be 0 or 1");
  if (causal && qs[sa] != skv)
    throw CompileError("causal needs as many queries as keys, got " + std::to_string(qs[sa]) +
                       " and " + std::to_string(skv));
  if (!(n.attr_float("scale") > 0)) throw CompileError("scale must be positive");
  if (rotary) {
    const int64_t D = qs[r - 1];
    if (D % 2 != 0) throw CompileError("rotary needs an even head size, got " + std::to_string(D));
    check_table(n.input(3), qs[sa], D, "cos_q");
    check_table(n.input(4), qs[sa], D, "sin_q");
    check_table(n.input(5), skv, D, "cos_k");
    check_table(n.input(6), skv, D, "sin_k");
  }
  Shape out = qs;
  out[r - 1] = dv;
  return {TensorType{q->elem(), out}};
}

}  // namespace trnsim::ir
