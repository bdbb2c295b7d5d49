// Ops that reduce or normalise over some axes: Softmax, LogSoftmax, trn.LayerNorm,
// trn.RMSNorm and ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp.
//
// The input is viewed as [R, C]: R = the kept axes (onto partitions, tiles of up to
// 128 rows), C = the reduced/normalised axes (the free axis). When the kept axes
// and the reduced axes each merge into one strided dim, that view is read (and the
// result written) by strided DMAs; otherwise a strided HBM -> HBM DMA first puts
// the reduced axes last in a scratch tensor (and another puts a normalised result
// back). A reduction over leading axes (of at least te_transpose_min_elems) is
// transposed into that scratch by the tensor engine instead, since its [R, C] view
// has partition stride 1: one DMA descriptor per element. Rows longer than a chunk
// that fits SBUF are processed in column chunks:
// pass 1 gathers the row statistics (running max and rescaled sum of exps, bn_stats,
// partial sums), pass 2 reloads the chunks and normalises.
#include <algorithm>
#include <functional>
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

namespace {

// The reduced / normalised axes of `n`'s input of rank `rank` (checked in range).
std::vector<bool> reduced_axes(const ir::Node& n, int64_t rank, bool reduce) {
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
    if (is_norm(n.op))
      for (int64_t k = axis; k < rank; ++k) red[k] = true;  // axis..rank-1
    else
      red[axis] = true;
  }
  return red;
}

// One row-wise node's lowering: the [R, C] views of x and y, the column chunks,
// the pools, and per tile of rows the steps of the op's family.
class Rowwise {
 public:
  Rowwise(Ctx& c, const ir::Node& n)
      : c_(c),
        n_(n),
        op_(n.op),
        reduce_(reduce_ops().count(n.op) != 0),
        parts_(c.target.partitions),
        pfx_(c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size())) {}

  // Lowers the node: plan, then every row tile, then the split and scratch tails.
  void run() {
    check_supported();
    plan_views();
    plan_split();
    plan_chunks();
    make_pools();
    load_resident_params();
    for (int64_t r0 = 0; r0 < R_; r0 += parts_) {
      RowTile t(*this, r0, std::min<int64_t>(parts_, R_ - r0));
      if (reduce_)
        reduce_tile(t);
      else if (op_ == "Softmax" || op_ == "LogSoftmax")
        softmax_tile(t);
      else
        norm_tile(t);
    }
    if (split_part_) combine_split();
    if (y_scratch_) permute_back();
  }

 private:
  // The loads, stores and temporaries of one tile of rows [r0, r0 + p).
  struct RowTile {
    RowTile(Rowwise& owner, int64_t row0, int64_t rows) : w(owner), r0(row0), p(rows) {}
    Rowwise& w;
    const int64_t r0, p;
    std::optional<TileView> xres;      // the whole row when resident
    std::optional<TileView> last_exp;  // exp(x - m) of a resident row (exp_stats)

    TileView stat() { return w.c_.b.tile(w.sp_, {p, 1}, DType::fp32); }
    TileView acc(int64_t width = 1) { return w.c_.b.tile(w.ap_, {p, width}, DType::fp32); }
    TileView load(int64_t k) {
      if (xres) return *xres;
      const auto [c0, c1] = w.chunk_at(k);
      TileView x = w.c_.b.tile(w.xp_, {p, c1 - c0}, DType::fp32);
      w.c_.b.dma(x, w.X_({sl(r0, r0 + p), sl(c0, c1)}));
      if (w.resident_) xres = x;
      return x;
    }
    TileView ytile(int64_t k) {
      const auto [c0, c1] = w.chunk_at(k);
      return w.c_.b.tile(w.yp_, {p, c1 - c0}, DType::fp32);
    }
    void store(int64_t k, const TileView& y) {
      const auto [c0, c1] = w.chunk_at(k);
      w.c_.b.dma(w.Y_({sl(r0, r0 + p), sl(c0, c1)}), y);
    }
    void exp_stats(TileView m, TileView s, TileView nm);
  };

  // Refuses integer reductions whose result truncates a fraction.
  void check_supported() const {
    if (!is_rowwise(op_)) unsupported(n_, "not a row-wise op");
    // Integers are fp32 on the device: reductions whose integer result truncates a
    // fraction would come out wrong.
    if (ir::is_integer(n_.outputs.at(0)->elem()) &&
        (op_ == "ReduceMean" || op_ == "ReduceL2" || op_ == "ReduceLogSum" ||
         op_ == "ReduceLogSumExp"))
      unsupported(n_, "integer " + op_ + " (truncating) is not lowered yet");
  }
  void plan_views();
  void plan_split();
  void plan_chunks();
  void make_pools();
  void load_resident_params();
  TileView load_param(const ir::Value* v, int64_t p, int64_t c0, int64_t c1);
  void finish(const TileView& a);
  void reduce_tile(RowTile& t);
  void softmax_tile(RowTile& t);
  void norm_tile(RowTile& t);
  void norm_stats(RowTile& t, const TileView& rstd, std::optional<TileView>& mean);
  void combine_split();
  void permute_back();
  std::pair<int64_t, int64_t> chunk_at(int64_t k) const {
    return std::make_pair(k * F_, std::min(C_, (k + 1) * F_));
  }

  // bn_stats takes at most this many elements per instruction.
  int64_t bn_chunk() const { return c_.target.core.vector.bn_stats_max_free; }

  Ctx& c_;
  const ir::Node& n_;
  const std::string& op_;
  const bool reduce_;
  const int64_t parts_;
  const std::string pfx_;
  const ir::Value* xv_ = nullptr;
  const ir::Value* yv_ = nullptr;
  ir::Shape xs_;
  std::vector<int> perm_;
  int64_t R_ = 1, C_ = 1;
  int64_t Rk_ = 1, Cfull_ = 1;  // before a split
  int64_t q_ = 1;               // partitions per row of a split reduction
  HbmView X_, Y_;
  std::optional<HbmView> y_scratch_;  // normalised result to permute back into y
  int64_t nch_ = 1, F_ = 1, nsub_ = 0;
  bool resident_ = true;
  kernels::PoolRef xp_, yp_, pp_, sp_, ap_;
  std::optional<kernels::PoolRef> bnp_, normp_;
  const ir::Value* scale_v_ = nullptr;
  const ir::Value* bias_v_ = nullptr;
  std::optional<TileView> scale_all_, bias_all_;
  float eps_ = 0;
  std::optional<TileView> split_part_;  // [R*q, 1] partials of a split reduction
};

// The [R, C] views of x and y; scratch transposes when the permuted view does not
// merge.
void Rowwise::plan_views() {
  xv_ = n_.inputs.at(0);
  yv_ = n_.outputs.at(0);
  xs_ = xv_->shape();
  if (xs_.empty()) xs_ = {1};
  const int64_t rank = static_cast<int64_t>(xs_.size());
  const std::vector<bool> red = reduced_axes(n_, rank, reduce_);
  for (int64_t k = 0; k < rank; ++k)
    if (!red[k]) perm_.push_back(static_cast<int>(k)), R_ *= xs_[k];
  for (int64_t k = 0; k < rank; ++k)
    if (red[k]) perm_.push_back(static_cast<int>(k)), C_ *= xs_[k];
  if (R_ == 0 || C_ == 0) unsupported(n_, "empty input " + xv_->type.str());

  const HbmView xfull = c_.view(xv_).reshape(xs_);
  std::vector<int64_t> pshape;
  for (int k : perm_) pshape.push_back(xs_[k]);
  // A reduction over leading axes (a batch sum, a bias gradient): read as [R, C] the
  // view would move one element per DMA descriptor, so the tensor engine transposes
  // x [C, R] into a scratch [R, C] of contiguous rows first.
  if (reduce_ && R_ > 1 && C_ > 1 && red[0] && !red[rank - 1] &&
      std::is_sorted(red.begin(), red.end(), std::greater<bool>()) &&
      R_ * C_ >= te_transpose_min_elems()) {
    const HbmView t = c_.b.scratch(pfx_ + ".xT", {R_, C_}, DType::fp32);
    te_transpose(c_, te_transpose_pools(c_), xfull.reshape({C_, R_}), t.permute({1, 0}), C_, R_);
    X_ = t;
  } else {
    try {
      X_ = xfull.permute(perm_).reshape({R_, C_});
    } catch (const tile::KernelError&) {
      const HbmView t = c_.b.scratch(pfx_ + ".xT", pshape, DType::fp32);
      c_.b.dma(t, xfull.permute(perm_));
      X_ = t.reshape({R_, C_});
    }
  }
  if (reduce_) {
    Y_ = c_.view(yv_).reshape({R_, 1});  // kept axes keep their order, with or without keepdims
  } else {
    const HbmView yfull = c_.view(yv_).reshape(xs_);
    try {
      Y_ = yfull.permute(perm_).reshape({R_, C_});
    } catch (const tile::KernelError&) {
      y_scratch_ = c_.b.scratch(pfx_ + ".yT", pshape, DType::fp32);
      Y_ = y_scratch_->reshape({R_, C_});
    }
  }
}

// A few long rows of a reduction (e.g. all of a tensor onto one value): each row
// is spread over q partitions (x viewed [R*q, C/q]); the per-partition partial
// results are transposed onto one partition by the tensor engine and combined
// there.
void Rowwise::plan_split() {
  Rk_ = R_;
  Cfull_ = C_;
  const bool splittable = op_ == "ReduceSum" || op_ == "ReduceMean" || op_ == "ReduceMax" ||
                          op_ == "ReduceMin" || op_ == "ReduceL1" || op_ == "ReduceL2" ||
                          op_ == "ReduceSumSquare" || op_ == "ReduceLogSum";
  if (!splittable || 2 * R_ > parts_ || C_ < kSplitMinCols) return;
  for (int64_t d = parts_ / R_; d >= 2 && q_ == 1; --d)
    if (C_ % d == 0) q_ = d;
  if (q_ == 1) return;
  try {
    X_ = X_.reshape({R_ * q_, C_ / q_});
    R_ *= q_;
    C_ /= q_;
  } catch (const tile::KernelError&) {
    q_ = 1;  // rows not contiguous: one partition per row
  }
}

// Column chunks within 3/4 of a partition (the rest holds statistics): x and y
// double-buffered, and for the norms two parameter rows (resident: one buffer
// each; chunked: double-buffered). A row that fits is read once.
void Rowwise::plan_chunks() {
  const uint64_t budget = c_.target.sbuf_partition_bytes * 3 / 4;
  const uint64_t params = is_norm(op_) ? 2 : 0;
  int64_t fmax = C_;
  if (static_cast<uint64_t>(C_) * 4 * (4 + params) > budget) {
    fmax = static_cast<int64_t>(budget / (4 * (4 + 2 * params)));
    if (fmax >= bn_chunk()) fmax -= fmax % bn_chunk();
  }
  if (fmax < 1) unsupported(n_, "SBUF partitions are too small");
  nch_ = (C_ + fmax - 1) / fmax;
  F_ = (C_ + nch_ - 1) / nch_;  // equal chunks, the last one shorter
  resident_ = nch_ == 1;
  nsub_ = 0;  // bn_stats instructions per row
  for (int64_t k = 0; k < nch_; ++k) {
    const auto [c0, c1] = chunk_at(k);
    nsub_ += (c1 - c0 + bn_chunk() - 1) / bn_chunk();
  }
}

// The SBUF and PSUM pools of the node, sized from the chunk plan.
void Rowwise::make_pools() {
  const uint64_t budget = c_.target.sbuf_partition_bytes * 3 / 4;
  const uint64_t params = is_norm(op_) ? 2 : 0;
  // The norms store their result from x's tile, so x needs more buffers to keep
  // loads ahead of stores: as many as fit beside the parameters, up to 4.
  // y's two buffers and the parameter rows come out of the same budget.
  uint32_t xbufs = 2;
  if (is_norm(op_) && resident_) {
    const uint64_t row = static_cast<uint64_t>(C_) * 4;
    const uint64_t others = (2 + params) * row;
    xbufs = static_cast<uint32_t>(
        std::clamp<uint64_t>(budget > others ? (budget - others) / row : 0, 2, 4));
  }
  xp_ = c_.b.pool(pfx_ + ".x", isa::MemSpace::sbuf, xbufs);
  yp_ = c_.b.pool(pfx_ + ".y", isa::MemSpace::sbuf, 2);
  pp_ = c_.b.pool(pfx_ + ".param", isa::MemSpace::sbuf, resident_ ? 2 : 4);
  // Per-chunk statistics (dead after their chunk) and per-row-tile accumulators.
  sp_ = c_.b.pool(pfx_ + ".stat", isa::MemSpace::sbuf, 12);
  ap_ = c_.b.pool(pfx_ + ".acc", isa::MemSpace::sbuf, 8);
  // LayerNorm's bn_stats triples of a whole row (3 per 512 elements), kept apart so
  // that long rows do not size every accumulator buffer.
  if (op_ == "trn.LayerNorm") bnp_ = c_.b.pool(pfx_ + ".bnstats", isa::MemSpace::sbuf, 2);
  if (is_norm(op_)) {  // normalised pieces before gamma (PSUM)
    // Up to three pieces in flight, as many as the target's PSUM holds (a piece of
    // kNormSub fp32 columns at most, in whole banks).
    const uint64_t bank = std::max<uint64_t>(c_.target.psum_bank_bytes, 1);
    const uint64_t piece =
        (static_cast<uint64_t>(std::min<int64_t>(C_, kNormSub)) * 4 + bank - 1) / bank * bank;
    const uint64_t fit = c_.target.psum_partition_bytes / piece;
    if (fit < 1) unsupported(n_, "PSUM partitions are too small for a normalised piece");
    normp_ = c_.b.pool(pfx_ + ".norm", isa::MemSpace::psum,
                       static_cast<uint32_t>(std::min<uint64_t>(fit, 3)));
  }
}

// Parameters of the norms ([C] rows broadcast to the partitions), checked; a
// resident row's are loaded once for up to a tile of partitions.
void Rowwise::load_resident_params() {
  scale_v_ = is_norm(op_) ? n_.input(1) : nullptr;
  bias_v_ = op_ == "trn.LayerNorm" ? n_.input(2) : nullptr;
  // A one-element parameter (LayerNorm(x) + scalar) is broadcast along the row.
  for (const ir::Value* v : {scale_v_, bias_v_})
    if (v && v->type.numel() != C_ && v->type.numel() != 1)
      unsupported(n_, "parameter '" + v->name + "' " + v->type.str() + " is not a row of " +
                          std::to_string(C_) + " (the normalised dims) or one value");
  const int64_t P = std::min<int64_t>(parts_, R_);
  if (resident_ && scale_v_) scale_all_ = load_param(scale_v_, P, 0, C_);
  if (resident_ && bias_v_) bias_all_ = load_param(bias_v_, P, 0, C_);
  eps_ = is_norm(op_) ? n_.attr_float("epsilon") : 0;
}

// Columns [c0, c1) of parameter `v` broadcast to p partitions.
TileView Rowwise::load_param(const ir::Value* v, int64_t p, int64_t c0, int64_t c1) {
  TileView t = c_.b.tile(pp_, {p, c1 - c0}, DType::fp32);
  const HbmView row = v->type.numel() == 1 ? c_.view(v).reshape({}).broadcast(0, c1 - c0)
                                           : c_.view(v).reshape({C_})({sl(c0, c1)});
  c_.b.dma(t, row.broadcast(0, p));
  return t;
}

// A reduction's last steps on its combined value.
void Rowwise::finish(const TileView& a) {
  if (op_ == "ReduceMean") c_.b.tensor_scalar(a, a, AluOp::div, static_cast<float>(Cfull_));
  if (op_ == "ReduceL2") c_.b.activation(a, a, ActFunc::sqrt);
  if (op_ == "ReduceLogSum") c_.b.activation(a, a, ActFunc::log);
}

// Softmax-style statistics over the row: m = max, s = sum(exp(x - m)), nm = -m.
// With several chunks, s is rescaled by exp(m_old - m_new) when the max grows.
// `last_exp` keeps exp(x - m) of a resident row.
void Rowwise::RowTile::exp_stats(TileView m, TileView s, TileView nm) {
  kernels::Builder& b = w.c_.b;
  for (int64_t k = 0; k < w.nch_; ++k) {
    const TileView x = load(k);
    const TileView e = ytile(k);
    if (k == 0) {
      b.tensor_reduce(m, x, AluOp::max, {0});
      b.tensor_scalar(nm, m, AluOp::mul, -1.0f);
      b.activation(e, x, ActFunc::exp, 1.0f, nm, s);
      last_exp = e;
      continue;
    }
    TileView cm = stat(), corr = stat(), cs = stat();
    b.tensor_reduce(cm, x, AluOp::max, {0});
    b.tensor_tensor(cm, cm, m, AluOp::max);         // new max
    b.tensor_scalar(nm, cm, AluOp::mul, -1.0f);     // -new max
    b.activation(corr, m, ActFunc::exp, 1.0f, nm);  // exp(old - new)
    b.activation(e, x, ActFunc::exp, 1.0f, nm, cs);
    TensorScalarOpts fma;
    fma.op1 = AluOp::add;
    fma.arg1 = cs;
    b.tensor_scalar(s, s, AluOp::mul, corr, fma);  // s * corr + chunk sum
    b.tensor_copy(m, cm);
  }
}

// A reduction of one row tile: chunk results combined into one column, stored (or
// kept as the partials of a split reduction).
void Rowwise::reduce_tile(RowTile& t) {
  kernels::Builder& b = c_.b;
  TileView a = t.acc();
  if (op_ == "ReduceLogSumExp") {  // log(sum(exp(x - m))) + m
    TileView m = t.acc(), nm = t.acc();
    t.exp_stats(m, a, nm);
    b.activation(a, a, ActFunc::log);
    b.tensor_tensor(a, a, m, AluOp::add);
    b.dma(Y_({sl(t.r0, t.r0 + t.p), all()}), a);
    return;
  }
  const AluOp comb = op_ == "ReduceMax"    ? AluOp::max
                     : op_ == "ReduceMin"  ? AluOp::min
                     : op_ == "ReduceProd" ? AluOp::mul
                                           : AluOp::add;
  for (int64_t k = 0; k < nch_; ++k) {
    const TileView x = t.load(k);
    const TileView part = k == 0 ? a : t.stat();
    if (op_ == "ReduceL1" || op_ == "ReduceL2" || op_ == "ReduceSumSquare") {
      const TileView junk = t.ytile(k);
      b.activation(junk, x, op_ == "ReduceL1" ? ActFunc::abs : ActFunc::square, 1.0f, 0.0f, part);
    } else if (op_ == "ReduceProd") {  // tensor_reduce has no mul: an accumulate does
      TensorScalarOpts pr;
      pr.accum = part;
      pr.accum_op = AluOp::mul;
      b.tensor_scalar(t.ytile(k), x, AluOp::mul, 1.0f, pr);
    } else {
      b.tensor_reduce(part, x, comb, {0});
    }
    if (k > 0) b.tensor_tensor(a, a, part, comb);
  }
  if (q_ > 1) {  // R <= partitions: the only row tile
    split_part_ = a;
    return;
  }
  finish(a);
  b.dma(Y_({sl(t.r0, t.r0 + t.p), all()}), a);
}

// Softmax or LogSoftmax of one row tile: the row statistics, then each chunk
// normalised and stored.
void Rowwise::softmax_tile(RowTile& t) {
  kernels::Builder& b = c_.b;
  TileView m = t.acc(), s = t.acc(), nm = t.acc();
  t.exp_stats(m, s, nm);
  if (op_ == "Softmax") {
    TileView r = t.acc();
    TensorScalarOpts recip;
    recip.reverse0 = true;  // 1 / s
    b.tensor_scalar(r, s, AluOp::div, 1.0f, recip);
    for (int64_t k = 0; k < nch_; ++k) {
      TileView y = *t.last_exp;
      if (!resident_) {
        y = t.ytile(k);
        b.activation(y, t.load(k), ActFunc::exp, 1.0f, nm);
      }
      b.tensor_scalar(y, y, AluOp::mul, r);
      t.store(k, y);
    }
    return;
  }
  // (x - max) - log(sum): x - max first, exact for large x where folding
  // -max - log(sum) into one constant would round it to x's ulp.
  TileView ls = t.acc();
  b.activation(ls, s, ActFunc::log);
  TensorScalarOpts sub;
  sub.op1 = AluOp::sub;
  sub.arg1 = ls;
  for (int64_t k = 0; k < nch_; ++k) {
    TileView y = t.ytile(k);
    b.tensor_scalar(y, t.load(k), AluOp::add, nm, sub);
    t.store(k, y);
  }
}

// The row statistics of a norm: rstd, and for LayerNorm the mean (bn_stats).
void Rowwise::norm_stats(RowTile& t, const TileView& rstd, std::optional<TileView>& mean) {
  kernels::Builder& b = c_.b;
  if (op_ == "trn.LayerNorm") {
    TileView st = b.tile(*bnp_, {t.p, 3 * nsub_}, DType::fp32);
    int64_t j = 0;
    for (int64_t k = 0; k < nch_; ++k) {
      const TileView x = t.load(k);
      const int64_t w = x.shape()[1];
      for (int64_t b0 = 0; b0 < w; b0 += bn_chunk(), ++j)
        b.bn_stats(st({all(), sl(3 * j, 3 * j + 3)}),
                   x({all(), sl(b0, std::min(w, b0 + bn_chunk()))}));
    }
    TileView mv = t.acc(2);
    b.bn_aggr(mv, st);
    TensorScalarOpts pw;
    pw.op1 = AluOp::pow;
    pw.arg1 = -0.5f;
    b.tensor_scalar(rstd, mv({all(), sl(1, 2)}), AluOp::add, eps_, pw);
    mean = mv({all(), sl(0, 1)});
    return;
  }
  for (int64_t k = 0; k < nch_; ++k) {
    const TileView part = k == 0 ? rstd : t.stat();
    b.activation(t.ytile(k), t.load(k), ActFunc::square, 1.0f, 0.0f, part);  // sum(x^2)
    if (k > 0) b.tensor_tensor(rstd, rstd, part, AluOp::add);
  }
  TensorScalarOpts ad;
  ad.op1 = AluOp::add;
  ad.arg1 = eps_;
  b.tensor_scalar(rstd, rstd, AluOp::mul, 1.0f / static_cast<float>(C_), ad);
  b.tensor_scalar(rstd, rstd, AluOp::pow, -0.5f);
}

// trn.LayerNorm ((x - mean) * rstd) or trn.RMSNorm (x * rstd) of one row tile,
// then gamma and beta.
void Rowwise::norm_tile(RowTile& t) {
  kernels::Builder& b = c_.b;
  const int64_t p = t.p;
  TileView rstd = t.acc();
  std::optional<TileView> mean;
  norm_stats(t, rstd, mean);
  // Normalisation spread over three engines (per element: scalar 1 cycle,
  // vector 1, gpsimd 2; vector also ran bn_stats): the scalar engine writes
  // (x - mean) * rstd into PSUM, the vector engine multiplies by gamma reading
  // PSUM (1 cycle/element instead of 2 for two SBUF operands) back into x's
  // tile, and GpSimd adds beta in place. The result is stored from x's tile.
  for (int64_t k = 0; k < nch_; ++k) {
    const auto [c0, c1] = chunk_at(k);
    const TileView x = t.load(k);
    const int64_t w = c1 - c0;
    std::optional<TileView> sc, bi;
    if (scale_v_)
      sc = resident_ ? (*scale_all_)({sl(0, p), all()}) : load_param(scale_v_, p, c0, c1);
    if (bias_v_) bi = resident_ ? (*bias_all_)({sl(0, p), all()}) : load_param(bias_v_, p, c0, c1);
    for (int64_t s0 = 0; s0 < w; s0 += kNormSub) {
      const int64_t s1 = std::min(w, s0 + kNormSub);
      const TileView xs = x({all(), sl(s0, s1)});
      TensorScalarOpts o;
      o.engine = isa::Engine::scalar;
      // Without gamma the scalar engine writes the tile itself.
      const TileView tn = sc ? b.tile(*normp_, {p, s1 - s0}, DType::fp32) : xs;
      if (mean) {
        o.op1 = AluOp::mul;
        o.arg1 = rstd;
        b.tensor_scalar(tn, xs, AluOp::sub, *mean, o);
      } else {
        b.tensor_scalar(tn, xs, AluOp::mul, rstd, o);
      }
      if (sc) b.tensor_tensor(xs, tn, (*sc)({all(), sl(s0, s1)}), AluOp::mul, isa::Engine::vector);
      if (bi) b.tensor_tensor(xs, xs, (*bi)({all(), sl(s0, s1)}), AluOp::add, isa::Engine::gpsimd);
    }
    t.store(k, x);
  }
}

// A split reduction's partials: [R*q, 1] -> [1, R*q] (PSUM) -> reduce each row's q
// partials -> [1, R].
void Rowwise::combine_split() {
  const kernels::PoolRef tp = c_.b.pool(pfx_ + ".tp", isa::MemSpace::psum, 1);
  TileView t = c_.b.tile(tp, {1, R_}, DType::fp32);
  c_.b.transpose(t, *split_part_);
  TileView a = c_.b.tile(ap_, {1, Rk_}, DType::fp32);
  const AluOp comb = op_ == "ReduceMax" ? AluOp::max : op_ == "ReduceMin" ? AluOp::min : AluOp::add;
  c_.b.tensor_reduce(a, t.reshape({1, Rk_, q_}), comb, {1}, isa::Engine::vector);  // reads PSUM
  finish(a);
  c_.b.dma(c_.view(yv_).reshape({1, Rk_}), a);
}

// A normalised result computed with the reduced axes last goes back in place.
void Rowwise::permute_back() {
  std::vector<int> inv(perm_.size());
  for (size_t k = 0; k < perm_.size(); ++k) inv[perm_[k]] = static_cast<int>(k);
  c_.b.dma(c_.view(yv_).reshape(xs_), y_scratch_->permute(inv));
}

}  // namespace

void lower_rowwise(Ctx& c, const ir::Node& n) {
  Rowwise(c, n).run();
}

}  // namespace trnsim::lower
