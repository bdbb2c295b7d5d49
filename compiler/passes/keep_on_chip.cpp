// keep_on_chip: keeps intermediates in SBUF instead of a round trip through HBM, and
// spills (keeps the round trip) where SBUF would run out.
//
// The lowering gives every node output an HBM tensor: the producer stores its SBUF
// tiles there and each consumer loads what it needs back. A load whose every element
// was last stored from SBUF by a store that did not cast is replaced:
//  - sources on the load's own partitions: tensor_copy ops (engine chosen by
//    assign_engines; they cast as the DMA did), one per run of the load's free
//    pattern that comes from one tile with constant strides, the same on every
//    partition; equal runs a constant distance apart merge into one 2-D copy; at
//    most kMaxPieces (each is an engine instruction with a fixed cost);
//  - sources a fixed number of partitions away (engines cannot move data across
//    partitions): one SBUF-to-SBUF dma_copy when a single pattern covers it.
// A source tile read this way moves to a pool of its own (it must outlive its old
// pool's rotation until the copies run), and a store into a scratch tensor is dropped
// once no remaining reader needs what it wrote.
//
// Spilling: a kept tile occupies SBUF from its producer to its last copy. Loads are
// ranked by that distance (shortest first) and the longest prefix whose placement
// (alloc_memory's algorithm, placed_bytes) fits the target's SBUF is forwarded; the
// rest keep their HBM round trip. Reported: keep_on_chip.loads_forwarded,
// .loads_spilled, .copies, .stores_dropped, .hbm_bytes_saved.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "compiler/passes/pass.h"

namespace trnsim::passes {

using tile::kDst;
using tile::Kernel;
using tile::kSrc0;
using tile::Op;
using tile::Operand;
using tile::operands;
using tile::Pool;
using tile::Tensor;
using tile::Tile;

namespace {

constexpr size_t kMaxPieces = 16;

// One element of a DMA stream: HBM byte address, or partition and byte in a tile.
struct Elem {
  uint32_t part;
  int64_t byte;
};

// Calls f(part, byte) for the elements of `ap` in stream order (rows/partitions, then
// the free pattern): HBM byte address, or partition and byte in a tile.
template <typename F>
void for_each_elem(const isa::AccessPattern& ap, F&& f) {
  const int64_t es = static_cast<int64_t>(isa::dtype_size(ap.dtype));
  for (uint32_t r = 0; r < ap.partition_count; ++r) {
    const bool hbm = ap.space == isa::MemSpace::hbm;
    const int64_t base = static_cast<int64_t>(ap.offset) + (hbm ? r * ap.partition_stride * es : 0);
    const uint32_t part = hbm ? 0 : ap.partition_start + r;
    isa::for_each_free(ap, [&](uint64_t, int64_t off) { f(part, base + off); });
  }
}

// The elements of an HBM pattern `ap` in runs, in stream order: f(byte, count, step)
// for each run of the innermost dim, `count` elements `step` bytes apart from byte
// address `byte` (for_each_elem element by element).
template <typename F>
void for_each_hbm_run(const isa::AccessPattern& ap, F&& f) {
  const int64_t es = static_cast<int64_t>(isa::dtype_size(ap.dtype));
  std::array<uint32_t, isa::kMaxDims> size{1, 1, 1, 1};
  std::array<int64_t, isa::kMaxDims> stride{0, 0, 0, 0};
  const int pad = isa::kMaxDims - ap.ndims;  // right-aligned, as isa::for_each_free
  for (int i = 0; i < ap.ndims; ++i) {
    size[pad + i] = ap.dims[i].size;
    stride[pad + i] = ap.dims[i].stride * es;
  }
  for (uint32_t r = 0; r < ap.partition_count; ++r) {
    const int64_t row = static_cast<int64_t>(ap.offset) + r * ap.partition_stride * es;
    for (uint32_t a = 0; a < size[0]; ++a)
      for (uint32_t b = 0; b < size[1]; ++b)
        for (uint32_t c = 0; c < size[2]; ++c)
          f(row + a * stride[0] + b * stride[1] + c * stride[2], size[3], stride[3]);
  }
}

// The elements of `ap` in stream order.
void stream(const isa::AccessPattern& ap, std::vector<Elem>& out) {
  out.clear();
  out.reserve(ap.elems());
  for_each_elem(ap, [&](uint32_t part, int64_t byte) { out.push_back({part, byte}); });
}

// log2 of the element size (1, 2 or 4 bytes): the element index of a byte offset,
// which the analysis computes per element, is a shift rather than a division.
int elem_shift(isa::DType t) {
  const size_t es = isa::dtype_size(t);
  int sh = 0;
  while ((size_t{1} << sh) < es) ++sh;
  if ((size_t{1} << sh) != es)
    throw tile::KernelError("keep_on_chip: element size not a power of 2");
  return sh;
}

// Per element of a tracked HBM tensor: the op that last wrote it and, when that op
// copied it from an SBUF tile without a cast, where in the tile it came from.
struct Owner {
  int32_t op = -1;
  int32_t tile = -1;  // -1: not from an SBUF tile (or cast on the way)
  uint32_t part = 0;
  uint32_t byte = 0;  // within the partition
};

// Element-owner arrays of the tracked tensors. A tensor's array is dropped after its
// last access; its memory goes to the next tensor that needs one, so a large model
// does not fault in (and zero) fresh pages for every intermediate.
class OwnerArrays {
 public:
  explicit OwnerArrays(size_t tensors) : owners_(tensors) {}
  std::vector<Owner>& get(size_t t, size_t elems) {
    std::vector<Owner>& own = owners_[t];
    if (own.empty()) {
      // The smallest spare that holds `elems` (none: a fresh array).
      size_t pick = spare_.size();
      for (size_t i = 0; i < spare_.size(); ++i)
        if (spare_[i].capacity() >= elems &&
            (pick == spare_.size() || spare_[i].capacity() < spare_[pick].capacity()))
          pick = i;
      if (pick < spare_.size()) {
        own.swap(spare_[pick]);
        spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(pick));
      }
      own.assign(elems, Owner{});
    }
    return own;
  }
  void drop(size_t t) {
    if (owners_[t].capacity() == 0) return;
    spare_.push_back(std::move(owners_[t]));
    owners_[t] = {};
    // A few spares cover the tensors alive at once; more would only hold memory.
    if (spare_.size() > kMaxSpare) {
      auto smallest = std::min_element(
          spare_.begin(), spare_.end(),
          [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
      spare_.erase(smallest);
    }
  }

 private:
  static constexpr size_t kMaxSpare = 4;
  std::vector<std::vector<Owner>> owners_;
  std::vector<std::vector<Owner>> spare_;
};

struct Piece {
  int tile;
  isa::AccessPattern dst, src;  // relative to the load's tile and to `tile`
};

struct Candidate {
  int load = -1;  // op index
  int first_store = -1;
  std::vector<Piece> pieces;
  bool dma = false;  // pieces are SBUF-to-SBUF transfers (partitions shift)
};

struct Analysis {
  std::vector<Candidate> cands;
  // Every op that reads a tracked tensor, and the stores whose data it reads.
  std::vector<std::pair<int, std::vector<int>>> readers;
  std::vector<bool> is_store;  // by op index: writes a tracked scratch tensor from SBUF
};

// Splits a load into pieces, or returns false. `src[i]` owns the load's i-th element.
// Sources on the load's own partitions give engine copies (*dma false); sources a
// fixed number of partitions away, one SBUF-to-SBUF transfer (*dma true).
bool plan_pieces(const Op& load, const std::vector<Owner>& src, std::vector<Piece>& pieces,
                 bool* dma) {
  const isa::AccessPattern& d = load.ins.dst;
  const uint64_t n = d.free_elems();
  if (n == 0 || d.partition_count == 0 || src.empty()) return false;
  const int64_t shift = static_cast<int64_t>(src[0].part) - d.partition_start;
  *dma = shift != 0;
  // The partition-start rule holds for every on-chip pattern, DMA ones included.
  if (!isa::partition_start_ok(d.partition_start, d.partition_count) ||
      !isa::partition_start_ok(static_cast<uint32_t>(d.partition_start + shift), d.partition_count))
    return false;
  std::vector<int64_t> dfree;
  dfree.reserve(n);
  isa::for_each_free(
      d, [&](uint64_t, int64_t off) { dfree.push_back(static_cast<int64_t>(d.offset) + off); });
  // Every partition must take the same free pattern from the same tiles, in place.
  for (uint32_t r = 0; r < d.partition_count; ++r)
    for (uint64_t j = 0; j < n; ++j) {
      const Owner& o = src[r * n + j];
      const Owner& o0 = src[j];
      if (o.tile < 0 || o.part != d.partition_start + r + shift || o.tile != o0.tile ||
          o.byte != o0.byte)
        return false;
    }
  auto sb = [&](uint64_t j) { return static_cast<int64_t>(src[j].byte); };
  pieces.clear();
  for (uint64_t j = 0; j < n;) {
    const int tile = src[j].tile;
    uint64_t e = j + 1;
    int64_t dstep = 0, sstep = 0;
    if (e < n && src[e].tile == tile) {
      dstep = dfree[e] - dfree[j];
      sstep = sb(e) - sb(j);
      while (e < n && src[e].tile == tile && dfree[e] - dfree[e - 1] == dstep &&
             sb(e) - sb(e - 1) == sstep)
        ++e;
    }
    const isa::DType sdt = load.ins.src[0].dtype;  // as the store read it (it did not cast)
    const int64_t des = static_cast<int64_t>(isa::dtype_size(d.dtype));
    const int64_t ses = static_cast<int64_t>(isa::dtype_size(sdt));
    if ((e - j > 1 && dstep == 0) || dstep % des || sstep % ses) return false;
    Piece p{tile, d, d};
    p.dst.offset = static_cast<uint64_t>(dfree[j]);
    p.dst.ndims = 1;
    p.dst.dims = {};
    p.dst.dims[0] = {e - j > 1 ? dstep / des : 1, static_cast<uint32_t>(e - j)};
    p.src.dtype = sdt;
    p.src.partition_start = static_cast<uint32_t>(d.partition_start + shift);
    p.src.offset = static_cast<uint64_t>(src[j].byte);
    p.src.ndims = 1;
    p.src.dims = {};
    p.src.dims[0] = {e - j > 1 ? sstep / ses : 1, static_cast<uint32_t>(e - j)};
    pieces.push_back(p);
    if (pieces.size() > 64 * kMaxPieces) return false;  // hopeless even after merging
    j = e;
  }
  // Runs of equal runs a constant distance apart on both sides (a padded or strided
  // row after row) become one 2-D piece.
  std::vector<Piece> merged;
  for (size_t i = 0; i < pieces.size();) {
    Piece m = pieces[i];
    size_t e = i + 1;
    if (e < pieces.size() && pieces[e].tile == m.tile && pieces[e].dst.dims[0] == m.dst.dims[0] &&
        pieces[e].src.dims[0] == m.src.dims[0]) {
      const int64_t dd = static_cast<int64_t>(pieces[e].dst.offset - m.dst.offset);
      const int64_t sd = static_cast<int64_t>(pieces[e].src.offset - m.src.offset);
      const int64_t des = static_cast<int64_t>(isa::dtype_size(m.dst.dtype));
      const int64_t ses = static_cast<int64_t>(isa::dtype_size(m.src.dtype));
      while (e < pieces.size() && pieces[e].tile == m.tile &&
             pieces[e].dst.dims[0] == m.dst.dims[0] && pieces[e].src.dims[0] == m.src.dims[0] &&
             static_cast<int64_t>(pieces[e].dst.offset - pieces[e - 1].dst.offset) == dd &&
             static_cast<int64_t>(pieces[e].src.offset - pieces[e - 1].src.offset) == sd)
        ++e;
      if (e - i > 1 && dd % des == 0 && sd % ses == 0 && dd != 0) {
        const uint32_t count = static_cast<uint32_t>(e - i);
        m.dst.dims[1] = m.dst.dims[0];
        m.dst.dims[0] = {dd / des, count};
        m.src.dims[1] = m.src.dims[0];
        m.src.dims[0] = {sd / ses, count};
        m.dst.ndims = m.src.ndims = 2;
      } else {
        e = i + 1;
      }
    }
    merged.push_back(m);
    i = e;
  }
  pieces = std::move(merged);
  return pieces.size() <= (*dma ? 1 : kMaxPieces);
}

Analysis analyse(const Kernel& k, const compiler::Target& t) {
  Analysis a;
  a.is_store.assign(k.ops.size(), false);
  // Tensors small enough that kept tiles could hold them, written by the kernel.
  const uint64_t limit = 2ull * t.partitions * t.sbuf_partition_bytes;
  OwnerArrays owners(k.tensors.size());
  std::vector<bool> tracked(k.tensors.size(), false);
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    const Tensor& tn = k.tensors[i];
    tracked[i] = (tn.role == isa::TensorRole::scratch || tn.role == isa::TensorRole::output) &&
                 tn.bytes() <= limit;
  }
  // HBM patterns on a tensor in its own dtype and element-aligned, else untracked.
  auto usable = [&](const isa::AccessPattern& ap, int ref) {
    const Tensor& tn = k.tensors[ref];
    if (ap.dtype != tn.dtype || ap.offset % isa::dtype_size(tn.dtype)) return false;
    int64_t lo, hi;
    ap.byte_range(lo, hi);
    return lo >= 0 && static_cast<uint64_t>(hi) <= tn.bytes();
  };
  // Positions of the writes of each tile, to reject tiles rewritten after a store.
  // A tensor with one access the analysis cannot follow is untracked from the
  // start: its stores all stay.
  // Each tracked tensor's element owners are dropped after its last access.
  std::vector<std::vector<int>> tile_writes(k.tiles.size());
  std::vector<int> last_access(k.tensors.size(), -1);
  for (size_t i = 0; i < k.ops.size(); ++i)
    for (const Operand& o : operands(k.ops[i])) {
      if (o.ap->space == isa::MemSpace::hbm) {
        if (tracked[o.ref] && !usable(*o.ap, o.ref)) tracked[o.ref] = false;
        last_access[o.ref] = static_cast<int>(i);
      } else if (o.write) {
        tile_writes[o.ref].push_back(static_cast<int>(i));
      }
    }
  auto written_between = [&](int tile, int lo, int hi) {
    const auto& w = tile_writes[tile];
    auto it = std::upper_bound(w.begin(), w.end(), lo);
    return it != w.end() && *it < hi;
  };

  std::vector<Elem> tel;
  std::vector<Owner> src;
  for (size_t i = 0; i < k.ops.size(); ++i) {
    const Op& op = k.ops[i];
    const int pos = static_cast<int>(i);
    std::vector<Operand> hbm_reads, hbm_writes;
    for (const Operand& o : operands(op)) {
      if (o.ap->space == isa::MemSpace::hbm && tracked[o.ref])
        (o.read ? hbm_reads : hbm_writes).push_back(o);
    }
    for (const Operand& o : hbm_reads) {
      const auto& own = owners.get(o.ref, k.tensors[o.ref].elems());
      const int sh = elem_shift(o.ap->dtype);
      src.clear();
      src.reserve(o.ap->elems());
      std::set<int> stores;
      int prev = -1;
      // Whether every element comes from a tile unchanged since its store (wanted for
      // a load into SBUF), found in the same pass: runs of elements share their store
      // and tile, so each pair is tested once.
      bool ok = true;
      int last_tile = -2, last_op = -2;
      auto scan = [&](const Owner* w, size_t count) {
        for (size_t e = 0; e < count; ++e) {
          const Owner& s = w[e];
          if (s.op >= 0 && s.op != prev) stores.insert(prev = s.op);
          if (!ok || (s.tile == last_tile && s.op == last_op)) continue;
          last_tile = s.tile, last_op = s.op;
          if (s.tile < 0 || written_between(s.tile, s.op, pos)) ok = false;
        }
      };
      // Run by run: a contiguous run's owners are copied at once, and scanned while
      // they are in cache.
      for_each_hbm_run(*o.ap, [&](int64_t byte, uint32_t count, int64_t step) {
        const size_t at = src.size();
        if (step == (int64_t{1} << sh)) {
          const Owner* w = own.data() + (static_cast<size_t>(byte) >> sh);
          src.insert(src.end(), w, w + count);
        } else {
          for (uint32_t d = 0; d < count; ++d)
            src.push_back(own[static_cast<size_t>(byte + d * step) >> sh]);
        }
        scan(src.data() + at, src.size() - at);
      });
      a.readers.push_back({pos, {stores.begin(), stores.end()}});
      // A load into an SBUF tile: a candidate when every element comes from tiles
      // unchanged since their stores.
      if (op.ins.op != isa::Opcode::dma_copy || op.ins.dst.space != isa::MemSpace::sbuf ||
          op.ins.dst.elems() != src.size() || stores.empty())
        continue;
      Candidate c;
      c.load = pos;
      c.first_store = *stores.begin();
      if (ok && plan_pieces(op, src, c.pieces, &c.dma)) a.cands.push_back(std::move(c));
    }
    for (const Operand& o : hbm_writes) {
      auto& own = owners.get(o.ref, k.tensors[o.ref].elems());
      const int sh = elem_shift(o.ap->dtype);
      const isa::AccessPattern& s = op.ins.src[0];
      const bool from_tile = op.ins.op == isa::Opcode::dma_copy && s.space == isa::MemSpace::sbuf &&
                             s.dtype == o.ap->dtype && s.elems() == o.ap->elems();
      if (from_tile) stream(s, tel);
      const int tile = from_tile ? op.ref[kSrc0] : -1;
      // Run by run (the stream order of for_each_elem), the tile's element e for the
      // written element e.
      size_t e = 0;
      for_each_hbm_run(*o.ap, [&](int64_t byte, uint32_t count, int64_t step) {
        for (uint32_t d = 0; d < count; ++d) {
          Owner& w = own[static_cast<size_t>(byte + d * step) >> sh];
          w.op = pos;
          w.tile = tile;
          if (from_tile) w.part = tel[e].part, w.byte = static_cast<uint32_t>(tel[e].byte);
          ++e;
        }
      });
      if (from_tile && k.tensors[o.ref].role == isa::TensorRole::scratch) a.is_store[i] = true;
    }
    for (const Operand& o : operands(op))
      if (o.ap->space == isa::MemSpace::hbm && last_access[o.ref] == pos) owners.drop(o.ref);
  }
  // Shortest distance from store to load first: the cheapest to keep.
  std::stable_sort(a.cands.begin(), a.cands.end(), [](const Candidate& x, const Candidate& y) {
    return x.load - x.first_store < y.load - y.first_store;
  });
  return a;
}

// What forwarding the first `n` candidates means, shared by apply() and the trials:
// the loads forwarded, the ops whose stores are still read from HBM, and `k`'s pools
// and tiles (k0's, with each kept tile moved to a pool of its own, one buffer).
struct Plan {
  std::map<int, const Candidate*> fwd;  // load op index -> candidate
  std::vector<bool> needed;             // by op index: a store some reader still needs
};

Plan plan(const Kernel& k0, const Analysis& a, size_t n, Kernel& k) {
  Plan r;
  for (size_t i = 0; i < n; ++i) r.fwd[a.cands[i].load] = &a.cands[i];
  r.needed.assign(k0.ops.size(), false);
  for (const auto& [op, stores] : a.readers)
    if (!r.fwd.count(op))
      for (int s : stores) r.needed[s] = true;
  std::set<int> kept;
  for (const auto& [op, c] : r.fwd)
    for (const Piece& p : c->pieces) kept.insert(p.tile);
  k.pools = k0.pools;
  k.tiles = k0.tiles;
  for (int t : kept) {
    Tile& tl = k.tiles[t];
    Pool p;
    p.name = tl.name + ".kept";
    p.space = k.pools[tl.pool].space;
    p.bufs = 1;
    tl.pool = static_cast<int>(k.pools.size());
    tl.slot = 0;
    k.pools.push_back(p);
  }
  return r;
}

struct Applied {
  Kernel k;
  int copies = 0, stores_dropped = 0;
  uint64_t bytes_saved = 0;
};

// The kernel with the first `n` candidates forwarded; a `trial` leaves out the
// tensors (constant data), which placement does not look at.
Applied apply(const Kernel& k0, const Analysis& a, size_t n, bool trial) {
  Applied r;
  Kernel& k = r.k;
  k.name = k0.name;
  k.semaphores = k0.semaphores;
  k.op_origin = k0.op_origin;
  if (!trial) k.tensors = k0.tensors;
  const Plan pl = plan(k0, a, n, k);
  const auto& fwd = pl.fwd;
  const auto& needed = pl.needed;
  int next_id = k0.next_op_id();
  std::vector<Op> ops;
  ops.reserve(k0.ops.size());
  for (size_t i = 0; i < k0.ops.size(); ++i) {
    const Op& op = k0.ops[i];
    if (a.is_store[i] && !needed[i]) {
      ++r.stores_dropped;
      r.bytes_saved += op.ins.dst.bytes();
      continue;
    }
    auto it = fwd.find(static_cast<int>(i));
    if (it == fwd.end()) {
      ops.push_back(op);
      continue;
    }
    if (!it->second->dma) r.bytes_saved += op.ins.src[0].bytes();  // else still moved, on chip
    bool first = true;
    for (const Piece& p : it->second->pieces) {
      Op c;
      if (it->second->dma) {
        c = op;  // the load, now from SBUF
      } else {
        c.ins.op = isa::Opcode::tensor_copy;
        c.ins.nsrc = 1;
        c.ref[kDst] = op.ref[kDst];
        c.engine_auto = true;
        c.node = op.node;
      }
      c.id = first ? op.id : next_id++;
      first = false;
      c.ins.dst = p.dst;
      c.ins.src[0] = p.src;
      c.ref[kSrc0] = p.tile;
      ops.push_back(c);
      ++r.copies;
    }
  }
  k.ops = std::move(ops);
  return r;
}

// placed_bytes(apply(k0, a, n, true).k, SBUF) without building the op list: the
// pools and tiles as apply() changes them, each pool's lifetime walked over the
// ops apply() would emit, in their positions (a trial per step of the search below
// would otherwise copy every op).
uint64_t trial_sbuf_bytes(const Kernel& k0, const Analysis& a, size_t n,
                          const compiler::Target& t) {
  Kernel k;
  const Plan pl = plan(k0, a, n, k);
  const auto& fwd = pl.fwd;
  const auto& needed = pl.needed;
  std::vector<int> first(k.pools.size(), -1), last(k.pools.size(), -1);
  int pos = 0;
  auto touch = [&](int tile) {
    const int p = k.tiles[tile].pool;
    if (first[p] < 0) first[p] = pos;
    last[p] = pos;
  };
  for (size_t i = 0; i < k0.ops.size(); ++i) {
    const Op& op = k0.ops[i];
    if (a.is_store[i] && !needed[i]) continue;
    auto it = fwd.find(static_cast<int>(i));
    if (it == fwd.end()) {
      for (const Operand& o : operands(op))
        if (o.ap->space != isa::MemSpace::hbm) touch(o.ref);
      ++pos;
      continue;
    }
    for (const Piece& p : it->second->pieces) {
      if (it->second->dma) {  // the load with its source in SBUF
        for (const Operand& o : operands(op))
          if (o.slot != kSrc0 && o.ap->space != isa::MemSpace::hbm) touch(o.ref);
      } else {  // a tensor_copy into the load's tile
        touch(op.ref[kDst]);
      }
      touch(p.tile);
      ++pos;
    }
  }
  return placed_bytes(k, t, isa::MemSpace::sbuf, first, last);
}

void run(Kernel& k, PassContext& ctx) {
  const Analysis a = analyse(k, ctx.target);
  if (a.cands.empty()) return;
  const uint64_t cap = ctx.target.sbuf_partition_bytes;
  auto fits = [&](size_t n) { return trial_sbuf_bytes(k, a, n, ctx.target) <= cap; };
  // The longest prefix that fits (more kept tiles never need less SBUF).
  size_t n = a.cands.size();
  if (!fits(n)) {
    size_t lo = 0, hi = n;  // fits(lo) assumed (the kernel as lowered), !fits(hi)
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    n = lo;
  }
  // The tensors (constant data: hundreds of MiB for a large model) move over rather
  // than being copied: apply() reads none of them.
  Applied r = apply(k, a, n, true);
  r.k.tensors = std::move(k.tensors);
  k = std::move(r.k);
  ctx.stats["keep_on_chip.loads_forwarded"] += static_cast<double>(n);
  ctx.stats["keep_on_chip.loads_spilled"] += static_cast<double>(a.cands.size() - n);
  ctx.stats["keep_on_chip.copies"] += r.copies;
  ctx.stats["keep_on_chip.stores_dropped"] += r.stores_dropped;
  ctx.stats["keep_on_chip.hbm_bytes_saved"] += static_cast<double>(r.bytes_saved);
}

}  // namespace

const PassInfo& keep_on_chip_pass() {
  static const PassInfo p{"keep_on_chip",
                          "forward stored SBUF tiles to later loads as on-chip copies; spill "
                          "(keep the HBM round trip) where SBUF runs out",
                          run};
  return p;
}

}  // namespace trnsim::passes
