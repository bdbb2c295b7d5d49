// trn.Attention: softmax(scale * Q K^T [+ causal mask]) V as one flash-attention
// kernel. No score tensor goes to HBM: per head, K^T and Q^T (head dim on the
// partitions, transposed on the tensor engine) and V stay in SBUF; per 128-query
// tile the keys go by in chunks of up to W columns (the PSUM banks left for scores):
//   scores   PSUM [q, W] = Q^T-tile^T @ K^T-chunk         (tensor)
//   mask     the diagonal [q, q] block += 0 / -inf        (causal only; later keys skipped)
//   max      m = max(m_old, rowmax(scores))               (vector)
//   exp      P = exp(scale * scores - scale * m), l += rowsum   (scalar, one pass)
//   P^T      per 128 keys: matmul against the identity    (tensor), copied to SBUF
//   PV       PSUM [q, Dv] += P^T-tile^T @ V-tile          (tensor)
//   rescale  O = O * exp(scale * (m_old - m)) + PV         (online softmax, from chunk 2)
// and O / l is stored. The running max is kept as -scale * m, so the new one is one
// tensor_scalar (min) and the rescale factor one exp. Causal tiles beyond the
// diagonal are never computed. seq_first: a head's rows are strided in HBM ([.., S,
// H, D]), read and written in place. rotary: Q and K rows are loaded in fp32 and
// rotated in SBUF (x * cos + swap_halves(x) * sin, the tables resident) before
// their transpose.
#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "compiler/ir/trn_ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::sl;
using kernels::TileView;

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A part of the keys or values (or all the queries): rows [start, start + rows) of
// the sequence, viewed [G / H, H, rows, cols] (H: heads after the sequence axis, or 1).
struct Seg {
  kernels::HbmView x;
  int64_t start, rows;
};

struct AttnPools {
  kernels::PoolRef rows, bulk, tp, qt, kt, v, score, p, pt, pt_ps, po, o, out, small, consts;
  kernels::PoolRef tables, rtmp, rot;  // rotary
};

}  // namespace

void lower_attention(Ctx& c, const ir::Node& n) {
  const compiler::Target& t = c.target;
  const ir::Value* qv = n.inputs.at(0);
  const ir::Shape& qs = qv->shape();
  const size_t r = qs.size();
  const bool seq_first = n.attr_int("seq_first", 0) != 0;
  const bool rotary = n.attr_int("rotary", 0) != 0;
  const size_t nqkv = n.inputs.size() - (rotary ? 4 : 0);
  const size_t sa = seq_first ? r - 3 : r - 2;  // the sequence axis
  const int64_t Sq = qs[sa], D = qs[r - 1], Dv = n.inputs.at(2)->shape()[r - 1];
  const int64_t H = seq_first ? qs[r - 2] : 1;
  const int64_t L =
      ir::num_elements(ir::Shape(qs.begin(), qs.begin() + static_cast<std::ptrdiff_t>(sa)));
  const int64_t G = L * H;
  // [L, H, rows, cols]: head g is (g / H, g % H).
  auto heads = [&](const ir::Value* v, int64_t rows, int64_t cols) {
    const kernels::HbmView x = c.view(v);
    return seq_first ? x.reshape({L, rows, H, cols}).permute({0, 2, 1, 3})
                     : x.reshape({L, 1, rows, cols});
  };
  auto head = [&](int64_t g) { return std::pair{kernels::at(g / H), kernels::at(g % H)}; };
  std::vector<Seg> ks, vs;
  int64_t Skv = 0;
  for (size_t i = 1; i + 1 < nqkv; i += 2) {
    const int64_t rows = n.inputs[i]->shape()[sa];
    ks.push_back({heads(n.inputs[i], rows, D), Skv, rows});
    vs.push_back({heads(n.inputs[i + 1], rows, Dv), Skv, rows});
    Skv += rows;
  }
  const float scale = n.attr_float("scale");
  const bool causal = n.attr_int("causal") != 0;
  DType dt = DType::fp32;
  if (auto cd = ir::compute_dtype(n); cd && *cd != ir::ElemType::fp32) {
    auto d = ir::to_isa(*cd);
    if (!d) unsupported(n, "compute_dtype has no chip type");
    dt = *d;
  } else if (!cd && qv->elem() != ir::ElemType::fp32) {
    if (auto d = ir::to_isa(qv->elem())) dt = *d;
  }
  const uint64_t es = isa::dtype_size(dt);
  const int64_t QP = t.m_tile(), KP = t.k_tile();
  const int64_t bank = static_cast<int64_t>(t.psum_bank_bytes / 4);  // fp32 per bank
  const int64_t banks = static_cast<int64_t>(t.psum_partition_bytes / t.psum_bank_bytes);
  if (Dv > bank)
    unsupported(n, "value head size " + std::to_string(Dv) + " exceeds a PSUM bank (" +
                       std::to_string(bank) + " fp32)");
  if (banks < 6 || bank < QP) unsupported(n, "needs at least 6 PSUM banks of 128 fp32");
  // Scores: two buffers of W columns in the banks the transposes and PV (2 each) leave.
  const int64_t W = std::max<int64_t>(KP, (banks - 4) / 2 * bank / KP * KP);
  const int64_t group = std::max<int64_t>(1, bank / QP);  // P^T tiles per PSUM bank
  const int64_t nkd = ceil_div(D, KP), nkv = ceil_div(Skv, KP);
  // One head's K^T, Q^T and V are resident (two heads' worth, so the next one loads
  // while this one runs), with the per-chunk P and P^T tiles.
  const uint64_t need =
      2 * es *
          (static_cast<uint64_t>(nkd) * static_cast<uint64_t>(Skv + Sq) +
           static_cast<uint64_t>(nkv * Dv)) +
      4 * es * static_cast<uint64_t>(W + group * QP) +
      2 * es * static_cast<uint64_t>((group + nkv) * D) +
      (rotary ? 4 * 4 * static_cast<uint64_t>(ceil_div(std::max(Sq, Skv), KP) * D) +
                    (3 * 4 + 4 * 4 + 2 * es) * static_cast<uint64_t>(group * D)
              : 0);
  if (need > t.sbuf_partition_bytes * 3 / 4)
    unsupported(n, "one head's K, Q and V (" + std::to_string(need) +
                       " bytes per partition) do not fit in SBUF");

  const std::vector<Seg> qseg{{heads(qv, Sq, D), 0, Sq}};
  const kernels::HbmView Y = heads(n.outputs.at(0), Sq, Dv);
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  auto pool = [&](const char* name, isa::MemSpace s, int64_t bufs) {
    return c.b.pool(pfx + "." + name, s, static_cast<uint32_t>(std::max<int64_t>(bufs, 1)));
  };
  AttnPools p;
  p.rows = pool("rows", isa::MemSpace::sbuf, 3);
  p.bulk = pool("bulk", isa::MemSpace::sbuf, 2);
  p.tp = pool("tp", isa::MemSpace::psum, 2);
  p.pt_ps = p.tp;
  p.qt = pool("qt", isa::MemSpace::sbuf, 2 * nkd);
  p.kt = pool("kt", isa::MemSpace::sbuf, 2 * nkd);
  p.v = pool("v", isa::MemSpace::sbuf, 2);
  p.score = pool("score", isa::MemSpace::psum, 2);
  p.p = pool("p", isa::MemSpace::sbuf, 2);
  p.pt = pool("pt", isa::MemSpace::sbuf, 2);
  p.po = pool("po", isa::MemSpace::psum, 2);
  p.o = pool("o", isa::MemSpace::sbuf, 2);
  p.out = pool("out", isa::MemSpace::sbuf, 2);
  p.small = pool("stat", isa::MemSpace::sbuf, 16);
  p.consts = pool("const", isa::MemSpace::sbuf, 2);
  if (rotary) {
    p.tables = pool("rtable", isa::MemSpace::sbuf, 4);
    p.rtmp = pool("rtmp", isa::MemSpace::sbuf, 4);
    p.rot = pool("rot", isa::MemSpace::sbuf, 2);
  }

  // Identity (transposes) and the diagonal block's additive mask: 0 where key <= query.
  const int64_t IP = std::max(QP, KP);
  TileView ident = c.b.tile(p.consts, {IP, IP}, dt, pfx + ".ident");
  c.b.memset(ident, 1.0f, isa::Engine::gpsimd);
  c.b.affine_select(ident, ident, AluOp::eq, 0.0f, 1, {-1}, 0.0f);
  TileView diag;
  if (causal) {
    diag = c.b.tile(p.consts, {QP, QP}, DType::fp32, pfx + ".diag");
    c.b.memset(diag, 0.0f, isa::Engine::gpsimd);
    c.b.affine_select(diag, diag, AluOp::ge, 0.0f, 1, {-1},
                      -std::numeric_limits<float>::infinity());
  }

  // Rotary tables [S, D] resident in fp32: tile t's partition p holds row t * KP + p.
  // A table equal to one loaded before is shared.
  struct Table {
    const ir::Value* v;
    TileView t;
  };
  std::vector<Table> tables;
  auto load_table = [&](const ir::Value* v, int64_t S) {
    for (const Table& tb : tables)
      if (tb.v == v || (tb.v->shape() == v->shape() && v->has_data() && tb.v->has_data() &&
                        *tb.v->data == *v->data))
        return tb.t;
    const int64_t nt = ceil_div(S, KP), full = S / KP;
    TileView t = c.b.tile(p.tables, {KP, nt, D}, DType::fp32);
    const kernels::HbmView x = c.view(v).reshape({S, D});
    if (full > 0)
      c.b.dma(t({all(), sl(0, full), all()}),
              x({sl(0, full * KP), all()}).reshape({full, KP, D}).permute({1, 0, 2}));
    if (S > full * KP)
      c.b.dma(t({sl(0, S - full * KP), kernels::at(full), all()}), x({sl(full * KP, S), all()}));
    tables.push_back({v, t});
    return t;
  };
  struct Rot {
    TileView cos, sin;
  };
  std::optional<Rot> rot_q, rot_k;
  if (rotary) {
    rot_q = Rot{load_table(n.inputs[3], Sq), load_table(n.inputs[4], Sq)};
    rot_k = Rot{load_table(n.inputs[5], Skv), load_table(n.inputs[6], Skv)};
  }

  // Rows [r0, r0 + kr) of head g of the parts `segs` into partitions 0..kr-1 of `dst`.
  auto load_rows = [&](const TileView& dst, const std::vector<Seg>& segs, int64_t g, int64_t r0,
                       int64_t kr) {
    for (const Seg& sg : segs) {
      const int64_t a = std::max(r0, sg.start), b = std::min(r0 + kr, sg.start + sg.rows);
      if (a >= b) continue;
      const auto [hi, lo] = head(g);
      c.b.dma(dst({sl(a - r0, b - r0), all()}),
              sg.x({hi, lo, sl(a - sg.start, b - sg.start), all()}));
    }
  };

  // dst = x * cos + swap_halves(x) * sin over [pr, nj, D] (tiles t0.. of the tables).
  const int64_t half = D / 2;
  auto rotate = [&](const TileView& dst, const TileView& x, const Rot& rt, int64_t pr, int64_t j0,
                    int64_t nj, int64_t t0) {
    TileView a = c.b.tile(p.rtmp, {KP, group, D}, DType::fp32);
    TileView b = c.b.tile(p.rtmp, {KP, group, D}, DType::fp32);
    auto part = [&](const TileView& v, int64_t first, int64_t d0, int64_t d1) {
      return v({sl(0, pr), sl(first, first + nj), sl(d0, d1)});
    };
    c.b.tensor_tensor(part(a, j0, 0, D), part(x, j0, 0, D), part(rt.cos, t0, 0, D), AluOp::mul);
    c.b.tensor_tensor(part(b, j0, 0, half), part(x, j0, half, D), part(rt.sin, t0, 0, half),
                      AluOp::mul);
    c.b.tensor_tensor(part(b, j0, half, D), part(x, j0, 0, half), part(rt.sin, t0, half, D),
                      AluOp::mul);
    c.b.tensor_tensor(part(dst, j0, 0, D), part(a, j0, 0, D), part(b, j0, 0, D), AluOp::add);
  };

  // Without a causal mask the order of the keys does not matter, as long as K and V
  // agree: the first `bulk` 128-key tiles of the first (K, V) part load in one DMA
  // each, partition p taking keys p * bulk .. p * bulk + bulk - 1 (one long run per
  // partition instead of one row: a KV cache is read at the DMA's full rate), and
  // tile t holding key p * bulk + t on partition p. The other tiles hold 128
  // consecutive keys each.
  const int64_t bulk = !causal && !rotary && ks[0].rows / KP >= 2 ? ks[0].rows / KP : 0;
  auto load_bulk = [&](const TileView& dst, const Seg& sg, int64_t g, int64_t width) {
    const auto [hi, lo] = head(g);
    c.b.dma(dst, sg.x({hi, lo, sl(0, bulk * KP), all()}).reshape({KP, bulk, width}));
  };

  // The rows of head g (S of them, Dx = D wide; the first `nbulk` tiles loaded by
  // load_bulk) -> their transpose in nkd tiles [<=KP, S] (dt): the other rows load
  // `group` 128-row tiles at a time; tiles are transposed against the identity
  // (four per PSUM bank) and copied out.
  auto load_transposed = [&](const std::vector<Seg>& X, int64_t g, int64_t S,
                             kernels::PoolRef dst_pool, int64_t nbulk,
                             const std::optional<Rot>& rt) {
    std::vector<TileView> xt;
    for (int64_t kd = 0; kd < nkd; ++kd)
      xt.push_back(c.b.tile(dst_pool, {std::min(KP, D - kd * KP), S}, dt));
    TileView bk;
    if (nbulk > 0) {
      bk = c.b.tile(p.bulk, {KP, nbulk, D}, dt);
      load_bulk(bk, X[0], g, D);
    }
    const int64_t nt = ceil_div(S, KP);
    for (int64_t t0 = 0; t0 < nt; t0 += group) {
      const int64_t ng = std::min(group, nt - t0);
      TileView rows;
      if (t0 + ng > nbulk) rows = c.b.tile(p.rows, {KP, group, D}, rt ? DType::fp32 : dt);
      std::vector<TileView> src;  // [KP, D] per tile of the group
      for (int64_t j = 0; j < ng; ++j) {
        const int64_t t = t0 + j, r0 = t * KP, kr = std::min(KP, S - r0);
        if (t < nbulk) {
          src.push_back(bk({all(), kernels::at(t), all()}));
        } else {
          src.push_back(rows({all(), kernels::at(j), all()}));
          load_rows(src.back(), X, g, r0, kr);
        }
      }
      if (rt) {  // every tile loaded by load_rows (no bulk tiles with rotary)
        TileView rr = c.b.tile(p.rot, {KP, group, D}, dt);
        const int64_t nfull = std::min(ng, S / KP - t0);
        if (nfull > 0) rotate(rr, rows, *rt, KP, 0, nfull, t0);
        if (nfull < ng) rotate(rr, rows, *rt, S - (t0 + nfull) * KP, nfull, 1, t0 + nfull);
        for (int64_t j = 0; j < ng; ++j) src[j] = rr({all(), kernels::at(j), all()});
      }
      const int64_t c0 = t0 * KP, cw = std::min(ng * KP, S - c0);
      for (int64_t kd = 0; kd < nkd; ++kd) {
        const int64_t d0 = kd * KP, dk = std::min(KP, D - d0);
        TileView tp = c.b.tile(p.tp, {KP, group * KP}, DType::fp32);
        for (int64_t j = 0; j < ng; ++j) {
          const int64_t kr = std::min(KP, S - (t0 + j) * KP);
          // psum[d, row] = rows[row, d]: stationary rows [kr, dk], moving identity [kr, kr].
          c.b.matmul(tp({sl(0, dk), sl(j * KP, j * KP + kr)}), src[j]({sl(0, kr), sl(d0, d0 + dk)}),
                     ident({sl(0, kr), sl(0, kr)}), false);
        }
        c.b.tensor_copy(xt[kd]({all(), sl(c0, c0 + cw)}), tp({sl(0, dk), sl(0, cw)}));
      }
    }
    return xt;
  };

  for (int64_t g = 0; g < G; ++g) {
    const std::vector<TileView> kt = load_transposed(ks, g, Skv, p.kt, bulk, rot_k);
    const std::vector<TileView> qt = load_transposed(qseg, g, Sq, p.qt, 0, rot_q);
    TileView vt = c.b.tile(p.v, {KP, nkv, Dv}, dt);
    if (bulk > 0) load_bulk(vt({all(), sl(0, bulk), all()}), vs[0], g, Dv);
    for (int64_t j = bulk; j < nkv; ++j) {
      const int64_t r0 = j * KP, kr = std::min(KP, Skv - r0);
      load_rows(vt({all(), kernels::at(j), all()}), vs, g, r0, kr);
    }
    for (int64_t q0 = 0; q0 < Sq; q0 += QP) {
      const int64_t qn = std::min(QP, Sq - q0);
      const int64_t kv_end = causal ? q0 + qn : Skv;
      const int64_t nchunks = ceil_div(kv_end, W);
      TileView nb, l, o, po;  // -scale * running max, running sum, O (several chunks)
      for (int64_t ch = 0; ch < nchunks; ++ch) {
        const int64_t c0 = ch * W, w = std::min(W, kv_end - c0);
        TileView s = c.b.tile(p.score, {qn, W}, DType::fp32);
        for (int64_t b0 = 0; b0 < w; b0 += bank) {
          const int64_t bw = std::min(bank, w - b0);
          for (int64_t kd = 0; kd < nkd; ++kd)
            c.b.matmul(s({all(), sl(b0, b0 + bw)}), qt[kd]({all(), sl(q0, q0 + qn)}),
                       kt[kd]({all(), sl(c0 + b0, c0 + b0 + bw)}), kd > 0);
        }
        if (causal && ch == nchunks - 1) {
          const TileView blk = s({all(), sl(q0 - c0, q0 - c0 + qn)});
          c.b.tensor_tensor(blk, blk, diag({sl(0, qn), sl(0, qn)}), AluOp::add);
        }
        TileView mx = c.b.tile(p.small, {qn, 1}, DType::fp32);
        c.b.tensor_reduce(mx, s({all(), sl(0, w)}), AluOp::max, {0});
        TileView nb_new = c.b.tile(p.small, {qn, 1}, DType::fp32);
        TileView alpha;
        if (ch == 0) {
          c.b.tensor_scalar(nb_new, mx, AluOp::mul, -scale);
        } else {
          kernels::TensorScalarOpts mn;
          mn.op1 = AluOp::min;
          mn.arg1 = nb;
          c.b.tensor_scalar(nb_new, mx, AluOp::mul, -scale, mn);
          // exp(scale * (m_old - m_new)) = exp(nb_new - nb_old)
          alpha = c.b.tile(p.small, {qn, 1}, DType::fp32);
          c.b.activation(alpha, nb, isa::ActFunc::exp, -1.0f, nb_new);
        }
        nb = nb_new;
        TileView pm = c.b.tile(p.p, {qn, W}, dt);
        TileView rs = c.b.tile(p.small, {qn, 1}, DType::fp32);
        c.b.activation(pm({all(), sl(0, w)}), s({all(), sl(0, w)}), isa::ActFunc::exp, scale, nb,
                       rs);
        if (ch == 0) {
          l = rs;
        } else {
          TileView l_new = c.b.tile(p.small, {qn, 1}, DType::fp32);
          kernels::TensorScalarOpts add;
          add.op1 = AluOp::add;
          add.arg1 = rs;
          c.b.tensor_scalar(l_new, l, AluOp::mul, alpha, add);
          l = l_new;
        }
        // P^T per 128 keys, `group` per PSUM bank; PV accumulates over the chunk.
        po = c.b.tile(p.po, {qn, Dv}, DType::fp32);
        const int64_t nt = ceil_div(w, KP);
        for (int64_t t0 = 0; t0 < nt; t0 += group) {
          const int64_t ng = std::min(group, nt - t0);
          TileView tp = c.b.tile(p.pt_ps, {KP, group * QP}, DType::fp32);
          TileView pt = c.b.tile(p.pt, {KP, group * QP}, dt);
          for (int64_t j = 0; j < ng; ++j) {
            const int64_t k0 = (t0 + j) * KP, kr = std::min(KP, w - k0);
            c.b.matmul(tp({sl(0, kr), sl(j * QP, j * QP + qn)}), pm({all(), sl(k0, k0 + kr)}),
                       ident({sl(0, qn), sl(0, qn)}), false);
          }
          // Only what the transposes wrote: qn columns of each slot, kr rows of the
          // last tile.
          auto slots = [&](const TileView& v, int64_t rows, int64_t first, int64_t n) {
            return v({sl(0, rows), sl(first * QP, (first + n) * QP)})
                .reshape({rows, n, QP})({all(), all(), sl(0, qn)});
          };
          const int64_t last_kr = std::min(KP, w - (t0 + ng - 1) * KP);
          if (last_kr == KP) {
            c.b.tensor_copy(slots(pt, KP, 0, ng), slots(tp, KP, 0, ng));
          } else {
            if (ng > 1) c.b.tensor_copy(slots(pt, KP, 0, ng - 1), slots(tp, KP, 0, ng - 1));
            c.b.tensor_copy(slots(pt, last_kr, ng - 1, 1), slots(tp, last_kr, ng - 1, 1));
          }
          for (int64_t j = 0; j < ng; ++j) {
            const int64_t k0 = (t0 + j) * KP, kr = std::min(KP, w - k0);
            const int64_t vj = (c0 + k0) / KP;
            c.b.matmul(po, pt({sl(0, kr), sl(j * QP, j * QP + qn)}),
                       vt({sl(0, kr), kernels::at(vj), all()}), t0 + j > 0);
          }
        }
        if (nchunks > 1) {
          if (ch == 0) {
            o = c.b.tile(p.o, {qn, Dv}, DType::fp32);
            c.b.tensor_copy(o, po);
          } else {
            c.b.tensor_scalar(o, o, AluOp::mul, alpha);
            c.b.tensor_tensor(o, o, po, AluOp::add);
          }
        }
      }
      TileView rl = c.b.tile(p.small, {qn, 1}, DType::fp32);
      kernels::TensorScalarOpts recip;
      recip.reverse0 = true;  // 1 / l
      c.b.tensor_scalar(rl, l, AluOp::div, 1.0f, recip);
      TileView y = c.b.tile(p.out, {qn, Dv}, DType::fp32);
      c.b.tensor_scalar(y, nchunks > 1 ? o : po, AluOp::mul, rl);
      const auto [hi, lo] = head(g);
      c.b.dma(Y({hi, lo, sl(q0, q0 + qn), all()}), y);
    }
  }
}

}  // namespace trnsim::lower
