// Ops that reduce or normalise over some axes: Softmax, LogSoftmax, trn.LayerNorm,
// trn.RMSNorm and ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp.
//
// The input is viewed as [R, C]: R = the kept axes (onto partitions, tiles of up to
// 128 rows), C = the reduced/normalised axes (the free axis). When the kept axes
// and the reduced axes each merge into one strided dim, that view is read (and the
// result written) by strided DMAs; otherwise a strided HBM -> HBM DMA first puts
// the reduced axes last in a scratch tensor (and another puts a normalised result
// back). Rows longer than a chunk that fits SBUF are processed in column chunks:
// pass 1 gathers the row statistics (running max and rescaled sum of exps, bn_stats,
// partial sums), pass 2 reloads the chunks and normalises.
#include <algorithm>
#include <numeric>
#include <set>

#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::HbmView;
using kernels::sl;
using kernels::TensorScalarOpts;
using kernels::TileView;

namespace {

const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> s = {
      "ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",    "ReduceProd",
      "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  return s;
}

bool is_norm(const std::string& op) {
  return op == "trn.LayerNorm" || op == "trn.RMSNorm";
}

int64_t norm_axis(int64_t a, int64_t rank) {
  return a < 0 ? a + rank : a;
}

// bn_stats takes at most this many elements per instruction.
constexpr int64_t kBnChunk = 512;
// Reductions of rows at least this long spread each row over several partitions.
constexpr int64_t kSplitMinCols = 4096;
// The norms normalise in column pieces of this many fp32 (two PSUM banks).
constexpr int64_t kNormSub = 1024;

}  // namespace

const std::vector<std::string>& rowwise_ops() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r(reduce_ops().begin(), reduce_ops().end());
    for (const char* op : {"Softmax", "LogSoftmax", "trn.LayerNorm", "trn.RMSNorm"})
      r.push_back(op);
    std::sort(r.begin(), r.end());
    return r;
  }();
  return v;
}

bool is_rowwise(const std::string& op) {
  return std::binary_search(rowwise_ops().begin(), rowwise_ops().end(), op);
}

void lower_rowwise(Ctx& c, const ir::Node& n) {
  const std::string& op = n.op;
  if (!is_rowwise(op)) unsupported(n, "not a row-wise op");
  const bool reduce = reduce_ops().count(op) != 0;
  // Integers are fp32 on the device: reductions whose integer result truncates a
  // fraction would come out wrong.
  if (ir::is_integer(n.outputs.at(0)->elem()) &&
      (op == "ReduceMean" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp"))
    unsupported(n, "integer " + op + " (truncating) is not lowered yet");
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* yv = n.outputs.at(0);
  ir::Shape xs = xv->shape();
  if (xs.empty()) xs = {1};
  const int64_t rank = static_cast<int64_t>(xs.size());

  // The reduced / normalised axes.
  std::vector<bool> red(rank, false);
  if (reduce) {
    const std::vector<int64_t>& axes = n.attr_ints("axes");
    if (axes.empty()) red.assign(rank, true);  // no axes: all of them
    for (int64_t a : axes) {
      const int64_t k = norm_axis(a, rank);
      if (k < 0 || k >= rank) unsupported(n, "axis " + std::to_string(a) + " out of range");
      red[k] = true;
    }
  } else {
    const int64_t axis = norm_axis(n.attr_int("axis"), rank);
    if (axis < 0 || axis >= rank)
      unsupported(n, "axis " + std::to_string(n.attr_int("axis")) + " out of range");
    if (is_norm(op))
      for (int64_t k = axis; k < rank; ++k) red[k] = true;  // axis..rank-1
    else
      red[axis] = true;
  }
  std::vector<int> perm;
  int64_t R = 1, C = 1;
  for (int64_t k = 0; k < rank; ++k)
    if (!red[k]) perm.push_back(static_cast<int>(k)), R *= xs[k];
  for (int64_t k = 0; k < rank; ++k)
    if (red[k]) perm.push_back(static_cast<int>(k)), C *= xs[k];
  if (R == 0 || C == 0) unsupported(n, "empty input " + xv->type.str());

  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  // [R, C] views of x and y; scratch transposes when the permuted view does not merge.
  const HbmView xfull = c.view(xv).reshape(xs);
  HbmView X, Y;
  std::optional<HbmView> y_scratch;  // normalised result to permute back into y
  const std::vector<int64_t> pshape = [&] {
    std::vector<int64_t> s;
    for (int k : perm) s.push_back(xs[k]);
    return s;
  }();
  try {
    X = xfull.permute(perm).reshape({R, C});
  } catch (const tile::KernelError&) {
    const HbmView t = c.b.scratch(pfx + ".xT", pshape, DType::fp32);
    c.b.dma(t, xfull.permute(perm));
    X = t.reshape({R, C});
  }
  if (reduce) {
    Y = c.view(yv).reshape({R, 1});  // kept axes keep their order, with or without keepdims
  } else {
    const HbmView yfull = c.view(yv).reshape(xs);
    try {
      Y = yfull.permute(perm).reshape({R, C});
    } catch (const tile::KernelError&) {
      y_scratch = c.b.scratch(pfx + ".yT", pshape, DType::fp32);
      Y = y_scratch->reshape({R, C});
    }
  }

  // A few long rows of a reduction (e.g. all of a tensor onto one value): each row
  // is spread over q partitions (x viewed [R*q, C/q]); the per-partition partial
  // results are transposed onto one partition by the tensor engine and combined
  // there.
  const int64_t Rk = R, Cfull = C;
  int64_t q = 1;
  const bool splittable = op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" ||
                          op == "ReduceMin" || op == "ReduceL1" || op == "ReduceL2" ||
                          op == "ReduceSumSquare" || op == "ReduceLogSum";
  const int64_t parts = c.target.partitions;
  if (splittable && 2 * R <= parts && C >= kSplitMinCols) {
    for (int64_t d = parts / R; d >= 2 && q == 1; --d)
      if (C % d == 0) q = d;
    if (q > 1) {
      try {
        X = X.reshape({R * q, C / q});
        R *= q;
        C /= q;
      } catch (const tile::KernelError&) {
        q = 1;  // rows not contiguous: one partition per row
      }
    }
  }

  // Column chunks within 3/4 of a partition (the rest holds statistics): x and y
  // double-buffered, and for the norms two parameter rows (resident: one buffer
  // each; chunked: double-buffered). A row that fits is read once.
  const uint64_t budget = c.target.sbuf_partition_bytes * 3 / 4;
  const uint64_t params = is_norm(op) ? 2 : 0;
  int64_t fmax = C;
  if (static_cast<uint64_t>(C) * 4 * (4 + params) > budget) {
    fmax = static_cast<int64_t>(budget / (4 * (4 + 2 * params)));
    if (fmax >= kBnChunk) fmax -= fmax % kBnChunk;
  }
  if (fmax < 1) unsupported(n, "SBUF partitions are too small");
  const int64_t nch = (C + fmax - 1) / fmax;
  const int64_t F = (C + nch - 1) / nch;  // equal chunks, the last one shorter
  const bool resident = nch == 1;
  auto chunk_at = [&](int64_t k) { return std::make_pair(k * F, std::min(C, (k + 1) * F)); };
  int64_t nsub = 0;  // bn_stats instructions per row
  for (int64_t k = 0; k < nch; ++k) {
    const auto [c0, c1] = chunk_at(k);
    nsub += (c1 - c0 + kBnChunk - 1) / kBnChunk;
  }

  // The norms store their result from x's tile, so x needs more buffers to keep
  // loads ahead of stores: as many as fit beside the parameters, up to 4.
  // y's two buffers and the parameter rows come out of the same budget.
  uint32_t xbufs = 2;
  if (is_norm(op) && resident) {
    const uint64_t row = static_cast<uint64_t>(C) * 4;
    const uint64_t others = (2 + params) * row;
    xbufs = static_cast<uint32_t>(
        std::clamp<uint64_t>(budget > others ? (budget - others) / row : 0, 2, 4));
  }
  const kernels::PoolRef xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, xbufs);
  const kernels::PoolRef yp = c.b.pool(pfx + ".y", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef pp = c.b.pool(pfx + ".param", isa::MemSpace::sbuf, resident ? 2 : 4);
  // Per-chunk statistics (dead after their chunk) and per-row-tile accumulators.
  const kernels::PoolRef sp = c.b.pool(pfx + ".stat", isa::MemSpace::sbuf, 12);
  const kernels::PoolRef ap = c.b.pool(pfx + ".acc", isa::MemSpace::sbuf, 8);
  // LayerNorm's bn_stats triples of a whole row (3 per 512 elements), kept apart so
  // that long rows do not size every accumulator buffer.
  std::optional<kernels::PoolRef> bnp;
  if (op == "trn.LayerNorm") bnp = c.b.pool(pfx + ".bnstats", isa::MemSpace::sbuf, 2);
  std::optional<kernels::PoolRef> normp;  // normalised pieces before gamma (PSUM)
  if (is_norm(op)) {
    // Up to three pieces in flight, as many as the target's PSUM holds (a piece of
    // kNormSub fp32 columns at most, in whole banks).
    const uint64_t bank = std::max<uint64_t>(c.target.psum_bank_bytes, 1);
    const uint64_t piece =
        (static_cast<uint64_t>(std::min<int64_t>(C, kNormSub)) * 4 + bank - 1) / bank * bank;
    const uint64_t fit = c.target.psum_partition_bytes / piece;
    if (fit < 1) unsupported(n, "PSUM partitions are too small for a normalised piece");
    normp = c.b.pool(pfx + ".norm", isa::MemSpace::psum,
                     static_cast<uint32_t>(std::min<uint64_t>(fit, 3)));
  }

  // Parameters of the norms: [C] rows broadcast to the partitions.
  const ir::Value* scale_v = is_norm(op) ? n.input(1) : nullptr;
  const ir::Value* bias_v = op == "trn.LayerNorm" ? n.input(2) : nullptr;
  // A one-element parameter (LayerNorm(x) + scalar) is broadcast along the row.
  for (const ir::Value* v : {scale_v, bias_v})
    if (v && v->type.numel() != C && v->type.numel() != 1)
      unsupported(n, "parameter '" + v->name + "' " + v->type.str() + " is not a row of " +
                         std::to_string(C) + " (the normalised dims) or one value");
  auto load_param = [&](const ir::Value* v, int64_t p, int64_t c0, int64_t c1) {
    TileView t = c.b.tile(pp, {p, c1 - c0}, DType::fp32);
    const HbmView row = v->type.numel() == 1 ? c.view(v).reshape({}).broadcast(0, c1 - c0)
                                             : c.view(v).reshape({C})({sl(c0, c1)});
    c.b.dma(t, row.broadcast(0, p));
    return t;
  };
  // Resident rows: parameters loaded once for up to a tile of partitions.
  const int64_t P = std::min<int64_t>(parts, R);
  std::optional<TileView> scale_all, bias_all;
  if (resident && scale_v) scale_all = load_param(scale_v, P, 0, C);
  if (resident && bias_v) bias_all = load_param(bias_v, P, 0, C);
  const float eps = is_norm(op) ? n.attr_float("epsilon") : 0;

  // A reduction's last steps on its combined value.
  auto finish = [&](const TileView& a) {
    if (op == "ReduceMean") c.b.tensor_scalar(a, a, AluOp::div, static_cast<float>(Cfull));
    if (op == "ReduceL2") c.b.activation(a, a, ActFunc::sqrt);
    if (op == "ReduceLogSum") c.b.activation(a, a, ActFunc::log);
  };
  std::optional<TileView> split_part;  // [R*q, 1] partials of a split reduction

  for (int64_t r0 = 0; r0 < R; r0 += parts) {
    const int64_t p = std::min<int64_t>(parts, R - r0);
    auto stat = [&] { return c.b.tile(sp, {p, 1}, DType::fp32); };
    auto acc = [&](int64_t w = 1) { return c.b.tile(ap, {p, w}, DType::fp32); };
    std::optional<TileView> xres;  // the whole row when resident
    auto load = [&](int64_t k) {
      if (xres) return *xres;
      const auto [c0, c1] = chunk_at(k);
      TileView x = c.b.tile(xp, {p, c1 - c0}, DType::fp32);
      c.b.dma(x, X({sl(r0, r0 + p), sl(c0, c1)}));
      if (resident) xres = x;
      return x;
    };
    auto ytile = [&](int64_t k) {
      const auto [c0, c1] = chunk_at(k);
      return c.b.tile(yp, {p, c1 - c0}, DType::fp32);
    };
    auto store = [&](int64_t k, const TileView& y) {
      const auto [c0, c1] = chunk_at(k);
      c.b.dma(Y({sl(r0, r0 + p), sl(c0, c1)}), y);
    };
    // Softmax-style statistics over the row: m = max, s = sum(exp(x - m)), nm = -m.
    // With several chunks, s is rescaled by exp(m_old - m_new) when the max grows.
    // `last_exp` keeps exp(x - m) of a resident row.
    std::optional<TileView> last_exp;
    auto exp_stats = [&](TileView m, TileView s, TileView nm) {
      for (int64_t k = 0; k < nch; ++k) {
        const TileView x = load(k);
        const TileView e = ytile(k);
        if (k == 0) {
          c.b.tensor_reduce(m, x, AluOp::max, {0});
          c.b.tensor_scalar(nm, m, AluOp::mul, -1.0f);
          c.b.activation(e, x, ActFunc::exp, 1.0f, nm, s);
          last_exp = e;
          continue;
        }
        TileView cm = stat(), corr = stat(), cs = stat();
        c.b.tensor_reduce(cm, x, AluOp::max, {0});
        c.b.tensor_tensor(cm, cm, m, AluOp::max);         // new max
        c.b.tensor_scalar(nm, cm, AluOp::mul, -1.0f);     // -new max
        c.b.activation(corr, m, ActFunc::exp, 1.0f, nm);  // exp(old - new)
        c.b.activation(e, x, ActFunc::exp, 1.0f, nm, cs);
        TensorScalarOpts fma;
        fma.op1 = AluOp::add;
        fma.arg1 = cs;
        c.b.tensor_scalar(s, s, AluOp::mul, corr, fma);  // s * corr + chunk sum
        c.b.tensor_copy(m, cm);
      }
    };

    if (reduce) {
      TileView a = acc();
      if (op == "ReduceLogSumExp") {  // log(sum(exp(x - m))) + m
        TileView m = acc(), nm = acc();
        exp_stats(m, a, nm);
        c.b.activation(a, a, ActFunc::log);
        c.b.tensor_tensor(a, a, m, AluOp::add);
        c.b.dma(Y({sl(r0, r0 + p), all()}), a);
        continue;
      }
      const AluOp comb = op == "ReduceMax"    ? AluOp::max
                         : op == "ReduceMin"  ? AluOp::min
                         : op == "ReduceProd" ? AluOp::mul
                                              : AluOp::add;
      for (int64_t k = 0; k < nch; ++k) {
        const TileView x = load(k);
        const TileView part = k == 0 ? a : stat();
        if (op == "ReduceL1" || op == "ReduceL2" || op == "ReduceSumSquare") {
          const TileView junk = ytile(k);
          c.b.activation(junk, x, op == "ReduceL1" ? ActFunc::abs : ActFunc::square, 1.0f, 0.0f,
                         part);
        } else if (op == "ReduceProd") {  // tensor_reduce has no mul: an accumulate does
          TensorScalarOpts pr;
          pr.accum = part;
          pr.accum_op = AluOp::mul;
          c.b.tensor_scalar(ytile(k), x, AluOp::mul, 1.0f, pr);
        } else {
          c.b.tensor_reduce(part, x, comb, {0});
        }
        if (k > 0) c.b.tensor_tensor(a, a, part, comb);
      }
      if (q > 1) {  // R <= partitions: the only row tile
        split_part = a;
        continue;
      }
      finish(a);
      c.b.dma(Y({sl(r0, r0 + p), all()}), a);
      continue;
    }

    if (op == "Softmax" || op == "LogSoftmax") {
      TileView m = acc(), s = acc(), nm = acc();
      exp_stats(m, s, nm);
      if (op == "Softmax") {
        TileView r = acc();
        TensorScalarOpts recip;
        recip.reverse0 = true;  // 1 / s
        c.b.tensor_scalar(r, s, AluOp::div, 1.0f, recip);
        for (int64_t k = 0; k < nch; ++k) {
          TileView y = *last_exp;
          if (!resident) {
            y = ytile(k);
            c.b.activation(y, load(k), ActFunc::exp, 1.0f, nm);
          }
          c.b.tensor_scalar(y, y, AluOp::mul, r);
          store(k, y);
        }
      } else {
        // (x - max) - log(sum): x - max first, exact for large x where folding
        // -max - log(sum) into one constant would round it to x's ulp.
        TileView ls = acc();
        c.b.activation(ls, s, ActFunc::log);
        TensorScalarOpts sub;
        sub.op1 = AluOp::sub;
        sub.arg1 = ls;
        for (int64_t k = 0; k < nch; ++k) {
          TileView y = ytile(k);
          c.b.tensor_scalar(y, load(k), AluOp::add, nm, sub);
          store(k, y);
        }
      }
    } else {
      // trn.LayerNorm: (x - mean) * rstd; trn.RMSNorm: x * rstd.
      TileView rstd = acc();
      std::optional<TileView> mean;
      if (op == "trn.LayerNorm") {
        TileView st = c.b.tile(*bnp, {p, 3 * nsub}, DType::fp32);
        int64_t j = 0;
        for (int64_t k = 0; k < nch; ++k) {
          const TileView x = load(k);
          const int64_t w = x.shape()[1];
          for (int64_t b0 = 0; b0 < w; b0 += kBnChunk, ++j)
            c.b.bn_stats(st({all(), sl(3 * j, 3 * j + 3)}),
                         x({all(), sl(b0, std::min(w, b0 + kBnChunk))}));
        }
        TileView mv = acc(2);
        c.b.bn_aggr(mv, st);
        TensorScalarOpts pw;
        pw.op1 = AluOp::pow;
        pw.arg1 = -0.5f;
        c.b.tensor_scalar(rstd, mv({all(), sl(1, 2)}), AluOp::add, eps, pw);
        mean = mv({all(), sl(0, 1)});
      } else {
        for (int64_t k = 0; k < nch; ++k) {
          const TileView part = k == 0 ? rstd : stat();
          c.b.activation(ytile(k), load(k), ActFunc::square, 1.0f, 0.0f, part);  // sum(x^2)
          if (k > 0) c.b.tensor_tensor(rstd, rstd, part, AluOp::add);
        }
        TensorScalarOpts ad;
        ad.op1 = AluOp::add;
        ad.arg1 = eps;
        c.b.tensor_scalar(rstd, rstd, AluOp::mul, 1.0f / static_cast<float>(C), ad);
        c.b.tensor_scalar(rstd, rstd, AluOp::pow, -0.5f);
      }
      // Normalisation spread over three engines (per element: scalar 1 cycle,
      // vector 1, gpsimd 2; vector also ran bn_stats): the scalar engine writes
      // (x - mean) * rstd into PSUM, the vector engine multiplies by gamma reading
      // PSUM (1 cycle/element instead of 2 for two SBUF operands) back into x's
      // tile, and GpSimd adds beta in place. The result is stored from x's tile.
      for (int64_t k = 0; k < nch; ++k) {
        const auto [c0, c1] = chunk_at(k);
        const TileView x = load(k);
        const int64_t w = c1 - c0;
        std::optional<TileView> sc, bi;
        if (scale_v)
          sc = resident ? (*scale_all)({sl(0, p), all()}) : load_param(scale_v, p, c0, c1);
        if (bias_v) bi = resident ? (*bias_all)({sl(0, p), all()}) : load_param(bias_v, p, c0, c1);
        for (int64_t s0 = 0; s0 < w; s0 += kNormSub) {
          const int64_t s1 = std::min(w, s0 + kNormSub);
          const TileView xs = x({all(), sl(s0, s1)});
          TensorScalarOpts o;
          o.engine = isa::Engine::scalar;
          // Without gamma the scalar engine writes the tile itself.
          const TileView t = sc ? c.b.tile(*normp, {p, s1 - s0}, DType::fp32) : xs;
          if (mean) {
            o.op1 = AluOp::mul;
            o.arg1 = rstd;
            c.b.tensor_scalar(t, xs, AluOp::sub, *mean, o);
          } else {
            c.b.tensor_scalar(t, xs, AluOp::mul, rstd, o);
          }
          if (sc)
            c.b.tensor_tensor(xs, t, (*sc)({all(), sl(s0, s1)}), AluOp::mul, isa::Engine::vector);
          if (bi)
            c.b.tensor_tensor(xs, xs, (*bi)({all(), sl(s0, s1)}), AluOp::add, isa::Engine::gpsimd);
        }
        store(k, x);
      }
    }
  }
  if (split_part) {
    // [R*q, 1] -> [1, R*q] (PSUM) -> reduce each row's q partials -> [1, R].
    const kernels::PoolRef tp = c.b.pool(pfx + ".tp", isa::MemSpace::psum, 1);
    TileView t = c.b.tile(tp, {1, R}, DType::fp32);
    c.b.transpose(t, *split_part);
    TileView a = c.b.tile(ap, {1, Rk}, DType::fp32);
    const AluOp comb = op == "ReduceMax" ? AluOp::max : op == "ReduceMin" ? AluOp::min : AluOp::add;
    c.b.tensor_reduce(a, t.reshape({1, Rk, q}), comb, {1}, isa::Engine::vector);  // reads PSUM
    finish(a);
    c.b.dma(c.view(yv).reshape({1, Rk}), a);
  }
  // A normalised result computed with the reduced axes last goes back in place.
  if (y_scratch) {
    std::vector<int> inv(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) inv[perm[k]] = static_cast<int>(k);
    c.b.dma(c.view(yv).reshape(xs), y_scratch->permute(inv));
  }
}

}  // namespace trnsim::lower
