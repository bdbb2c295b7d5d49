// trn.TileKernel: the node's own tile IR, spliced into the program. Its input and
// output tensors become the HBM tensors of the node's values (same bytes: the
// kernel was traced for these shapes and types), so no copy is made; its scratch
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
  std::map<int, kernels::HbmView> bind;
  auto add = [&](int tensor, const ir::Value* v) {
    const kernels::HbmView& view = c.view(v);
    if (!view.whole() ||
        c.b.kernel().tensors.at(view.tensor()).dtype != op.kernel->tensors.at(tensor).dtype) {
      // The value's tensor holds other bytes (a view into a larger tensor) or
      // another type (integers are fp32 on the device): a copy of its own.
      std::set<std::string> used;
      for (const tile::Tensor& t : c.b.kernel().tensors) used.insert(t.name);
      const tile::Tensor& kt = op.kernel->tensors.at(tensor);
      if (c.b.kernel().tensors.at(view.tensor()).dtype != kt.dtype)
        throw ir::CompileError(
            "lowering: " + n.label() + ": value '" + v->name + "' is " + v->type.str() +
            " on the device (" +
            std::string(isa::dtype_name(c.b.kernel().tensors.at(view.tensor()).dtype)) +
            "), kernel tensor '" + kt.name + "' is " + std::string(isa::dtype_name(kt.dtype)));
      bind[tensor] = c.b.scratch(tensor_name(v->name + ".kernel", used), kt.shape, kt.dtype);
      return false;
    }
    bind[tensor] = view;
    return true;
  };
  std::vector<std::pair<kernels::HbmView, kernels::HbmView>> copy_in, copy_out;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!add(op.inputs[i], n.inputs[i]))
      copy_in.push_back({bind[op.inputs[i]], c.view(n.inputs[i])});
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (!add(op.outputs[i], n.outputs[i]))
      copy_out.push_back({c.view(n.outputs[i]), bind[op.outputs[i]]});
  for (auto& [dst, src] : copy_in) c.b.dma(dst, src.reshape(dst.shape()));
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
  for (auto& [dst, src] : copy_out) c.b.dma(dst, src.reshape(dst.shape()));
}

}  // namespace trnsim::lower
