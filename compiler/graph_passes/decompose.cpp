// decompose: Einsum, Resize and InstanceNormalization into ops the device lowers
// (the rewrites are in decompose_*.cpp; decompose.h lists them). It runs first, so
// canonicalize folds and simplifies what it emits (transposes of constant operands,
// reshape chains, the x*1 and x+0 of a GroupNorm's InstanceNormalization).
#include "compiler/graph_passes/decompose.h"

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"

namespace trnsim::graph_passes {

namespace {

constexpr std::string_view kPass = "decompose";

using Refusal = std::string (*)(const ir::Node&);
using Rewrite = ir::Value* (*)(ir::Graph&, ir::Node*);

struct Family {
  std::string_view op, stat;
  Refusal refusal;
  Rewrite rewrite;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"Einsum", "einsum", einsum_refusal, decompose_einsum},
      {"Resize", "resize", resize_refusal, decompose_resize},
      {"InstanceNormalization", "instance_norm", instance_norm_refusal, decompose_instance_norm},
  };
  return f;
}

const Family* family_of(const std::string& op) {
  for (const Family& f : families())
    if (f.op == op) return &f;
  return nullptr;
}

void run(ir::Graph& g, PassContext& ctx) {
  for (ir::Node* n : g.nodes_snapshot()) {
    const Family* f = family_of(n->op);
    if (!f) continue;
    if (!f->refusal(*n).empty()) {
      bump(ctx, kPass, std::string(f->stat) + "_left");
      continue;
    }
    ir::Value* out = n->outputs[0];
    ir::Value* repl = f->rewrite(g, n);
    if (!can_replace(g, out, repl)) {
      // The result is an input or a graph output itself (e.g. Einsum "ij->ij"
      // of a graph input): copy it.
      Emitter e(g, n);
      repl = e.node("Identity", {repl}, {}, "copy");
    }
    replace_value(g, out, repl, true);
    g.erase_node(n);
    bump(ctx, kPass, f->stat);
  }
}

}  // namespace

std::optional<std::string> decompose_refusal(const ir::Node& n) {
  const Family* f = family_of(n.op);
  if (!f) return std::nullopt;
  std::string why = f->refusal(n);
  if (why.empty()) why = "not rewritten (the decompose graph pass did not run)";
  return why + "; left for the host";
}

const PassInfo& decompose_pass() {
  static const PassInfo p{kPass,
                          "Einsum, Resize/Upsample, InstanceNormalization -> MatMul, Transpose, "
                          "Reshape, ReduceSum, Expand, trn.LayerNorm, Mul, Add",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
