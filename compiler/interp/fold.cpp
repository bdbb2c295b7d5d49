#include "compiler/interp/fold.h"

#include "compiler/interp/interpreter.h"

namespace trnsim::interp {

bool foldable(const ir::Node& n) {
  if (n.op == "Shape" || n.op == "Size") return true;
  if (n.op == "trn.TileKernel") return false;  // tile IR runs on the device only
  for (const ir::Value* v : n.inputs)
    if (v && !v->has_data()) return false;
  return true;
}

int fold_constants(ir::Graph& g) {
  int folded = 0;
  // One pass in topological order suffices: a node's inputs are folded before it.
  for (ir::Node* n : g.nodes_snapshot()) {
    if (!foldable(*n)) continue;
    std::vector<const Tensor*> ins;
    for (const ir::Value* v : n->inputs) ins.push_back(v && v->has_data() ? &*v->data : nullptr);
    std::vector<Tensor> outs = eval_node(*n, ins);
    for (size_t k = 0; k < outs.size(); ++k) {
      ir::Value* o = n->outputs[k];
      const std::string name = o->name;
      g.rename_value(o, g.unique_name(name + ".unfolded"));
      ir::Value* c = g.add_constant(name, std::move(outs[k]));
      g.replace_all_uses(o, c);
    }
    g.erase_node(n);
    ++folded;
  }
  return folded;
}

}  // namespace trnsim::interp
