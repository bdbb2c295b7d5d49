#include "runtime/constants.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "models/common/ap_fast.h"

namespace trnsim::runtime {

HbmAccesses::HbmAccesses(const isa::Program& p) {
  // Every HBM operand of every instruction, not only DMA copies' sources: an
  // instruction that may reach HBM keeps what it might read.
  const auto add = [&](const isa::AccessPattern& ap) {
    if (ap.space != isa::MemSpace::hbm || ap.partition_count == 0) return;
    int64_t lo = 0, end = 0;
    models::fast::byte_range(ap, lo, end);
    if (end > lo) ranges_.emplace_back(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(end));
  };
  for (const auto& q : p.queues)
    for (const auto& in : q.instrs) {
      for (int i = 0; i < in.nsrc && i < int(in.src.size()); ++i) add(in.src[i]);
      add(in.dst);
      if (in.arg0.is_ap) add(in.arg0.ap);
      if (in.arg1.is_ap) add(in.arg1.ap);
      if (in.has_accum) add(in.accum);
    }
  std::sort(ranges_.begin(), ranges_.end());
  // Merge overlapping and touching ranges.
  size_t n = 0;
  for (const auto& r : ranges_) {
    if (n && r.first <= ranges_[n - 1].second)
      ranges_[n - 1].second = std::max(ranges_[n - 1].second, r.second);
    else
      ranges_[n++] = r;
  }
  ranges_.resize(n);
}

bool HbmAccesses::any(uint64_t begin, uint64_t end) const {
  if (end <= begin) return false;
  // The first range ending after `begin`: the ranges are disjoint and sorted, so
  // their ends are sorted too.
  const auto it = std::upper_bound(ranges_.begin(), ranges_.end(), begin,
                                   [](uint64_t b, const auto& r) { return b < r.second; });
  return it != ranges_.end() && it->first < end;
}

bool constant_is_read(const HbmAccesses& reads, const isa::TensorDecl& d) {
  return reads.any(d.hbm_offset, d.hbm_offset + d.bytes());
}

uint64_t drop_unread_constants(isa::Program& p) {
  const HbmAccesses reads(p);
  uint64_t freed = 0;
  for (const auto& d : p.tensors) {
    const auto c = p.constants.find(d.name);
    if (c == p.constants.end() || constant_is_read(reads, d)) continue;
    freed += c->second.size();
    p.constants.erase(c);
  }
  return freed;
}

isa::ConstantFilter constants_to_load(bool functional) {
  if (!functional) return [](const isa::Program&, const isa::TensorDecl&) { return false; };
  // One scan of the instructions per program, on the first question.
  auto scanned = std::make_shared<std::pair<const isa::Program*, std::optional<HbmAccesses>>>();
  return [scanned](const isa::Program& p, const isa::TensorDecl& d) {
    if (scanned->first != &p || !scanned->second) {
      scanned->second.emplace(p);
      scanned->first = &p;
    }
    return constant_is_read(*scanned->second, d);
  };
}

}  // namespace trnsim::runtime
