// alloc_hbm: the HBM layout. Program inputs, outputs and constants get their own
// space for the whole program, in declaration order; scratch tensors (node outputs,
// spills) are placed by liveness, so a tensor reuses the bytes of tensors that are
// dead by the time it is first touched.
//
// Runs after schedule (the list order is then each queue's program order, and the
// ops carry estimated times) and before insert_sync. A scratch tensor lives from
// the first to the last op (list position) touching it. Two tensors may share
// bytes when one's last op comes before the other's first, in the list and in the
// schedule's estimates (the later one's first op starts no earlier than the earlier
// one's last op ends), so sharing adds no stall the schedule did not already have.
// Blocks are placed largest first at the lowest address free over their lifetime.
//
// Sharing makes write-after-read (and write-after-write) hazards between tensors
// the dependency graph keeps apart (it orders HBM accesses within one tensor), so
// the pass records them for insert_sync (PassContext::hbm_reuse_deps): for a tensor
// placed over bytes last used by others, each queue's last op touching one of those
// before each queue's first op touching it. Queues complete their ops in order, so
// these edges order every access of the old tensor before every access of the new.
//
// Constants and scratch tensors no op touches are removed from the kernel (a bf16
// matmul reads its own bf16 copy of an fp32 weight; keep_on_chip leaves the values it
// forwards in SBUF): they take neither HBM nor space in the program image.
#include <algorithm>
#include <map>
#include <set>

#include "compiler/passes/pass.h"

namespace trnsim::passes {

using tile::Kernel;
using tile::KernelError;
using tile::Op;
using tile::Operand;
using tile::operands;
using tile::queue_of;
using tile::QueueId;

namespace {

uint64_t round_up(uint64_t v, uint64_t a) {
  return a > 1 ? (v + a - 1) / a * a : v;
}

struct Life {
  int first = -1, last = -1;                 // list positions
  double start = -1, end = -1;               // estimated times (-1: unscheduled)
  std::map<QueueId, int> first_op, last_op;  // per queue, op positions
};

}  // namespace

std::vector<HbmBlock> place_hbm_blocks(std::vector<HbmBlock> blocks, uint64_t align) {
  auto before = [](const HbmBlock& a, const HbmBlock& b) {
    if (a.last >= b.first) return false;
    return a.end < 0 || b.start < 0 || a.end <= b.start;
  };
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return blocks[a].size != blocks[b].size ? blocks[a].size > blocks[b].size
                                            : blocks[a].first < blocks[b].first;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t oi : order) {
    HbmBlock& b = blocks[oi];
    busy.clear();
    for (size_t pi : placed) {
      const HbmBlock& o = blocks[pi];
      if (!before(o, b) && !before(b, o)) busy.push_back({o.addr, o.addr + o.size});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t a = 0;
    for (const auto& [lo, hi] : busy) {
      if (a + b.size <= lo) break;
      a = std::max(a, round_up(hi, align));
    }
    b.addr = a;
    placed.push_back(oi);
  }
  return blocks;
}

namespace {

void run(Kernel& k, PassContext& ctx) {
  for (const Op& op : k.ops)
    if (!op.ins.waits.empty() || !op.ins.signals.empty())
      throw KernelError(tile::op_label(k, op) +
                        " already has semaphores: run alloc_hbm before insert_sync");
  const int n = static_cast<int>(k.ops.size());
  std::vector<Life> life(k.tensors.size());
  for (int i = 0; i < n; ++i) {
    const Op& op = k.ops[i];
    const QueueId q = queue_of(op);
    for (const Operand& o : operands(op)) {
      if (o.ap->space != isa::MemSpace::hbm) continue;
      Life& l = life[o.ref];
      if (l.first < 0) {
        l.first = i;
        l.start = op.est_start;
      }
      l.last = i;
      l.start = std::min(l.start, op.est_start);
      l.end = std::max(l.end, op.est_end);
      l.first_op.emplace(q, i);
      l.last_op[q] = i;
    }
  }
  // Tensors no op touches leave the kernel (inputs and outputs stay: the runtime
  // binds them by name).
  std::vector<int> remap(k.tensors.size(), -1);
  std::vector<tile::Tensor> kept;
  std::vector<Life> kept_life;
  uint64_t dropped_constant = 0, dropped_scratch = 0;
  for (size_t t = 0; t < k.tensors.size(); ++t) {
    tile::Tensor& tt = k.tensors[t];
    const bool io = tt.role == isa::TensorRole::input || tt.role == isa::TensorRole::output;
    if (!io && life[t].first < 0) {
      (tt.role == isa::TensorRole::constant ? dropped_constant : dropped_scratch) += tt.bytes();
      continue;
    }
    remap[t] = static_cast<int>(kept.size());
    kept.push_back(std::move(tt));
    kept_life.push_back(std::move(life[t]));
  }
  k.tensors = std::move(kept);
  for (Op& op : k.ops)
    for (int s = 0; s < tile::kNumSlots; ++s) {
      const isa::AccessPattern* ap = tile::slot_ap(op.ins, static_cast<tile::Slot>(s));
      if (ap && ap->space == isa::MemSpace::hbm) op.ref[s] = remap[op.ref[s]];
    }

  const uint64_t align = std::max<uint64_t>(1, ctx.target.hbm_alignment);
  uint64_t at = 0;
  std::vector<HbmBlock> blocks;
  std::vector<size_t> block_tensor;
  uint64_t scratch_sum = 0;
  for (size_t t = 0; t < k.tensors.size(); ++t) {
    tile::Tensor& tt = k.tensors[t];
    if (tt.role == isa::TensorRole::scratch) {
      const Life& l = kept_life[t];
      blocks.push_back({round_up(tt.bytes(), align), l.first, l.last, l.start, l.end});
      block_tensor.push_back(t);
      scratch_sum += round_up(tt.bytes(), align);
      continue;
    }
    at = round_up(at, align);
    tt.hbm_offset = static_cast<int64_t>(at);
    at += tt.bytes();
  }
  const uint64_t base = round_up(at, align);
  blocks = place_hbm_blocks(std::move(blocks), align);
  uint64_t high = at;
  for (size_t b = 0; b < blocks.size(); ++b) {
    k.tensors[block_tensor[b]].hbm_offset = static_cast<int64_t>(base + blocks[b].addr);
    high = std::max(high, base + blocks[b].addr + k.tensors[block_tensor[b]].bytes());
  }

  // Ordering across shared bytes: sweep the scratch tensors by first use, keeping
  // for every byte range the tensor that used it last.
  std::vector<size_t> by_first(blocks.size());
  for (size_t i = 0; i < by_first.size(); ++i) by_first[i] = i;
  std::sort(by_first.begin(), by_first.end(),
            [&](size_t a, size_t b) { return blocks[a].first < blocks[b].first; });
  std::map<uint64_t, std::pair<uint64_t, int>> owner;  // lo -> (hi, block), disjoint
  std::set<std::pair<int, int>> edges;
  for (size_t bi : by_first) {
    const uint64_t lo = blocks[bi].addr, hi = lo + blocks[bi].size;
    auto it = owner.upper_bound(lo);
    if (it != owner.begin() && std::prev(it)->second.first > lo) --it;
    std::set<int> prev;
    std::vector<std::pair<uint64_t, std::pair<uint64_t, int>>> keep;  // trimmed ends
    while (it != owner.end() && it->first < hi) {
      const uint64_t olo = it->first, ohi = it->second.first;
      const int ob = it->second.second;
      prev.insert(ob);
      if (olo < lo) keep.push_back({olo, {lo, ob}});
      if (ohi > hi) keep.push_back({hi, {ohi, ob}});
      it = owner.erase(it);
    }
    for (const auto& e : keep) owner.insert(e);
    owner[lo] = {hi, static_cast<int>(bi)};
    const Life& now = kept_life[block_tensor[bi]];
    for (int ob : prev) {
      const Life& old = kept_life[block_tensor[ob]];
      if (old.last >= now.first)
        throw KernelError("kernel '" + k.name + "': alloc_hbm placed '" +
                          k.tensors[block_tensor[bi]].name + "' over '" +
                          k.tensors[block_tensor[ob]].name + "' while both are live");
      for (const auto& [q, from] : old.last_op)
        for (const auto& [r, to] : now.first_op)
          if (q != r) edges.insert({k.ops[from].id, k.ops[to].id});
    }
  }
  ctx.hbm_reuse_deps.assign(edges.begin(), edges.end());

  ctx.stats["alloc_hbm.bytes"] = static_cast<double>(high);
  ctx.stats["alloc_hbm.scratch_bytes"] = static_cast<double>(high > base ? high - base : 0);
  ctx.stats["alloc_hbm.scratch_unshared_bytes"] = static_cast<double>(scratch_sum);
  ctx.stats["alloc_hbm.dropped_constant_bytes"] = static_cast<double>(dropped_constant);
  ctx.stats["alloc_hbm.dropped_scratch_bytes"] = static_cast<double>(dropped_scratch);
  ctx.stats["alloc_hbm.reuse_deps"] = static_cast<double>(edges.size());
}

}  // namespace

const PassInfo& alloc_hbm_pass() {
  static const PassInfo p{"alloc_hbm",
                          "HBM addresses: inputs, outputs, constants apart; scratch tensors "
                          "reuse dead ones' bytes (drops tensors no op touches)",
                          run};
  return p;
}

}  // namespace trnsim::passes
