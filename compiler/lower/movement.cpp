// Data movement and Cast. Concat, Split, Slice, Pad, Expand, Tile and Gather with
// constant indices are HBM -> HBM DMAs over strided views (the DMA engines do the
// addressing; nothing passes through the compute engines). Gather of run-time
// indices has no indirect DMA to use: a one-hot matrix built on chip (iota +
// is-equal) multiplies the table on the tensor engine in fp32, which is exact.
// Cast converts between fp32, integer and bool values, which all live on the
// device as fp32 (hbm_type in lower.cpp).
#include <algorithm>
#include <cmath>

#include "compiler/ir/ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::at;
using kernels::HbmView;
using kernels::sl;
using kernels::TileView;

namespace {

// DMAs one node may take: index maps that cut into more runs are refused.
constexpr int64_t kMaxDmas = 1024;

std::string pool_prefix(const Ctx& c) {
  return c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
}

// `axis` first, the others in order; and its inverse.
std::vector<int> front_perm(size_t rank, int axis) {
  std::vector<int> p{axis};
  for (int i = 0; i < static_cast<int>(rank); ++i)
    if (i != axis) p.push_back(i);
  return p;
}
std::vector<int> inverse(const std::vector<int>& p) {
  std::vector<int> q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[p[i]] = static_cast<int>(i);
  return q;
}

// Indices start, start+step, ... (len of them) along `axis`.
HbmView slice_axis(const HbmView& v, int axis, int64_t start, int64_t len, int64_t step) {
  const std::vector<int> p = front_perm(v.shape().size(), axis);
  return v.permute(p)({sl(start, start + (len - 1) * step + 1, step)}).permute(inverse(p));
}

// `len` copies of index i along `axis` (stride 0).
HbmView repeat_axis(const HbmView& v, int axis, int64_t i, int64_t len) {
  const std::vector<int> p = front_perm(v.shape().size(), axis);
  return v.permute(p)({at(i)}).broadcast(axis, len);
}

bool expressible(const HbmView& v) {
  try {
    v.ap();
    return true;
  } catch (const tile::KernelError&) {
    return false;
  }
}

// dst <- src as one DMA, or, when a view has more free dims than an access
// pattern takes, one DMA per index of the outermost axis (recursively).
void dma_views(Ctx& c, const ir::Node& n, const HbmView& dst, const HbmView& src, int64_t& dmas) {
  if (expressible(dst) && expressible(src)) {
    if (++dmas > kMaxDmas)
      unsupported(n, "the views need more than " + std::to_string(kMaxDmas) + " DMAs");
    c.b.dma(dst, src);
    return;
  }
  const std::vector<int64_t> s = dst.shape();
  if (s.size() < 2 || s != src.shape())
    unsupported(n, "the DMA views " + ir::shape_str(s) + " do not map onto access patterns");
  for (int64_t i = 0; i < s[0]; ++i) dma_views(c, n, dst({at(i)}), src({at(i)}), dmas);
}

// Output index j along `axis` reads input index src[j]; -1 reads the fill value.
struct AxisMap {
  int axis;
  std::vector<int64_t> src;
};

// A maximal stretch of an index map that one view expresses: len indices from i0
// with a step >= 0 (0: one index repeated), or fill (i0 < 0).
struct Run {
  int64_t j0, len, i0, step;
};

std::vector<Run> runs_of(const std::vector<int64_t>& src) {
  std::vector<Run> runs;
  const int64_t n = static_cast<int64_t>(src.size());
  for (int64_t j = 0; j < n;) {
    Run r{j, 1, src[j], 1};
    if (r.i0 < 0) {
      while (j + r.len < n && src[j + r.len] < 0) ++r.len;
    } else {
      if (j + 1 < n && src[j + 1] >= r.i0) r.step = src[j + 1] - r.i0;
      while (j + r.len < n && src[j + r.len] == r.i0 + r.step * r.len) ++r.len;
    }
    runs.push_back(r);
    j += r.len;
  }
  return runs;
}

bool identity_map(const std::vector<int64_t>& src, int64_t in_dim) {
  if (static_cast<int64_t>(src.size()) != in_dim) return false;
  for (int64_t j = 0; j < in_dim; ++j)
    if (src[j] != j) return false;
  return true;
}

// Copies src to dst through per-axis index maps, one DMA per combination of runs.
class Mover {
 public:
  Mover(Ctx& c, const ir::Node& n, float fill) : c_(c), n_(n), fill_(fill) {}

  void copy(const HbmView& dst, const HbmView& src, const std::vector<AxisMap>& maps) {
    const int64_t dmas = count(maps, 0);
    if (dmas > kMaxDmas)
      unsupported(n_, "the index pattern needs more than " + std::to_string(kMaxDmas) +
                          " DMAs: reversed or scattered indices cost one DMA each");
    emit(dst, src, maps, 0);
  }

 private:
  int64_t count(const std::vector<AxisMap>& maps, size_t k) const {
    if (k == maps.size()) return 1;
    int64_t total = 0;
    for (const Run& r : runs_of(maps[k].src)) {
      total += r.i0 < 0 ? 1 : count(maps, k + 1);
      if (total > kMaxDmas) break;
    }
    return total;
  }

  void emit(const HbmView& dst, const HbmView& src, const std::vector<AxisMap>& maps, size_t k) {
    if (k == maps.size()) {
      dma_views(c_, n_, dst, src, dmas_);
      return;
    }
    const int axis = maps[k].axis;
    for (const Run& r : runs_of(maps[k].src)) {
      const HbmView d = slice_axis(dst, axis, r.j0, r.len, 1);
      if (r.i0 < 0) {
        fill(d);
        continue;
      }
      emit(d,
           r.step == 0 ? repeat_axis(src, axis, r.i0, r.len)
                       : slice_axis(src, axis, r.i0, r.len, r.step),
           maps, k + 1);
    }
  }

  // Writes the fill value over a region: one SBUF element viewed with stride 0.
  void fill(const HbmView& d) {
    if (!fill_tile_) {
      const kernels::PoolRef p = c_.b.pool(pool_prefix(c_) + ".fill", isa::MemSpace::sbuf, 1);
      fill_tile_ = c_.b.tile(p, {1, 1}, DType::fp32);
      c_.b.memset(*fill_tile_, fill_);
    }
    const std::vector<int64_t> s = d.shape();
    if (!expressible(d) && s.size() > 1) {  // too many free dims: split the outermost
      for (int64_t i = 0; i < s[0]; ++i) fill(d({at(i)}));
      return;
    }
    if (++dmas_ > kMaxDmas)
      unsupported(n_, "the fill needs more than " + std::to_string(kMaxDmas) + " DMAs");
    TileView t = (*fill_tile_)({all(), at(0)});
    for (size_t i = 0; i < s.size(); ++i) t = t.broadcast(static_cast<int>(i), s[i]);
    c_.b.dma(d, t);
  }

  Ctx& c_;
  const ir::Node& n_;
  float fill_;
  int64_t dmas_ = 0;
  std::optional<TileView> fill_tile_;
};

int axis_of(const ir::Node& n, const char* key, size_t rank) {
  return static_cast<int>(ir::normalize_axis(n.attr_int(key), static_cast<int64_t>(rank)));
}

void lower_concat(Ctx& c, const ir::Node& n) {
  const ir::Value* yv = n.outputs.at(0);
  const int axis = axis_of(n, "axis", yv->shape().size());
  const HbmView y = c.view(yv).reshape(yv->shape());
  int64_t off = 0, dmas = 0;
  for (const ir::Value* v : n.inputs) {
    if (!v) continue;
    const int64_t len = v->shape().at(axis);
    if (len == 0) continue;
    dma_views(c, n, slice_axis(y, axis, off, len, 1), c.view(v).reshape(v->shape()), dmas);
    off += len;
  }
}

void lower_split(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const int axis = axis_of(n, "axis", xv->shape().size());
  const HbmView x = c.view(xv).reshape(xv->shape());
  int64_t off = 0, dmas = 0;
  for (const ir::Value* o : n.outputs) {
    const int64_t len = o->shape().at(axis);
    if (len == 0) continue;
    dma_views(c, n, c.view(o).reshape(o->shape()), slice_axis(x, axis, off, len, 1), dmas);
    off += len;
  }
}

void lower_slice(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Shape& s = xv->shape();
  const std::vector<ir::SliceDim> dims = ir::slice_dims(n, s);
  std::vector<AxisMap> maps;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> src;
    for (int64_t j = 0; j < dims[d].count; ++j) src.push_back(dims[d].start + j * dims[d].step);
    if (!identity_map(src, s[d])) maps.push_back({static_cast<int>(d), src});
  }
  Mover(c, n, 0).copy(c.view(n.outputs.at(0)), c.view(xv).reshape(s), maps);
}

void lower_pad(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Shape& s = xv->shape();
  const ir::Shape& os = n.outputs.at(0)->shape();
  const std::vector<int64_t>& pads = n.attr_ints("pads");
  const std::string& mode = n.attr_string("mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    unsupported(n, "pad mode '" + mode + "' is not lowered (constant, edge, reflect are)");
  std::vector<AxisMap> maps;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t dim = s[d];
    std::vector<int64_t> src;
    for (int64_t j = 0; j < os[d]; ++j) {
      int64_t i = j - pads.at(d);
      if (i < 0 || i >= dim) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = i < 0 ? 0 : dim - 1;
        } else if (dim == 1) {
          i = 0;
        } else {  // reflect: mirror without repeating the edge, period 2*(dim-1)
          const int64_t period = 2 * (dim - 1);
          i %= period;
          if (i < 0) i += period;
          if (i >= dim) i = period - i;
        }
      }
      src.push_back(i);
    }
    if (!identity_map(src, dim)) maps.push_back({static_cast<int>(d), src});
  }
  Mover(c, n, n.attr_float("value")).copy(c.view(n.outputs.at(0)), c.view(xv).reshape(s), maps);
}

void lower_expand(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Shape& os = n.outputs.at(0)->shape();
  ir::Shape al(os.size() - xv->shape().size(), 1);
  al.insert(al.end(), xv->shape().begin(), xv->shape().end());
  HbmView x = c.view(xv).reshape(al);
  for (size_t a = 0; a < al.size(); ++a)
    if (al[a] == 1 && os[a] != 1) x = repeat_axis(x, static_cast<int>(a), 0, os[a]);
  int64_t dmas = 0;
  dma_views(c, n, c.view(n.outputs.at(0)).reshape(os), x, dmas);
}

void lower_tile(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Shape& s = xv->shape();
  const ir::Shape& os = n.outputs.at(0)->shape();
  std::vector<AxisMap> maps;
  for (size_t d = 0; d < s.size(); ++d) {
    if (os[d] == s[d]) continue;
    std::vector<int64_t> src;
    for (int64_t j = 0; j < os[d]; ++j) src.push_back(j % s[d]);
    maps.push_back({static_cast<int>(d), src});
  }
  Mover(c, n, 0).copy(c.view(n.outputs.at(0)).reshape(os), c.view(xv).reshape(s), maps);
}

// Gather with run-time indices on axis 0: out[t, :] = sum_v (idx[t] == v) * table[v, :].
// Per token tile (the target's partitions) and column chunk (one PSUM bank), vocab
// tiles of a partition count accumulate in PSUM:
// stationary = one-hot [v, t] (indices broadcast to every partition, compared with
// the partition's vocab id from iota), moving = table rows [v, cols].
void lower_gather_runtime(Ctx& c, const ir::Node& n) {
  const ir::Value* tv = n.inputs.at(0);
  const ir::Value* iv = n.inputs.at(1);
  const ir::Shape& ts = tv->shape();
  if (ts.empty()) unsupported(n, "Gather from a scalar");
  const int64_t V = ts[0], D = tv->type.numel() / std::max<int64_t>(V, 1), T = iv->type.numel();
  if (V > (int64_t{1} << 24))
    unsupported(n, "a table of " + std::to_string(V) + " rows: indices are exact up to 2^24");
  const HbmView table = c.view(tv).reshape({V, D});
  const HbmView idx = c.view(iv).reshape({T});
  const HbmView y = c.view(n.outputs.at(0)).reshape({T, D});
  const std::string pfx = pool_prefix(c);
  const kernels::PoolRef ip = c.b.pool(pfx + ".idx", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef hp = c.b.pool(pfx + ".onehot", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef vp = c.b.pool(pfx + ".vid", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef tp = c.b.pool(pfx + ".table", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef op = c.b.pool(pfx + ".out", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef pp = c.b.pool(pfx + ".psum", isa::MemSpace::psum, 2);
  // Tokens are the matmul's M (PSUM rows), vocab entries its K (SBUF partitions).
  const int64_t tparts = c.target.m_tile(), vparts = c.target.k_tile();
  const int64_t P = std::min<int64_t>(vparts, V);
  const int64_t chunk =
      std::min<int64_t>(c.target.matmul_max_n, static_cast<int64_t>(c.target.psum_bank_bytes / 4));
  for (int64_t t0 = 0; t0 < T; t0 += tparts) {
    const int64_t tt = std::min<int64_t>(tparts, T - t0);
    // The token indices on every partition; negative ones count from the end.
    TileView ix = c.b.tile(ip, {P, tt}, DType::fp32);
    c.b.dma(ix, idx({sl(t0, t0 + tt)}).broadcast(0, P));
    TileView neg = c.b.tile(ip, {P, tt}, DType::fp32);
    kernels::TensorScalarOpts times_v;
    times_v.op1 = AluOp::mul;
    times_v.arg1 = static_cast<float>(V);
    c.b.tensor_scalar(neg, ix, AluOp::lt, 0.0f, times_v);
    c.b.tensor_tensor(ix, ix, neg, AluOp::add);
    for (int64_t d0 = 0; d0 < D; d0 += chunk) {
      const int64_t dc = std::min(chunk, D - d0);
      TileView ps = c.b.tile(pp, {tt, dc}, DType::fp32);
      for (int64_t v0 = 0; v0 < V; v0 += vparts) {
        const int64_t vt = std::min<int64_t>(vparts, V - v0);
        TileView vid = c.b.tile(vp, {vt, 1}, DType::fp32);
        c.b.iota(vid, static_cast<float>(v0), 1, {0});
        TileView oh = c.b.tile(hp, {vt, tt}, DType::fp32);
        c.b.tensor_scalar(oh, ix({sl(0, vt), all()}), AluOp::eq, vid);
        TileView rows = c.b.tile(tp, {vt, dc}, DType::fp32);
        c.b.dma(rows, table({sl(v0, v0 + vt), sl(d0, d0 + dc)}));
        c.b.matmul(ps, oh, rows, v0 > 0);
      }
      TileView o = c.b.tile(op, {tt, dc}, DType::fp32);
      c.b.tensor_copy(o, ps);
      c.b.dma(y({sl(t0, t0 + tt), sl(d0, d0 + dc)}), o);
    }
  }
}

void lower_gather(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* iv = n.inputs.at(1);
  const ir::Shape& s = xv->shape();
  const int axis = axis_of(n, "axis", s.size());
  if (!iv->has_data()) {
    if (axis != 0)
      unsupported(n, "Gather of run-time indices is lowered on axis 0 only (got axis " +
                         std::to_string(axis) + ")");
    // An index beyond [-V, V-1] would match no one-hot row and silently give a row of
    // zeros; the device cannot report it, so indices not proven in range run on the
    // host, whose interpreter checks every index.
    const auto r = c.int_ranges.find(iv);
    if (r == c.int_ranges.end() || r->second.lo < -static_cast<double>(s[axis]) ||
        r->second.hi > static_cast<double>(s[axis] - 1))
      unsupported(n, "indices '" + iv->name + "' known only at run time are not provably in [" +
                         std::to_string(-s[axis]) + ", " + std::to_string(s[axis] - 1) +
                         "] (the device cannot check them; an out-of-range one would give "
                         "zeros)");
    lower_gather_runtime(c, n);
    return;
  }
  std::vector<int64_t> src = iv->data->to_int64s();
  for (int64_t& i : src) {
    if (i < -s[axis] || i >= s[axis])
      unsupported(n, "index " + std::to_string(i) + " is out of range for axis " +
                         std::to_string(axis) + " of size " + std::to_string(s[axis]));
    if (i < 0) i += s[axis];
  }
  ir::Shape os = s;
  os[axis] = static_cast<int64_t>(src.size());
  if (src.empty()) unsupported(n, "an empty index list");
  Mover(c, n, 0).copy(c.view(n.outputs.at(0)).reshape(os), c.view(xv).reshape(s), {{axis, src}});
}

// Cast on fp32-held values: to bool is `!= 0`, float to integer truncates toward
// zero (NaN -> 0), anything else keeps the value.
void lower_cast(Ctx& c, const ir::Node& n) {
  using ir::ElemType;
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* yv = n.outputs.at(0);
  const ElemType from = xv->elem(), to = yv->elem();
  const bool narrow = to == ElemType::int8 || to == ElemType::int16 || to == ElemType::uint8 ||
                      to == ElemType::uint16 || to == ElemType::uint32;
  if (narrow && from != ElemType::boolean)
    unsupported(n, "Cast to " + std::string(ir::elem_type_name(to)) +
                       " (wrap-around or saturation) is not lowered; only fp32, int32, "
                       "int64 and bool results are");
  const bool to_bool = to == ElemType::boolean;
  const bool trunc = ir::is_float(from) && ir::is_integer(to);
  if (!to_bool && !trunc) {  // the fp32 device value is already the result
    c.b.dma(c.view(yv), c.view(xv));
    return;
  }
  const auto [R, C] = rows_cols(xv->shape());
  const HbmView x = c.view(xv).reshape({R, C});
  const HbmView y = c.view(yv).reshape({R, C});
  const std::string pfx = pool_prefix(c);
  const kernels::PoolRef ip = c.b.pool(pfx + ".in", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef wp = c.b.pool(pfx + ".work", isa::MemSpace::sbuf, 24);
  int64_t chunk = 512;
  while (chunk > 16 && static_cast<uint64_t>(chunk) * 4 * 26 > c.target.sbuf_partition_bytes / 2)
    chunk /= 2;
  constexpr float k23 = 8388608.0f;  // 2^23: fp32 values from here on are integers
  const int64_t P = c.target.partitions;
  for (int64_t r0 = 0; r0 < R; r0 += P) {
    const int64_t rt = std::min<int64_t>(P, R - r0);
    for (int64_t c0 = 0; c0 < C; c0 += chunk) {
      const int64_t ct = std::min(chunk, C - c0);
      auto work = [&](DType t = DType::fp32) { return c.b.tile(wp, {rt, ct}, t); };
      TileView xt = c.b.tile(ip, {rt, ct}, DType::fp32);
      c.b.dma(xt, x({sl(r0, r0 + rt), sl(c0, c0 + ct)}));
      TileView res = work();
      if (to_bool) {
        c.b.tensor_scalar(res, xt, AluOp::ne, 0.0f);
      } else {
        // x0 = x, NaN -> 0; a = |x0|; f = floor(min(a, 2^23)) from the int32
        // conversion (round to nearest even) minus 1 where that rounded up, plus
        // the part of a beyond 2^23 (already integral); result = f * sign(x0).
        TileView ok = work(), zero = work(), x0 = work();
        c.b.tensor_tensor(ok, xt, xt, AluOp::eq);
        c.b.memset(zero, 0.0f);
        c.b.select(x0, ok, xt, zero);
        TileView a = work(), ac = work(), ri = work(DType::int32), r = work();
        c.b.activation(a, x0, ActFunc::abs);
        c.b.tensor_scalar(ac, a, AluOp::min, k23);
        c.b.tensor_copy(ri, ac);
        c.b.tensor_copy(r, ri);
        TileView up = work(), f = work(), big = work();
        c.b.tensor_tensor(up, r, ac, AluOp::gt);
        c.b.tensor_tensor(f, r, up, AluOp::sub);
        kernels::TensorScalarOpts clamp0;
        clamp0.op1 = AluOp::max;
        clamp0.arg1 = 0.0f;
        c.b.tensor_scalar(big, a, AluOp::sub, k23, clamp0);
        c.b.tensor_tensor(f, f, big, AluOp::add);
        TileView m2 = work(), fm = work();
        kernels::TensorScalarOpts times_m2;  // -2 where x0 < 0, else 0
        times_m2.op1 = AluOp::mul;
        times_m2.arg1 = -2.0f;
        c.b.tensor_scalar(m2, x0, AluOp::lt, 0.0f, times_m2);
        c.b.tensor_tensor(fm, f, m2, AluOp::mul);
        c.b.tensor_tensor(res, f, fm, AluOp::add);
      }
      c.b.dma(y({sl(r0, r0 + rt), sl(c0, c0 + ct)}), res);
    }
  }
}

}  // namespace

const std::vector<std::string>& movement_ops() {
  static const std::vector<std::string> ops = {"Cast", "Concat", "Expand", "Gather",
                                               "Pad",  "Slice",  "Split",  "Tile"};
  return ops;
}

bool is_movement(const std::string& op) {
  return std::find(movement_ops().begin(), movement_ops().end(), op) != movement_ops().end();
}

void lower_movement(Ctx& c, const ir::Node& n) {
  const std::string& op = n.op;
  for (const ir::Value* o : n.outputs)
    if (o->type.numel() == 0) unsupported(n, "output '" + o->name + "' is empty");
  // A view the access patterns cannot express (more than 4 free dims after
  // merging, e.g. a high-rank concat) is refused rather than failing later.
  try {
    if (op == "Concat")
      lower_concat(c, n);
    else if (op == "Split")
      lower_split(c, n);
    else if (op == "Slice")
      lower_slice(c, n);
    else if (op == "Pad")
      lower_pad(c, n);
    else if (op == "Expand")
      lower_expand(c, n);
    else if (op == "Tile")
      lower_tile(c, n);
    else if (op == "Gather")
      lower_gather(c, n);
    else if (op == "Cast")
      lower_cast(c, n);
    else
      unsupported(n, "not a data-movement op");
  } catch (const tile::KernelError& e) {
    unsupported(n, std::string("the DMA views do not map onto access patterns: ") + e.what());
  }
}

}  // namespace trnsim::lower

namespace trnsim::lower {

namespace {

// Below this many elements a Transpose stays one strided DMA: its ~10 ns per
// element-granular descriptor, spread over 16 DMA engines, costs less than the
// fixed costs of the tensor-engine path (two DMAs, a transpose and a PSUM copy per
// block, about 1.5 us of latency).
constexpr int64_t kTeTransposeMinElems = 4096;

}  // namespace

int64_t te_transpose_min_elems() {
  return kTeTransposeMinElems;
}

TePools te_transpose_pools(Ctx& c) {
  const std::string pfx = pool_prefix(c);
  TePools p;
  p.x = c.b.pool(pfx + ".tx", isa::MemSpace::sbuf, 3);
  p.y = c.b.pool(pfx + ".ty", isa::MemSpace::sbuf, 3);
  p.psum = c.b.pool(pfx + ".tp", isa::MemSpace::psum, 4);
  // L columns per load: up to 16 P (1 MiB fp32 per 128 rows, which amortises the
  // DMA fixed costs), within a sixth of a partition (x and y, 3 buffers each).
  const int64_t P = c.target.partitions;
  p.cols = std::clamp<int64_t>(
      static_cast<int64_t>(c.target.sbuf_partition_bytes / (6 * 4)) / P * P, P, 16 * P);
  return p;
}

void te_transpose(Ctx& c, const TePools& tp, const HbmView& xb, const HbmView& yb, int64_t A,
                  int64_t L) {
  const int64_t P = c.target.partitions, kCols = tp.cols;
  for (int64_t a0 = 0; a0 < A; a0 += P) {
    const int64_t pa = std::min<int64_t>(P, A - a0);
    for (int64_t l0 = 0; l0 < L; l0 += kCols) {
      const int64_t lw = std::min(kCols, L - l0);
      TileView xt = c.b.tile(tp.x, {pa, lw}, DType::fp32);
      c.b.dma(xt, xb({sl(a0, a0 + pa), sl(l0, l0 + lw)}));
      // Full P-column blocks: transposed 4 at a time into one PSUM bank
      // [P, 4, pa], copied out into one SBUF tile [P, full, pa], stored at
      // once; a last partial block [pl, pa] goes on its own.
      const int64_t full = lw / P, tail = lw % P;
      if (full > 0) {
        TileView yt = c.b.tile(tp.y, {P, full, pa}, DType::fp32);
        for (int64_t j0 = 0; j0 < full; j0 += 4) {
          const int64_t nj = std::min<int64_t>(4, full - j0);
          TileView pt = c.b.tile(tp.psum, {P, nj, pa}, DType::fp32);
          for (int64_t j = 0; j < nj; ++j)
            c.b.transpose(pt({all(), kernels::at(j), all()}),
                          xt({all(), sl((j0 + j) * P, (j0 + j + 1) * P)}));
          c.b.tensor_copy(yt({all(), sl(j0, j0 + nj), all()}), pt);
        }
        // Output rows l0 + j*P + p, columns a0..a0+pa: [p, j, a].
        c.b.dma(yb({sl(a0, a0 + pa), sl(l0, l0 + full * P)})
                    .permute({1, 0})
                    .reshape({full, P, pa})
                    .permute({1, 0, 2}),
                yt);
      }
      if (tail > 0) {
        const int64_t t0 = full * P;
        TileView pt = c.b.tile(tp.psum, {tail, pa}, DType::fp32);
        c.b.transpose(pt, xt({all(), sl(t0, lw)}));
        TileView yt = c.b.tile(tp.y, {tail, pa}, DType::fp32);
        c.b.tensor_copy(yt, pt);
        c.b.dma(yb({sl(a0, a0 + pa), sl(l0 + t0, l0 + lw)}).permute({1, 0}), yt);
      }
    }
  }
}

// Transpose. When the innermost axis stays innermost the permutation is a strided
// DMA with contiguous runs. When it moves, a DMA would go element by element, so
// the tensor engine transposes instead: for every index of the other axes (the
// batch), the [A, L] matrix (A = the axis that becomes innermost, L = the input's
// innermost axis) is loaded as contiguous rows, transposed in P x P blocks (P partitions) into
// PSUM, copied out to SBUF and stored as contiguous rows of the [L, A] result.
void lower_transpose(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.input(0);
  const ir::Value* yv = n.outputs.at(0);
  ir::Shape xs = xv->shape();
  const int rank = static_cast<int>(xs.size());
  std::vector<int> perm;
  for (int64_t a : n.attr_ints("perm")) perm.push_back(static_cast<int>(a));
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != rank) unsupported(n, "perm does not match the rank");
  if (xv->type.numel() == 0) unsupported(n, "empty input " + xv->type.str());
  const int a = rank > 0 ? perm[rank - 1] : 0;  // input axis that becomes innermost
  const bool dma_path = rank < 2 || a == rank - 1 || xs[a] == 1 || xs[rank - 1] == 1 ||
                        xv->type.numel() < kTeTransposeMinElems;
  try {
    if (dma_path) {
      // A strided HBM -> HBM copy; the DMA engines do the permutation.
      c.b.dma(c.view(yv), c.view(xv).reshape(xs).permute(perm));
      return;
    }
    // y indexed like x: y_x[i0..] = y[i_perm...].
    std::vector<int> inv(rank);
    for (int k = 0; k < rank; ++k) inv[perm[k]] = k;
    const HbmView yx = c.view(yv).reshape(yv->shape()).permute(inv);
    const HbmView xx = c.view(xv).reshape(xs);
    // Order [batch..., a, last] on both views.
    std::vector<int> order;
    for (int k = 0; k < rank - 1; ++k)
      if (k != a) order.push_back(k);
    order.push_back(a);
    order.push_back(rank - 1);
    const HbmView X = xx.permute(order), Y = yx.permute(order);
    const int nb = rank - 2;
    int64_t B = 1;
    for (int k = 0; k < nb; ++k) B *= xs[order[k]];
    const int64_t A = xs[a], L = xs[rank - 1];

    const TePools tp = te_transpose_pools(c);
    for (int64_t b = 0; b < B; ++b) {
      // The batch index, outermost batch axis first.
      HbmView xb = X, yb = Y;
      {
        int64_t rest = b;
        std::vector<int64_t> idx(nb);
        for (int k = nb - 1; k >= 0; --k) {
          const int64_t s = xs[order[k]];
          idx[k] = rest % s;
          rest /= s;
        }
        for (int k = 0; k < nb; ++k) {
          xb = xb({kernels::at(idx[k])});
          yb = yb({kernels::at(idx[k])});
        }
      }
      te_transpose(c, tp, xb, yb, A, L);
    }
  } catch (const tile::KernelError& e) {
    unsupported(n, std::string("the transpose views do not map onto access patterns: ") + e.what());
  }
}

}  // namespace trnsim::lower
