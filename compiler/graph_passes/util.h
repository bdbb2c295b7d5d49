// Helpers the graph passes share: use counts, constant tests, value replacement
// that keeps graph output names, and flattening of Mul/Div trees for matchers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/graph_passes/pass.h"
#include "compiler/ir/graph.h"

namespace trnsim::graph_passes {

// Who reads each value, computed once; call refresh() after editing the graph, or
// for the two edits the fusion passes make per rewrite, the O(edit) updates below
// (a full refresh per rewrite is quadratic in the graph: an unrolled LSTM). The
// order of a value's readers is unspecified.
class Uses {
 public:
  explicit Uses(const ir::Graph& g) : g_(g) { refresh(); }
  void refresh();
  // `n` was added to the graph: it reads its inputs.
  void added(const ir::Node* n);
  // Every read of `old` (node inputs, graph outputs) now reads `repl`
  // (replace_value / Graph::replace_all_uses).
  void replaced(const ir::Value* old, const ir::Value* repl);
  const std::vector<std::pair<ir::Node*, int>>& of(const ir::Value* v) const;
  bool is_output(const ir::Value* v) const { return outputs_.count(v) != 0; }
  // Read by exactly one input slot of one node and not a graph output.
  bool single_use(const ir::Value* v) const { return !is_output(v) && of(v).size() == 1; }
  bool unused(const ir::Value* v) const { return !is_output(v) && of(v).empty(); }

 private:
  const ir::Graph& g_;
  std::unordered_map<const ir::Value*, std::vector<std::pair<ir::Node*, int>>> users_;
  std::unordered_set<const ir::Value*> outputs_;
};

// The node producing `v` if its op is `op` (any op when empty), else null.
ir::Node* producer(const ir::Value* v, std::string_view op = {});

// The value of a floating constant with data and exactly one element.
std::optional<double> scalar_const(const ir::Value* v);
// A floating constant with data whose every element equals `x` (any shape).
bool const_all(const ir::Value* v, double x);
// |a - b| within `ulps` fp32 units in the last place of b: "this constant is
// sqrt(2) up to the rounding of an fp32 literal or of x / c -> x * (1/c)".
bool near_fp32(double a, double b, double ulps = 4);

// Make `repl` stand for `old`: every read of `old` (node inputs and graph outputs)
// reads `repl`. Graph outputs keep their names, so when `old` is a graph output
// `repl` takes its name -- possible only if `repl` is a node output that is not a
// graph output itself (can_replace() says whether it is). With `take_name`,
// `repl` also takes the name when `old` is not an output (for fresh values that
// replace `old`, so dumps keep the names). `old` is renamed and left unused.
bool can_replace(const ir::Graph& g, const ir::Value* old, const ir::Value* repl);
void replace_value(ir::Graph& g, ir::Value* old, ir::Value* repl, bool take_name);

// A product tree: the Mul / Div / Reciprocal nodes under `root` whose results
// are used only inside the tree (the root may have any users), seen as
// scale * prod(factor ^ exp). Scalar float constants go into `scale`; the other
// leaves are factors with exponent +1 or -1 (a leaf may repeat: x*x*x is x three
// times). Only floating values are flattened.
struct Factor {
  ir::Value* v;
  int exp;
};
struct Product {
  std::vector<Factor> factors;
  double scale = 1.0;
  std::vector<ir::Node*> nodes;  // the tree's nodes, root first (empty: root is a leaf)
};
Product flatten_product(const Uses& uses, ir::Value* root);

// The other input of a binary node `n` (Add, Mul, ...) given one of them, or null
// if `v` is not exactly one of its two inputs.
ir::Value* other_input(const ir::Node* n, const ir::Value* v);

// ctx.stats["pass.key"] += n.
void bump(PassContext& ctx, std::string_view pass, std::string_view key, double n = 1);

}  // namespace trnsim::graph_passes
