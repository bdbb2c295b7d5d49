// schedule: orders each queue's ops to overlap DMA, tensor, vector, scalar and
// gpsimd work, by list scheduling on the target's cost estimates.
//
// Dependencies are by address (run alloc_memory first): RAW, WAR and WAW on SBUF,
// PSUM and HBM. Resources are the compute engines and the DMA engines, which are
// equal: a transfer runs on the one that is free first, so this pass moves
// transfers between engines (their queue class, from assign_dma_queues, stays).
// Non-delay list scheduling: the resource that can start something soonest starts
// the highest-priority op whose producers are done by then. Compute priority is the
// critical path (an op's estimated time plus the longest chain after it). DMA
// priority is a deadline: a first pass with unlimited DMA engines gives the time
// each transfer's first consumer wants to start, and transfers go earliest
// deadline first, so prefetches arrive in the order the engines consume them. The op list is then sorted by estimated start
// time, which keeps it a valid sequential order (producers start, and end, before
// their consumers) and makes each queue's ops, in list order, that queue's program.
// est_start/est_end are recorded; the estimated makespan goes to the stats.
#include <algorithm>
#include <map>
#include <numeric>
#include <queue>

#include "compiler/passes/pass.h"
#include "compiler/tile/cost.h"
#include "compiler/tile/deps.h"

namespace trnsim::tile {

namespace {

// Non-delay list scheduling. Resources 0..kNumEngines-1 are the compute engines
// (one machine each); resource kNumEngines is the pool of `dma_engines` DMA
// engines (identical machines: an op goes to the one free first). Repeatedly takes
// the resource that can start something soonest and starts there the op with the
// highest `prio` among those whose producers are done by then. With `free_dma`
// DMA ops start as soon as their producers are done. `machine` gets the DMA engine.
void list_schedule(const DepGraph& g, const std::vector<double>& cost,
                   const std::vector<double>& prio, const std::vector<int>& res,
                   uint32_t dma_engines, bool free_dma, std::vector<double>& start,
                   std::vector<double>& end, std::vector<int>& machine) {
  const int n = static_cast<int>(cost.size());
  const int nres = isa::kNumEngines + 1, pool = isa::kNumEngines;
  using ByTime = std::pair<double, int>;
  struct ByPrio {
    const std::vector<double>* p;
    bool operator()(int a, int b) const {
      if ((*p)[a] != (*p)[b]) return (*p)[a] < (*p)[b];
      return a > b;
    }
  };
  std::vector<std::priority_queue<ByTime, std::vector<ByTime>, std::greater<>>> pending(nres);
  std::vector<std::priority_queue<int, std::vector<int>, ByPrio>> ready;
  for (int r = 0; r < nres; ++r) ready.emplace_back(ByPrio{&prio});
  std::vector<double> free(nres, 0.0), ready_at(n, 0.0);
  std::vector<double> dma_free(std::max<uint32_t>(1, dma_engines), 0.0);
  start.assign(n, 0.0);
  end.assign(n, 0.0);
  machine.assign(n, -1);
  std::vector<int> missing(n);
  for (int i = 0; i < n; ++i) {
    missing[i] = static_cast<int>(g.preds[i].size());
    if (!missing[i]) pending[res[i]].push({0.0, i});
  }
  for (int done = 0; done < n; ++done) {
    free[pool] = *std::min_element(dma_free.begin(), dma_free.end());
    int best_r = -1;
    double best_t = 0;
    for (int r = 0; r < nres; ++r) {
      const bool unlimited = free_dma && r == pool;
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
    int i;
    if (free_dma && best_r == pool) {
      i = pq.top().second;
      pq.pop();
    } else {
      while (!pq.empty() && pq.top().first <= best_t) {
        ready[best_r].push(pq.top().second);
        pq.pop();
      }
      i = ready[best_r].top();
      ready[best_r].pop();
    }
    start[i] = std::max(best_t, ready_at[i]);
    end[i] = start[i] + cost[i];
    if (best_r == pool) {
      if (!free_dma) {
        // The engine free first (lowest index among ties).
        auto it = std::min_element(dma_free.begin(), dma_free.end());
        machine[i] = static_cast<int>(it - dma_free.begin());
        *it = end[i];
      }
    } else {
      free[best_r] = std::max(free[best_r], end[i]);
    }
    for (int s : g.succs[i]) {
      ready_at[s] = std::max(ready_at[s], end[i]);
      if (--missing[s] == 0) pending[res[s]].push({ready_at[s], s});
    }
  }
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
  const DepGraph g = build_deps(k, DepMode::physical);

  // Resources: compute engines 0..kNumEngines-1, the DMA engines as one pool.
  std::vector<int> res(n);
  for (int i = 0; i < n; ++i) res[i] = static_cast<int>(k.ops[i].engine);

  std::vector<double> cost(n), prio(n);
  for (int i = 0; i < n; ++i) cost[i] = op_cost_ns(t, k.ops[i]);
  for (int i = n; i-- > 0;) {
    double tail = 0;
    for (int s : g.succs[i]) tail = std::max(tail, prio[s]);
    prio[i] = cost[i] + tail;
  }

  // Pass 1 (DMA unconstrained: every transfer starts when its producers are done)
  // gives the time each consumer wants its data; pass 2 (every resource
  // constrained) orders DMA engines by those deadlines, earliest first, and
  // compute engines by critical path.
  std::vector<double> start, end;
  std::vector<int> machine;
  list_schedule(g, cost, prio, res, t.dma_engines, true, start, end, machine);
  std::vector<double> key = prio;
  for (int i = 0; i < n; ++i) {
    if (k.ops[i].engine != isa::Engine::dma) continue;
    double deadline = start[i];
    bool first = true;
    for (int s : g.succs[i])
      if (first || start[s] < deadline) deadline = start[s], first = false;
    key[i] = -deadline;
  }
  list_schedule(g, cost, key, res, t.dma_engines, false, start, end, machine);
  for (int i = 0; i < n; ++i)
    if (machine[i] >= 0) k.ops[i].dma_engine = machine[i];

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return start[a] < start[b]; });
  std::vector<Op> ops;
  ops.reserve(n);
  double makespan = 0;
  for (int i : order) {
    Op op = std::move(k.ops[i]);
    op.est_start = start[i];
    op.est_end = end[i];
    makespan = std::max(makespan, end[i]);
    ops.push_back(std::move(op));
  }
  k.ops = std::move(ops);
  ctx.stats["schedule.makespan_ns"] = makespan;
  double tensor_busy = 0;
  for (int i = 0; i < n; ++i)
    if (k.ops[i].engine == isa::Engine::tensor)
      tensor_busy += k.ops[i].est_end - k.ops[i].est_start;
  ctx.stats["schedule.tensor_busy_ns"] = tensor_busy;
}

}  // namespace

const PassInfo& schedule_pass() {
  static const PassInfo p{"schedule",
                          "list-schedule every queue by critical path on the target's cost "
                          "estimates, overlapping DMA and compute",
                          run};
  return p;
}

}  // namespace trnsim::tile
