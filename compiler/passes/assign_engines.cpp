// assign_engines: picks the engine of every op built with engine "auto"
// (tensor_tensor, tensor_scalar, tensor_copy, memset, tensor_reduce, select) among
// vector, gpsimd and scalar, by what each can do (gpsimd cannot touch PSUM; the
// opcode table) and by estimated finish time: the ops are replayed in list order
// on a simple timeline (each op starts when its logical producers are done and its
// engine is free), and an auto op goes to the engine where it would finish first.
// That balances the engines and keeps dependent chains where they run soonest.
#include <algorithm>
#include <array>

#include "compiler/passes/pass.h"
#include "compiler/tile/cost.h"
#include "compiler/tile/deps.h"

namespace trnsim::passes {

using tile::DepGraph;
using tile::DepMode;
using tile::engine_can_run;
using tile::Kernel;
using tile::KernelError;
using tile::Op;
using tile::op_cost_ns;
using tile::op_label;

namespace {

void run(Kernel& k, PassContext& ctx) {
  const compiler::Target& t = ctx.target;
  const DepGraph& g = ctx.deps.get(k, DepMode::logical);
  std::array<double, isa::kNumEngines> free{};
  std::vector<double> dma_free(std::max<uint32_t>(1, t.dma_engines), 0.0);
  std::vector<double> end(k.ops.size(), 0.0);
  int assigned = 0;
  std::array<int, isa::kNumEngines> count{};
  for (size_t i = 0; i < k.ops.size(); ++i) {
    Op& op = k.ops[i];
    double ready = 0;
    for (int p : g.preds[i]) ready = std::max(ready, end[p]);
    if (op.engine_auto) {
      double best = 0;
      int pick = -1;
      for (isa::Engine e : {isa::Engine::vector, isa::Engine::gpsimd, isa::Engine::scalar}) {
        if (!engine_can_run(op, e)) continue;
        const double fin = std::max(ready, free[static_cast<int>(e)]) + op_cost_ns(t, op, e);
        if (pick < 0 || fin < best - 1e-9) best = fin, pick = static_cast<int>(e);
      }
      if (pick < 0)
        throw KernelError(op_label(k, op) + ": no engine can run it (gpsimd cannot reach PSUM)");
      op.engine = static_cast<isa::Engine>(pick);
      op.engine_auto = false;
      ++assigned;
      ++count[pick];
    }
    if (op.engine == isa::Engine::dma) {
      auto it = std::min_element(dma_free.begin(), dma_free.end());
      end[i] = std::max(ready, *it) + op_cost_ns(t, op);
      *it = end[i];
    } else {
      const int e = static_cast<int>(op.engine);
      end[i] = std::max(ready, free[e]) + op_cost_ns(t, op);
      free[e] = end[i];
    }
  }
  ctx.stats["assign_engines.assigned"] += assigned;
  for (isa::Engine e : {isa::Engine::vector, isa::Engine::gpsimd, isa::Engine::scalar})
    ctx.stats["assign_engines." + std::string(isa::engine_name(e))] += count[static_cast<int>(e)];
}

}  // namespace

const PassInfo& assign_engines_pass() {
  static const PassInfo p{"assign_engines",
                          "pick vector/gpsimd/scalar for auto ops by capability and estimated "
                          "finish time",
                          run};
  return p;
}

}  // namespace trnsim::passes
