// Einsum -> Transpose / Reshape / ReduceSum / MatMul (and Slice for diagonals).
//
// Operands are contracted left to right. For a pair A, B every label is batch (in
// both, needed later: by the output or a later operand), contracted (in both, not
// needed later), free in A or free in B; a label only one operand has and nothing
// needs later is summed out first (ReduceSum). A is transposed to [batch, freeA,
// contracted] and B to [batch, contracted, freeB], reshaped to [batch, M, K] x
// [batch, K, N] (B 2-D without batch labels) for one MatMul, whose result is
// reshaped to [batch, freeA, freeB] where that differs. A single operand is only
// summed and transposed. Ellipsis dims that broadcast (size 1 against a larger
// size) are expanded first, and a subscript repeated within one operand (a
// diagonal, "ii->i") is taken by a Slice. Refused: integer operands (the chip's
// MatMul is float).
#include <algorithm>
#include <set>

#include "compiler/graph_passes/decompose.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops_index.h"

namespace trnsim::graph_passes {

namespace {

using ir::Value;

struct Term {
  Value* v;
  std::vector<int> labels;
};

ir::EinsumSpec spec_of(const ir::Node& n) {
  std::vector<ir::Shape> shapes;
  for (const Value* v : n.inputs) shapes.push_back(v->shape());
  return ir::parse_einsum(n.attr_string("equation"), shapes);
}

bool has(const std::vector<int>& v, int l) {
  return std::find(v.begin(), v.end(), l) != v.end();
}

class Contractor {
 public:
  Contractor(ir::Graph& g, ir::Node* n) : e_(g, n), s_(spec_of(*n)) {}

  Value* run(const ir::Node& n) {
    std::vector<Term> terms;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      terms.push_back(prepare(n.inputs[k], s_.in_labels[k]));
    Term acc = terms[0];
    for (size_t k = 1; k < terms.size(); ++k) {
      std::set<int> later(s_.out_labels.begin(), s_.out_labels.end());
      for (size_t j = k + 1; j < terms.size(); ++j)
        later.insert(terms[j].labels.begin(), terms[j].labels.end());
      acc = contract(acc, terms[k], later);
    }
    acc = sum_except(acc, std::set<int>(s_.out_labels.begin(), s_.out_labels.end()), {});
    std::vector<int64_t> perm;
    for (int l : s_.out_labels)
      perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
    return e_.transpose(acc.v, perm, "out_perm");
  }

 private:
  ir::Shape sizes(const std::vector<int>& labels) const {
    ir::Shape s;
    for (int l : labels) s.push_back(s_.label_size[l]);
    return s;
  }
  int64_t numel(const std::vector<int>& labels) const { return ir::num_elements(sizes(labels)); }

  // Operand dims of size 1 that broadcast against a larger size become full size;
  // a subscript repeated in the operand becomes one dim, the diagonal: the two
  // axes go last, merge, and a Slice with step n + 1 picks elements (i, i). Data
  // movement only, so exact for every value.
  Term prepare(Value* v, std::vector<int> labels) {
    const ir::Shape full = sizes(labels);
    if (v->shape() != full) v = e_.node("Expand", {v}, {{"shape", full}}, "expand");
    for (;;) {
      size_t p = 0, q = 0;
      for (size_t i = 0; i < labels.size() && q == 0; ++i)
        for (size_t j = i + 1; j < labels.size(); ++j)
          if (labels[i] == labels[j]) {
            p = i;
            q = j;
            break;
          }
      if (q == 0) return {v, labels};
      const int l = labels[p];
      std::vector<int64_t> perm;
      std::vector<int> rest;
      for (size_t i = 0; i < labels.size(); ++i)
        if (i != p && i != q) {
          perm.push_back(static_cast<int64_t>(i));
          rest.push_back(labels[i]);
        }
      perm.push_back(static_cast<int64_t>(p));
      perm.push_back(static_cast<int64_t>(q));
      const int64_t n = s_.label_size[l];
      ir::Shape flat = sizes(rest);
      flat.push_back(n * n);
      v = e_.reshape(e_.transpose(v, perm, "diag_perm"), flat, "diag_flat");
      v = e_.node("Slice", {v},
                  {{"starts", std::vector<int64_t>{0}},
                   {"ends", std::vector<int64_t>{n * n}},
                   {"axes", std::vector<int64_t>{static_cast<int64_t>(flat.size()) - 1}},
                   {"steps", std::vector<int64_t>{n + 1}}},
                  "diag");
      rest.push_back(l);
      labels = rest;
    }
  }

  // `t` summed over its labels that are neither in `keep` nor in `other`.
  Term sum_except(const Term& t, const std::set<int>& keep, const std::vector<int>& other) {
    std::vector<int64_t> axes;
    Term r{t.v, {}};
    for (size_t i = 0; i < t.labels.size(); ++i) {
      const int l = t.labels[i];
      if (keep.count(l) || has(other, l))
        r.labels.push_back(l);
      else
        axes.push_back(static_cast<int64_t>(i));
    }
    if (!axes.empty())
      r.v = e_.node("ReduceSum", {t.v}, {{"axes", axes}, {"keepdims", int64_t{0}}}, "sum");
    return r;
  }

  // `t` with its labels in the order `want` (a permutation of them).
  Value* arrange(const Term& t, const std::vector<int>& want, const std::string& tag) {
    std::vector<int64_t> perm;
    for (int l : want)
      perm.push_back(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
    return e_.transpose(t.v, perm, tag);
  }

  Term contract(Term a, Term b, const std::set<int>& later) {
    a = sum_except(a, later, b.labels);
    b = sum_except(b, later, a.labels);
    std::vector<int> batch, contracted, free_a, free_b;
    for (int l : a.labels) {
      if (!has(b.labels, l))
        free_a.push_back(l);
      else if (later.count(l))
        batch.push_back(l);
      else
        contracted.push_back(l);
    }
    for (int l : b.labels)
      if (!has(a.labels, l)) free_b.push_back(l);
    auto cat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
      x.insert(x.end(), y.begin(), y.end());
      x.insert(x.end(), z.begin(), z.end());
      return x;
    };
    const int64_t M = numel(free_a), K = numel(contracted), N = numel(free_b);
    // Batch dims stay separate (MatMul batches over them), so the result of the
    // common cases (one free label per side) needs no reshape: a reshaped graph
    // output would cost a copy. Without batch labels B is 2-D, and A's free dims
    // stay separate too (MatMul flattens them onto M).
    ir::Shape as = sizes(batch), bs = sizes(batch);
    if (batch.empty() && !free_a.empty()) {
      as = sizes(free_a);
      as.push_back(K);
    } else {
      as.insert(as.end(), {M, K});
    }
    bs.insert(bs.end(), {K, N});
    Value* av = e_.reshape(arrange(a, cat(batch, free_a, contracted), "lhs_perm"), as, "lhs");
    Value* bv = e_.reshape(arrange(b, cat(batch, contracted, free_b), "rhs_perm"), bs, "rhs");
    Value* mm = e_.node("MatMul", {av, bv}, {}, "matmul");
    Term r{nullptr, cat(batch, free_a, free_b)};
    r.v = e_.reshape(mm, sizes(r.labels), "result");
    return r;
  }

  Emitter e_;
  ir::EinsumSpec s_;
};

}  // namespace

std::string einsum_refusal(const ir::Node& n) {
  if (!ir::is_float(n.outputs[0]->elem()))
    return "Einsum on " + std::string(ir::elem_type_name(n.outputs[0]->elem())) +
           " is not rewritten (the chip's MatMul is float)";
  return "";
}

Value* decompose_einsum(ir::Graph& g, ir::Node* n) {
  return Contractor(g, n).run(*n);
}

}  // namespace trnsim::graph_passes
