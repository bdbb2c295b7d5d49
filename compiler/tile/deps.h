// Dependencies between the ops of a kernel: op b depends on an earlier op a when
// they touch overlapping memory and one of them writes (RAW, WAR, WAW).
//
// Logical mode (before alloc_memory): on-chip operands overlap only within the same
// tile. Physical mode (after it): by address, so tiles that share a pool buffer (or
// pools that share memory over time) are ordered too. HBM operands overlap within
// the same tensor. Regions are index boxes derived from the access pattern and the
// tile/tensor shape (exact for slices, transposes and broadcasts; strides inside a
// box are ignored, which is conservative), or byte ranges when no box fits.
#pragma once

#include <vector>

#include "compiler/tile/ir.h"

namespace trnsim::tile {

enum class DepMode { logical, physical };

struct DepGraph {
  // By position in Kernel::ops. Not transitively reduced, but pruned: once a
  // later write overwrites an access within a bucket of memory (32 partitions x
  // 1 KiB SBUF / 2 KiB PSUM; in HBM, entirely), later ops that conflict with it
  // there are ordered after it through that write, so no edge is added. HBM
  // accesses are filed in bands of their tensor (>= 128 rows, <= 1024 bands) so
  // that thousands of disjoint pieces of one tensor are not all tested pairwise.
  std::vector<std::vector<int>> preds, succs;
  size_t edges() const;
};

DepGraph build_deps(const Kernel& k, DepMode mode);

// build_deps, remembered: the graph last built is returned again while the kernel's
// memory accesses (every op's operands, the tiles' shapes and addresses, the tensors'
// shapes) and the mode are unchanged, which a 64-bit fingerprint of them checks. Passes
// that only pick engines or queues (assign_dma_queues before schedule) share one graph.
class DepCache {
 public:
  const DepGraph& get(const Kernel& k, DepMode mode);
  int builds() const { return builds_; }
  int reuses() const { return reuses_; }

 private:
  bool valid_ = false;
  DepMode mode_ = DepMode::logical;
  uint64_t key_ = 0;
  DepGraph g_;
  int builds_ = 0, reuses_ = 0;
};

// True when ops a and b (either order) touch overlapping memory and one writes.
bool ops_conflict(const Kernel& k, const Op& a, const Op& b, DepMode mode);

}  // namespace trnsim::tile
