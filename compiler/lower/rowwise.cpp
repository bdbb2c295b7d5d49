// Ops over the last axis, a whole row per partition: Softmax, LogSoftmax,
// trn.LayerNorm, trn.RMSNorm and ReduceSum/Mean/Max/Min. Rows in tiles of up to 128
// (a shorter last one); a row must fit in SBUF (no column splitting yet).
#include <algorithm>

#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::sl;
using kernels::TensorScalarOpts;
using kernels::TileView;

namespace {

int64_t norm_axis(int64_t a, int64_t rank) {
  return a < 0 ? a + rank : a;
}

// A [C] parameter (scale / bias) broadcast to p partitions.
TileView load_row_param(Ctx& c, const ir::Node& n, const ir::Value* v, int64_t C, int64_t p,
                        kernels::PoolRef pool) {
  if (v->type.numel() != C)
    unsupported(n, "parameter '" + v->name + "' " + v->type.str() + " is not a row of " +
                       std::to_string(C));
  TileView t = c.b.tile(pool, {p, C}, DType::fp32);
  c.b.dma(t, c.view(v).reshape({C}).broadcast(0, p));
  return t;
}

}  // namespace

bool is_rowwise(const std::string& op) {
  return op == "Softmax" || op == "LogSoftmax" || op == "trn.LayerNorm" || op == "trn.RMSNorm" ||
         op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin";
}

void lower_rowwise(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* yv = n.outputs.at(0);
  const ir::Shape& xs = xv->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 1) unsupported(n, "a scalar input has no last axis");
  const auto [R, C] = rows_cols(xs);
  const std::string& op = n.op;
  const bool reduce = op.rfind("Reduce", 0) == 0;
  if (reduce) {
    const std::vector<int64_t>& axes = n.attr_ints("axes");
    if (axes.size() != 1 || norm_axis(axes[0], rank) != rank - 1)
      unsupported(n, "only a reduction over the last axis is lowered");
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "trn.LayerNorm" ||
             op == "trn.RMSNorm") {
    if (norm_axis(n.attr_int("axis"), rank) != rank - 1)
      unsupported(n, "only axis = last (" + std::to_string(rank - 1) + ") is lowered");
  }
  const uint64_t row_bytes = static_cast<uint64_t>(C) * 4;
  // x, y double-buffered, plus up to two parameter rows.
  if (row_bytes * 6 > c.target.sbuf_partition_bytes / 2)
    unsupported(n, "rows of " + std::to_string(C) + " elements do not fit in SBUF yet");
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const kernels::PoolRef xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef yp = c.b.pool(pfx + ".y", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef pp = c.b.pool(pfx + ".param", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef sp = c.b.pool(pfx + ".stat", isa::MemSpace::sbuf, 12);
  const kernels::HbmView X = c.view(xv).reshape({R, C});
  const kernels::HbmView Y = c.view(yv).reshape({R, reduce ? 1 : C});
  // Parameters are the same for every row tile: loaded once for 128 partitions.
  const int64_t P = std::min<int64_t>(128, R);
  std::optional<TileView> scale, bias;
  if (op == "trn.LayerNorm" || op == "trn.RMSNorm") {
    if (n.input(1)) scale = load_row_param(c, n, n.input(1), C, P, pp);
    if (op == "trn.LayerNorm" && n.input(2)) bias = load_row_param(c, n, n.input(2), C, P, pp);
  }
  const float eps = (op == "trn.LayerNorm" || op == "trn.RMSNorm") ? n.attr_float("epsilon") : 0;
  for (int64_t r0 = 0; r0 < R; r0 += 128) {
    const int64_t p = std::min<int64_t>(128, R - r0);
    TileView x = c.b.tile(xp, {p, C}, DType::fp32);
    c.b.dma(x, X({sl(r0, r0 + p), all()}));
    auto stat = [&] { return c.b.tile(sp, {p, 1}, DType::fp32); };
    if (reduce) {
      TileView s = stat();
      const AluOp rop = op == "ReduceMax"   ? AluOp::max
                        : op == "ReduceMin" ? AluOp::min
                                            : AluOp::add;
      c.b.tensor_reduce(s, x, rop, {0});
      if (op == "ReduceMean") c.b.tensor_scalar(s, s, AluOp::mul, 1.0f / static_cast<float>(C));
      c.b.dma(Y({sl(r0, r0 + p), all()}), s);
      continue;
    }
    TileView y = c.b.tile(yp, {p, C}, DType::fp32);
    if (op == "Softmax" || op == "LogSoftmax") {
      TileView mx = stat(), nmx = stat(), s = stat();
      c.b.tensor_reduce(mx, x, AluOp::max, {0});
      c.b.tensor_scalar(nmx, mx, AluOp::mul, -1.0f);
      c.b.activation(y, x, ActFunc::exp, 1.0f, nmx, s);  // y = exp(x - max), s = sum
      if (op == "Softmax") {
        TileView r = stat();
        TensorScalarOpts recip;
        recip.reverse0 = true;  // 1 / s
        c.b.tensor_scalar(r, s, AluOp::div, 1.0f, recip);
        c.b.tensor_scalar(y, y, AluOp::mul, r);
      } else {
        TileView ls = stat(), sh = stat();
        c.b.activation(ls, s, ActFunc::log);
        c.b.tensor_tensor(sh, nmx, ls, AluOp::sub);  // -max - log(sum)
        c.b.tensor_scalar(y, x, AluOp::add, sh);
      }
    } else if (op == "trn.LayerNorm") {
      const int64_t nch = (C + 511) / 512, cs = (C + nch - 1) / nch;
      TileView st = c.b.tile(sp, {p, 3 * nch}, DType::fp32);
      for (int64_t k = 0; k < nch; ++k)
        c.b.bn_stats(st({all(), sl(3 * k, 3 * k + 3)}),
                     x({all(), sl(k * cs, std::min(C, (k + 1) * cs))}));
      TileView mv = c.b.tile(sp, {p, 2}, DType::fp32);
      c.b.bn_aggr(mv, st);
      TileView rstd = stat();
      TensorScalarOpts pw;
      pw.op1 = AluOp::pow;
      pw.arg1 = -0.5f;
      c.b.tensor_scalar(rstd, mv({all(), sl(1, 2)}), AluOp::add, eps, pw);
      TensorScalarOpts nm;
      nm.op1 = AluOp::mul;
      nm.arg1 = rstd;
      c.b.tensor_scalar(y, x, AluOp::sub, mv({all(), sl(0, 1)}), nm);
    } else if (op == "trn.RMSNorm") {
      TileView ss = stat(), rstd = stat();
      c.b.activation(y, x, ActFunc::square, 1.0f, 0.0f, ss);  // ss = sum(x^2)
      TensorScalarOpts ad;
      ad.op1 = AluOp::add;
      ad.arg1 = eps;
      c.b.tensor_scalar(rstd, ss, AluOp::mul, 1.0f / static_cast<float>(C), ad);
      c.b.tensor_scalar(rstd, rstd, AluOp::pow, -0.5f);
      c.b.tensor_scalar(y, x, AluOp::mul, rstd);
    } else {
      unsupported(n, "not a row-wise op");
    }
    if (scale) c.b.tensor_tensor(y, y, (*scale)({sl(0, p), all()}), AluOp::mul);
    if (bias) c.b.tensor_tensor(y, y, (*bias)({sl(0, p), all()}), AluOp::add);
    c.b.dma(Y({sl(r0, r0 + p), all()}), y);
  }
}

}  // namespace trnsim::lower
