#include "runtime/symmetry.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace trnsim::runtime {

namespace {

// What a collective's time depends on: its size and how its ranks sit on chips.
std::tuple<size_t, uint32_t, uint32_t> signature(const std::vector<uint32_t>& g, uint32_t cpc) {
  std::map<uint32_t, uint32_t> per_chip;
  for (uint32_t r : g) ++per_chip[r / cpc];
  uint32_t lo = UINT32_MAX, hi = 0;
  for (const auto& [chip, n] : per_chip) lo = std::min(lo, n), hi = std::max(hi, n);
  return {g.size(), lo, hi};
}

std::string at(uint32_t r, const isa::Queue& q, size_t i) {
  return "rank " + std::to_string(r) + " " + q.label() + " instruction " + std::to_string(i);
}

// Empty when rank r (program p) behaves as its representative q (program rep).
std::string differs(uint32_t r, const isa::Program& p, uint32_t q, const isa::Program& rep,
                    uint32_t cpc) {
  if (&p == &rep) return "";  // groups are the same lists, so are their signatures
  const std::string other =
      "rank " + std::to_string(r) + " runs another program than rank " + std::to_string(q);
  if (p.num_semaphores != rep.num_semaphores) return other + " (semaphores)";
  if (p.tensors.size() != rep.tensors.size()) return other + " (tensor count)";
  for (size_t k = 0; k < p.tensors.size(); ++k) {  // names do not time (shards differ)
    const isa::TensorDecl &a = p.tensors[k], &b = rep.tensors[k];
    if (a.shape != b.shape || a.dtype != b.dtype || a.role != b.role ||
        a.hbm_offset != b.hbm_offset)
      return other + " (tensor '" + a.name + "' vs '" + b.name + "')";
  }
  if (p.queues.size() != rep.queues.size()) return other + " (queues)";
  for (size_t k = 0; k < p.queues.size(); ++k) {
    const isa::Queue &a = p.queues[k], &b = rep.queues[k];
    if (a.engine != b.engine || a.dma_engine != b.dma_engine || a.dma_queue != b.dma_queue ||
        a.instrs.size() != b.instrs.size())
      return other + " (queue " + a.label() + ")";
    for (size_t i = 0; i < a.instrs.size(); ++i) {
      const isa::Instruction &x = a.instrs[i], &y = b.instrs[i];
      if (x.group == y.group) {
        if (!(x == y)) return at(r, a, i) + " differs from rank " + std::to_string(q) + "'s";
        continue;
      }
      if (signature(x.group, cpc) != signature(y.group, cpc))
        return at(r, a, i) + ": its group's size or placement differs from rank " +
               std::to_string(q) + "'s";
      isa::Instruction z = x;
      z.group = y.group;
      if (!(z == y)) return at(r, a, i) + " differs from rank " + std::to_string(q) + "'s";
    }
  }
  return "";
}

}  // namespace

SymmetryPlan plan_symmetry(const std::vector<const isa::Program*>& progs, uint32_t chip_cores) {
  SymmetryPlan plan;
  plan.ranks = plan.simulated = static_cast<uint32_t>(progs.size());
  const uint32_t C = std::max<uint32_t>(1, chip_cores);
  if (plan.ranks <= C) {
    plan.why_not = "the ranks fit one chip";
    return plan;
  }
  if (plan.ranks % C != 0) {
    plan.why_not = "the last chip is not full";
    return plan;
  }
  for (uint32_t r = C; r < plan.ranks; ++r)
    if (std::string d = differs(r, *progs[r], r % C, *progs[r % C], C); !d.empty()) {
      plan.why_not = d;
      return plan;
    }
  // A representative's group must hold its members' representatives. A partial
  // permute (a rank that sends nothing: pipeline stages) loads its ranks' DMA and
  // HBM unequally, so one rank cannot stand for another.
  for (uint32_t q = 0; q < C; ++q)
    for (const isa::Queue& qu : progs[q]->queues)
      for (size_t i = 0; i < qu.instrs.size(); ++i) {
        const std::vector<uint32_t>& peers = qu.instrs[i].peers;
        if (std::find(peers.begin(), peers.end(), isa::kNoPeer) != peers.end()) {
          plan.why_not = at(q, qu, i) + ": a partial permute, whose ranks do not all send";
          return plan;
        }
        for (uint32_t m : qu.instrs[i].group)
          if (!std::binary_search(qu.instrs[i].group.begin(), qu.instrs[i].group.end(), m % C)) {
            plan.why_not = at(q, qu, i) + ": its group holds rank " + std::to_string(m) +
                           " but not rank " + std::to_string(m % C) + " that stands for it";
            return plan;
          }
      }
  plan.simulated = C;
  return plan;
}

std::string describe_symmetry(const SymmetryPlan& p) {
  if (!p.folded()) return "symmetry: not folded (" + p.why_not + "); every rank simulated\n";
  return "symmetry: " + std::to_string(p.ranks) + " ranks in " + std::to_string(p.simulated) +
         " classes (rank r as rank r % " + std::to_string(p.simulated) + "); simulated ranks 0-" +
         std::to_string(p.simulated - 1) +
         ", the others' traffic in each collective's link model (--no-fold simulates all)\n";
}

}  // namespace trnsim::runtime
