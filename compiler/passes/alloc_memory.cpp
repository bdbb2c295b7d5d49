// alloc_memory: places pools and tiles in SBUF and PSUM by liveness.
//
// A pool is one block of `bufs` equal buffers (buffer = its largest tile, rounded to
// the alignment); its i-th tile lives in buffer i % bufs, so tiles i and i + bufs
// share memory and the scheduler orders them by address (write-after-read). A pool
// is live from the first to the last op (in list order) that touches one of its
// tiles; pools whose lifetimes do not overlap may share memory. Blocks are placed
// largest first at the lowest address free over their lifetime.
//
// SBUF buffers are aligned to target.sbuf_alignment. PSUM buffers up to a bank are
// rounded to a power of two and aligned to their size, larger ones to whole banks,
// so a matmul output that fits a bank never straddles two; matmul outputs that do
// are reported. A kernel that needs more memory than the target has is an error
// that names the peak and the pools live there (intermediates that do not fit
// were already left in HBM by keep_on_chip; what is left is working buffers).
#include <algorithm>
#include <bit>
#include <map>

#include "compiler/passes/pass.h"

namespace trnsim::passes {

using tile::kDst;
using tile::Kernel;
using tile::KernelError;
using tile::Op;
using tile::op_label;
using tile::Operand;
using tile::operands;
using tile::Pool;
using tile::Tile;

namespace {

uint64_t round_up(uint64_t v, uint64_t a) {
  return a ? (v + a - 1) / a * a : v;
}

struct Block {
  int pool;
  uint64_t size, align;
  int first = -1, last = -1;  // op positions
  int64_t addr = -1;
};

// Places the pools of `space`; returns the high-water mark [bytes per partition].
// With `commit` (k's own pools), write pool addresses and sizes there and throw
// when the pools do not fit; without, only measure (keep_on_chip's trials).
uint64_t place(const Kernel& k, PassContext& ctx, isa::MemSpace space,
               const std::vector<int>& users_first, const std::vector<int>& users_last,
               std::vector<Pool>* commit) {
  const compiler::Target& t = ctx.target;
  const bool psum = space == isa::MemSpace::psum;
  const uint64_t cap = psum ? t.psum_partition_bytes : t.sbuf_partition_bytes;
  std::vector<Block> blocks;
  // Each pool's largest tile, in one pass over the tiles (keep_on_chip sizes kernels
  // with thousands of pools and tiles many times over).
  std::vector<uint64_t> largest(k.pools.size(), 0);
  for (const Tile& tl : k.tiles)
    if (tl.pool >= 0 && static_cast<size_t>(tl.pool) < largest.size())
      largest[tl.pool] = std::max(largest[tl.pool], tl.partition_bytes());
  for (size_t p = 0; p < k.pools.size(); ++p) {
    const Pool& pool = k.pools[p];
    if (pool.space != space) continue;
    uint64_t buf = largest[p];
    uint64_t align = t.sbuf_alignment;
    if (psum) {
      if (buf <= t.psum_bank_bytes) {
        buf = std::max<uint64_t>(std::bit_ceil(std::max<uint64_t>(buf, 1)), 4);
        align = buf;
      } else {
        buf = round_up(buf, t.psum_bank_bytes);
        align = t.psum_bank_bytes;
      }
    } else {
      buf = round_up(std::max<uint64_t>(buf, 1), t.sbuf_alignment);
    }
    if (commit) (*commit)[p].buf_bytes = buf;
    Block b{static_cast<int>(p), buf * pool.bufs, align, users_first[p], users_last[p]};
    if (b.first < 0) {  // never used: no memory
      if (commit) (*commit)[p].addr = 0;
      continue;
    }
    blocks.push_back(b);
  }
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return blocks[a].size != blocks[b].size ? blocks[a].size > blocks[b].size
                                            : blocks[a].first < blocks[b].first;
  });
  auto live_together = [](const Block& a, const Block& b) {
    return a.first <= b.last && b.first <= a.last;
  };
  uint64_t high = 0;
  bool fits = true;
  for (size_t oi : order) {
    Block& b = blocks[oi];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Block& o : blocks)
      if (o.addr >= 0 && &o != &b && live_together(o, b))
        busy.push_back({static_cast<uint64_t>(o.addr), static_cast<uint64_t>(o.addr) + o.size});
    std::sort(busy.begin(), busy.end());
    uint64_t a = 0;
    for (const auto& [lo, hi] : busy) {
      if (a + b.size <= lo) break;
      a = std::max(a, round_up(hi, b.align));
    }
    b.addr = static_cast<int64_t>(a);
    high = std::max(high, a + b.size);
    if (a + b.size > cap) fits = false;
  }
  if (!commit) return high;
  const std::string sp(isa::mem_space_name(space));
  if (!fits) {
    // The peak of live bytes, for the message.
    uint64_t peak = 0;
    int at = 0;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      uint64_t live = 0;
      for (const Block& b : blocks)
        if (b.first <= static_cast<int>(i) && static_cast<int>(i) <= b.last) live += b.size;
      if (live > peak) peak = live, at = static_cast<int>(i);
    }
    std::string pools;
    for (const Block& b : blocks)
      if (b.first <= at && at <= b.last)
        pools += (pools.empty() ? "" : ", ") + k.pools[b.pool].name + " " +
                 std::to_string(k.pools[b.pool].bufs) + " x " +
                 std::to_string(k.pools[b.pool].buf_bytes) + " B";
    // A spliced user kernel's op says which node and kernel line it came from.
    const auto o = k.op_origin.find(k.ops[at].id);
    const std::string origin = o == k.op_origin.end() ? "" : " (from " + o->second + ")";
    std::string why = peak > cap ? "needs " + std::to_string(peak) + " bytes per partition"
                                 : "needs " + std::to_string(high) +
                                       " bytes per partition after placement (peak live " +
                                       std::to_string(peak) + ")";
    throw KernelError("kernel '" + k.name + "' " + why + " of " + sp + " but the target (" +
                      t.name + ") has " + std::to_string(cap) + "; at op %" +
                      std::to_string(k.ops[at].id) + origin + " the live pools are: " + pools +
                      ". These are the kernel's own working buffers (keep_on_chip already "
                      "left every intermediate it could not fit in HBM): use fewer buffers, "
                      "smaller tiles, or split the kernel");
  }
  for (const Block& b : blocks) (*commit)[b.pool].addr = b.addr;
  ctx.stats["alloc_memory." + sp + "_bytes"] = static_cast<double>(high);
  return high;
}

// First and last op (list positions) touching each pool; -1 when none does.
void pool_lifetimes(const Kernel& k, std::vector<int>& first, std::vector<int>& last) {
  first.assign(k.pools.size(), -1);
  last.assign(k.pools.size(), -1);
  for (size_t i = 0; i < k.ops.size(); ++i)
    for (const Operand& o : operands(k.ops[i])) {
      if (o.ap->space == isa::MemSpace::hbm) continue;
      const int p = k.tiles[o.ref].pool;
      if (first[p] < 0) first[p] = static_cast<int>(i);
      last[p] = static_cast<int>(i);
    }
}

// Weight prefetch across nodes: an SBUF pool written only by loads of constants (a
// matmul's weights and bias rows) is made live from an earlier node's start (below),
// so no op in between shares its memory and schedule (which orders by address) is
// free to issue its loads while those nodes compute: the next matmul's weights
// stream in under the current one's work. Only as many pools as SBUF still holds,
// in list order (the nearest uses first), are extended.
int extend_constant_pools(const Kernel& k, PassContext& ctx, std::vector<int>& first,
                          const std::vector<int>& last) {
  const size_t np = k.pools.size();
  std::vector<char> only_const(np, 1), written(np, 0);
  std::map<int, int> node_start;  // node -> its first op
  for (size_t i = 0; i < k.ops.size(); ++i) {
    const Op& op = k.ops[i];
    if (op.node >= 0) node_start.emplace(op.node, static_cast<int>(i));
    bool const_load = false;
    if (op.ins.op == isa::Opcode::dma_copy)
      for (const Operand& o : operands(op))
        if (o.read && o.ap->space == isa::MemSpace::hbm && o.ref >= 0 &&
            k.tensors[o.ref].role == isa::TensorRole::constant)
          const_load = true;
    for (const Operand& o : operands(op)) {
      if (!o.write || o.ap->space == isa::MemSpace::hbm) continue;
      const int p = k.tiles[o.ref].pool;
      written[p] = 1;
      if (!const_load) only_const[p] = 0;
    }
  }
  auto filled = [&](size_t p) {
    return k.pools[p].space == isa::MemSpace::sbuf && written[p] && only_const[p] &&
           first[p] >= 0 && k.ops[first[p]].node >= 0;
  };
  // Node starts, all and of the nodes that load constants themselves.
  std::vector<int> starts, loaders;
  for (const auto& [n, i] : node_start) starts.push_back(i);
  for (size_t p = 0; p < np; ++p)
    if (filled(p)) loaders.push_back(node_start.at(k.ops[first[p]].node));
  std::sort(starts.begin(), starts.end());
  std::sort(loaders.begin(), loaders.end());
  // The latest start before `s` in `v`, or -1.
  auto before = [](const std::vector<int>& v, int s) {
    auto it = std::lower_bound(v.begin(), v.end(), s);
    return it == v.begin() ? -1 : *std::prev(it);
  };
  // One loading node ahead: a node's constants may stream in from the start of the
  // previous node that loads constants (a matmul's weights under the previous
  // matmul and whatever runs between them: a norm, attention), at least from the
  // start of the node just before.
  std::vector<std::pair<int, int>> cand;  // (pool's first op, pool)
  std::vector<int> target(np, -1);
  for (size_t p = 0; p < np; ++p) {
    if (!filled(p)) continue;
    const int s = node_start.at(k.ops[first[p]].node);
    const int prev = before(starts, s), load = before(loaders, s);
    const int t = load >= 0 && prev >= 0 ? std::min(load, prev) : prev;
    if (t < 0 || t >= first[p]) continue;
    target[p] = t;
    cand.push_back({first[p], static_cast<int>(p)});
  }
  if (cand.empty()) return 0;
  std::sort(cand.begin(), cand.end());
  auto with = [&](size_t count) {
    std::vector<int> f = first;
    for (size_t j = 0; j < count; ++j) f[cand[j].second] = target[cand[j].second];
    return f;
  };
  const uint64_t cap = ctx.target.sbuf_partition_bytes;
  auto fits = [&](size_t count) {
    return place(k, ctx, isa::MemSpace::sbuf, with(count), last, nullptr) <= cap;
  };
  // The largest prefix of the candidates that fits (bisection: placement is quadratic
  // in the pools, and large kernels have thousands).
  size_t lo = 0, hi = cand.size();
  if (!fits(hi)) {
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (fits(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    hi = lo;
  }
  first = with(hi);
  return static_cast<int>(hi);
}

void run(Kernel& k, PassContext& ctx) {
  std::vector<int> first, last;
  pool_lifetimes(k, first, last);
  const int prefetch = extend_constant_pools(k, ctx, first, last);
  if (prefetch) ctx.stats["alloc_memory.prefetch_pools"] = prefetch;
  place(k, ctx, isa::MemSpace::sbuf, first, last, &k.pools);
  place(k, ctx, isa::MemSpace::psum, first, last, &k.pools);
  for (Tile& tl : k.tiles) {
    const Pool& p = k.pools[tl.pool];
    tl.addr = p.addr + static_cast<int64_t>(tl.slot * p.buf_bytes);
  }
  // Matmul outputs must stay within one PSUM bank.
  const uint64_t bank = ctx.target.psum_bank_bytes;
  for (const Op& op : k.ops) {
    if (op.ins.op != isa::Opcode::matmul || !bank) continue;
    const Tile& tl = k.tiles[op.ref[kDst]];
    const uint64_t lo = static_cast<uint64_t>(tl.addr + op.ins.dst.min_byte());
    const uint64_t hi = static_cast<uint64_t>(tl.addr + op.ins.dst.end_byte());
    if (lo / bank != (hi - 1) / bank)
      throw KernelError(op_label(k, op) + ": its output, bytes " + std::to_string(lo) + ".." +
                        std::to_string(hi) + " of PSUM in tile '" + tl.name + "', crosses a " +
                        std::to_string(bank) +
                        "-byte bank boundary; keep each matmul output within one bank");
  }
}

}  // namespace

uint64_t placed_bytes(const Kernel& k, const compiler::Target& t, isa::MemSpace space) {
  std::vector<int> first, last;
  pool_lifetimes(k, first, last);
  PassContext ctx;
  ctx.target = t;
  return place(k, ctx, space, first, last, nullptr);
}

uint64_t placed_bytes(const Kernel& k, const compiler::Target& t, isa::MemSpace space,
                      const std::vector<int>& first, const std::vector<int>& last) {
  PassContext ctx;
  ctx.target = t;
  return place(k, ctx, space, first, last, nullptr);
}

const PassInfo& alloc_memory_pass() {
  static const PassInfo p{
      "alloc_memory", "place pools (N rotating buffers) and tiles in SBUF/PSUM by liveness", run};
  return p;
}

}  // namespace trnsim::passes
