// MaxPool, AveragePool (1-D NCW / 2-D NCHW), GlobalAveragePool and GlobalMaxPool.
// Planes (N*C rows) go on partitions in tiles of <= 128, spatial dims in the free
// dims. Windowed pools load a band of input rows (for a chunk of output rows) into
// SBUF with the padding filled (-inf for max, 0 for average: memset, then the
// in-bounds part by DMA), and combine the kh*kw taps, each a strided view of the
// band, with tensor_tensor max/add (a 2-D window separably: along rows, then
// columns). ceil_mode only lengthens the band (the extra tail is padding). AveragePool divides by
// the per-position count (input elements, plus pads with count_include_pad, never the part past the
// end pads): an immediate when it is the same everywhere, else a constant [OH, OW] map of
// reciprocals. Global pools reduce the flattened spatial dims with tensor_reduce
// (in column chunks combined on chip when a plane does not fit).
#include <algorithm>
#include <limits>

#include "compiler/ir/ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::HbmView;
using kernels::sl;
using kernels::TileView;

namespace {

// Number of taps of a window starting at o*s - pb that fall in [lo, hi).
int64_t taps_in(int64_t o, int64_t s, int64_t k, int64_t d, int64_t pb, int64_t lo, int64_t hi) {
  int64_t c = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t i = o * s + t * d - pb;
    if (i >= lo && i < hi) ++c;
  }
  return c;
}

void lower_global_pool(Ctx& c, const ir::Node& n) {
  const ir::Shape& xs = n.input(0)->shape();
  if (xs.size() < 3) unsupported(n, "input must be [N, C, spatial...]");
  const int64_t R = xs[0] * xs[1], S = ir::num_elements(ir::Shape(xs.begin() + 2, xs.end()));
  const bool is_max = n.op == "GlobalMaxPool";
  const AluOp op = is_max ? AluOp::max : AluOp::add;
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const kernels::PoolRef xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef sp = c.b.pool(pfx + ".s", isa::MemSpace::sbuf, 4);
  // The accumulator lives across every chunk: its own pool, so that the rotating
  // per-chunk partials never land on it (more than 4 chunks did).
  const kernels::PoolRef ap = c.b.pool(pfx + ".acc", isa::MemSpace::sbuf, 2);
  // Column chunk: two buffers within a quarter of a partition.
  const int64_t chunk = std::max<int64_t>(
      1, std::min<int64_t>(S, static_cast<int64_t>(c.target.sbuf_partition_bytes / 4 / 8)));
  const HbmView X = c.view(n.input(0)).reshape({R, S});
  const HbmView Y = c.view(n.outputs[0]).reshape({R, 1});
  const int64_t P = c.target.partitions;
  for (int64_t r0 = 0; r0 < R; r0 += P) {
    const int64_t rt = std::min<int64_t>(P, R - r0);
    TileView acc = c.b.tile(ap, {rt, 1}, DType::fp32);
    for (int64_t s0 = 0; s0 < S; s0 += chunk) {
      const int64_t st = std::min(chunk, S - s0);
      TileView x = c.b.tile(xp, {rt, st}, DType::fp32);
      c.b.dma(x, X({sl(r0, r0 + rt), sl(s0, s0 + st)}));
      if (s0 == 0) {
        c.b.tensor_reduce(acc, x, op, {0});
      } else {
        TileView part = c.b.tile(sp, {rt, 1}, DType::fp32);
        c.b.tensor_reduce(part, x, op, {0});
        c.b.tensor_tensor(acc, acc, part, op);
      }
    }
    if (!is_max) c.b.tensor_scalar(acc, acc, AluOp::mul, 1.0f / static_cast<float>(S));
    c.b.dma(Y({sl(r0, r0 + rt), all()}), acc);
  }
}

}  // namespace

bool is_pool(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
         op == "GlobalMaxPool";
}

void lower_pool(Ctx& c, const ir::Node& n) {
  if (n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool") return lower_global_pool(c, n);
  const ir::Shape& xs = n.input(0)->shape();
  if (xs.size() != 3 && xs.size() != 4)
    unsupported(n, "only 1-D and 2-D pooling is lowered (input " + n.input(0)->type.str() + ")");
  if (n.outputs.size() > 1) unsupported(n, "MaxPool Indices output is not lowered");
  const ir::WindowGeometry geo = ir::window_geometry(n);
  const bool two = xs.size() == 4, is_max = n.op == "MaxPool";
  const int64_t R = xs[0] * xs[1];
  const int64_t H = two ? geo.in[0] : 1, W = geo.in.back();
  const int64_t OH = two ? geo.out[0] : 1, OW = geo.out.back();
  const int64_t KH = two ? geo.kernel[0] : 1, KW = geo.kernel.back();
  const int64_t sh = two ? geo.strides[0] : 1, sw = geo.strides.back();
  const int64_t dh = two ? geo.dilations[0] : 1, dw = geo.dilations.back();
  const int64_t ph = two ? geo.pads_begin[0] : 0, pw = geo.pads_begin.back();
  const int64_t peh = two ? geo.pads_end[0] : 0, pew = geo.pads_end.back();
  const float fill = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
  const AluOp op = is_max ? AluOp::max : AluOp::add;

  // Input cols a row of windows reads (from -pw), and rows a chunk of output rows reads.
  const int64_t wpad = (OW - 1) * sw + (KW - 1) * dw + 1;
  auto band_rows = [&](int64_t ohc) { return (ohc - 1) * sh + (KH - 1) * dh + 1; };
  const uint64_t budget = c.target.sbuf_partition_bytes / 3;
  // A window over both dims is separable: the KW taps along each band row first
  // (into `rows`), then the KH taps down the columns of that: KW + KH - 2 vector
  // ops on fewer elements instead of KH * KW - 1.
  const bool separable = KH > 1 && KW > 1;
  auto bytes = [&](int64_t ohc) {
    return static_cast<uint64_t>(
        4 * (2 * band_rows(ohc) * wpad + 4 * ohc * OW + (separable ? 2 * band_rows(ohc) * OW : 0)));
  };
  int64_t ohc = OH;
  while (ohc > 1 && bytes(ohc) > budget) ohc = (ohc + 1) / 2;
  if (bytes(ohc) > budget)
    unsupported(n, "a row of " + std::to_string(OW) + " windows does not fit in SBUF");

  // Average divisor per output position (separable: rows x cols).
  std::optional<HbmView> recip;
  float recip_imm = 1.0f;
  if (!is_max) {
    const bool inc = n.attr_int("count_include_pad") != 0;
    std::vector<float> r(static_cast<size_t>(OH * OW));
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t ch =
            inc ? taps_in(oh, sh, KH, dh, ph, -ph, H + peh) : taps_in(oh, sh, KH, dh, ph, 0, H);
        const int64_t cw =
            inc ? taps_in(ow, sw, KW, dw, pw, -pw, W + pew) : taps_in(ow, sw, KW, dw, pw, 0, W);
        r[oh * OW + ow] = 1.0f / static_cast<float>(ch * cw);
      }
    recip_imm = r[0];
    if (std::any_of(r.begin(), r.end(), [&](float v) { return v != r[0]; })) {
      const std::string name =
          c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size()) + ".recip";
      recip = c.b.constant(name, {OH, OW}, DType::fp32, r);
    }
  }

  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const kernels::PoolRef xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef ap = c.b.pool(pfx + ".acc", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef rp = c.b.pool(pfx + ".recip", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef hp = c.b.pool(pfx + ".rows", isa::MemSpace::sbuf, 2);
  const HbmView X = c.view(n.input(0)).reshape({R, H, W});
  const HbmView Y = c.view(n.outputs[0]).reshape({R, OH, OW});
  const int64_t P = c.target.partitions;
  for (int64_t r0 = 0; r0 < R; r0 += P) {
    const int64_t rt = std::min<int64_t>(P, R - r0);
    for (int64_t oh0 = 0; oh0 < OH; oh0 += ohc) {
      const int64_t oc = std::min(ohc, OH - oh0);
      const int64_t b0 = oh0 * sh - ph, rows = band_rows(oc);
      TileView xb = c.b.tile(xp, {rt, rows, wpad}, DType::fp32);
      const int64_t ra = std::max<int64_t>(0, b0), rb = std::min(H, b0 + rows);
      const int64_t ca = std::max<int64_t>(0, -pw), cb = std::min(W, wpad - pw);
      if (ra != b0 || rb != b0 + rows || ca != -pw || cb != wpad - pw) c.b.memset(xb, fill);
      if (ra < rb && ca < cb)
        c.b.dma(xb({all(), sl(ra - b0, rb - b0), sl(ca + pw, cb + pw)}),
                X({sl(r0, r0 + rt), sl(ra, rb), sl(ca, cb)}));
      TileView acc = c.b.tile(ap, {rt, oc, OW}, DType::fp32);
      if (separable) {
        TileView hr = c.b.tile(hp, {rt, rows, OW}, DType::fp32);
        auto col = [&](int64_t kw) {
          return xb({all(), all(), sl(kw * dw, kw * dw + (OW - 1) * sw + 1, sw)});
        };
        c.b.tensor_tensor(hr, col(0), col(1), op);
        for (int64_t kw = 2; kw < KW; ++kw) c.b.tensor_tensor(hr, hr, col(kw), op);
        auto row = [&](int64_t kh) {
          return hr({all(), sl(kh * dh, kh * dh + (oc - 1) * sh + 1, sh), all()});
        };
        c.b.tensor_tensor(acc, row(0), row(1), op);
        for (int64_t kh = 2; kh < KH; ++kh) c.b.tensor_tensor(acc, acc, row(kh), op);
      } else {
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const TileView win = xb({all(), sl(kh * dh, kh * dh + (oc - 1) * sh + 1, sh),
                                     sl(kw * dw, kw * dw + (OW - 1) * sw + 1, sw)});
            if (kh == 0 && kw == 0)
              c.b.tensor_copy(acc, win);
            else
              c.b.tensor_tensor(acc, acc, win, op);
          }
      }
      if (recip) {
        TileView rt_ = c.b.tile(rp, {rt, oc, OW}, DType::fp32);
        c.b.dma(rt_, (*recip)({sl(oh0, oh0 + oc), all()}).broadcast(0, rt));
        c.b.tensor_tensor(acc, acc, rt_, AluOp::mul);
      } else if (!is_max && recip_imm != 1.0f) {
        c.b.tensor_scalar(acc, acc, AluOp::mul, recip_imm);
      }
      c.b.dma(Y({sl(r0, r0 + rt), sl(oh0, oh0 + oc), all()}), acc);
    }
  }
}

}  // namespace trnsim::lower
