// fuse_epilogue: a tensor-engine op (MatMul, Gemm, Conv, ConvTranspose) and the
// chain of elementwise ops after it become one trn.MatMulEpilogue node, which the
// back end lowers as one kernel: matmul into PSUM, then the epilogue applied while
// evacuating PSUM to SBUF.
//
// The chain grows while the current value is used by exactly one node (and is not
// a graph output), that node is fusible elementwise (ir::is_fusible_elementwise:
// bias Add, activations incl. trn.Gelu/trn.Silu, residual Add, scale Mul, ...),
// reads the value in one operand slot, and gives a result of the anchor's type
// (so the anchor's result is never broadcast up). Its other operands become
// inputs of the fused node.
//
// Representation (compiler/ir/trn_ops.h): inputs %0 = A/X, %1 = B/W, %2 = Gemm C
// or conv bias if the anchor has one, then the epilogue operands in order of
// first use (an operand used twice appears once, but apart from the anchor's
// inputs: x * MatMul(x, w) reads x as %0 and %2); `expr` is step 0 = the anchor
// with its attributes, then one step per epilogue op, each reading $(j-1):
//   %y = trn.MatMulEpilogue(%x, %w, %b, %res)
//          {expr="MatMul(%0, %1); Add($0, %2); Relu($1); Add($2, %3)"}
// compute_dtype moves from the anchor to the fused node. The fused node takes the
// anchor's node name and the last chain value's name.
#include <unordered_set>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Value;

constexpr std::string_view kPass = "fuse_epilogue";

void run(ir::Graph& g, PassContext& ctx) {
  Uses uses(g);
  std::unordered_set<const Node*> consumed;  // replaced by a fused node, not erased yet
  for (Node* anchor : g.nodes_snapshot()) {
    if (!ir::is_matmul_anchor(anchor->op) || consumed.count(anchor)) continue;
    Value* out = anchor->outputs[0];
    if (!ir::is_float(out->elem()) || uses.unused(out)) continue;
    std::vector<Node*> chain;
    Value* cur = out;
    while (uses.single_use(cur)) {
      Node* user = uses.of(cur)[0].first;
      if (!ir::is_fusible_elementwise(user->op) || user->outputs[0]->type != out->type ||
          consumed.count(user))
        break;
      chain.push_back(user);
      cur = user->outputs[0];
    }
    if (chain.empty()) continue;

    std::vector<Value*> ins;
    for (Value* v : anchor->inputs)
      if (v) ins.push_back(v);
    // Epilogue operands get slots of their own even when the anchor reads the same
    // value (y = x * MatMul(x, w)): the anchor's slots hold matmul layouts.
    const size_t first_epilogue = ins.size();
    auto operand = [&](Value* v) {
      for (size_t k = first_epilogue; k < ins.size(); ++k)
        if (ins[k] == v) return static_cast<int>(k);
      ins.push_back(v);
      return static_cast<int>(ins.size()) - 1;
    };
    std::vector<ir::FusedStep> steps(1);
    steps[0].op = anchor->op;
    for (size_t k = 0; k < ins.size(); ++k) steps[0].args.push_back({false, static_cast<int>(k)});
    steps[0].attrs = anchor->attrs;
    steps[0].attrs.erase("compute_dtype");
    Value* prev = out;
    for (size_t j = 0; j < chain.size(); ++j) {
      ir::FusedStep st;
      st.op = chain[j]->op;
      st.attrs = chain[j]->attrs;
      for (Value* v : chain[j]->inputs)
        st.args.push_back(v == prev ? ir::FusedArg{true, static_cast<int>(j)}
                                    : ir::FusedArg{false, operand(v)});
      steps.push_back(std::move(st));
      prev = chain[j]->outputs[0];
    }
    std::map<std::string, ir::Attribute> attrs{{"expr", ir::format_fused_expr(steps)}};
    if (anchor->has_attr("compute_dtype"))
      attrs["compute_dtype"] = anchor->attrs.at("compute_dtype");
    Node* fused = ir::make_node(g, "trn.MatMulEpilogue", ins, std::move(attrs), anchor->name, 1,
                                {g.unique_name(cur->name + ".fused")}, chain.back());
    fused->origin = anchor->origin;
    for (const Node* n : chain) fused->merge_origin(*n);
    replace_value(g, cur, fused->outputs[0], true);
    uses.added(fused);
    uses.replaced(cur, fused->outputs[0]);
    consumed.insert(anchor);
    consumed.insert(chain.begin(), chain.end());
    bump(ctx, kPass, "fused");
    bump(ctx, kPass, "epilogue_ops", static_cast<double>(chain.size()));
  }
  g.erase_dead_nodes();
}

}  // namespace

const PassInfo& fuse_epilogue_pass() {
  static const PassInfo p{kPass,
                          "MatMul/Gemm/Conv + following elementwise chain (bias, activation, "
                          "residual) -> trn.MatMulEpilogue",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
