// assign_dma_queues: gives every dma_copy a DMA engine and a queue.
//
// Queue by kind: loads (into SBUF) on queue 0, stores (to HBM) on queue 1, other
// copies on queue 2 (modulo target.dma_queue_classes), so a store that waits for
// compute never holds up a prefetch behind it (a queue is in order; an engine
// round-robins between queues whose head is ready). Engine by estimated finish:
// the ops are replayed in list order on a simple timeline (dependencies by address
// once memory is allocated, compute engines busy for their estimated cost) and each
// transfer goes to the DMA engine where it would finish first, which spreads
// concurrent transfers over all target.dma_engines engines. A transfer the kernel
// pinned (`dma.E.Q!` in the text form) keeps its engine and queue.
#include <algorithm>
#include <array>

#include "compiler/passes/pass.h"
#include "compiler/tile/cost.h"
#include "compiler/tile/deps.h"

namespace trnsim::passes {

using tile::DepGraph;
using tile::DepMode;
using tile::Kernel;
using tile::KernelError;
using tile::Op;
using tile::op_cost_ns;
using tile::Tile;

namespace {

void run(Kernel& k, PassContext& ctx) {
  const compiler::Target& t = ctx.target;
  if (t.dma_engines < 1 || t.dma_queues_per_engine < 1)
    throw KernelError("target '" + t.name + "' has no DMA engines or queues");
  bool allocated = true;
  for (const Tile& tl : k.tiles) allocated = allocated && tl.addr >= 0;
  const DepGraph& g = ctx.deps.get(k, allocated ? DepMode::physical : DepMode::logical);
  const uint32_t classes =
      std::max<uint32_t>(1, std::min(t.dma_queue_classes, t.dma_queues_per_engine));
  std::array<double, isa::kNumEngines> free{};
  std::vector<double> dma_free(t.dma_engines, 0.0), end(k.ops.size(), 0.0);
  std::vector<int> per_engine(t.dma_engines, 0);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    Op& op = k.ops[i];
    double ready = 0;
    for (int p : g.preds[i]) ready = std::max(ready, end[p]);
    const double cost = op_cost_ns(t, op);
    if (op.engine != isa::Engine::dma) {
      const int e = static_cast<int>(op.engine);
      end[i] = std::max(ready, free[e]) + cost;
      free[e] = end[i];
      continue;
    }
    if (op.dma_pinned) {  // placed by the kernel (`dma.E.Q!`)
      if (op.dma_engine < 0 || uint32_t(op.dma_engine) >= t.dma_engines || op.dma_queue < 0 ||
          uint32_t(op.dma_queue) >= t.dma_queues_per_engine)
        throw KernelError(tile::op_label(k, op) + ": pinned to DMA engine " +
                          std::to_string(op.dma_engine) + " queue " + std::to_string(op.dma_queue) +
                          ", but target '" + t.name + "' has " + std::to_string(t.dma_engines) +
                          " engines of " + std::to_string(t.dma_queues_per_engine) + " queues");
      const uint32_t e = uint32_t(op.dma_engine);
      end[i] = std::max(ready, dma_free[e]) + cost;
      dma_free[e] = end[i];
      ++per_engine[e];
      continue;
    }
    uint32_t best = 0;
    for (uint32_t e = 1; e < t.dma_engines; ++e)
      if (std::max(ready, dma_free[e]) < std::max(ready, dma_free[best]) - 1e-9) best = e;
    const bool load =
        op.ins.dst.space == isa::MemSpace::sbuf && op.ins.src[0].space == isa::MemSpace::hbm;
    const bool store =
        op.ins.dst.space == isa::MemSpace::hbm && op.ins.src[0].space == isa::MemSpace::sbuf;
    op.dma_engine = static_cast<int>(best);
    op.dma_queue = static_cast<int>((load ? 0u : store ? 1u : 2u) % classes);
    end[i] = std::max(ready, dma_free[best]) + cost;
    dma_free[best] = end[i];
    ++per_engine[best];
  }
  int used = 0;
  for (int n : per_engine) used += n > 0;
  ctx.stats["assign_dma_queues.engines_used"] = used;
}

}  // namespace

const PassInfo& assign_dma_queues_pass() {
  static const PassInfo p{"assign_dma_queues",
                          "put each DMA on the engine where it finishes first; loads, stores "
                          "and other copies on separate queues",
                          run};
  return p;
}

}  // namespace trnsim::passes
