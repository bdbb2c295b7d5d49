#include "compiler/tile/deps.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace trnsim::tile {

namespace {

// The index ranges of a Region: in place up to rank 4 (10 ranges over all levels, what
// nearly every access needs), else on the heap; building the graph makes one Region
// per operand of every op.
class Boxes {
 public:
  using Range = std::pair<int64_t, int64_t>;
  void resize(size_t n) {
    n_ = n;
    if (n > kInline) heap_.resize(n);
  }
  Range* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  const Range* data() const { return n_ > kInline ? heap_.data() : inline_.data(); }

 private:
  static constexpr size_t kInline = 10;
  size_t n_ = 0;
  std::array<Range, kInline> inline_{};
  std::vector<Range> heap_;
};

// What one operand touches.
struct Region {
  int obj = -1;             // tile or tensor index
  bool hbm = false;         // obj is a tensor
  isa::MemSpace space{};    // physical on-chip space
  uint32_t p0 = 0, p1 = 1;  // partitions [p0, p1) (hbm: 0..1)
  int64_t b0 = 0, b1 = 0;   // bytes: relative to the object (logical/hbm) or absolute (physical)
  bool dense = false;       // touches every byte of [b0, b1) in each partition
  bool physical = false;    // on-chip bytes are addresses (else relative to the tile)
  // Inclusive index ranges over the object's shape (level 0) and over coarser views of
  // it (level j: the last j+1 dims merged into one), each when the access fits one
  // (bit j of has_box). One array for all levels, level j's `rank - j` ranges at
  // box_at(j): an access is one allocation, not one per level.
  uint32_t rank = 0, levels = 0, has_box = 0;
  Boxes box;
  size_t box_at(uint32_t level) const { return level * rank - level * (level - 1) / 2; }
};

// Dims of a shape the boxes are derived over, at most (deeper shapes get no boxes:
// conservative, every access of them overlaps by bytes alone).
constexpr size_t kMaxBoxRank = 16;

// Index box of the pattern (dims, offset) over an object of `shape` (row-major),
// written to out[0, nd); false when it has none.
bool derive_box(const isa::Dim* dims, size_t ndims, int64_t offset_bytes, isa::DType t,
                const int64_t* shape, size_t nd, std::pair<int64_t, int64_t>* box) {
  const int64_t es = static_cast<int64_t>(isa::dtype_size(t));
  if (nd == 0 || offset_bytes % es) return false;
  int64_t st[kMaxBoxRank];
  st[nd - 1] = 1;
  for (size_t d = nd - 1; d-- > 0;) st[d] = st[d + 1] * shape[d + 1];
  int64_t off = offset_bytes / es;
  if (off < 0 || off >= st[0] * shape[0]) return false;
  for (size_t d = 0; d < nd; ++d) {
    const int64_t i = off / st[d] % shape[d];
    box[d] = {i, i};
  }
  for (size_t x = 0; x < ndims; ++x) {
    const isa::Dim& dm = dims[x];
    if (dm.size <= 1 || dm.stride == 0) continue;
    const int64_t s = dm.stride < 0 ? -dm.stride : dm.stride;
    size_t d = nd;
    for (size_t c = 0; c < nd; ++c)
      if (shape[c] > 1 && s % st[c] == 0) {
        d = c;
        break;
      }
    if (d == nd) return false;
    const int64_t ext = dm.stride / st[d] * (static_cast<int64_t>(dm.size) - 1);
    (ext > 0 ? box[d].second : box[d].first) += ext;
  }
  for (size_t d = 0; d < nd; ++d)
    if (box[d].first < 0 || box[d].second >= shape[d]) return false;
  return true;
}

// derive_box over the shape and each coarser view of it: a run that crosses rows of
// the inner dims (a 256-element run over [.., 32, 32]) has no box over the full
// shape but has one once those dims are merged, which keeps column slices of the
// same rows apart.
void derive_boxes(const isa::Dim* dims, size_t ndims, int64_t offset_bytes, isa::DType t,
                  const int64_t* shape0, size_t nd, Region& r) {
  if (nd > kMaxBoxRank) return;
  int64_t shape[kMaxBoxRank];
  std::copy(shape0, shape0 + nd, shape);
  r.rank = static_cast<uint32_t>(nd);
  r.levels = nd == 0 ? 1 : static_cast<uint32_t>(nd);
  r.box.resize(r.box_at(r.levels));
  for (uint32_t l = 0;; ++l) {
    if (derive_box(dims, ndims, offset_bytes, t, shape, nd, r.box.data() + r.box_at(l)))
      r.has_box |= 1u << l;
    if (nd <= 1) return;
    shape[nd - 2] *= shape[nd - 1];
    --nd;
  }
}

bool dense_ap(const isa::AccessPattern& ap) {
  if (!ap.free_contiguous() || ap.free_min_byte() != 0) return false;
  if (ap.space != isa::MemSpace::hbm) return true;
  return ap.partition_count == 1 || ap.partition_stride == static_cast<int64_t>(ap.free_elems());
}

Region region(const Kernel& k, const Operand& o, DepMode mode) {
  const isa::AccessPattern& ap = *o.ap;
  Region r;
  r.obj = o.ref;
  r.space = ap.space;
  r.b0 = ap.min_byte();
  r.b1 = ap.end_byte();
  r.dense = dense_ap(ap);
  if (ap.space == isa::MemSpace::hbm) {
    r.hbm = true;
    isa::Dim dims[isa::kMaxDims + 1];
    dims[0] = {ap.partition_stride, ap.partition_count};
    for (int i = 0; i < ap.ndims; ++i) dims[i + 1] = ap.dims[i];
    const std::vector<int64_t>& shape = k.tensors[o.ref].shape;
    derive_boxes(dims, size_t(ap.ndims) + 1, static_cast<int64_t>(ap.offset), ap.dtype,
                 shape.data(), shape.size(), r);
    return r;
  }
  const Tile& t = k.tiles[o.ref];
  r.p0 = ap.partition_start;
  r.p1 = ap.partition_start + ap.partition_count;
  const int64_t one = 1;
  const bool no_free = t.shape.size() <= 1;
  derive_boxes(ap.dims.data(), size_t(ap.ndims), static_cast<int64_t>(ap.offset), ap.dtype,
               no_free ? &one : t.shape.data() + 1, no_free ? 1 : t.shape.size() - 1, r);
  if (mode == DepMode::physical) {
    if (t.addr < 0)
      throw KernelError("kernel '" + k.name + "' tile '" + t.name +
                        "' has no address: run alloc_memory before physical dependencies");
    r.b0 += t.addr;
    r.b1 += t.addr;
    r.physical = true;
  }
  return r;
}

bool boxes_overlap(const std::pair<int64_t, int64_t>* a, const std::pair<int64_t, int64_t>* b,
                   size_t n) {
  for (size_t d = 0; d < n; ++d)
    if (a[d].second < b[d].first || b[d].second < a[d].first) return false;
  return true;
}

bool overlap(const Region& a, const Region& b) {
  if (a.hbm != b.hbm) return false;
  if (a.hbm) {
    if (a.obj != b.obj) return false;
  } else {
    if (a.space != b.space) return false;
    if (a.p1 <= b.p0 || b.p1 <= a.p0) return false;
  }
  const bool same_obj = a.obj == b.obj;
  if (!same_obj && (a.hbm || !a.physical || !b.physical)) return false;
  if (a.b1 <= b.b0 || b.b1 <= a.b0) return false;
  // Same object, same shape: disjoint boxes at any level mean disjoint elements.
  if (same_obj && a.rank == b.rank)
    for (uint32_t l = 0; l < std::min(a.levels, b.levels); ++l)
      if ((a.has_box >> l & 1) && (b.has_box >> l & 1) &&
          !boxes_overlap(a.box.data() + a.box_at(l), b.box.data() + b.box_at(l), a.rank - l))
        return false;
  return true;
}

// The part of memory a bucket stands for (on-chip: 32 partitions x a byte range).
struct Scope {
  uint32_t p0 = 0, p1 = UINT32_MAX;
  int64_t b0 = INT64_MIN, b1 = INT64_MAX;
};

// Whether a dense write `w` overwrites everything `a` touches within `sc`.
bool covers(const Region& w, const Region& a, const Scope& sc) {
  if (!w.dense || w.hbm != a.hbm || (w.hbm && w.obj != a.obj)) return false;
  if (!w.hbm) {
    if (w.space != a.space) return false;
    if (!w.physical && w.obj != a.obj) return false;
    if (w.p0 > std::max(a.p0, sc.p0) || w.p1 < std::min(a.p1, sc.p1)) return false;
  }
  return w.b0 <= std::max(a.b0, sc.b0) && std::min(a.b1, sc.b1) <= w.b1;
}

// Regions are shared between the access and every bucket entry made from it: an
// access spans many buckets, and copying its index boxes into each cost more than
// the tests themselves.
struct Entry {
  int op;
  std::shared_ptr<const Region> r;
};
struct Bucket {
  std::vector<Entry> readers, writers;
};

struct Access {
  std::shared_ptr<const Region> r;
  bool read, write;
};

// The accesses of `op`, into `out` (cleared first: build_deps reuses one vector).
void accesses(const Kernel& k, const Op& op, DepMode mode, std::vector<Access>& out) {
  out.clear();
  for (const Operand& o : operands(op))
    out.push_back({std::make_shared<const Region>(region(k, o, mode)), o.read, o.write});
}

std::vector<Access> accesses(const Kernel& k, const Op& op, DepMode mode) {
  std::vector<Access> out;
  accesses(k, op, mode, out);
  return out;
}

// Buckets: (kind, object or space, partition group, byte bucket) and its scope.
using Key = std::tuple<int, int, int, int64_t>;
// Buckets are only looked up, never walked in order: a hash table.
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = static_cast<uint64_t>(std::get<0>(k)) * 0x9e3779b97f4a7c15ull;
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(std::get<1>(k))) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(std::get<2>(k))) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(std::get<3>(k)) + (h << 6) + (h >> 2);
    return static_cast<size_t>(h * 0xff51afd7ed558ccdull);
  }
};
constexpr uint32_t kGroup = 32;  // partitions per bucket

// HBM buckets: bands of `band` bytes of one tensor. A tensor stored as thousands of
// disjoint pieces would otherwise keep them all in one bucket, and every store would
// test every earlier piece (quadratic: a Relu over [2048, 65536] spent 2 s there).
// The scope stays the whole tensor, so a write drops only entries it covers entirely,
// exactly as with one bucket: the edges found are the same.
constexpr int64_t kMaxBands = 1024;

// Band size of tensor `t`: at least 128 rows (a tile's partitions, so a tile's
// piece lands in one or two bands) and at most kMaxBands bands per tensor (so an
// access over the whole tensor is filed kMaxBands times at most).
int64_t hbm_band_bytes(const Tensor& t) {
  const int64_t bytes = static_cast<int64_t>(t.bytes());
  const int64_t row =
      t.shape.empty() ? bytes : t.shape.back() * static_cast<int64_t>(isa::dtype_size(t.dtype));
  const int64_t by_rows = std::min(bytes, 128 * row);
  return std::max<int64_t>({by_rows, (bytes + kMaxBands - 1) / kMaxBands, 1});
}

// The buckets of `r`, into `ks` (cleared first).
void keys(const Region& r, DepMode mode, const std::vector<int64_t>& hbm_band,
          std::vector<std::pair<Key, Scope>>& ks) {
  ks.clear();
  if (r.hbm) {
    const int64_t band = hbm_band[r.obj];
    for (int64_t b = std::max<int64_t>(r.b0, 0) / band; b <= std::max<int64_t>(r.b1 - 1, 0) / band;
         ++b)
      ks.push_back({Key{0, r.obj, 0, b}, Scope{}});
    return;
  }
  const bool phys = mode == DepMode::physical;
  const int64_t g = !phys ? 0 : r.space == isa::MemSpace::psum ? 2048 : 1024;
  for (uint32_t pg = r.p0 / kGroup; pg <= (r.p1 - 1) / kGroup; ++pg) {
    Scope sc;
    sc.p0 = pg * kGroup;
    sc.p1 = sc.p0 + kGroup;
    if (!phys) {
      ks.push_back({Key{1, r.obj, static_cast<int>(pg), 0}, sc});
      continue;
    }
    for (int64_t b = r.b0 / g; b <= (r.b1 - 1) / g; ++b) {
      sc.b0 = b * g;
      sc.b1 = sc.b0 + g;
      ks.push_back({Key{2, static_cast<int>(r.space), static_cast<int>(pg), b}, sc});
    }
  }
}

}  // namespace

size_t DepGraph::edges() const {
  size_t n = 0;
  for (const auto& p : preds) n += p.size();
  return n;
}

bool ops_conflict(const Kernel& k, const Op& a, const Op& b, DepMode mode) {
  const auto aa = accesses(k, a, mode), bb = accesses(k, b, mode);
  for (const Access& x : aa)
    for (const Access& y : bb)
      if ((x.write || y.write) && overlap(*x.r, *y.r)) return true;
  return false;
}

DepGraph build_deps(const Kernel& k, DepMode mode) {
  const int n = static_cast<int>(k.ops.size());
  DepGraph g;
  g.preds.resize(n);
  g.succs.resize(n);
  std::unordered_map<Key, Bucket, KeyHash> buckets;
  std::vector<int64_t> hbm_band;
  for (const Tensor& t : k.tensors) hbm_band.push_back(hbm_band_bytes(t));
  std::vector<int> seen(n, -1);
  // Per op, reused: each access's buckets, and the buckets found (by access and
  // key, in order; null: no bucket yet).
  std::vector<std::vector<std::pair<Key, Scope>>> ks;
  std::vector<Bucket*> found;
  std::vector<Access> acc;
  for (int j = 0; j < n; ++j) {
    accesses(k, k.ops[j], mode, acc);
    auto add = [&](int i) {
      if (i == j || seen[i] == j) return;
      seen[i] = j;
      g.preds[j].push_back(i);
      g.succs[i].push_back(j);
    };
    if (ks.size() < acc.size()) ks.resize(acc.size());
    for (size_t x = 0; x < acc.size(); ++x) keys(*acc[x].r, mode, hbm_band, ks[x]);
    found.clear();
    for (size_t x = 0; x < acc.size(); ++x) {
      const Access& a = acc[x];
      for (const auto& [key, sc] : ks[x]) {
        auto it = buckets.find(key);
        found.push_back(it == buckets.end() ? nullptr : &it->second);
        if (it == buckets.end()) continue;
        for (const Entry& e : it->second.writers)
          if (overlap(*a.r, *e.r)) add(e.op);
        if (a.write)
          for (const Entry& e : it->second.readers)
            if (overlap(*a.r, *e.r)) add(e.op);
      }
    }
    size_t f = 0;
    for (size_t x = 0; x < acc.size(); ++x) {
      const Access& a = acc[x];
      for (const auto& [key, sc] : ks[x]) {
        Bucket& b = found[f] ? *found[f] : buckets[key];
        ++f;
        if (a.write) {
          auto gone = [&, &sc = sc](const Entry& e) { return e.op != j && covers(*a.r, *e.r, sc); };
          std::erase_if(b.readers, gone);
          std::erase_if(b.writers, gone);
          b.writers.push_back({j, a.r});
        }
        if (a.read && !a.write) b.readers.push_back({j, a.r});
      }
    }
    std::sort(g.preds[j].begin(), g.preds[j].end());
  }
  return g;
}

}  // namespace trnsim::tile

namespace trnsim::tile {

namespace {

// FNV-1a over 64-bit words, then a final mix.
struct Fingerprint {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) {
      h ^= v & 0xff;
      h *= 1099511628211ull;
    }
  }
  void add(const isa::AccessPattern& ap) {
    add(static_cast<uint64_t>(ap.space) | static_cast<uint64_t>(ap.dtype) << 8 |
        static_cast<uint64_t>(ap.ndims) << 16 | static_cast<uint64_t>(ap.partition_start) << 32);
    add(ap.partition_count);
    add(static_cast<uint64_t>(ap.partition_stride));
    add(ap.offset);
    for (int d = 0; d < ap.ndims; ++d) {
      add(static_cast<uint64_t>(ap.dims[d].stride));
      add(ap.dims[d].size);
    }
  }
  void add(const std::vector<int64_t>& v) {
    add(v.size());
    for (int64_t x : v) add(static_cast<uint64_t>(x));
  }
};

uint64_t fingerprint(const Kernel& k, DepMode mode) {
  Fingerprint f;
  f.add(static_cast<uint64_t>(mode));
  f.add(k.tensors.size());
  for (const Tensor& t : k.tensors) {
    f.add(t.shape);
    f.add(static_cast<uint64_t>(t.dtype));
  }
  f.add(k.tiles.size());
  for (const Tile& t : k.tiles) {
    f.add(t.shape);
    f.add(static_cast<uint64_t>(t.addr));
  }
  f.add(k.ops.size());
  for (const Op& op : k.ops) {
    const Operands ops = operands(op);
    f.add(ops.size());
    for (const Operand& o : ops) {
      f.add(static_cast<uint64_t>(o.ref) << 2 | uint64_t{o.read} << 1 | uint64_t{o.write});
      f.add(*o.ap);
    }
  }
  return f.h;
}

}  // namespace

const DepGraph& DepCache::get(const Kernel& k, DepMode mode) {
  const uint64_t key = fingerprint(k, mode);
  if (valid_ && mode_ == mode && key_ == key) {
    ++reuses_;
    return g_;
  }
  g_ = build_deps(k, mode);
  valid_ = true;
  mode_ = mode;
  key_ = key;
  ++builds_;
  return g_;
}

}  // namespace trnsim::tile
