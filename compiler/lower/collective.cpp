// trn.AllReduce: one all_reduce instruction on the sync queue, from the input's
// HBM tensor into the output's (docs/isa.md, Collectives).
#include "compiler/lower/context.h"

namespace trnsim::lower {

void lower_collective(Ctx& c, const ir::Node& n) {
  std::vector<uint32_t> group;
  for (int64_t r : n.attr_ints("group")) {
    if (r < 0 || (!group.empty() && static_cast<uint32_t>(r) <= group.back()))
      unsupported(n, "group ranks must be ascending, distinct and non-negative");
    group.push_back(static_cast<uint32_t>(r));
  }
  const kernels::HbmView& src = c.view(n.input(0));
  const kernels::HbmView& dst = c.view(n.outputs[0]);
  c.b.collective(isa::Opcode::all_reduce, dst, src, group);
}

}  // namespace trnsim::lower
