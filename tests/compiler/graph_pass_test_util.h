// Helpers for the graph pass tests: run passes on text IR, compare the result with
// expected text, and compare outputs before/after with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/text.h"

namespace trnsim::graph_passes::testing {

inline ir::Graph parse_body(const std::string& body) {
  return ir::parse_graph("graph t {\n" + body + "\n}\n", "test.tir");
}

// The canonical print of a graph body (so expected text may be formatted freely).
inline std::string canon(const std::string& body) {
  return ir::print_graph(parse_body(body));
}

// Give every type-only constant random data (values in [lo, hi]).
inline void fill_constants(ir::Graph& g, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (const auto& v : g.values())
    if (v->is_constant && !v->data) {
      ir::Tensor t(v->type);
      for (float& f : t.floats()) f = d(rng);
      t.normalize();
      v->data = std::move(t);
    }
}

inline interp::TensorMap random_inputs(const ir::Graph& g, uint32_t seed, float lo = -2.0f,
                                       float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  interp::TensorMap in;
  for (const ir::Value* v : g.inputs()) {
    ir::Tensor t(v->type);
    for (float& f : t.floats()) f = d(rng);
    t.normalize();
    in[v->name] = std::move(t);
  }
  return in;
}

// Largest |a - b| / max(1, |a|) over two tensors of the same type.
inline double max_rel_diff(const ir::Tensor& a, const ir::Tensor& b) {
  EXPECT_EQ(a.type(), b.type());
  if (a.type() != b.type()) return INFINITY;
  double m = 0;
  for (size_t k = 0; k < a.floats().size(); ++k) {
    double x = a.floats()[k], y = b.floats()[k];
    if (std::isnan(x) && std::isnan(y)) continue;
    m = std::max(m, std::fabs(x - y) / std::max(1.0, std::fabs(x)));
  }
  return m;
}

// Runs both graphs on the same random inputs; every output (matched by name) must
// agree within `tol`. Returns the largest difference seen.
inline double expect_same_outputs(const ir::Graph& before, const ir::Graph& after, double tol,
                                  uint32_t seed = 7, const interp::RunOptions& opts_after = {}) {
  interp::TensorMap in = random_inputs(before, seed);
  interp::TensorMap want = interp::run(before, in);
  interp::TensorMap got = interp::run(after, in, opts_after);
  double worst = 0;
  EXPECT_EQ(before.outputs().size(), after.outputs().size());
  for (const ir::Value* o : before.outputs()) {
    auto it = got.find(o->name);
    EXPECT_NE(it, got.end()) << "output '" << o->name << "' is missing after the pass";
    if (it == got.end()) continue;
    double d = max_rel_diff(want.at(o->name), it->second);
    EXPECT_LE(d, tol) << "output '" << o->name << "'";
    worst = std::max(worst, d);
  }
  return worst;
}

// Runs the named passes on a copy of `g` (fp32 precision unless given).
inline ir::Graph run_on_copy(const ir::Graph& g, const std::vector<std::string>& passes,
                             PassContext* ctx = nullptr) {
  ir::Graph r = g.clone();
  PassContext local;
  local.precision = Precision::fp32;
  run_passes(r, ctx ? *ctx : local, passes);
  return r;
}

// The standard pass test: `before` (text body) through `pass` must print as
// `after` (text body), and compute the same outputs (type-only constants get
// random data) within `tol`.
inline void check_pass(const std::string& pass, const std::string& before, const std::string& after,
                       double tol = 1e-6, PassContext* ctx = nullptr) {
  ir::Graph g = parse_body(before);
  ir::Graph out = run_on_copy(g, {pass}, ctx);
  EXPECT_EQ(ir::print_graph(out), canon(after));
  fill_constants(g, 11);
  ir::Graph out_data = run_on_copy(g, {pass}, ctx);
  expect_same_outputs(g, out_data, tol);
}

// Nodes of an op type.
inline int count_op(const ir::Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(),
                                        [&](const auto& n) { return n->op == op; }));
}

}  // namespace trnsim::graph_passes::testing
