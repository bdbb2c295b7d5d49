// insert_sync: semaphore waits and signals that order every dependency between
// ops on different queues, with as few waits as this scheme allows.
//
// Each queue's ops run in list order, one after the other, and complete in order,
// so a dependency within a queue needs nothing. Across queues: every queue that
// produces something another queue needs owns one progress semaphore; its ops that
// are waited on signal it (+1 at completion), so "semaphore of q >= v" means q's
// v-th signalling op, and everything before it on q, has completed.
//
// Vector clocks keep the waits few: for each op we know, per queue, the last op
// of that queue already known to have completed before it starts (inherited from
// the earlier ops of its own queue and from every op it waited for, transitively).
// A consumer waits only for producers not already known complete; per producer
// queue only for the latest one; and not at all for a producer that another of its
// waits already implies. Counts go to the stats: waits, the naive count (one wait
// per cross-queue dependency edge), signals and semaphores. Dependencies are the
// physical dependency graph's plus alloc_hbm's orderings between tensors that share
// HBM bytes (PassContext::hbm_reuse_deps).
#include <algorithm>
#include <map>

#include "compiler/passes/pass.h"
#include "compiler/tile/deps.h"

namespace trnsim::passes {

using tile::DepGraph;
using tile::DepMode;
using tile::Kernel;
using tile::KernelError;
using tile::Op;
using tile::op_label;
using tile::queue_of;
using tile::QueueId;
using tile::Tile;

namespace {

void run(Kernel& k, PassContext& ctx) {
  for (const Tile& tl : k.tiles)
    if (tl.addr < 0)
      throw KernelError("kernel '" + k.name + "': tile '" + tl.name +
                        "' has no address; run alloc_memory before insert_sync");
  const int n = static_cast<int>(k.ops.size());
  std::map<QueueId, int> qindex;
  std::vector<int> q(n), pos(n);
  std::vector<int> qlen;
  for (int i = 0; i < n; ++i) {
    Op& op = k.ops[i];
    if (op.engine_auto) throw KernelError(op_label(k, op) + ": run assign_engines first");
    if (op.engine == isa::Engine::dma && op.dma_engine < 0)
      throw KernelError(op_label(k, op) + ": run assign_dma_queues first");
    op.ins.waits.clear();
    op.ins.signals.clear();
    auto [it, fresh] = qindex.emplace(queue_of(op), static_cast<int>(qindex.size()));
    if (fresh) qlen.push_back(0);
    q[i] = it->second;
    pos[i] = qlen[q[i]]++;
  }
  const int nq = static_cast<int>(qindex.size());
  const DepGraph& g = ctx.deps.get(k, DepMode::physical);
  // alloc_hbm's orderings between tensors that share HBM bytes, by position.
  std::vector<std::vector<int>> reuse(n);
  if (!ctx.hbm_reuse_deps.empty()) {
    std::map<int, int> at;
    for (int i = 0; i < n; ++i) at[k.ops[i].id] = i;
    for (const auto& [from, to] : ctx.hbm_reuse_deps) {
      const auto f = at.find(from), t = at.find(to);
      if (f == at.end() || t == at.end())
        throw KernelError("kernel '" + k.name + "': alloc_hbm ordered op %" + std::to_string(from) +
                          " before op %" + std::to_string(to) +
                          ", which are gone; run alloc_hbm right before insert_sync");
      reuse[t->second].push_back(f->second);
    }
  }

  // vc[i][r]: position of the last op of queue r known complete when op i
  // completes (vc[i][q[i]] = pos[i]); -1 = none.
  std::vector<std::vector<int>> vc(n);
  std::vector<std::vector<int>> known(nq, std::vector<int>(nq, -1));
  std::vector<std::vector<int>> wait_on(n);  // ops each op waits for
  std::vector<bool> signals(n, false);
  size_t naive = 0;
  for (int i = 0; i < n; ++i) {
    const int qi = q[i];
    std::vector<int>& kn = known[qi];
    std::map<int, int> need;  // producer queue -> latest needed op (index)
    const auto depend = [&](int p) {
      if (p >= i)
        throw KernelError(op_label(k, k.ops[i]) +
                          ": depends on a later op; the list is not a "
                          "valid sequential order");
      if (q[p] == qi) return;
      ++naive;
      if (kn[q[p]] >= pos[p]) return;
      auto [it, fresh] = need.emplace(q[p], p);
      if (!fresh && pos[p] > pos[it->second]) it->second = p;
    };
    for (int p : g.preds[i]) depend(p);
    for (int p : reuse[i]) depend(p);
    std::vector<int> cand;
    for (const auto& [r, p] : need) cand.push_back(p);
    for (int c : cand) {
      bool implied = false;
      for (int o : cand)
        if (o != c && vc[o][q[c]] >= pos[c]) implied = true;
      if (implied) continue;
      wait_on[i].push_back(c);
      signals[c] = true;
      for (int r = 0; r < nq; ++r) kn[r] = std::max(kn[r], vc[c][r]);
    }
    vc[i] = kn;
    vc[i][qi] = pos[i];
  }

  // Semaphores: one per queue with signalling ops; values count them.
  std::vector<int> sem(nq, -1), count(nq, 0);
  std::vector<int> value(n, 0);
  int nsem = 0;
  for (int i = 0; i < n; ++i) {
    if (!signals[i]) continue;
    if (sem[q[i]] < 0) sem[q[i]] = nsem++;
    value[i] = ++count[q[i]];
  }
  if (static_cast<uint32_t>(nsem) > ctx.target.semaphores)
    throw KernelError("kernel '" + k.name + "' needs " + std::to_string(nsem) +
                      " semaphores (one per producing queue) but the target has " +
                      std::to_string(ctx.target.semaphores));
  size_t waits = 0, nsignals = 0;
  for (int i = 0; i < n; ++i) {
    isa::Instruction& in = k.ops[i].ins;
    std::sort(wait_on[i].begin(), wait_on[i].end(), [&](int a, int b) { return q[a] < q[b]; });
    for (int c : wait_on[i]) {
      in.waits.push_back({static_cast<uint16_t>(sem[q[c]]), static_cast<uint32_t>(value[c])});
      ++waits;
    }
    if (signals[i]) {
      in.signals.push_back({static_cast<uint16_t>(sem[q[i]]), 1, isa::SignalWhen::done});
      ++nsignals;
    }
  }
  k.semaphores = static_cast<uint32_t>(nsem);
  ctx.stats["insert_sync.waits"] = static_cast<double>(waits);
  ctx.stats["insert_sync.naive_waits"] = static_cast<double>(naive);
  ctx.stats["insert_sync.signals"] = static_cast<double>(nsignals);
  ctx.stats["insert_sync.semaphores"] = nsem;
  ctx.stats["insert_sync.dependencies"] = static_cast<double>(g.edges());
}

}  // namespace

const PassInfo& insert_sync_pass() {
  static const PassInfo p{"insert_sync",
                          "add the fewest semaphore waits (per-queue progress semaphores, "
                          "vector clocks) that order every cross-queue dependency",
                          run};
  return p;
}

}  // namespace trnsim::passes
