#include "compiler/kernels/builder.h"

#include <algorithm>
#include <bit>
#include <cctype>

#include "compiler/tile/cost.h"

namespace trnsim::kernels {

using isa::Dim;
using tile::KernelError;

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<int64_t> squeeze(const std::vector<int64_t>& s) {
  std::vector<int64_t> r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

// Applies slices to `dims` (axes from `first`), moving `offset`. Returns false with
// `err` set on a bad index.
bool slice_dims(int64_t& offset, std::vector<Dim>& dims, const Ix* idx, size_t n, size_t first,
                std::string& err) {
  std::vector<Dim> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i >= n) {
      out.push_back(dims[i]);
      continue;
    }
    const Ix& x = idx[i];
    const int64_t size = dims[i].size;
    const int64_t stop = std::min(x.stop, size);
    if (x.step < 1) {
      err = "axis " + std::to_string(first + i) + ": step " + std::to_string(x.step) +
            " (steps must be >= 1)";
      return false;
    }
    if (x.start < 0 || x.start >= size || stop <= x.start) {
      err = "axis " + std::to_string(first + i) + ": index range [" + std::to_string(x.start) +
            "," + (x.stop == kEnd ? std::string("end") : std::to_string(x.stop)) +
            ") is empty or outside 0.." + std::to_string(size - 1);
      return false;
    }
    offset += x.start * dims[i].stride;
    if (x.single) continue;
    const int64_t len = (stop - x.start + x.step - 1) / x.step;
    out.push_back({dims[i].stride * x.step, static_cast<uint32_t>(len)});
  }
  dims = std::move(out);
  return true;
}

// numpy-style reshape without copying: splits and merges of contiguous dims.
bool reshape_dims(const std::vector<Dim>& old_in, const std::vector<int64_t>& shape,
                  std::vector<Dim>& out) {
  std::vector<Dim> old;
  for (const Dim& d : old_in)
    if (d.size != 1) old.push_back(d);
  std::vector<size_t> nz;
  int64_t total_new = 1, total_old = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) return false;
    total_new *= shape[i];
    if (shape[i] != 1) nz.push_back(i);
  }
  for (const Dim& d : old) total_old *= d.size;
  if (total_new != total_old) return false;
  out.assign(shape.size(), Dim{0, 1});
  size_t oi = 0, ni = 0;
  while (oi < old.size() && ni < nz.size()) {
    int64_t np = shape[nz[ni]], op = old[oi].size;
    size_t oj = oi + 1, nj = ni + 1;
    while (np != op) {
      if (np < op)
        np *= shape[nz[nj++]];
      else
        op *= old[oj++].size;
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (old[k].stride != old[k + 1].stride * static_cast<int64_t>(old[k + 1].size)) return false;
    int64_t stride = old[oj - 1].stride;
    for (size_t k = nj; k-- > ni;) {
      out[nz[k]] = {stride, static_cast<uint32_t>(shape[nz[k]])};
      stride *= shape[nz[k]];
    }
    oi = oj;
    ni = nj;
  }
  return true;
}

struct GDim {
  Dim d;
  int g;
};

// Drops size-1 dims and merges contiguous neighbours of the same group.
std::vector<GDim> merge(const std::vector<GDim>& in) {
  std::vector<GDim> out;
  for (const GDim& x : in) {
    if (x.d.size == 1) continue;
    if (!out.empty() && out.back().g == x.g &&
        out.back().d.stride == x.d.stride * static_cast<int64_t>(x.d.size)) {
      out.back().d = {x.d.stride, out.back().d.size * x.d.size};
    } else {
      out.push_back(x);
    }
  }
  return out;
}

std::vector<int64_t> dims_shape(const std::vector<Dim>& d) {
  std::vector<int64_t> s;
  for (const Dim& x : d) s.push_back(x.size);
  return s;
}

}  // namespace

// ---------------------------------------------------------------- HbmView

HbmView HbmView::operator()(std::initializer_list<Ix> idx) const {
  HbmView v = *this;
  std::string err;
  if (idx.size() > dims_.size())
    b_->fail("view of tensor '" + b_->kernel().tensors[tensor_].name + "' " + shape_str(shape()) +
             ": " + std::to_string(idx.size()) + " indices for " + std::to_string(dims_.size()) +
             " axes");
  if (!slice_dims(v.offset_, v.dims_, idx.begin(), idx.size(), 0, err))
    b_->fail("view of tensor '" + b_->kernel().tensors[tensor_].name + "' " + shape_str(shape()) +
             ": " + err);
  return v;
}

namespace {
// True when `perm` lists each of 0..n-1 exactly once.
bool is_permutation(const std::vector<int>& perm, size_t n) {
  std::vector<bool> used(n);
  if (perm.size() != n) return false;
  for (int p : perm) {
    if (p < 0 || p >= static_cast<int>(n) || used[p]) return false;
    used[p] = true;
  }
  return true;
}
}  // namespace

HbmView HbmView::T() const {
  HbmView v = *this;
  std::reverse(v.dims_.begin(), v.dims_.end());
  return v;
}

HbmView HbmView::permute(const std::vector<int>& perm) const {
  if (!is_permutation(perm, dims_.size()))
    b_->fail("permute of a view of tensor '" + b_->kernel().tensors[tensor_].name +
             "': not a permutation of " + std::to_string(dims_.size()) + " axes");
  HbmView v = *this;
  for (size_t i = 0; i < perm.size(); ++i) v.dims_[i] = dims_[perm[i]];
  return v;
}

HbmView HbmView::broadcast(int axis, int64_t n) const {
  if (axis < 0 || axis > static_cast<int>(dims_.size()) || n < 1)
    b_->fail("broadcast of a view of tensor '" + b_->kernel().tensors[tensor_].name + "': axis " +
             std::to_string(axis) + " / count " + std::to_string(n) + " out of range");
  HbmView v = *this;
  v.dims_.insert(v.dims_.begin() + axis, Dim{0, static_cast<uint32_t>(n)});
  return v;
}

HbmView HbmView::windows(int64_t n, int64_t step) const {
  const tile::Tensor& t = b_->kernel().tensors[tensor_];
  int64_t lo = offset_ + std::min<int64_t>(0, (n - 1) * step), hi = offset_;
  for (const Dim& d : dims_) {
    const int64_t span = (static_cast<int64_t>(d.size) - 1) * d.stride;
    (span < 0 ? lo : hi) += span;
  }
  hi += std::max<int64_t>(0, (n - 1) * step);
  if (n < 1 || lo < 0 || hi >= static_cast<int64_t>(t.elems()))
    b_->fail("windows of a view of tensor '" + t.name + "': " + std::to_string(n) + " shifts of " +
             std::to_string(step) + " leave the tensor");
  HbmView v = *this;
  v.dims_.insert(v.dims_.begin(), Dim{step, static_cast<uint32_t>(n)});
  return v;
}

HbmView HbmView::reshape(const std::vector<int64_t>& shape) const {
  HbmView v = *this;
  if (!reshape_dims(dims_, shape, v.dims_))
    b_->fail("cannot reshape a view of tensor '" + b_->kernel().tensors[tensor_].name + "' " +
             shape_str(this->shape()) + " to " + shape_str(shape) +
             " (element counts differ, or merged axes are not contiguous)");
  return v;
}

std::vector<int64_t> HbmView::shape() const {
  return dims_shape(dims_);
}

int64_t HbmView::elems() const {
  int64_t n = 1;
  for (const Dim& d : dims_) n *= d.size;
  return n;
}

bool HbmView::whole() const {
  if (!b_ || tensor_ < 0 || offset_ != 0) return false;
  if (elems() != static_cast<int64_t>(b_->kernel().tensors[tensor_].elems())) return false;
  int64_t stride = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    if (dims_[i].size == 1) continue;
    if (dims_[i].stride != stride) return false;
    stride *= dims_[i].size;
  }
  return true;
}

isa::AccessPattern HbmView::ap() const {
  const tile::Tensor& t = b_->kernel().tensors[tensor_];
  isa::AccessPattern ap;
  ap.space = isa::MemSpace::hbm;
  ap.dtype = t.dtype;
  ap.offset = static_cast<uint64_t>(offset_) * isa::dtype_size(t.dtype);
  std::vector<GDim> free;
  if (dims_.size() >= 2) {
    ap.partition_count = dims_[0].size;
    ap.partition_stride = dims_[0].size > 1 ? dims_[0].stride : 0;
    for (size_t i = 1; i < dims_.size(); ++i) free.push_back({dims_[i], 0});
  } else {
    ap.partition_count = 1;
    for (const Dim& d : dims_) free.push_back({d, 0});
  }
  free = merge(free);
  if (free.size() > isa::kMaxDims)
    b_->fail("view " + shape_str(shape()) + " of tensor '" + t.name + "' needs " +
             std::to_string(free.size()) +
             " free dims after merging contiguous axes; an access pattern has at most " +
             std::to_string(isa::kMaxDims) + " (split the transfer)");
  ap.ndims = static_cast<uint8_t>(free.size());
  for (size_t i = 0; i < free.size(); ++i) ap.dims[i] = free[i].d;
  return ap;
}

// ---------------------------------------------------------------- TileView

TileView TileView::operator()(std::initializer_list<Ix> idx) const {
  TileView v = *this;
  const std::string& name = b_->kernel().tiles[tile_].name;
  if (idx.size() == 0) return v;
  if (idx.size() > dims_.size() + 1)
    b_->fail("view of tile '" + name + "' " + shape_str(shape()) + ": " +
             std::to_string(idx.size()) + " indices for " + std::to_string(dims_.size() + 1) +
             " axes");
  const Ix& p = *idx.begin();
  const int64_t pstop = std::min<int64_t>(p.stop, pcount_);
  if (p.step != 1 || p.start < 0 || p.start >= pcount_ || pstop <= p.start)
    b_->fail("view of tile '" + name + "' " + shape_str(shape()) +
             ": partition range must be a non-empty [start,stop) inside 0.." +
             std::to_string(pcount_ - 1) + " with step 1");
  v.pstart_ = pstart_ + static_cast<uint32_t>(p.start);
  v.pcount_ = static_cast<uint32_t>(pstop - p.start);
  std::string err;
  if (!slice_dims(v.offset_, v.dims_, idx.begin() + 1, idx.size() - 1, 1, err))
    b_->fail("view of tile '" + name + "' " + shape_str(shape()) + ": " + err);
  return v;
}

TileView TileView::broadcast(int free_axis, int64_t n) const {
  if (free_axis < 0 || free_axis > static_cast<int>(dims_.size()) || n < 1)
    b_->fail("broadcast of a view of tile '" + b_->kernel().tiles[tile_].name + "': free axis " +
             std::to_string(free_axis) + " / count " + std::to_string(n) + " out of range");
  TileView v = *this;
  v.dims_.insert(v.dims_.begin() + free_axis, Dim{0, static_cast<uint32_t>(n)});
  return v;
}

TileView TileView::reshape(const std::vector<int64_t>& shape) const {
  TileView v = *this;
  if (shape.empty() || shape[0] != pcount_ ||
      !reshape_dims(dims_, std::vector<int64_t>(shape.begin() + 1, shape.end()), v.dims_))
    b_->fail("cannot reshape a view of tile '" + b_->kernel().tiles[tile_].name + "' " +
             shape_str(this->shape()) + " to " + shape_str(shape) +
             " (the partition count must stay; free element counts must match and merged axes "
             "be contiguous)");
  return v;
}

TileView TileView::permute(const std::vector<int>& perm) const {
  if (!is_permutation(perm, dims_.size()))
    b_->fail("permute of a view of tile '" + b_->kernel().tiles[tile_].name +
             "': not a permutation of its " + std::to_string(dims_.size()) + " free axes");
  TileView v = *this;
  for (size_t i = 0; i < perm.size(); ++i) v.dims_[i] = dims_[perm[i]];
  return v;
}

std::vector<int64_t> TileView::shape() const {
  std::vector<int64_t> s{pcount_};
  for (const Dim& d : dims_) s.push_back(d.size);
  return s;
}

int64_t TileView::free_elems() const {
  int64_t n = 1;
  for (const Dim& d : dims_) n *= d.size;
  return n;
}

isa::AccessPattern TileView::ap(const std::vector<int>* group) const {
  const tile::Kernel& k = b_->kernel();
  const tile::Tile& t = k.tiles[tile_];
  isa::AccessPattern ap;
  ap.space = k.pools[t.pool].space;
  ap.dtype = t.dtype;
  ap.partition_start = pstart_;
  ap.partition_count = pcount_;
  ap.offset = static_cast<uint64_t>(offset_) * isa::dtype_size(t.dtype);
  std::vector<GDim> free;
  for (size_t i = 0; i < dims_.size(); ++i) free.push_back({dims_[i], group ? (*group)[i] : 0});
  free = merge(free);
  if (free.size() > isa::kMaxDims)
    b_->fail("view " + shape_str(shape()) + " of tile '" + t.name + "' needs " +
             std::to_string(free.size()) +
             " free dims after merging contiguous axes; an access pattern has at most " +
             std::to_string(isa::kMaxDims));
  ap.ndims = static_cast<uint8_t>(free.size());
  for (size_t i = 0; i < free.size(); ++i) ap.dims[i] = free[i].d;
  return ap;
}

// ---------------------------------------------------------------- Builder

Builder::Builder(std::string kernel_name, uint64_t hbm_bytes, int64_t partitions)
    : hbm_bytes_(hbm_bytes), partitions_(partitions) {
  k_.name = std::move(kernel_name);
}

void Builder::fail(const std::string& what) const {
  throw KernelError("kernel '" + k_.name + "': " + what);
}

HbmView Builder::add_tensor(const std::string& name, const std::vector<int64_t>& shape,
                            isa::DType t, isa::TensorRole role) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
  if (!ok) fail("tensor name '" + name + "' is not [A-Za-z_][A-Za-z0-9_.]*");
  if (k_.find_tensor(name) >= 0) fail("tensor '" + name + "' declared twice");
  if (shape.empty()) fail("tensor '" + name + "' needs at least one dimension");
  uint64_t bytes = isa::dtype_size(t);
  for (int64_t d : shape) {
    if (d < 1 || d > std::numeric_limits<uint32_t>::max())
      fail("tensor '" + name + "' has dimension " + std::to_string(d));
    // Checked here so that no later stride or offset product can overflow.
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("tensor '" + name + "' " + shape_str(shape) + " " + std::string(isa::dtype_name(t)) +
           " has more bytes than a 64-bit address can count");
  }
  if (hbm_bytes_ != 0 && bytes > hbm_bytes_)
    fail("tensor '" + name + "' " + shape_str(shape) + " " + std::string(isa::dtype_name(t)) +
         " needs " + std::to_string(bytes) + " bytes, more than the target's " +
         std::to_string(hbm_bytes_) + " bytes of HBM");
  tile::Tensor tt;
  tt.name = name;
  tt.shape = shape;
  tt.dtype = t;
  tt.role = role;
  k_.tensors.push_back(tt);
  HbmView v;
  v.b_ = this;
  v.tensor_ = static_cast<int>(k_.tensors.size()) - 1;
  int64_t stride = 1;
  v.dims_.resize(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    v.dims_[i] = {stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  return v;
}

HbmView Builder::input(const std::string& n, const std::vector<int64_t>& s, isa::DType t) {
  return add_tensor(n, s, t, isa::TensorRole::input);
}
HbmView Builder::output(const std::string& n, const std::vector<int64_t>& s, isa::DType t) {
  return add_tensor(n, s, t, isa::TensorRole::output);
}
HbmView Builder::scratch(const std::string& n, const std::vector<int64_t>& s, isa::DType t) {
  return add_tensor(n, s, t, isa::TensorRole::scratch);
}
HbmView Builder::constant(const std::string& n, const std::vector<int64_t>& s, isa::DType t,
                          const std::vector<float>& values) {
  HbmView v = add_tensor(n, s, t, isa::TensorRole::constant);
  tile::Tensor& tt = k_.tensors.back();
  if (values.size() != tt.elems())
    fail("constant '" + n + "' " + shape_str(s) + " needs " + std::to_string(tt.elems()) +
         " values, got " + std::to_string(values.size()));
  tt.data.resize(tt.bytes());
  isa::from_fp32(t, values.data(), tt.data.data(), values.size());
  return v;
}

PoolRef Builder::pool(const std::string& name, isa::MemSpace space, uint32_t bufs) {
  if (space == isa::MemSpace::hbm) fail("pool '" + name + "': pools live in sbuf or psum");
  if (bufs < 1) fail("pool '" + name + "' needs at least one buffer");
  if (k_.find_pool(name) >= 0) fail("pool '" + name + "' declared twice");
  tile::Pool p;
  p.name = name;
  p.space = space;
  p.bufs = bufs;
  k_.pools.push_back(p);
  pool_tiles_.push_back(0);
  return PoolRef{static_cast<int>(k_.pools.size()) - 1};
}

TileView Builder::tile(PoolRef pool, const std::vector<int64_t>& shape, isa::DType t,
                       const std::string& name) {
  if (pool.id < 0 || pool.id >= static_cast<int>(k_.pools.size())) fail("tile: unknown pool");
  const tile::Pool& p = k_.pools[pool.id];
  const std::string n = name.empty() ? p.name + "." + std::to_string(pool_tiles_[pool.id]) : name;
  if (tile_names_.count(n)) fail("tile '" + n + "' declared twice");
  if (shape.empty() || shape[0] < 1 || shape[0] > partitions_)
    fail("tile '" + n + "' " + shape_str(shape) + ": the first dim is the partition count (1.." +
         std::to_string(partitions_) + ")");
  for (int64_t d : shape)
    if (d < 1 || d > std::numeric_limits<uint32_t>::max())
      fail("tile '" + n + "' " + shape_str(shape) + " has a bad dimension");
  tile::Tile tt;
  tt.name = n;
  tt.pool = pool.id;
  tt.shape = shape;
  tt.dtype = t;
  tt.slot = pool_tiles_[pool.id]++ % p.bufs;
  tile_names_.insert(n);
  k_.tiles.push_back(tt);
  TileView v;
  v.b_ = this;
  v.tile_ = static_cast<int>(k_.tiles.size()) - 1;
  v.pstart_ = 0;
  v.pcount_ = static_cast<uint32_t>(shape[0]);
  int64_t stride = 1;
  v.dims_.resize(shape.size() - 1);
  for (size_t i = shape.size() - 1; i-- > 0;) {
    v.dims_[i] = {stride, static_cast<uint32_t>(shape[i + 1])};
    stride *= shape[i + 1];
  }
  return v;
}

tile::Op& Builder::add_op(isa::Opcode opc, EngineSel e, const char* what) {
  tile::Op op;
  op.id = static_cast<int>(k_.ops.size());
  op.ins.op = opc;
  op.ins.nsrc = isa::opcode_info(opc).nsrc;
  const uint32_t engines = isa::opcode_info(opc).engines;
  if (e) {
    if (!isa::engine_allows(*e, opc))
      fail(std::string(what) + ": the " + std::string(isa::engine_name(*e)) +
           " engine cannot run " + std::string(isa::opcode_name(opc)));
    op.engine = *e;
    op.pinned = true;
  } else if (std::popcount(engines) == 1) {
    op.engine = static_cast<isa::Engine>(std::countr_zero(engines));
  } else {
    op.engine_auto = true;
  }
  k_.ops.push_back(op);
  return k_.ops.back();
}

void Builder::set(tile::Op& op, tile::Slot s, const TileView& v, const std::vector<int>* group) {
  if (v.b_ != this || v.tile_ < 0) fail("operand is not a tile view of this kernel");
  isa::AccessPattern ap = v.ap(group);
  const uint32_t st = ap.partition_start, c = ap.partition_count;
  if (op.ins.op != isa::Opcode::dma_copy && !isa::partition_start_ok(st, c))
    fail(std::string(isa::opcode_name(op.ins.op)) + ": " + std::string(tile::slot_key(op.ins, s)) +
         " uses partitions " + std::to_string(st) + ".." + std::to_string(st + c - 1) +
         " of tile '" + k_.tiles[v.tile_].name +
         "', which breaks the partition-start rule (> 64 partitions start at 0; 33..64 at 0 or "
         "64; <= 32 at 0, 32, 64 or 96)");
  op.ref[s] = v.tile_;
  switch (s) {
    case tile::kDst:
      op.ins.dst = ap;
      break;
    case tile::kSrc0:
    case tile::kSrc1:
    case tile::kSrc2:
      op.ins.src[s - tile::kSrc0] = ap;
      break;
    case tile::kArg0:
      op.ins.arg0.is_ap = true, op.ins.arg0.ap = ap;
      break;
    case tile::kArg1:
      op.ins.arg1.is_ap = true, op.ins.arg1.ap = ap;
      break;
    case tile::kAccum:
      op.ins.has_accum = true, op.ins.accum = ap;
      break;
    default:
      break;
  }
}

void Builder::set(tile::Op& op, tile::Slot s, const HbmView& v) {
  if (v.b_ != this || v.tensor_ < 0) fail("operand is not a tensor view of this kernel");
  op.ref[s] = v.tensor_;
  if (s == tile::kDst)
    op.ins.dst = v.ap();
  else
    op.ins.src[s - tile::kSrc0] = v.ap();
}

void Builder::set_scalar(tile::Op& op, tile::Slot s, const Scalar& v, const char* what) {
  isa::ScalarOperand& so = s == tile::kArg0 ? op.ins.arg0 : op.ins.arg1;
  if (!v.view) {
    so.is_ap = false;
    so.imm = v.imm;
    return;
  }
  if (v.view->free_elems() != 1)
    fail(std::string(what) + ": a per-partition operand must be [P,1], got " +
         shape_str(v.view->shape()));
  set(op, s, *v.view);
}

void Builder::same_shape(const char* what, const TileView& dst, const TileView& src,
                         const char* src_name) const {
  if (dst.partitions() != src.partitions() || dst.free_elems() != src.free_elems())
    fail(std::string(what) + ": " + src_name + " " + shape_str(src.shape()) + " and dst " +
         shape_str(dst.shape()) + " differ in partitions or free elements");
}

void Builder::in_space(const char* what, const char* name, const TileView& v,
                       isa::MemSpace space) const {
  const tile::Tile& t = k_.tiles[v.tile_];
  if (k_.pools[t.pool].space != space)
    fail(std::string(what) + ": " + name + " (tile '" + t.name + "') must be in " +
         std::string(isa::mem_space_name(space)));
}

namespace {
void check_pin(const Builder& b, const tile::Op& op, const char* what) {
  if (op.pinned && !tile::engine_can_run(op, op.engine))
    b.fail(std::string(what) + ": the " + std::string(isa::engine_name(op.engine)) +
           " engine cannot reach PSUM");
}
}  // namespace

// ---- data movement

void Builder::dma(const TileView& dst, const HbmView& src) {
  if (squeeze(dst.shape()) != squeeze(src.shape()))
    fail("dma: dst tile view " + shape_str(dst.shape()) + " and src tensor view " +
         shape_str(src.shape()) + " differ (reshape one of them)");
  in_space("dma", "dst", dst, isa::MemSpace::sbuf);
  tile::Op& op = add_op(isa::Opcode::dma_copy, isa::Engine::dma, "dma");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

void Builder::dma(const HbmView& dst, const TileView& src) {
  if (squeeze(dst.shape()) != squeeze(src.shape()))
    fail("dma: dst tensor view " + shape_str(dst.shape()) + " and src tile view " +
         shape_str(src.shape()) + " differ (reshape one of them)");
  in_space("dma", "src", src, isa::MemSpace::sbuf);
  tile::Op& op = add_op(isa::Opcode::dma_copy, isa::Engine::dma, "dma");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

void Builder::dma(const HbmView& dst, const HbmView& src) {
  if (squeeze(dst.shape()) != squeeze(src.shape()))
    fail("dma: dst tensor view " + shape_str(dst.shape()) + " and src tensor view " +
         shape_str(src.shape()) + " differ");
  // Leading unit axes dropped (same elements, same order): axis 0 becomes the rows,
  // and rows are what split_dma spreads over the DMA engines ([1, heads, S, D] would
  // be one row on one engine).
  auto strip = [](HbmView v) {
    while (v.shape().size() > 1 && v.shape()[0] == 1) v = v({at(0)});
    return v;
  };
  tile::Op& op = add_op(isa::Opcode::dma_copy, isa::Engine::dma, "dma");
  set(op, tile::kDst, strip(dst));
  set(op, tile::kSrc0, strip(src));
}

void Builder::collective(isa::Opcode opc, const HbmView& dst, const HbmView& src,
                         const std::vector<uint32_t>& group) {
  if (!isa::is_collective(opc) || opc == isa::Opcode::barrier)
    fail("collective: " + std::string(isa::opcode_name(opc)) + " is not a data collective");
  tile::Op& op = add_op(opc, isa::Engine::sync, "collective");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
  op.ins.group = group;
}

void Builder::dma(const TileView& dst, const TileView& src) {
  if (squeeze(dst.shape()) != squeeze(src.shape()))
    fail("dma: dst tile view " + shape_str(dst.shape()) + " and src tile view " +
         shape_str(src.shape()) + " differ");
  in_space("dma", "dst", dst, isa::MemSpace::sbuf);
  in_space("dma", "src", src, isa::MemSpace::sbuf);
  tile::Op& op = add_op(isa::Opcode::dma_copy, isa::Engine::dma, "dma");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

// ---- tensor engine

void Builder::matmul(const TileView& dst, const TileView& stationary, const TileView& moving,
                     bool accumulate, bool double_row) {
  in_space("matmul", "dst", dst, isa::MemSpace::psum);
  in_space("matmul", "stationary", stationary, isa::MemSpace::sbuf);
  in_space("matmul", "moving", moving, isa::MemSpace::sbuf);
  // Double-row: the first half of each operand's free elements is K rows 0..P-1,
  // the second rows P..2P-1.
  const int64_t halves = double_row ? 2 : 1;
  const int64_t K = stationary.partitions(), M = stationary.free_elems() / halves,
                N = moving.free_elems() / halves;
  if (double_row && (stationary.free_elems() % 2 || moving.free_elems() % 2))
    fail("matmul: double_row needs two equal K halves in each operand's free elements");
  if (k_.tiles[dst.tile()].dtype != isa::DType::fp32) fail("matmul: dst must be an fp32 PSUM tile");
  if (moving.partitions() != K)
    fail("matmul: stationary has K=" + std::to_string(K) + " partitions, moving has " +
         std::to_string(moving.partitions()));
  if (K > partitions_ || M > partitions_ || N > 512)
    fail("matmul: [K,M,N]=[" + std::to_string(K) + "," + std::to_string(M) + "," +
         std::to_string(N) + "] exceeds K,M <= " + std::to_string(partitions_) +
         ", N <= 512 (tile the matmul)");
  if (dst.partitions() != M || dst.free_elems() != N)
    fail("matmul: dst " + shape_str(dst.shape()) + " but stationary^T @ moving is [" +
         std::to_string(M) + "," + std::to_string(N) + "]");
  const isa::DType st = k_.tiles[stationary.tile()].dtype, mv = k_.tiles[moving.tile()].dtype;
  if (!isa::is_float(st) || !isa::is_float(mv) || isa::is_fp8(st) != isa::is_fp8(mv))
    fail("matmul: inputs " + std::string(isa::dtype_name(st)) + " and " +
         std::string(isa::dtype_name(mv)) + ": both float, and both fp8 or neither");
  if (double_row && !isa::is_fp8(st)) fail("matmul: double_row needs fp8 operands");
  tile::Op& op = add_op(isa::Opcode::matmul, isa::Engine::tensor, "matmul");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, stationary);
  set(op, tile::kSrc1, moving);
  op.ins.accumulate = accumulate;
  op.ins.double_row = double_row;
}

void Builder::transpose(const TileView& dst, const TileView& src) {
  in_space("transpose", "dst", dst, isa::MemSpace::psum);
  in_space("transpose", "src", src, isa::MemSpace::sbuf);
  const int64_t P = src.partitions(), F = src.free_elems();
  if (P > partitions_ || F > partitions_)
    fail("transpose: src [P,F] must have P, F <= " + std::to_string(partitions_));
  if (dst.partitions() != F || dst.free_elems() != P)
    fail("transpose: dst " + shape_str(dst.shape()) + " but the transpose of src is [" +
         std::to_string(F) + "," + std::to_string(P) + "]");
  const isa::DType dt = k_.tiles[dst.tile()].dtype, sd = k_.tiles[src.tile()].dtype;
  if (dt != sd && dt != isa::DType::fp32)
    fail("transpose: dst dtype must be the src dtype or fp32");
  tile::Op& op = add_op(isa::Opcode::transpose, isa::Engine::tensor, "transpose");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

// ---- elementwise

void Builder::activation(const TileView& dst, const TileView& src, isa::ActFunc f, Scalar scale,
                         Scalar bias, std::optional<TileView> accum) {
  same_shape("activation", dst, src, "src");
  tile::Op& op = add_op(isa::Opcode::activation, isa::Engine::scalar, "activation");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
  op.ins.func = f;
  set_scalar(op, tile::kArg0, scale, "activation scale");
  set_scalar(op, tile::kArg1, bias, "activation bias");
  if (accum) {
    if (accum->free_elems() != 1 || accum->partitions() != dst.partitions())
      fail("activation: accum must be [" + std::to_string(dst.partitions()) + ",1]");
    set(op, tile::kAccum, *accum);
  }
}

void Builder::tensor_tensor(const TileView& dst, const TileView& in0, const TileView& in1,
                            isa::AluOp alu, EngineSel e) {
  same_shape("tensor_tensor", dst, in0, "in0");
  same_shape("tensor_tensor", dst, in1, "in1");
  tile::Op& op = add_op(isa::Opcode::tensor_tensor, e, "tensor_tensor");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, in0);
  set(op, tile::kSrc1, in1);
  op.ins.op0 = alu;
  check_pin(*this, op, "tensor_tensor");
}

void Builder::tensor_scalar(const TileView& dst, const TileView& src, isa::AluOp op0, Scalar arg0,
                            const TensorScalarOpts& o) {
  same_shape("tensor_scalar", dst, src, "src");
  tile::Op& op = add_op(isa::Opcode::tensor_scalar, o.engine, "tensor_scalar");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
  op.ins.op0 = op0;
  op.ins.op1 = o.op1;
  op.ins.reverse0 = o.reverse0;
  op.ins.reverse1 = o.reverse1;
  set_scalar(op, tile::kArg0, arg0, "tensor_scalar arg0");
  set_scalar(op, tile::kArg1, o.arg1, "tensor_scalar arg1");
  if (o.accum) {
    if (o.accum->free_elems() != 1 || o.accum->partitions() != dst.partitions())
      fail("tensor_scalar: accum must be [" + std::to_string(dst.partitions()) + ",1]");
    set(op, tile::kAccum, *o.accum);
    op.ins.accum_op = o.accum_op;
  }
  check_pin(*this, op, "tensor_scalar");
}

void Builder::tensor_reduce(const TileView& dst, const TileView& src, isa::AluOp alu,
                            const std::vector<int>& free_axes, EngineSel e) {
  const size_t nd = src.shape().size() - 1;
  std::vector<int> group(nd, 0);
  for (int a : free_axes) {
    if (a < 0 || a >= static_cast<int>(nd))
      fail("tensor_reduce: axis " + std::to_string(a) + " but src " + shape_str(src.shape()) +
           " has " + std::to_string(nd) + " free axes");
    group[a] = 1;
  }
  int64_t kept = 1;
  const auto ss = src.shape();
  for (size_t i = 0; i < nd; ++i)
    if (!group[i]) kept *= ss[i + 1];
  if (dst.partitions() != src.partitions() || dst.free_elems() != kept)
    fail("tensor_reduce: dst " + shape_str(dst.shape()) + " must be [" +
         std::to_string(src.partitions()) + "," + std::to_string(kept) +
         "] (src partitions, kept elements)");
  if (alu != isa::AluOp::add && alu != isa::AluOp::max && alu != isa::AluOp::min)
    fail("tensor_reduce: op must be add, max or min");
  // Group ids alternate at every reduced/kept switch so that merging never joins
  // a reduced axis with a kept one; then the reduced merged dims form the mask.
  std::vector<int> runs(nd, 0);
  int run = 0;
  for (size_t i = 0; i < nd; ++i) {
    if (i > 0 && group[i] != group[i - 1]) ++run;
    runs[i] = run * 2 + group[i];
  }
  tile::Op& op = add_op(isa::Opcode::tensor_reduce, e, "tensor_reduce");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src, &runs);
  // Recover which merged dims are reduced: merge again, tracking groups.
  std::vector<GDim> g;
  for (size_t i = 0; i < nd; ++i) g.push_back({src.dims_[i], runs[i]});
  g = merge(g);
  op.ins.axes = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].g % 2) op.ins.axes |= static_cast<uint8_t>(1u << i);
  op.ins.op0 = alu;
  check_pin(*this, op, "tensor_reduce");
}

void Builder::partition_reduce(const TileView& dst, const TileView& src, isa::AluOp alu) {
  if (dst.free_elems() != src.free_elems())
    fail("partition_reduce: dst and src need the same free elements");
  tile::Op& op = add_op(isa::Opcode::partition_reduce, isa::Engine::gpsimd, "partition_reduce");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
  op.ins.op0 = alu;
  in_space("partition_reduce", "dst", dst, isa::MemSpace::sbuf);
  in_space("partition_reduce", "src", src, isa::MemSpace::sbuf);
}

void Builder::partition_broadcast(const TileView& dst, const TileView& src) {
  if (src.partitions() != 1 || dst.free_elems() != src.free_elems())
    fail("partition_broadcast: src must be one partition with dst's free elements");
  in_space("partition_broadcast", "dst", dst, isa::MemSpace::sbuf);
  in_space("partition_broadcast", "src", src, isa::MemSpace::sbuf);
  tile::Op& op =
      add_op(isa::Opcode::partition_broadcast, isa::Engine::gpsimd, "partition_broadcast");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

void Builder::tensor_copy(const TileView& dst, const TileView& src, EngineSel e) {
  same_shape("tensor_copy", dst, src, "src");
  tile::Op& op = add_op(isa::Opcode::tensor_copy, e, "tensor_copy");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
  check_pin(*this, op, "tensor_copy");
}

void Builder::memset(const TileView& dst, float value, EngineSel e) {
  tile::Op& op = add_op(isa::Opcode::memset, e, "memset");
  set(op, tile::kDst, dst);
  op.ins.arg0.imm = value;
  check_pin(*this, op, "memset");
}

namespace {
// Steps per dst free axis -> per access-pattern dim (no merging: steps are per dim).
void set_steps(const Builder& b, const char* what, const TileView& dst,
               const std::vector<int32_t>& steps, isa::Instruction& in) {
  const auto s = dst.shape();
  if (steps.size() > s.size() - 1)
    b.fail(std::string(what) + ": " + std::to_string(steps.size()) + " steps for " +
           std::to_string(s.size() - 1) + " free axes");
  in.steps = {};
  int k = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] == 1) continue;
    if (k >= isa::kMaxDims) b.fail(std::string(what) + ": dst has more than 4 free axes");
    in.steps[k++] = i - 1 < steps.size() ? steps[i - 1] : 0;
  }
}
}  // namespace

void Builder::iota(const TileView& dst, float base, int32_t pstep,
                   const std::vector<int32_t>& steps) {
  in_space("iota", "dst", dst, isa::MemSpace::sbuf);
  const size_t nd = dst.shape().size() - 1;
  std::vector<int> group(nd);
  for (size_t i = 0; i < nd; ++i) group[i] = static_cast<int>(i);  // no merging
  tile::Op& op = add_op(isa::Opcode::iota, isa::Engine::gpsimd, "iota");
  set(op, tile::kDst, dst, &group);
  op.ins.arg0.imm = base;
  op.ins.pstep = pstep;
  set_steps(*this, "iota", dst, steps, op.ins);
}

void Builder::affine_select(const TileView& dst, const TileView& src, isa::AluOp cmp, float base,
                            int32_t pstep, const std::vector<int32_t>& steps, float fill) {
  same_shape("affine_select", dst, src, "src");
  in_space("affine_select", "dst", dst, isa::MemSpace::sbuf);
  in_space("affine_select", "src", src, isa::MemSpace::sbuf);
  const size_t nd = dst.shape().size() - 1;
  std::vector<int> group(nd);
  for (size_t i = 0; i < nd; ++i) group[i] = static_cast<int>(i);
  tile::Op& op = add_op(isa::Opcode::affine_select, isa::Engine::gpsimd, "affine_select");
  set(op, tile::kDst, dst, &group);
  set(op, tile::kSrc0, src);
  op.ins.op0 = cmp;
  op.ins.arg0.imm = base;
  op.ins.pstep = pstep;
  op.ins.fill = fill;
  set_steps(*this, "affine_select", dst, steps, op.ins);
}

void Builder::select(const TileView& dst, const TileView& pred, const TileView& on_true,
                     const TileView& on_false, EngineSel e) {
  same_shape("select", dst, pred, "pred");
  same_shape("select", dst, on_true, "on_true");
  same_shape("select", dst, on_false, "on_false");
  tile::Op& op = add_op(isa::Opcode::select, e, "select");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, pred);
  set(op, tile::kSrc1, on_true);
  set(op, tile::kSrc2, on_false);
  check_pin(*this, op, "select");
}

void Builder::bn_stats(const TileView& dst, const TileView& src) {
  if (dst.partitions() != src.partitions() || dst.free_elems() != 3)
    fail("bn_stats: dst must be [" + std::to_string(src.partitions()) + ",3]");
  tile::Op& op = add_op(isa::Opcode::bn_stats, isa::Engine::vector, "bn_stats");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

void Builder::bn_aggr(const TileView& dst, const TileView& src) {
  if (dst.partitions() != src.partitions() || dst.free_elems() != 2 || src.free_elems() % 3 != 0)
    fail("bn_aggr: dst must be [P,2] and src [P,3k] with the same P");
  tile::Op& op = add_op(isa::Opcode::bn_aggr, isa::Engine::vector, "bn_aggr");
  set(op, tile::kDst, dst);
  set(op, tile::kSrc0, src);
}

namespace {

// The `# ...` comment of each `%ID` line of tile-IR text, by op id.
std::map<int, std::string> op_comments(std::string_view text) {
  std::map<int, std::string> r;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] != '%') continue;
    const size_t hash = line.find('#');
    if (hash == std::string_view::npos) continue;
    int id = 0;
    size_t i = 1;
    for (; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i)
      id = id * 10 + (line[i] - '0');
    if (i == 1 || id < 0) continue;
    std::string_view c = line.substr(hash + 1);
    while (!c.empty() && std::isspace(static_cast<unsigned char>(c.front()))) c.remove_prefix(1);
    while (!c.empty() && std::isspace(static_cast<unsigned char>(c.back()))) c.remove_suffix(1);
    if (!c.empty()) r[id] = std::string(c);
  }
  return r;
}

}  // namespace

void Builder::splice(const tile::Kernel& sub, const std::map<int, HbmView>& bind,
                     const std::string& prefix, const std::string& origin,
                     std::string_view sub_text) {
  std::vector<int> tensor_map(sub.tensors.size(), -1);
  for (size_t i = 0; i < sub.tensors.size(); ++i) {
    const tile::Tensor& t = sub.tensors[i];
    auto it = bind.find(static_cast<int>(i));
    if (it == bind.end()) {
      if (t.role == isa::TensorRole::input || t.role == isa::TensorRole::output)
        fail(origin + ": " + std::string(isa::tensor_role_name(t.role)) + " tensor '" + t.name +
             "' is bound to no value");
      HbmView v = add_tensor(prefix + t.name, t.shape, t.dtype,
                             t.role == isa::TensorRole::constant ? isa::TensorRole::constant
                                                                 : isa::TensorRole::scratch);
      k_.tensors[v.tensor_].data = t.data;
      tensor_map[i] = v.tensor_;
      continue;
    }
    const HbmView& v = it->second;
    const tile::Tensor& dst = k_.tensors.at(v.tensor_);
    if (!v.whole() || dst.dtype != t.dtype || static_cast<uint64_t>(v.elems()) != t.elems())
      fail(origin + ": tensor '" + t.name + "' " + shape_str(t.shape) + " " +
           std::string(isa::dtype_name(t.dtype)) + " cannot address '" + dst.name + "' " +
           shape_str(dst.shape) + " " + std::string(isa::dtype_name(dst.dtype)) +
           (v.whole() ? "" : " (only part of it)"));
    tensor_map[i] = v.tensor_;
  }
  std::vector<int> pool_map(sub.pools.size());
  for (size_t p = 0; p < sub.pools.size(); ++p) {
    const tile::Pool& sp = sub.pools[p];
    pool_map[p] = pool(prefix + sp.name, sp.space, sp.bufs).id;
  }
  const int tile_base = static_cast<int>(k_.tiles.size());
  for (const tile::Tile& st : sub.tiles) {
    tile::Tile t = st;
    t.name = prefix + st.name;
    t.pool = pool_map.at(st.pool);
    t.addr = -1;
    tile_names_.insert(t.name);
    k_.tiles.push_back(t);
    ++pool_tiles_[t.pool];
  }
  const std::map<int, std::string> notes =
      sub_text.empty() ? std::map<int, std::string>{} : op_comments(sub_text);
  for (const tile::Op& so : sub.ops) {
    tile::Op op = so;
    op.id = static_cast<int>(k_.ops.size());
    for (const tile::Operand& o : tile::operands(so)) {
      if (o.ref < 0) continue;
      op.ref[o.slot] = o.ap->space == isa::MemSpace::hbm ? tensor_map.at(o.ref) : tile_base + o.ref;
    }
    auto note = notes.find(so.id);
    k_.op_origin[op.id] = origin + (note == notes.end() ? "" : " at " + note->second);
    k_.ops.push_back(op);
  }
}

tile::Kernel Builder::finish() {
  tile::verify(k_);
  tile::Kernel out = std::move(k_);
  k_ = tile::Kernel{};
  k_.name = out.name;
  pool_tiles_.clear();
  tile_names_.clear();
  return out;
}

}  // namespace trnsim::kernels
