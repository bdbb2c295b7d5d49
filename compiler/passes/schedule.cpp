// schedule: orders each queue's ops to overlap DMA, tensor, vector, scalar and
// gpsimd work, by list scheduling on the target's cost estimates.
//
// Dependencies are by address (run alloc_memory first): RAW, WAR and WAW on SBUF,
// PSUM and HBM. Resources are the compute engines and the DMA engines. The DMA
// engines are equal, so a transfer runs on the one free first (this pass moves
// transfers between engines; their queue class, from assign_dma_queues, stays;
// a transfer the kernel pinned keeps its engine). An
// elementwise op whose engine the compiler chose (not pinned by the kernel) may
// likewise move to another engine that can run it, if that one can start it first:
// assign_engines' choice is the starting point, the schedule refines it.
//
// Non-delay list scheduling: the resource that can start something soonest starts
// the highest-priority op whose producers are done by then. Compute priority is the
// critical path (an op's estimated time plus the longest chain after it). DMA
// priority is a deadline: a first pass with unlimited DMA engines gives the time
// each transfer's first consumer wants to start, and transfers go earliest
// deadline first, so prefetches arrive in the order the engines consume them.
//
// The op list is then sorted by estimated start time, which keeps it a valid
// sequential order (producers start, and end, before their consumers) and makes
// each queue's ops, in list order, that queue's program. est_start/est_end are
// recorded; the estimated makespan goes to the stats.
#include <algorithm>
#include <numeric>
#include <queue>

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
using tile::Tile;

namespace {

constexpr int kPool = isa::kNumEngines;  // the DMA engines
constexpr int kResources = isa::kNumEngines + 1;

struct Choice {
  int res;
  double cost;
};

struct Result {
  std::vector<double> start, end;
  std::vector<int> res, machine;  // resource taken; DMA engine
};

// With `free_dma`, DMA ops start as soon as their producers are done.
// `fixed[i]` >= 0: DMA op i runs on that engine.
Result list_schedule(const DepGraph& g, const std::vector<std::vector<Choice>>& cands,
                     const std::vector<double>& prio, uint32_t dma_engines, bool free_dma,
                     const std::vector<int>& fixed) {
  const int n = static_cast<int>(cands.size());
  using ByTime = std::pair<double, int>;
  struct ByPrio {
    const std::vector<double>* p;
    bool operator()(int a, int b) const {
      if ((*p)[a] != (*p)[b]) return (*p)[a] < (*p)[b];
      return a > b;
    }
  };
  std::vector<std::priority_queue<ByTime, std::vector<ByTime>, std::greater<>>> pending(kResources);
  std::vector<std::priority_queue<int, std::vector<int>, ByPrio>> ready;
  for (int r = 0; r < kResources; ++r) ready.emplace_back(ByPrio{&prio});
  std::vector<double> free(kResources, 0.0), ready_at(n, 0.0);
  std::vector<double> dma_free(std::max<uint32_t>(1, dma_engines), 0.0);
  std::vector<bool> placed(n, false);
  Result out;
  out.start.assign(n, 0.0);
  out.end.assign(n, 0.0);
  out.res.assign(n, -1);
  out.machine.assign(n, -1);
  std::vector<int> missing(n);
  auto release = [&](int i) {
    for (const Choice& c : cands[i]) pending[c.res].push({ready_at[i], i});
  };
  for (int i = 0; i < n; ++i) {
    missing[i] = static_cast<int>(g.preds[i].size());
    if (!missing[i]) release(i);
  }
  int done = 0;
  while (done < n) {
    free[kPool] = *std::min_element(dma_free.begin(), dma_free.end());
    int best_r = -1;
    double best_t = 0;
    for (int r = 0; r < kResources; ++r) {
      while (!pending[r].empty() && placed[pending[r].top().second]) pending[r].pop();
      while (!ready[r].empty() && placed[ready[r].top()]) ready[r].pop();
      const bool unlimited = free_dma && r == kPool;
      double s;
      if (unlimited) {
        if (pending[r].empty()) continue;
        s = pending[r].top().first;
      } else if (!ready[r].empty()) {
        s = free[r];
      } else if (!pending[r].empty()) {
        s = std::max(free[r], pending[r].top().first);
      } else {
        continue;
      }
      if (best_r < 0 || s < best_t) best_r = r, best_t = s;
    }
    if (best_r < 0) throw KernelError("dependency cycle in schedule");
    auto& pq = pending[best_r];
    int i = -1;
    if (free_dma && best_r == kPool) {
      i = pq.top().second;
      pq.pop();
    } else {
      while (!pq.empty() && pq.top().first <= best_t) {
        if (!placed[pq.top().second]) ready[best_r].push(pq.top().second);
        pq.pop();
      }
      while (!ready[best_r].empty() && placed[ready[best_r].top()]) ready[best_r].pop();
      if (ready[best_r].empty()) continue;
      i = ready[best_r].top();
      ready[best_r].pop();
    }
    double cost = 0;
    for (const Choice& c : cands[i])
      if (c.res == best_r) cost = c.cost;
    placed[i] = true;
    ++done;
    out.res[i] = best_r;
    out.start[i] = std::max(best_t, ready_at[i]);
    out.end[i] = out.start[i] + cost;
    if (best_r == kPool) {
      if (!free_dma) {
        auto it = fixed[i] >= 0 ? dma_free.begin() + fixed[i]
                                : std::min_element(dma_free.begin(), dma_free.end());
        out.start[i] = std::max(out.start[i], *it);
        out.end[i] = out.start[i] + cost;
        out.machine[i] = static_cast<int>(it - dma_free.begin());
        *it = out.end[i];
      }
    } else {
      free[best_r] = std::max(free[best_r], out.end[i]);
    }
    for (int s : g.succs[i]) {
      ready_at[s] = std::max(ready_at[s], out.end[i]);
      if (--missing[s] == 0) release(s);
    }
  }
  return out;
}

void run(Kernel& k, PassContext& ctx) {
  const compiler::Target& t = ctx.target;
  for (const Tile& tl : k.tiles)
    if (tl.addr < 0)
      throw KernelError("kernel '" + k.name + "': tile '" + tl.name +
                        "' has no address; run alloc_memory before schedule");
  for (const Op& op : k.ops) {
    if (op.engine_auto) throw KernelError(op_label(k, op) + ": run assign_engines before schedule");
    if (op.engine == isa::Engine::dma && op.dma_engine < 0)
      throw KernelError(op_label(k, op) + ": run assign_dma_queues before schedule");
  }
  const int n = static_cast<int>(k.ops.size());
  const DepGraph& g = ctx.deps.get(k, DepMode::physical);

  // Where each op may run, at what cost. The assigned engine comes first.
  std::vector<std::vector<Choice>> cands(n);
  std::vector<double> prio(n);
  for (int i = 0; i < n; ++i) {
    const Op& op = k.ops[i];
    if (op.engine == isa::Engine::dma) {
      cands[i].push_back({kPool, op_cost_ns(t, op)});
      continue;
    }
    cands[i].push_back({static_cast<int>(op.engine), op_cost_ns(t, op)});
    if (op.pinned) continue;
    for (isa::Engine e : {isa::Engine::vector, isa::Engine::gpsimd, isa::Engine::scalar})
      if (e != op.engine && engine_can_run(op, e))
        cands[i].push_back({static_cast<int>(e), op_cost_ns(t, op, e)});
  }
  for (int i = n; i-- > 0;) {
    double tail = 0;
    for (int s : g.succs[i]) tail = std::max(tail, prio[s]);
    prio[i] = cands[i][0].cost + tail;
  }

  // Pass 1 (DMA unconstrained) gives the time each consumer wants its data; pass 2
  // (every resource constrained) orders the DMA engines by those deadlines.
  std::vector<int> fixed(n, -1);
  for (int i = 0; i < n; ++i)
    if (k.ops[i].engine == isa::Engine::dma && k.ops[i].dma_pinned) fixed[i] = k.ops[i].dma_engine;
  Result r = list_schedule(g, cands, prio, t.dma_engines, true, fixed);
  std::vector<double> key = prio;
  for (int i = 0; i < n; ++i) {
    if (k.ops[i].engine != isa::Engine::dma) continue;
    double deadline = r.start[i];
    bool first = true;
    for (int s : g.succs[i])
      if (first || r.start[s] < deadline) deadline = r.start[s], first = false;
    key[i] = -deadline;
  }
  r = list_schedule(g, cands, key, t.dma_engines, false, fixed);
  int moved = 0;
  for (int i = 0; i < n; ++i) {
    Op& op = k.ops[i];
    if (r.machine[i] >= 0) op.dma_engine = r.machine[i];
    if (r.res[i] != kPool && r.res[i] != static_cast<int>(op.engine)) {
      op.engine = static_cast<isa::Engine>(r.res[i]);
      ++moved;
    }
  }

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return r.start[a] < r.start[b]; });
  std::vector<Op> ops;
  ops.reserve(n);
  double makespan = 0, tensor_busy = 0;
  for (int i : order) {
    Op op = std::move(k.ops[i]);
    op.est_start = r.start[i];
    op.est_end = r.end[i];
    makespan = std::max(makespan, r.end[i]);
    if (op.engine == isa::Engine::tensor) tensor_busy += r.end[i] - r.start[i];
    ops.push_back(std::move(op));
  }
  k.ops = std::move(ops);
  ctx.stats["schedule.makespan_ns"] = makespan;
  ctx.stats["schedule.tensor_busy_ns"] = tensor_busy;
  ctx.stats["schedule.engine_changes"] = moved;
}

}  // namespace

const PassInfo& schedule_pass() {
  static const PassInfo p{"schedule",
                          "list-schedule every queue by critical path (DMA by deadline) on the "
                          "target's cost estimates, overlapping DMA and compute",
                          run};
  return p;
}

}  // namespace trnsim::passes
