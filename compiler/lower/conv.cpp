// Conv, ConvTranspose and trn.MatMulEpilogue with either anchor (1-D NCW and 2-D
// NCHW; 1-D runs as 2-D with H = 1).
//
// ConvTranspose runs as the stride-1 conv of its flipped, in/out-swapped kernel
// (re-laid out at compile time) over the zero-inserted, padded input. The zeros
// are never stored: a tap's gather writes every th-th / tw-th output position of
// the memset im2col tile from consecutive input elements (see tap_run).
//
// General groups: an implicit GEMM per group on the tensor engine. Output channels
// go on the PSUM partitions (tiles of <= 128), output pixels (n, oh, ow) on the
// free axis in chunks of <= 512 (one fp32 PSUM bank): psum[co, pix] += W^T[k, co]^T
// @ col[k, pix], accumulated over k-tiles of the contraction Cin/G * kh * kw.
// The im2col operand `col` is gathered straight from HBM by DMA: for one (kh, kw)
// and a run of input channels (a "slab") the rows are channels (one HBM stride)
// and the free dims (n, oh, ow) a strided window of the input, so one slab is one
// DMA. Contraction order is (kh, kw, ci) so that a slab is an arithmetic
// progression of HBM rows. The partition-start rule for access patterns (> 64
// partitions start at 0, 33..64 at 0/64, <= 32 at 0/32/64/96) decides the
// packing: slabs of <= 32 channels sit in the four 32-partition quadrants, <= 64 in
// the two halves, larger ones (chunks of 128 channels) fill a k-tile alone.
// Padding: the tile is memset to 0 and each slab's DMA is clipped to the part of
// its window inside the input. That costs one cheap memset per gathered tile
// (only when some slab is clipped or the tile has gap rows) and avoids a
// zero-padded HBM copy of the whole input (an extra read + write of it).
// Weights are constants: re-laid out at compile time into [G, k-tiles, 128, Cout/G]
// (zero gap rows), stored in the compute dtype so the stationary load is one
// contiguous DMA with no on-chip cast.
//
// Depthwise (group == Cin == Cout): channels on partitions, the input band (with
// zeroed padding) in SBUF, and per tap a per-partition-scalar multiply of the
// shifted strided view accumulated on the vector/scalar/gpsimd engines: a K = 1
// matmul per tap would waste the 128-row array.
//
// Epilogue (bias, activation, residual, ... of trn.MatMulEpilogue) is applied
// while evacuating PSUM: the conv bias (a per-partition column) and a directly
// following Relu go into one activation instruction; the other steps run on the
// [channels, pixels] tile, their operands loaded in the same layout (per-channel
// columns, scalars or strided/broadcast HBM views).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/trn_ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::at;
using kernels::HbmView;
using kernels::Ix;
using kernels::sl;
using kernels::TileView;

namespace {

using Attrs = std::map<std::string, ir::Attribute>;

std::vector<int64_t> ints_attr(const Attrs& a, const std::string& key,
                               const std::vector<int64_t>& dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second.storage())) return *v;
  return dflt;
}

int64_t int_attr(const Attrs& a, const std::string& key, int64_t dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (const auto* v = std::get_if<int64_t>(&it->second.storage())) return *v;
  return dflt;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -ceil_div(-a, b);
}

// 2-D conv geometry (1-D: H = KH = 1). A ConvTranspose is the stride-1 conv of
// its flipped, in/out-swapped kernel over the input with th-1 / tw-1 zeros
// inserted between rows / columns ("virtual" input of (H-1)*th+1 rows), padded
// by d*(K-1) - pad at the start (negative: cropped); th = tw = 1 for Conv.
struct ConvGeo {
  int64_t N, C, H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw, G;
  int64_t th = 1, tw = 1;
  bool transposed = false;
};

// Output rows [lo, hi) of one tap whose input index o*s + k*d - p is inside [0, in).
std::pair<int64_t, int64_t> valid_range(int64_t out, int64_t in, int64_t s, int64_t kd, int64_t p) {
  const int64_t lo = std::max<int64_t>(0, ceil_div(std::max<int64_t>(0, p - kd), s));
  const int64_t hi = std::min<int64_t>(out, floor_div(in - 1 + p - kd, s) + 1);
  return {lo, std::max(lo, hi)};
}

// The output indices of one tap inside [o_lo, o_hi) that read an input element:
// o0, o0 + ostep, ... (count of them), reading input i0, i0 + istep, ... . `t` is
// the zero-insertion factor (transposed convs, stride s = 1 then): the virtual
// index o*s + kd - p must be a multiple of t.
struct TapRun {
  int64_t o0 = 0, count = 0, ostep = 1, i0 = 0, istep = 1;
};
TapRun tap_run(int64_t out, int64_t in, int64_t s, int64_t t, int64_t kd, int64_t p, int64_t o_lo,
               int64_t o_hi) {
  auto [a, b] = valid_range(out, (in - 1) * t + 1, s, kd, p);
  a = std::max(a, o_lo);
  b = std::min(b, o_hi);
  TapRun r;
  if (a >= b) return r;
  if (t == 1) {
    r = {a, b - a, 1, a * s + kd - p, s};
    return r;
  }
  const int64_t rem = ((a + kd - p) % t + t) % t;
  const int64_t o0 = a + (t - rem) % t;
  if (o0 >= b) return r;
  r = {o0, (b - 1 - o0) / t + 1, t, (o0 + kd - p) / t, 1};
  return r;
}

// A chunk of output pixels: images [n0, n0+nn), rows [oh0, oh0+ohc), cols [ow0, ow0+owc).
struct Chunk {
  int64_t n0, nn, oh0, ohc, ow0, owc;
  int64_t size() const { return nn * ohc * owc; }
};

std::vector<Chunk> chunks(const ConvGeo& g, int64_t fmax, bool batch_images) {
  std::vector<Chunk> r;
  const int64_t P = g.OH * g.OW;
  if (P <= fmax) {
    const int64_t nn = batch_images ? std::max<int64_t>(1, fmax / P) : 1;
    for (int64_t n0 = 0; n0 < g.N; n0 += nn)
      r.push_back({n0, std::min(nn, g.N - n0), 0, g.OH, 0, g.OW});
  } else if (g.OW <= fmax) {
    const int64_t ohc = fmax / g.OW;
    for (int64_t n0 = 0; n0 < g.N; ++n0)
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += ohc)
        r.push_back({n0, 1, oh0, std::min(ohc, g.OH - oh0), 0, g.OW});
  } else {
    for (int64_t n0 = 0; n0 < g.N; ++n0)
      for (int64_t oh0 = 0; oh0 < g.OH; ++oh0)
        for (int64_t ow0 = 0; ow0 < g.OW; ow0 += fmax)
          r.push_back({n0, 1, oh0, 1, ow0, std::min(fmax, g.OW - ow0)});
  }
  return r;
}

// Epilogue operand `v` (broadcasting to the [N, M, OH, OW] output) for output
// channels [co0, co0+mt) and pixel chunk `ch`, as a [mt, chunk] tile, a [mt, 1]
// column or an immediate.
Operand load_conv_operand(Ctx& c, const ir::Node& n, const ir::Value* v, const ConvGeo& g,
                          int64_t out_rank, const Chunk& ch, int64_t co0, int64_t mt) {
  Operand o;
  if (v->type.numel() == 1 && v->has_data()) {
    o.kind = Operand::Kind::imm;
    o.imm = static_cast<float>(v->data->at(0));
    return o;
  }
  const ir::Shape& s = v->shape();
  if (static_cast<int64_t>(s.size()) > out_rank)
    unsupported(n, "epilogue operand '" + v->name + "' has a higher rank than the output");
  ir::Shape sal(out_rank - static_cast<int64_t>(s.size()), 1);
  sal.insert(sal.end(), s.begin(), s.end());
  if (out_rank == 3) sal.insert(sal.begin() + 2, 1);
  const int64_t out4[4] = {g.N, g.M, g.OH, g.OW};
  bool per_channel = true;
  for (int d = 0; d < 4; ++d) {
    if (sal[d] != 1 && sal[d] != out4[d])
      unsupported(n, "epilogue operand '" + v->name + "' " + v->type.str() +
                         " does not broadcast to the conv output");
    if (d != 1 && sal[d] != 1) per_channel = false;
  }
  const HbmView& x = c.view(v);
  if (per_channel) {
    o.kind = Operand::Kind::column;
    o.t = c.b.tile(c.in_pool, {mt, 1}, DType::fp32);
    if (sal[1] == 1)
      c.b.dma(o.t, x.reshape({1}).broadcast(0, mt));
    else
      c.b.dma(o.t, x.reshape({g.M})({sl(co0, co0 + mt)}).reshape({mt, 1}));
    return o;
  }
  HbmView h = x.reshape(sal);
  for (int d = 0; d < 4; ++d) {
    if (sal[d] != 1 || out4[d] == 1) continue;
    Ix ix[4] = {all(), all(), all(), all()};
    ix[d] = at(0);
    h = h({ix[0], ix[1], ix[2], ix[3]}).broadcast(d, out4[d]);  // stride-0 axis
  }
  h = h.permute({1, 0, 2, 3})({sl(co0, co0 + mt), sl(ch.n0, ch.n0 + ch.nn),
                               sl(ch.oh0, ch.oh0 + ch.ohc), sl(ch.ow0, ch.ow0 + ch.owc)});
  o.t = c.b.tile(c.in_pool, {mt, ch.size()}, DType::fp32);
  c.b.dma(o.t.reshape({mt, ch.nn, ch.ohc, ch.owc}), h);
  return o;
}

struct ConvNode {
  const ir::Value *x, *w, *bias = nullptr, *y;
  Attrs attrs;
  std::vector<ir::FusedStep> steps;  // epilogue steps (index 0: the conv itself)
  std::optional<DType> mm_t;         // compute dtype on chip (nullopt: fp32)
  bool transposed = false;           // ConvTranspose: w is [C, M/G, k...]
};

ConvNode parse_conv(const ir::Node& n) {
  ConvNode cn;
  cn.x = n.inputs.at(0);
  cn.w = n.inputs.at(1);
  cn.y = n.outputs.at(0);
  if (n.op == "trn.MatMulEpilogue") {
    cn.steps = ir::fused_steps(n);
    const ir::FusedStep& s0 = cn.steps.at(0);
    if (s0.op != "Conv" && s0.op != "ConvTranspose")
      unsupported(n, "epilogue anchor '" + s0.op + "' is not lowered");
    if (s0.args.size() == 3) {
      if (s0.args[2].is_step) unsupported(n, "conv bias reads a step");
      cn.bias = n.inputs.at(s0.args[2].index);
    }
    cn.attrs = s0.attrs;
    cn.transposed = s0.op == "ConvTranspose";
    for (size_t i = 1; i < cn.steps.size(); ++i) {
      const std::string& op = cn.steps[i].op;
      if (!is_lowerable_elementwise(op) && op != "Clip")
        unsupported(n, "epilogue step '" + op + "' is not lowered yet");
      for (const ir::FusedArg& a : cn.steps[i].args)
        if (!a.is_step && a.index < 2)
          unsupported(n, "epilogue step '" + op + "' reads a conv operand");
    }
  } else {
    cn.attrs = n.attrs;
    cn.transposed = n.op == "ConvTranspose";
    if (n.num_inputs() > 2) cn.bias = n.input(2);
    ir::FusedStep s0;
    s0.op = n.op;
    cn.steps.push_back(s0);
  }
  if (auto cd = ir::compute_dtype(n); cd && *cd != ir::ElemType::fp32) {
    cn.mm_t = ir::to_isa(*cd);
    if (!cn.mm_t) unsupported(n, "compute_dtype has no chip type");
  }
  return cn;
}

ConvGeo conv_geo(const ir::Node& n, const ConvNode& cn) {
  const ir::Shape &xs = cn.x->shape(), &ws = cn.w->shape(), &ys = cn.y->shape();
  const size_t r = xs.size();
  if (r != 3 && r != 4)
    unsupported(n, "only 1-D and 2-D convolutions are lowered (input " + cn.x->type.str() + ")");
  if (ws.size() != r || ys.size() != r) unsupported(n, "weights/output rank differ from input");
  const size_t k = r - 2;
  const std::vector<int64_t> kern = ints_attr(cn.attrs, "kernel_shape", {ws.begin() + 2, ws.end()});
  const std::vector<int64_t> st = ints_attr(cn.attrs, "strides", std::vector<int64_t>(k, 1));
  const std::vector<int64_t> dl = ints_attr(cn.attrs, "dilations", std::vector<int64_t>(k, 1));
  const std::vector<int64_t> pd = ints_attr(cn.attrs, "pads", std::vector<int64_t>(2 * k, 0));
  if (kern.size() != k || st.size() != k || dl.size() != k || pd.size() != 2 * k)
    unsupported(n, "kernel_shape/strides/dilations/pads do not match the input rank");
  ConvGeo g{};
  g.N = xs[0];
  g.C = xs[1];
  g.M = ys[1];
  g.G = int_attr(cn.attrs, "group", 1);
  const bool two = k == 2;
  g.H = two ? xs[2] : 1;
  g.W = xs.back();
  g.OH = two ? ys[2] : 1;
  g.OW = ys.back();
  g.KH = two ? kern[0] : 1;
  g.KW = kern.back();
  g.sh = two ? st[0] : 1;
  g.sw = st.back();
  g.dh = two ? dl[0] : 1;
  g.dw = dl.back();
  g.ph = two ? pd[0] : 0;
  g.pw = pd[k - 1];
  if (g.G < 1 || g.C % g.G || g.M % g.G) unsupported(n, "group does not divide the channels");
  if (cn.transposed) {
    g.transposed = true;
    g.th = g.sh;
    g.tw = g.sw;
    g.sh = g.sw = 1;
    g.ph = g.dh * (g.KH - 1) - g.ph;
    g.pw = g.dw * (g.KW - 1) - g.pw;
  }
  if (kern != std::vector<int64_t>(ws.begin() + 2, ws.end()))
    unsupported(n, "kernel_shape differs from the weights' spatial dims");
  // The end pads only decide OH/OW (already in the output shape): windows past
  // the input are clipped the same way as at the start.
  return g;
}

// The pools and per-chunk epilogue shared by the GEMM and depthwise paths.
struct Epilogue {
  Ctx& c;
  const ir::Node& n;
  const ConvNode& cn;
  const ConvGeo& g;
  int64_t out_rank;
  kernels::PoolRef bias_pool;  // one buffer per bias column (bias_cols of them)
  // Bias columns by first channel: each loaded once per layer, not once per chunk
  // (a tiny DMA whose latency sat between every chunk's matmuls and evacuation).
  std::map<int64_t, TileView> bias_cols;

  // Evacuates `src` ([mt, chunk] in PSUM or SBUF) for channels [co0, co0+mt),
  // applies bias and the steps, stores the result.
  void run(const TileView& src, const Chunk& ch, int64_t co0, int64_t mt) {
    const int64_t F = ch.size();
    std::optional<TileView> bcol;
    if (cn.bias) {
      auto it = bias_cols.find(co0);
      if (it == bias_cols.end()) {
        const TileView t = c.b.tile(bias_pool, {mt, 1}, DType::fp32);
        c.b.dma(t, c.view(cn.bias).reshape({g.M})({sl(co0, co0 + mt)}).reshape({mt, 1}));
        it = bias_cols.emplace(co0, t).first;
      }
      bcol = it->second;
    }
    size_t first = 1;
    ActFunc f = ActFunc::identity;
    if (cn.steps.size() > 1 && cn.steps[1].op == "Relu") {
      f = ActFunc::relu;
      first = 2;
    }
    std::vector<Operand> res(first);
    res[0].t = c.b.tile(c.work_pool, {mt, F}, DType::fp32);
    if (bcol || f != ActFunc::identity)
      c.b.activation(res[0].t, src, f, 1.0f, bcol ? kernels::Scalar(*bcol) : kernels::Scalar(0.0f));
    else
      c.b.tensor_copy(res[0].t, src);
    if (first == 2) res[1] = res[0];
    std::map<int, Operand> ins;
    for (size_t i = first; i < cn.steps.size(); ++i) {
      const ir::FusedStep& st = cn.steps[i];
      std::vector<Operand> args;
      for (const ir::FusedArg& a : st.args) {
        if (a.is_step) {
          args.push_back(res.at(a.index));
          continue;
        }
        if (!ins.count(a.index))
          ins[a.index] = load_conv_operand(c, n, n.inputs.at(a.index), g, out_rank, ch, co0, mt);
        args.push_back(ins[a.index]);
      }
      Operand r;
      if (st.op == "Clip") {
        if (args.size() != 1 || args[0].kind != Operand::Kind::tile)
          unsupported(n, "Clip step with run-time min/max is not lowered");
        auto bound = [&](const char* key, float dflt) {
          auto it = st.attrs.find(key);
          if (it == st.attrs.end()) return dflt;
          if (const auto* v = std::get_if<float>(&it->second.storage())) return *v;
          unsupported(n, std::string("Clip ") + key + " is not a float attribute");
        };
        r.t = c.b.tile(c.work_pool, {mt, F}, DType::fp32);
        kernels::TensorScalarOpts o;
        o.op1 = AluOp::min;
        o.arg1 = bound("max", std::numeric_limits<float>::infinity());
        c.b.tensor_scalar(r.t, args[0].t, AluOp::max,
                          bound("min", -std::numeric_limits<float>::infinity()), o);
      } else {
        r.t = apply_elementwise(c, n, st.op, st.attrs, args, mt, F);
      }
      res.push_back(r);
    }
    const HbmView Y = c.view(cn.y).reshape({g.N, g.M, g.OH, g.OW}).permute({1, 0, 2, 3});
    c.b.dma(Y({sl(co0, co0 + mt), sl(ch.n0, ch.n0 + ch.nn), sl(ch.oh0, ch.oh0 + ch.ohc),
               sl(ch.ow0, ch.ow0 + ch.owc)}),
            res.back().t.reshape({mt, ch.nn, ch.ohc, ch.owc}));
  }
};

// One slab of the contraction: tap (kh, kw), group-local channels [ci0, ci0+len),
// at partitions [p0, p0+len) of its k-tile.

struct Slab {
  int64_t kh, kw, ci0, len, p0;
  bool kw_rows = false;  // rows are taps kw..kw+len-1 of channel ci0 (not channels)
};

void lower_conv_gemm(Ctx& c, const ir::Node& n, const ConvNode& cn, const ConvGeo& g, Epilogue& ep,
                     const std::string& pfx) {
  const int64_t Cg = g.C / g.G, Mg = g.M / g.G;
  // k-tiles of KP partitions, m-tiles of MP (PSUM results are copied to SBUF).
  const int64_t KP = c.target.k_tile(), MP = c.target.m_tile();
  const int64_t group_cols = 4 * MP;  // output channels per stationary load
  const DType op_t = cn.mm_t.value_or(DType::fp32);
  const int64_t ebytes = static_cast<int64_t>(isa::dtype_size(op_t));
  const uint32_t nin = static_cast<uint32_t>(n.num_inputs());
  const uint32_t work_bufs = 2 * static_cast<uint32_t>(cn.steps.size() + nin + 1);
  int64_t fmax =
      std::min<int64_t>(c.target.matmul_max_n, static_cast<int64_t>(c.target.psum_bank_bytes / 4));
  const uint64_t quarter = c.target.sbuf_partition_bytes / 4;
  while (fmax > 16 && static_cast<uint64_t>(fmax) * 4 * (2 * nin + work_bufs) > quarter) fmax /= 2;
  const std::vector<Chunk> chs = chunks(g, fmax, true);
  // Direct conv from a band of input rows: with enough channels to fill the
  // contraction on their own, each chunk's input rows (all columns, every tap's
  // window) are loaded once, one contiguous run per channel and image, and every
  // tap's matmul reads its window as a strided view of the band: no im2col, whose
  // gathers re-read the input once per tap with one descriptor per row. A tap whose
  // window leaves the input only writes the output pixels it reaches; the first
  // matmul of each accumulation is a tap that reaches all of them.
  const int64_t CT = ceil_div(Cg, KP);
  auto band_rows = [&](const Chunk& ch) {
    const int64_t lo = std::max<int64_t>(0, ch.oh0 * g.sh - g.ph);
    const int64_t hi =
        std::min<int64_t>(g.H, (ch.oh0 + ch.ohc - 1) * g.sh - g.ph + (g.KH - 1) * g.dh + 1);
    return std::pair<int64_t, int64_t>{lo, std::max(lo, hi)};
  };
  int64_t full_kh = -1, full_kw = -1;  // a tap whose window stays inside the input
  for (int64_t kh = 0; kh < g.KH && full_kh < 0; ++kh)
    for (int64_t kw = 0; kw < g.KW && full_kh < 0; ++kw)
      if (valid_range(g.OH, g.H, g.sh, kh * g.dh, g.ph) == std::pair<int64_t, int64_t>{0, g.OH} &&
          valid_range(g.OW, g.W, g.sw, kw * g.dw, g.pw) == std::pair<int64_t, int64_t>{0, g.OW}) {
        full_kh = kh;
        full_kw = kw;
      }
  bool band = g.G == 1 && !g.transposed && cn.w->has_data() && Cg > KP / 4 && full_kh >= 0;
  int64_t band_max = 0;  // elements of the largest band tile
  for (const Chunk& ch : chs) {
    if (ch.owc != g.OW) band = false;
    const auto [lo, hi] = band_rows(ch);
    band_max = std::max(band_max, ch.nn * (hi - lo) * g.W);
  }
  band = band && static_cast<uint64_t>(2 * CT * band_max * ebytes) <= quarter;
  // Band mode: one tap's channel run per k-tile (the taps' windows differ).
  const int64_t slot = band ? KP : std::min<int64_t>(KP, Cg <= 32 ? 32 : Cg <= 64 ? 64 : KP);
  // Fewer channels than kernel columns (the stem's 3 of 7): a slab of one channel's
  // KW taps of one kernel row (HBM rows dw elements apart) packs more of the
  // contraction into a k-tile than a slab of channels per tap. Its rows' windows
  // leave the input at different columns, so the input is first copied, zero-padded
  // and in the compute dtype, to an HBM scratch that every window stays inside.
  const bool kw_rows =
      !band && !g.transposed && cn.w->has_data() && slot == KP / 4 && g.KW <= slot && Cg < g.KW;
  std::vector<std::vector<Slab>> kt;
  int64_t next = KP;  // next free partition of the last k-tile
  auto add_slab = [&](const Slab& sb) {
    if (next + slot > KP) {
      kt.emplace_back();
      next = 0;
    }
    kt.back().push_back(sb);
    kt.back().back().p0 = next;
    next += slot;
  };
  for (int64_t kh = 0; kh < g.KH; ++kh)
    if (kw_rows)
      for (int64_t ci = 0; ci < Cg; ++ci) add_slab({kh, 0, ci, g.KW, 0, true});
    else
      for (int64_t kw = 0; kw < g.KW; ++kw)
        for (int64_t ci0 = 0; ci0 < Cg; ci0 += KP)
          add_slab({kh, kw, ci0, std::min<int64_t>(slot, Cg - ci0), 0});
  const int64_t KT = static_cast<int64_t>(kt.size());
  std::vector<int64_t> kext(KT);
  std::vector<bool> gaps(KT, false);
  for (int64_t t = 0; t < KT; ++t) {
    int64_t used = 0;
    for (const Slab& s : kt[t]) used += s.len;
    kext[t] = kt[t].back().p0 + kt[t].back().len;
    gaps[t] = used != kext[t];
  }
  // Constant weights re-laid out: wl[gi][t][p][co] = W[gi*Mg + co, ci0 + p - p0, kh, kw].
  // Run-time weights (rare: ONNX allows them) are gathered per slab by strided
  // DMAs from W viewed as [ci, kh, kw, co] (one element per descriptor: slow).
  std::optional<HbmView> WL;
  if (cn.w->has_data()) {
    std::vector<float> w = cn.w->data->floats();
    if (g.transposed) {
      // The equivalent conv kernel [M, Cg, KH, KW]: in/out swapped per group, flipped.
      std::vector<float> wc(w.size());
      for (int64_t gi = 0; gi < g.G; ++gi)
        for (int64_t co = 0; co < Mg; ++co)
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw)
                wc[(((gi * Mg + co) * Cg + ci) * g.KH + kh) * g.KW + kw] =
                    w[(((gi * Cg + ci) * Mg + co) * g.KH + (g.KH - 1 - kh)) * g.KW +
                      (g.KW - 1 - kw)];
      w = std::move(wc);
    }
    std::vector<float> wl(static_cast<size_t>(g.G * KT * KP * Mg), 0.0f);
    for (int64_t gi = 0; gi < g.G; ++gi)
      for (int64_t t = 0; t < KT; ++t)
        for (const Slab& s : kt[t])
          for (int64_t i = 0; i < s.len; ++i)
            for (int64_t co = 0; co < Mg; ++co)
              wl[((gi * KT + t) * KP + s.p0 + i) * Mg + co] =
                  s.kw_rows ? w[(((gi * Mg + co) * Cg + s.ci0) * g.KH + s.kh) * g.KW + i]
                            : w[(((gi * Mg + co) * Cg + s.ci0 + i) * g.KH + s.kh) * g.KW + s.kw];
    WL = c.b.constant(pfx + ".wl", {g.G, KT, KP, Mg}, op_t, wl);
  }
  std::optional<HbmView> WR;
  if (!WL && !g.transposed) WR = c.view(cn.w).reshape({g.M, Cg, g.KH, g.KW}).permute({1, 2, 3, 0});
  // A transposed conv's [C, Mg, KH, KW] as [G, Cg, KH, KW, Mg]; taps are read flipped.
  if (!WL && g.transposed)
    WR = c.view(cn.w).reshape({g.G, Cg, Mg, g.KH, g.KW}).permute({0, 1, 3, 4, 2});
  const HbmView X = c.view(cn.x).reshape({g.N, g.C, g.H, g.W}).permute({1, 0, 2, 3});
  // kw_rows: the padded input (the rows and columns the windows read; an unread
  // input tail is left out), padded row r in plane r % sh at row r / sh: [N, C, sh,
  // Hq, Wp]. A tap's output rows then read consecutive rows of one plane, so one
  // chunk of a slab row is a single contiguous run (whole rows, Wp apart on chip).
  const int64_t Hp = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1;
  const int64_t Wp = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  const int64_t Hq = ceil_div(Hp, g.sh);
  std::optional<HbmView> XP;  // [N, C, sh, Hq * Wp]
  if (kw_rows) {
    const int64_t hc = std::min(g.H, Hp - g.ph), wc = std::min(g.W, Wp - g.pw);
    const int64_t NC = g.N * g.C, P = c.target.partitions;
    const HbmView xp = c.b.scratch(pfx + ".xpad", {NC, g.sh, Hq, Wp}, op_t);
    const HbmView Xr = c.view(cn.x).reshape({NC, g.H, g.W});
    struct Region {
      int64_t r0, r1, c0, c1;
    };
    std::vector<std::pair<int64_t, Region>> border;  // (plane, region)
    for (int64_t pl = 0; pl < g.sh; ++pl) {
      // Plane rows j with padded row j*sh + pl inside [ph, ph + hc): [j0, j1).
      const int64_t j0 = ceil_div(std::max<int64_t>(0, g.ph - pl), g.sh);
      const int64_t j1 = std::max(j0, ceil_div(std::max<int64_t>(0, g.ph + hc - pl), g.sh));
      if (j1 > j0) {
        // The interior: an HBM-to-HBM copy (cast on the way).
        const int64_t i0 = j0 * g.sh + pl - g.ph;
        c.b.dma(xp({all(), at(pl), sl(j0, j1), sl(g.pw, g.pw + wc)}),
                Xr({all(), sl(i0, i0 + (j1 - j0 - 1) * g.sh + 1, g.sh), sl(0, wc)}));
      }
      for (const Region& r : {Region{0, j0, 0, Wp}, Region{j1, Hq, 0, Wp}, Region{j0, j1, 0, g.pw},
                              Region{j0, j1, g.pw + wc, Wp}})
        if (r.r1 > r.r0 && r.c1 > r.c0) border.push_back({pl, r});
    }
    // The borders: copies of a zeroed tile.
    int64_t zmax = 0;
    for (const auto& [pl, r] : border) zmax = std::max(zmax, (r.r1 - r.r0) * (r.c1 - r.c0));
    if (zmax > 0) {
      const kernels::PoolRef zp = c.b.pool(pfx + ".zero", isa::MemSpace::sbuf, 1);
      const TileView z = c.b.tile(zp, {std::min(P, NC), zmax}, op_t);
      c.b.memset(z, 0.0f);
      for (int64_t r0 = 0; r0 < NC; r0 += P) {
        const int64_t rt = std::min(P, NC - r0);
        for (const auto& [pl, r] : border)
          c.b.dma(xp({sl(r0, r0 + rt), at(pl), sl(r.r0, r.r1), sl(r.c0, r.c1)}),
                  z({sl(0, rt), sl(0, (r.r1 - r.r0) * (r.c1 - r.c0))})
                      .reshape({rt, r.r1 - r.r0, r.c1 - r.c0}));
      }
    }
    XP = xp.reshape({g.N, g.C, g.sh, Hq * Wp});
  }

  // A column-strided conv (sw > 1) gathers each row's whole input span, wspan
  // columns of which the matmul reads every sw-th: one contiguous run per row
  // (one DMA descriptor) instead of one per element.
  const bool wide = g.sw > 1 && g.tw == 1;
  auto span = [&](const Chunk& ch) { return wide ? (ch.owc - 1) * g.sw + 1 : ch.owc; };
  // Row pitch of a gathered tile (kw_rows: the padded width, whole rows gathered).
  auto pitch = [&](const Chunk& ch) { return kw_rows ? Wp : span(ch); };
  int64_t maxf = 0;  // elements of the largest gathered tile
  for (const Chunk& ch : chs) maxf = std::max(maxf, ch.nn * ch.ohc * pitch(ch));
  // With more than one group of output channels, the gathered k-tiles of a chunk
  // stay resident across the groups when they fit in a quarter of SBUF;
  // otherwise they are gathered again per group.
  const int64_t mtiles = ceil_div(Mg, group_cols);
  const bool resident = mtiles > 1 && static_cast<uint64_t>(KT * maxf * ebytes) <= quarter;
  // Not resident: up to four chunks' k-tiles in flight (within a quarter of SBUF),
  // so that the next chunk's gathers run while this one's matmuls do.
  const uint32_t col_bufs =
      resident ? static_cast<uint32_t>(KT)
               : static_cast<uint32_t>(std::clamp<int64_t>(
                     static_cast<int64_t>(quarter) / std::max<int64_t>(1, maxf * ebytes), 3,
                     std::max<int64_t>(3, 4 * KT)));
  const kernels::PoolRef col_pool =
      band ? c.b.pool(pfx + ".band", isa::MemSpace::sbuf, static_cast<uint32_t>(2 * CT))
           : c.b.pool(pfx + ".col", isa::MemSpace::sbuf, col_bufs);
  // The whole group's weights stay in SBUF across the pixel chunks (every image of a
  // batch) when they fit in a quarter of a partition: loaded once per layer instead
  // of once per chunk.
  const bool w_once = WL && chs.size() > 1 && static_cast<uint64_t>(KT * Mg * ebytes) <= quarter;
  // Several weight loads in flight: small images make convs weight-bandwidth bound.
  const kernels::PoolRef w_pool =
      w_once ? c.b.pool(pfx + ".wres", isa::MemSpace::sbuf, static_cast<uint32_t>(KT))
             : c.b.pool(pfx + ".w", isa::MemSpace::sbuf, 6);
  const uint32_t ps_tiles = static_cast<uint32_t>(ceil_div(std::min(Mg, group_cols), MP));
  const kernels::PoolRef psum = c.b.pool(pfx + ".psum", isa::MemSpace::psum, 2 * ps_tiles);

  // The matmul's moving operand: the gathered tile's output-pixel elements.
  auto moving = [&](const TileView& col, int64_t t, const Chunk& ch) {
    if (!wide && !kw_rows) return col;
    return col.reshape({kext[t], ch.nn, ch.ohc, pitch(ch)})(
        {all(), all(), all(), sl(0, span(ch), wide ? g.sw : 1)});
  };
  int64_t gathers = 0;                        // tiles taken from col_pool so far
  std::vector<bool> zeroed(col_bufs, false);  // kw_rows: per buffer, gap rows zeroed
  auto gather = [&](int64_t gi, int64_t t, const Chunk& ch) {
    const int64_t ws = span(ch);
    TileView col = c.b.tile(col_pool, {kext[t], ch.nn * ch.ohc * pitch(ch)}, op_t);
    if (kw_rows) {
      // Never clipped; the gap rows (the same partitions in every k-tile that has
      // them, never written by a gather) are zeroed once per pool buffer, on its
      // first use by such a k-tile (chunks come largest first).
      const size_t buf = static_cast<size_t>(gathers++ % col_bufs);
      if (gaps[t] && !zeroed[buf]) {
        c.b.memset(col, 0.0f);
        zeroed[buf] = true;
      }
      // Row ohc of the chunk's first output row in plane (kh*dh) % sh, from column
      // ow0*sw (+ kw*dw per slab row): ohc - 1 whole rows and the last one's span.
      const int64_t run = (ch.ohc - 1) * Wp + ws;
      const TileView col3 = col.reshape({kext[t], ch.nn, ch.ohc * Wp});
      for (const Slab& s : kt[t]) {
        const int64_t at0 = (ch.oh0 + s.kh * g.dh / g.sh) * Wp + ch.ow0 * g.sw;
        c.b.dma(col3({sl(s.p0, s.p0 + s.len), all(), sl(0, run)}),
                (*XP)({sl(ch.n0, ch.n0 + ch.nn), at(gi * Cg + s.ci0), at(s.kh * g.dh % g.sh),
                       sl(at0, at0 + run)})
                    .windows(s.len, g.dw));
      }
      return col;
    }
    const TileView col4 = col.reshape({kext[t], ch.nn, ch.ohc, ws});
    bool clipped = gaps[t];
    struct Part {
      const Slab* s;
      TapRun h, w;
    };
    std::vector<Part> parts;
    for (const Slab& s : kt[t]) {
      const TapRun h = tap_run(g.OH, g.H, g.sh, g.th, s.kh * g.dh, g.ph, ch.oh0, ch.oh0 + ch.ohc);
      TapRun w = tap_run(g.OW, g.W, g.sw, g.tw, s.kw * g.dw, g.pw, ch.ow0, ch.ow0 + ch.owc);
      if (wide) {
        // Tile column j holds input column ow0*sw + kw*dw - pw + j.
        const int64_t first = ch.ow0 * g.sw + s.kw * g.dw - g.pw;
        const int64_t lo = std::max<int64_t>(0, -first), hi = std::min<int64_t>(ws, g.W - first);
        w = hi > lo ? TapRun{lo, hi - lo, 1, first + lo, 1} : TapRun{};
        if (w.count != ws) clipped = true;
      } else if (w.count != ch.owc) {
        clipped = true;
      }
      if (h.count != ch.ohc) clipped = true;
      if (h.count > 0 && w.count > 0) parts.push_back({&s, h, w});
    }
    if (clipped) c.b.memset(col, 0.0f);
    for (const Part& p : parts) {
      const Slab& s = *p.s;
      const TapRun &h = p.h, &w = p.w;
      const int64_t c0 = gi * Cg + s.ci0;
      const int64_t oh = h.o0 - ch.oh0, ow = wide ? w.o0 : w.o0 - ch.ow0;
      c.b.dma(
          col4({sl(s.p0, s.p0 + s.len), all(), sl(oh, oh + (h.count - 1) * h.ostep + 1, h.ostep),
                sl(ow, ow + (w.count - 1) * w.ostep + 1, w.ostep)}),
          X({sl(c0, c0 + s.len), sl(ch.n0, ch.n0 + ch.nn),
             sl(h.i0, h.i0 + (h.count - 1) * h.istep + 1, h.istep),
             sl(w.i0, w.i0 + (w.count - 1) * w.istep + 1, w.istep)}));
    }
    return col;
  };

  // The stationary [kext, gc] of k-tile t, output channels [g0, g0+gc) of group gi.
  auto weights = [&](const std::vector<TileView>& wres, int64_t gi, int64_t t, int64_t g0,
                     int64_t gc) {
    if (w_once) return wres[t]({all(), sl(g0, g0 + gc)});
    TileView wt = c.b.tile(w_pool, {kext[t], gc}, op_t);
    if (WL) {
      c.b.dma(wt, (*WL)({at(gi), at(t), sl(0, kext[t]), sl(g0, g0 + gc)}));
      return wt;
    }
    if (gaps[t]) c.b.memset(wt, 0.0f);
    const int64_t m0 = gi * Mg + g0;
    for (const Slab& sb : kt[t])
      c.b.dma(wt({sl(sb.p0, sb.p0 + sb.len), all()}),
              g.transposed
                  ? (*WR)({at(gi), sl(sb.ci0, sb.ci0 + sb.len), at(g.KH - 1 - sb.kh),
                           at(g.KW - 1 - sb.kw), sl(g0, g0 + gc)})
                  : (*WR)({sl(sb.ci0, sb.ci0 + sb.len), at(sb.kh), at(sb.kw), sl(m0, m0 + gc)}));
    return wt;
  };
  // Band mode (group 0 only): the full tap's k-tiles first.
  std::vector<int64_t> border;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t t = 0; t < KT; ++t)
      if ((kt[t][0].kh == full_kh && kt[t][0].kw == full_kw) == (pass == 0)) border.push_back(t);
  auto band_chunk = [&](const std::vector<TileView>& wres, const Chunk& ch) {
    const auto [rlo, rhi] = band_rows(ch);
    const int64_t R = rhi - rlo;
    std::vector<TileView> bands;
    for (int64_t ci = 0; ci < CT; ++ci) {
      const int64_t c0 = ci * KP, len = std::min(KP, Cg - c0);
      bands.push_back(c.b.tile(col_pool, {len, ch.nn * R * g.W}, op_t));
      c.b.dma(bands.back().reshape({len, ch.nn, R, g.W}),
              X({sl(c0, c0 + len), sl(ch.n0, ch.n0 + ch.nn), sl(rlo, rhi), all()}));
    }
    for (int64_t g0 = 0; g0 < Mg; g0 += group_cols) {
      const int64_t gc = std::min(group_cols, Mg - g0);
      std::vector<TileView> ps;
      for (int64_t m0 = 0; m0 < gc; m0 += MP)
        ps.push_back(c.b.tile(psum, {std::min<int64_t>(MP, gc - m0), ch.size()}, DType::fp32));
      bool first = true;
      for (const int64_t t : border) {
        const Slab& s = kt[t][0];
        const TapRun h = tap_run(g.OH, g.H, g.sh, 1, s.kh * g.dh, g.ph, ch.oh0, ch.oh0 + ch.ohc);
        const TapRun w = tap_run(g.OW, g.W, g.sw, 1, s.kw * g.dw, g.pw, 0, g.OW);
        if (h.count == 0 || w.count == 0) continue;
        const TileView wt = weights(wres, 0, t, g0, gc);
        const TileView mv = bands[s.ci0 / KP].reshape({s.len, ch.nn, R, g.W})(
            {all(), all(), sl(h.i0 - rlo, h.i0 - rlo + (h.count - 1) * g.sh + 1, g.sh),
             sl(w.i0, w.i0 + (w.count - 1) * g.sw + 1, g.sw)});
        for (size_t i = 0; i < ps.size(); ++i) {
          const int64_t m0 = static_cast<int64_t>(i) * MP, mt = ps[i].partitions();
          const TileView dst = ps[i].reshape({mt, ch.nn, ch.ohc, g.OW})(
              {all(), all(), sl(h.o0 - ch.oh0, h.o0 - ch.oh0 + h.count), sl(w.o0, w.o0 + w.count)});
          c.b.matmul(dst, wt({all(), sl(m0, m0 + mt)}), mv, !first);
        }
        first = false;
      }
      for (size_t i = 0; i < ps.size(); ++i)
        ep.run(ps[i], ch, g0 + static_cast<int64_t>(i) * MP, ps[i].partitions());
    }
  };

  for (int64_t gi = 0; gi < g.G; ++gi) {
    std::vector<TileView> wres;
    if (w_once)
      for (int64_t t = 0; t < KT; ++t) {
        wres.push_back(c.b.tile(w_pool, {kext[t], Mg}, op_t));
        c.b.dma(wres.back(), (*WL)({at(gi), at(t), sl(0, kext[t]), all()}));
      }
    for (const Chunk& ch : chs) {
      if (band) {
        band_chunk(wres, ch);
        continue;
      }
      std::vector<TileView> cols;
      if (resident)
        for (int64_t t = 0; t < KT; ++t) cols.push_back(gather(gi, t, ch));
      // Up to 4 output-channel tiles share each stationary load: one weight DMA of
      // [k, <= 4 MP] per k-tile (large enough to spread over the DMA engines).
      for (int64_t g0 = 0; g0 < Mg; g0 += group_cols) {
        const int64_t gc = std::min(group_cols, Mg - g0);
        std::vector<TileView> ps;
        for (int64_t m0 = 0; m0 < gc; m0 += MP)
          ps.push_back(c.b.tile(psum, {std::min<int64_t>(MP, gc - m0), ch.size()}, DType::fp32));
        for (int64_t t = 0; t < KT; ++t) {
          const TileView wt = weights(wres, gi, t, g0, gc);
          const TileView mv = moving(resident ? cols[t] : gather(gi, t, ch), t, ch);
          for (size_t i = 0; i < ps.size(); ++i) {
            const int64_t m0 = static_cast<int64_t>(i) * MP;
            c.b.matmul(ps[i], wt({all(), sl(m0, m0 + ps[i].partitions())}), mv, t > 0);
          }
        }
        for (size_t i = 0; i < ps.size(); ++i)
          ep.run(ps[i], ch, gi * Mg + g0 + static_cast<int64_t>(i) * MP, ps[i].partitions());
      }
    }
  }
}

// Depthwise: acc[c, pix] = sum over taps of w[c, tap] * x[c, shifted window].
void lower_conv_depthwise(Ctx& c, const ir::Node& n, const ConvNode& cn, const ConvGeo& g,
                          Epilogue& ep, const std::string& pfx) {
  const DType op_t = cn.mm_t.value_or(DType::fp32);
  const int64_t ebytes = static_cast<int64_t>(isa::dtype_size(op_t));
  const int64_t KK = g.KH * g.KW;
  const uint32_t nin = static_cast<uint32_t>(n.num_inputs());
  const uint32_t work_bufs = 2 * static_cast<uint32_t>(cn.steps.size() + nin + 1);
  // Output rows per chunk: the epilogue buffers and the input band within budget.
  const uint64_t budget = c.target.sbuf_partition_bytes / 3;
  const int64_t wpad = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;  // input cols a row reads
  auto band_rows = [&](int64_t ohc) { return (ohc - 1) * g.sh + (g.KH - 1) * g.dh + 1; };
  auto bytes = [&](int64_t ohc) {
    return static_cast<uint64_t>(ohc * g.OW * 4 * (2 * nin + work_bufs + 2) +
                                 2 * band_rows(ohc) * wpad * ebytes);
  };
  int64_t ohc = g.OH;
  while (ohc > 1 && bytes(ohc) > budget) ohc = (ohc + 1) / 2;
  if (bytes(ohc) > budget)
    unsupported(n, "an output row of " + std::to_string(g.OW) + " pixels does not fit in SBUF");
  const kernels::PoolRef xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef wp = c.b.pool(pfx + ".w", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef accp = c.b.pool(pfx + ".acc", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef tmpp = c.b.pool(pfx + ".tmp", isa::MemSpace::sbuf, 2);
  const HbmView X = c.view(cn.x).reshape({g.N, g.C, g.H, g.W});
  const HbmView Wv = cn.w->has_data()
                         ? c.b.constant(pfx + ".wl", {g.C, KK}, op_t, cn.w->data->floats())
                         : c.view(cn.w).reshape({g.C, KK});
  const int64_t P = c.target.partitions;
  for (int64_t c0 = 0; c0 < g.C; c0 += P) {
    const int64_t ct = std::min<int64_t>(P, g.C - c0);
    TileView wt = c.b.tile(wp, {ct, KK}, op_t);
    c.b.dma(wt, Wv({sl(c0, c0 + ct), all()}));
    for (int64_t n0 = 0; n0 < g.N; ++n0)
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += ohc) {
        const Chunk ch{n0, 1, oh0, std::min(ohc, g.OH - oh0), 0, g.OW};
        // Band of input rows [r0, r0 + rows) and cols [-pw, -pw + wpad), zero outside.
        const int64_t r0 = oh0 * g.sh - g.ph, rows = band_rows(ch.ohc);
        TileView xb = c.b.tile(xp, {ct, rows, wpad}, op_t);
        const int64_t ra = std::max<int64_t>(0, r0), rb = std::min(g.H, r0 + rows);
        const int64_t ca = std::max<int64_t>(0, -g.pw), cb = std::min(g.W, wpad - g.pw);
        if (ra != r0 || rb != r0 + rows || ca != -g.pw || cb != wpad - g.pw) c.b.memset(xb, 0.0f);
        if (ra < rb && ca < cb)
          c.b.dma(xb({all(), sl(ra - r0, rb - r0), sl(ca + g.pw, cb + g.pw)}),
                  X({at(n0), sl(c0, c0 + ct), sl(ra, rb), sl(ca, cb)}));
        TileView acc = c.b.tile(accp, {ct, ch.ohc * g.OW}, DType::fp32);
        const TileView acc3 = acc.reshape({ct, ch.ohc, g.OW});
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            const int64_t tap = kh * g.KW + kw;
            const TileView win =
                xb({all(), sl(kh * g.dh, kh * g.dh + (ch.ohc - 1) * g.sh + 1, g.sh),
                    sl(kw * g.dw, kw * g.dw + (g.OW - 1) * g.sw + 1, g.sw)});
            const TileView wcol = wt({all(), sl(tap, tap + 1)});
            if (tap == 0) {
              c.b.tensor_scalar(acc3, win, AluOp::mul, wcol);
            } else {
              TileView tmp = c.b.tile(tmpp, {ct, ch.ohc, g.OW}, DType::fp32);
              c.b.tensor_scalar(tmp, win, AluOp::mul, wcol);
              c.b.tensor_tensor(acc3, acc3, tmp, AluOp::add);
            }
          }
        ep.run(acc, ch, c0, ct);
      }
  }
}

}  // namespace

bool is_conv_node(const ir::Node& n) {
  if (n.op == "Conv" || n.op == "ConvTranspose") return true;
  if (n.op != "trn.MatMulEpilogue") return false;
  const std::string& e = n.attr_string("expr");
  return e.rfind("Conv(", 0) == 0 || e.rfind("ConvTranspose(", 0) == 0;
}

bool conv_weight_only(const ir::Graph& g, const ir::Value* v) {
  if (!v->is_constant || g.is_output(v)) return false;
  const auto users = g.users(v);
  if (users.empty()) return false;
  for (const auto& [node, idx] : users)
    if (idx != 1 || !is_conv_node(*node)) return false;
  return true;
}

void lower_conv(Ctx& c, const ir::Node& n) {
  const ConvNode cn = parse_conv(n);
  const ConvGeo g = conv_geo(n, cn);
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const uint32_t nin = static_cast<uint32_t>(n.num_inputs());
  c.in_pool = c.b.pool(pfx + ".in", isa::MemSpace::sbuf, 2 * nin);
  c.work_pool = c.b.pool(pfx + ".work", isa::MemSpace::sbuf,
                         2 * static_cast<uint32_t>(cn.steps.size() + nin + 1));
  Epilogue ep{c,
              n,
              cn,
              g,
              static_cast<int64_t>(cn.y->shape().size()),
              c.b.pool(pfx + ".bias", isa::MemSpace::sbuf,
                       static_cast<uint32_t>(ceil_div(g.M, c.target.m_tile()) + g.G)),
              {}};
  // A transposed conv always takes the GEMM path (its gathered taps hold the zeros).
  const bool depthwise = !g.transposed && g.G > 1 && g.G == g.C && g.G == g.M;
  if (depthwise)
    lower_conv_depthwise(c, n, cn, g, ep, pfx);
  else
    lower_conv_gemm(c, n, cn, g, ep, pfx);
}

}  // namespace trnsim::lower
