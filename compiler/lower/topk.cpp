// TopK on the vector engines. The input is viewed as [R, C] with C the TopK axis
// (a strided HBM -> HBM DMA first puts the axis last when no view can), R onto
// partitions in tiles. A row tile stays resident in SBUF and the k results come out
// one per round, each a few instructions over the row:
//
//   m    = max(w)                          (tensor_reduce)
//   cand = (w == m) * -C + base            (tensor_scalar, tensor_tensor)
//   idx  = min(cand)                       (tensor_reduce)
//   hit  = (iota == idx) * C               (tensor_scalar)
//   w    = hit ? -inf : w;  base += hit    (select, tensor_tensor)
//
// base starts as iota + C and grows by C where an element was taken, so `cand` is
// the element's index exactly where it equals the maximum and was not taken yet,
// and at least C elsewhere: the minimum is the lowest index of the maximum (ONNX:
// among equal values the lower index comes first), even when the remaining values
// are -inf like the taken ones. Indices stay exact in fp32 (C is far below 2^23).
// largest=0 runs on -x and negates the values back. The results are always sorted
// (sorted=0 allows any order). A NaN ranks above every number for the largest and
// below for the smallest, as in the reference; it works as +-inf in the row, so a
// row holding both NaN and an infinity of that sign orders them by index.
#include <algorithm>
#include <limits>

#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::HbmView;
using kernels::sl;
using kernels::TensorScalarOpts;
using kernels::TileView;

namespace {

// k rounds of about seven instructions over the row each: beyond this many the
// host's sort is the better place (and the instruction stream grows with k).
constexpr int64_t kTopKMaxK = 256;
// Rows [p, C] in SBUF at once: the resident row, its keys and index base (2
// buffers each), iota and the +-inf rows, and two per-round temporaries (2
// buffers each), the NaN substitution's mask among them.
constexpr uint64_t kTopKRowTiles = 14;

}  // namespace

void lower_topk(Ctx& c, const ir::Node& n) {
  // ArgMax/ArgMin: TopK's indices for k = 1 (the output's shape, with or without
  // keepdims, holds the same elements as [.., 1, ..]).
  const bool arg = n.op == "ArgMax" || n.op == "ArgMin";
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* vv = arg ? nullptr : n.outputs.at(0);
  const ir::Value* iv = arg ? n.outputs.at(0) : n.outputs.size() > 1 ? n.outputs[1] : nullptr;
  // The last index of the maximum instead of the first (ArgMax's select_last_index).
  const bool last = arg && n.attr_int("select_last_index") != 0;
  const ir::Shape xs = xv->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0) unsupported(n, "input must have rank >= 1");
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) unsupported(n, "axis out of range");
  const int64_t k = arg ? 1 : n.attr_int("k");
  const bool largest = arg ? n.op == "ArgMax" : n.attr_int("largest") != 0;
  const int64_t C = xs[axis];
  if (k < 1) unsupported(n, "k = " + std::to_string(k) + " gives no elements");
  if (k > kTopKMaxK)
    unsupported(n, "k = " + std::to_string(k) + " is above " + std::to_string(kTopKMaxK) +
                       ": one vector-engine round per result would be slower than a sort");
  // SBUF per partition: kTopKRowTiles rows of C fp32 and nine [k] result rows.
  const uint64_t budget = c.target.sbuf_partition_bytes * 3 / 4;
  if ((static_cast<uint64_t>(C) * kTopKRowTiles + 9 * static_cast<uint64_t>(k)) * 4 > budget)
    unsupported(n, "the TopK axis holds " + std::to_string(C) +
                       " elements: rows that long do not stay resident in SBUF (at most about " +
                       std::to_string(budget / (4 * (kTopKRowTiles + 9))) + ")");
  // Keys and bases (index + 0.25, up to 3C) stay exact in fp32.
  if (C >= (int64_t{1} << 19)) unsupported(n, "the TopK axis is too long for exact fp32 indices");

  // [R, C] views with the TopK axis last; outputs [R, k].
  std::vector<int> perm;
  int64_t R = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(static_cast<int>(d)), R *= xs[d];
  perm.push_back(static_cast<int>(axis));
  std::vector<int> inv(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inv[perm[d]] = static_cast<int>(d);
  std::vector<int64_t> pshape, oshape, poshape;
  for (int d : perm) pshape.push_back(xs[d]);
  poshape = pshape;
  poshape.back() = k;
  oshape = xs;
  oshape[axis] = k;

  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  HbmView X;
  try {
    X = c.view(xv).reshape(xs).permute(perm).reshape({R, C});
  } catch (const tile::KernelError&) {
    const HbmView t = c.b.scratch(pfx + ".xT", pshape, DType::fp32);
    c.b.dma(t, c.view(xv).reshape(xs).permute(perm));
    X = t.reshape({R, C});
  }
  // An output whose [R, k] view is not expressible is written to a scratch in the
  // permuted order and moved back at the end.
  struct Out {
    const ir::Value* v = nullptr;
    HbmView Y;
    std::optional<HbmView> scratch;
  };
  auto out_view = [&](const ir::Value* v, const char* tag) {
    Out o{v, {}, {}};
    if (!v) return o;
    try {
      o.Y = c.view(v).reshape(oshape).permute(perm).reshape({R, k});
    } catch (const tile::KernelError&) {
      o.scratch = c.b.scratch(pfx + tag, poshape, DType::fp32);
      o.Y = o.scratch->reshape({R, k});
    }
    return o;
  };
  const Out vals = out_view(vv, ".valT");
  const Out idxs = out_view(iv, ".idxT");

  const int64_t parts = c.target.partitions;
  const int64_t P = std::min(parts, R);
  const auto cp = c.b.pool(pfx + ".const", isa::MemSpace::sbuf, 4);
  const auto rp = c.b.pool(pfx + ".row", isa::MemSpace::sbuf, 6);
  const auto tp = c.b.pool(pfx + ".tmp", isa::MemSpace::sbuf, 4);
  const auto op = c.b.pool(pfx + ".out", isa::MemSpace::sbuf, 8);
  const TileView iota = c.b.tile(cp, {P, C}, DType::fp32);
  c.b.iota(iota, 0.0f, 0, {1});
  const TileView ninf = c.b.tile(cp, {P, C}, DType::fp32);
  c.b.memset(ninf, -std::numeric_limits<float>::infinity());
  // What a NaN becomes in the working row: above everything for the largest, below
  // for the smallest (the row is negated then), as the reference ranks NaN.
  TileView subst = ninf;
  if (largest) {
    subst = c.b.tile(cp, {P, C}, DType::fp32);
    c.b.memset(subst, std::numeric_limits<float>::infinity());
  }
  const TileView nanrow = c.b.tile(cp, {P, k}, DType::fp32);
  c.b.memset(nanrow, std::numeric_limits<float>::quiet_NaN());
  const float fc = static_cast<float>(C);

  for (int64_t r0 = 0; r0 < R; r0 += parts) {
    const int64_t p = std::min(parts, R - r0);
    const TileView io = iota({sl(0, p), all()});
    const TileView ni = ninf({sl(0, p), all()});
    const TileView w = c.b.tile(rp, {p, C}, DType::fp32);
    c.b.dma(w, X({sl(r0, r0 + p), all()}));
    if (!largest) c.b.tensor_scalar(w, w, AluOp::mul, -1.0f);
    // key = index + 0.25 where x is NaN: the picks keep their order, and the
    // fraction marks a NaN pick (its value is NaN) until the indices are rounded.
    const TileView key = c.b.tile(rp, {p, C}, DType::fp32);
    {
      const TileView isnan = c.b.tile(tp, {p, C}, DType::fp32);
      c.b.tensor_tensor(isnan, w, w, AluOp::ne);
      c.b.select(w, isnan, subst({sl(0, p), all()}), w);
      c.b.tensor_scalar(key, isnan, AluOp::mul, 0.25f);
      c.b.tensor_tensor(key, key, io, AluOp::add);
    }
    const TileView base = c.b.tile(rp, {p, C}, DType::fp32);
    c.b.tensor_scalar(base, key, AluOp::add, last ? 1.0f : fc);
    const TileView vt = c.b.tile(op, {p, k}, DType::fp32);
    const TileView it = c.b.tile(op, {p, k}, DType::fp32);
    if (last) {  // k = 1: max of (w == m) * (index + 1), less 1
      const TileView m = vt({all(), sl(0, 1)});
      c.b.tensor_reduce(m, w, AluOp::max, {0});
      const TileView cand = c.b.tile(tp, {p, C}, DType::fp32);
      c.b.tensor_scalar(cand, w, AluOp::eq, m);
      c.b.tensor_tensor(cand, cand, base, AluOp::mul);
      c.b.tensor_reduce(it, cand, AluOp::max, {0});
      c.b.tensor_scalar(it, it, AluOp::add, -1.0f);
    }
    for (int64_t j = 0; j < k && !last; ++j) {
      const TileView m = vt({all(), sl(j, j + 1)});
      const TileView ix = it({all(), sl(j, j + 1)});
      c.b.tensor_reduce(m, w, AluOp::max, {0});
      const TileView cand = c.b.tile(tp, {p, C}, DType::fp32);
      TensorScalarOpts eq_scaled;
      eq_scaled.op1 = AluOp::mul;
      eq_scaled.arg1 = -fc;
      c.b.tensor_scalar(cand, w, AluOp::eq, m, eq_scaled);
      c.b.tensor_tensor(cand, cand, base, AluOp::add);
      c.b.tensor_reduce(ix, cand, AluOp::min, {0});
      if (j + 1 == k) break;  // nothing to mask after the last round
      const TileView hit = c.b.tile(tp, {p, C}, DType::fp32);
      TensorScalarOpts scaled;
      scaled.op1 = AluOp::mul;
      scaled.arg1 = fc;
      c.b.tensor_scalar(hit, key, AluOp::eq, ix, scaled);
      c.b.select(w, hit, ni, w);
      c.b.tensor_tensor(base, base, hit, AluOp::add);
    }
    if (!largest) c.b.tensor_scalar(vt, vt, AluOp::mul, -1.0f);
    {
      // Round the indices ((i + 2^23) - 2^23 drops the 0.25); a NaN pick's value is NaN.
      const TileView rounded = c.b.tile(op, {p, k}, DType::fp32);
      c.b.tensor_scalar(rounded, it, AluOp::add, 0x1p23f);
      c.b.tensor_scalar(rounded, rounded, AluOp::add, -0x1p23f);
      const TileView picked_nan = c.b.tile(op, {p, k}, DType::fp32);
      c.b.tensor_tensor(picked_nan, it, rounded, AluOp::ne);
      c.b.select(vt, picked_nan, nanrow({sl(0, p), all()}), vt);
      c.b.tensor_copy(it, rounded);
    }
    if (vals.v) c.b.dma(vals.Y({sl(r0, r0 + p), all()}), vt);
    if (idxs.v) c.b.dma(idxs.Y({sl(r0, r0 + p), all()}), it);
  }
  for (const Out* o : {&vals, &idxs})
    if (o->v && o->scratch) c.b.dma(c.view(o->v).reshape(oshape), o->scratch->permute(inv));
}

}  // namespace trnsim::lower
