// trn.TileKernel: the node's own tile IR, spliced into the program. Its input and
// output tensors become the HBM tensors of the node's values (same bytes: the
// kernel was traced for these shapes and types), so nothing is copied; its scratch
// tensors, pools and tiles are added under the node's name.
#include "compiler/ir/tile_kernel.h"
#include "compiler/lower/context.h"
#include "compiler/lower/lower.h"

namespace trnsim::lower {

void lower_tile_kernel(Ctx& c, const ir::Node& n) {
  ir::TileKernelOp op;
  try {
    op = ir::tile_kernel_of(n);
  } catch (const ir::CompileError& e) {
    throw ir::CompileError("lowering: " + n.label() + ": " + e.what());
  }
  // Every value's tensor is whole (lower_graph gives each value its own tensor or
  // a reshaped alias of one); the types must agree too: integers and bools are
  // fp32 on the device, so a kernel traced for int32 tensors cannot take them.
  std::map<int, kernels::HbmView> bind;
  auto add = [&](int tensor, const ir::Value* v) {
    const kernels::HbmView& view = c.view(v);
    const tile::Tensor& mine = c.b.kernel().tensors.at(view.tensor());
    const tile::Tensor& kt = op.kernel->tensors.at(tensor);
    if (mine.dtype != kt.dtype)
      throw ir::CompileError("lowering: " + n.label() + ": value '" + v->name + "' (" +
                             v->type.str() + ") is " + std::string(isa::dtype_name(mine.dtype)) +
                             " on the device; kernel tensor '" + kt.name + "' is " +
                             std::string(isa::dtype_name(kt.dtype)));
    if (!view.whole())
      throw ir::CompileError("lowering: " + n.label() + ": internal: value '" + v->name +
                             "' is a part of tensor '" + mine.name + "'");
    bind[tensor] = view;
  };
  for (size_t i = 0; i < n.inputs.size(); ++i) add(op.inputs[i], n.inputs[i]);
  for (size_t i = 0; i < n.outputs.size(); ++i) add(op.outputs[i], n.outputs[i]);
  std::set<std::string> used;
  for (const tile::Tensor& t : c.b.kernel().tensors) used.insert(t.name);
  for (const tile::Pool& p : c.b.kernel().pools) used.insert(p.name);
  const std::string who = n.name.empty() && !n.outputs.empty() ? n.outputs[0]->name : n.name;
  const std::string prefix = tensor_name(who.empty() ? op.kernel->name : who, used) + ".";
  try {
    c.b.splice(*op.kernel, bind, prefix, n.label(), n.attr_string("tir"));
  } catch (const tile::KernelError& e) {
    throw ir::CompileError("lowering: " + n.label() + ": " + e.what());
  }
}

}  // namespace trnsim::lower
