#include "compiler/kernels/library.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trnsim::kernels {

using isa::AluOp;
using isa::DType;
using isa::MemSpace;

tile::Kernel matmul_bias_act(int64_t M, int64_t K, int64_t N, isa::ActFunc act, DType in,
                             DType out) {
  Builder b("matmul_bias_" + std::string(isa::act_func_name(act)));
  if (K % 128 || N % 128 || M < 1 || M > 512)
    b.fail("matmul_bias_act needs K and N multiples of 128 and 1 <= M <= 512, got [M,K,N]=[" +
           std::to_string(M) + "," + std::to_string(K) + "," + std::to_string(N) + "]");
  const int64_t KT = K / 128, NT = N / 128;
  HbmView A = b.input("A", {M, K}, in);
  HbmView W = b.input("W", {K, N}, in);
  HbmView bias = b.input("b", {1, N}, DType::fp32);
  HbmView C = b.output("C", {M, N}, out);
  PoolRef at_p = b.pool("at", MemSpace::sbuf, static_cast<uint32_t>(KT));
  PoolRef w_p = b.pool("w", MemSpace::sbuf, static_cast<uint32_t>(KT));
  PoolRef bias_p = b.pool("bias", MemSpace::sbuf, 1);
  PoolRef ps_p = b.pool("ps", MemSpace::psum, 2);
  PoolRef o_p = b.pool("o", MemSpace::sbuf, 2);
  std::vector<TileView> at, w;
  for (int64_t kt = 0; kt < KT; ++kt) {
    // A^T k-tile straight from HBM: rows are k, the free axis walks m.
    at.push_back(b.tile(at_p, {128, M}, in));
    b.dma(at.back(), A({all(), sl(kt * 128, kt * 128 + 128)}).T());
    w.push_back(b.tile(w_p, {128, N}, in));
    b.dma(w.back(), W({sl(kt * 128, kt * 128 + 128), all()}));
  }
  // Bias as a [128, NT] table: partition p, column j = b[j*128 + p].
  TileView bt = b.tile(bias_p, {128, NT}, DType::fp32);
  b.dma(bt, bias.reshape({NT, 128}).T());
  for (int64_t j = 0; j < NT; ++j) {
    TileView ps = b.tile(ps_p, {128, M}, DType::fp32);
    for (int64_t kt = 0; kt < KT; ++kt)
      b.matmul(ps, w[kt]({all(), sl(j * 128, j * 128 + 128)}), at[kt], kt > 0);
    TileView o = b.tile(o_p, {128, M}, out);
    b.activation(o, ps, act, 1.0f, bt({all(), sl(j, j + 1)}));
    b.dma(C({all(), sl(j * 128, j * 128 + 128)}).T(), o);
  }
  return b.finish();
}

tile::Kernel gemm(int64_t M, int64_t K, int64_t N, const GemmOptions& o) {
  Builder b(o.lhs_transposed ? "gemm" : "gemm_a");
  const int64_t TN = o.n_chunk;
  if (M % 128 || K % 128 || TN < 1 || TN > 512 || N % TN)
    b.fail(
        "gemm needs M and K multiples of 128 and N a multiple of n_chunk (<= 512), got "
        "[M,K,N]=[" +
        std::to_string(M) + "," + std::to_string(K) + "," + std::to_string(N) + "], n_chunk " +
        std::to_string(TN));
  const int64_t KT = K / 128, MT = M / 128, NC = N / TN;
  const uint64_t es = isa::dtype_size(o.in), oes = isa::dtype_size(o.out);
  // PSUM: 8 banks of [128,512] fp32, one accumulator per m-tile of a block (two
  // banks go to the transposes when A is row-major).
  const int acc_bufs = o.lhs_transposed ? 8 : 6;
  const int64_t b_bufs = std::min<int64_t>(2 * KT, 32);
  // SBUF per partition for a block of gm m-tiles: the A^T k-tiles (plus a few
  // buffers to prefetch the next block), the streaming B tiles, the outputs.
  auto sbuf_need = [&](int64_t gm) {
    const int64_t at_bufs = KT + (MT > gm ? std::min<int64_t>(KT, 4) : 0);
    uint64_t need = at_bufs * gm * 128 * es + b_bufs * TN * es + 4 * TN * oes;
    if (!o.lhs_transposed) need += 2 * K * es + 128 * es;
    return need;
  };
  int64_t gm = o.group_m;
  if (!gm) {
    gm = std::min<int64_t>(MT, o.lhs_transposed ? 8 : 4);
    while (gm > 1 && sbuf_need(gm) > o.sbuf_bytes) --gm;
  }
  if (gm < 1 || gm > acc_bufs)
    b.fail("gemm: group_m " + std::to_string(gm) + " must be 1.." + std::to_string(acc_bufs) +
           " (one PSUM accumulator per m-tile of a block)");
  if (sbuf_need(gm) > o.sbuf_bytes)
    b.fail("gemm: a block of " + std::to_string(gm) + " m-tiles needs " +
           std::to_string(sbuf_need(gm)) + " bytes of SBUF per partition, more than the " +
           std::to_string(o.sbuf_bytes) + " allowed (K too large for one resident A^T block)");
  const int64_t nblocks = (MT + gm - 1) / gm;
  HbmView A = o.lhs_transposed ? b.input("AT", {K, M}, o.in) : b.input("A", {M, K}, o.in);
  HbmView B = b.input("B", {K, N}, o.in);
  HbmView C = b.output("C", {M, N}, o.out);
  const int64_t at_bufs = KT + (nblocks > 1 ? std::min<int64_t>(KT, 4) : 0);
  PoolRef at_p = b.pool("at", MemSpace::sbuf, static_cast<uint32_t>(at_bufs));
  PoolRef b_p = b.pool("b", MemSpace::sbuf, static_cast<uint32_t>(b_bufs));
  PoolRef acc_p = b.pool("acc", MemSpace::psum, static_cast<uint32_t>(acc_bufs));
  PoolRef out_p = b.pool("out", MemSpace::sbuf, 4);
  PoolRef rows_p{}, tp_p{};
  TileView ident;
  if (!o.lhs_transposed) {
    rows_p = b.pool("a_rows", MemSpace::sbuf, 2);
    tp_p = b.pool("tp", MemSpace::psum, 2);
    // Identity for transposes on the tensor engine: ones where p == j.
    ident = b.tile(b.pool("ident", MemSpace::sbuf, 1), {128, 128}, o.in, "ident");
    b.memset(ident, 1.0f, isa::Engine::gpsimd);
    b.affine_select(ident, ident, AluOp::eq, 0.0f, 1, {-1}, 0.0f);
  }
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    const int64_t m0 = blk * gm * 128;
    const int64_t g = std::min<int64_t>(gm, MT - blk * gm);
    const int64_t width = g * 128;
    // A^T of the block, one tile per k-tile: the next block's tile kt reuses this
    // block's buffer once its last matmul is done, so it prefetches progressively.
    std::vector<TileView> at;
    for (int64_t kt = 0; kt < KT; ++kt) at.push_back(b.tile(at_p, {128, width}, o.in));
    if (o.lhs_transposed) {
      for (int64_t kt = 0; kt < KT; ++kt) {
        // The program's first k-tile loads in halves of its m-tiles: the first
        // matmuls wait for half the bytes, moved by twice the engines.
        const int64_t parts = blk == 0 && kt == 0 && g % 2 == 0 ? 2 : 1;
        for (int64_t h = 0; h < parts; ++h) {
          const int64_t c0 = h * width / parts, c1 = (h + 1) * width / parts;
          b.dma(at[kt]({all(), sl(c0, c1)}),
                A({sl(kt * 128, kt * 128 + 128), sl(m0 + c0, m0 + c1)}));
        }
      }
    } else {
      // A rows [m, K] -> A^T blocks: a matmul against the identity (stationary = the
      // A block, K = its 128 rows) gives psum[k, j] = A[j, k]; four per PSUM bank,
      // each evacuated (cast back to the input type, exactly) into its k-tile.
      for (int64_t mt = 0; mt < g; ++mt) {
        TileView rows = b.tile(rows_p, {128, K}, o.in);
        b.dma(rows, A({sl(m0 + mt * 128, m0 + mt * 128 + 128), all()}));
        for (int64_t k0 = 0; k0 < KT; k0 += 4) {
          const int64_t nk = std::min<int64_t>(4, KT - k0);
          TileView tp = b.tile(tp_p, {128, nk * 128}, DType::fp32);
          for (int64_t j = 0; j < nk; ++j)
            b.matmul(tp({all(), sl(j * 128, j * 128 + 128)}),
                     rows({all(), sl((k0 + j) * 128, (k0 + j) * 128 + 128)}), ident, false);
          for (int64_t j = 0; j < nk; ++j)
            b.tensor_copy(at[k0 + j]({all(), sl(mt * 128, mt * 128 + 128)}),
                          tp({all(), sl(j * 128, j * 128 + 128)}));
        }
      }
    }
    for (int64_t nc = 0; nc < NC; ++nc) {
      const int64_t n0 = nc * TN;
      std::vector<TileView> acc;
      for (int64_t mt = 0; mt < g; ++mt) acc.push_back(b.tile(acc_p, {128, TN}, DType::fp32));
      auto evacuate = [&](int64_t mt) {
        TileView ot = b.tile(out_p, {128, TN}, o.out);
        b.tensor_copy(ot, acc[mt]);
        b.dma(C({sl(m0 + mt * 128, m0 + mt * 128 + 128), sl(n0, n0 + TN)}), ot);
      };
      // The program's last chunk runs m-tile by m-tile over all its k-tiles, so each
      // result is evacuated and stored while the next m-tile multiplies: the tail is
      // one tile's store, not the whole block's.
      if (blk == nblocks - 1 && nc == NC - 1 && g > 1 && KT <= b_bufs) {
        std::vector<TileView> bts;
        for (int64_t kt = 0; kt < KT; ++kt) {
          bts.push_back(b.tile(b_p, {128, TN}, o.in));
          b.dma(bts.back(), B({sl(kt * 128, kt * 128 + 128), sl(n0, n0 + TN)}));
        }
        for (int64_t mt = 0; mt < g; ++mt) {
          for (int64_t kt = 0; kt < KT; ++kt)
            b.matmul(acc[mt], at[kt]({all(), sl(mt * 128, mt * 128 + 128)}), bts[kt], kt > 0);
          evacuate(mt);
        }
        continue;
      }
      // k outermost: the first matmuls of the block need one k-tile of each operand.
      for (int64_t kt = 0; kt < KT; ++kt) {
        TileView bt = b.tile(b_p, {128, TN}, o.in);
        b.dma(bt, B({sl(kt * 128, kt * 128 + 128), sl(n0, n0 + TN)}));
        for (int64_t mt = 0; mt < g; ++mt)
          b.matmul(acc[mt], at[kt]({all(), sl(mt * 128, mt * 128 + 128)}), bt, kt > 0);
      }
      for (int64_t mt = 0; mt < g; ++mt) evacuate(mt);
    }
  }
  return b.finish();
}

tile::Kernel softmax(int64_t rows, int64_t cols) {
  Builder b("softmax");
  HbmView X = b.input("X", {rows, cols}, DType::fp32);
  HbmView Y = b.output("Y", {rows, cols}, DType::fp32);
  PoolRef xp = b.pool("x", MemSpace::sbuf, 2);
  PoolRef ep = b.pool("e", MemSpace::sbuf, 2);
  PoolRef sp = b.pool("stat", MemSpace::sbuf, 8);
  for (int64_t r0 = 0; r0 < rows; r0 += 128) {
    const int64_t p = std::min<int64_t>(128, rows - r0);
    TileView x = b.tile(xp, {p, cols}, DType::fp32);
    b.dma(x, X({sl(r0, r0 + p), all()}));
    TileView mx = b.tile(sp, {p, 1}, DType::fp32);
    b.tensor_reduce(mx, x, AluOp::max, {0});
    TileView nmx = b.tile(sp, {p, 1}, DType::fp32);
    b.tensor_scalar(nmx, mx, AluOp::mul, -1.0f);
    // e = exp(x - max), s = sum(e) in one pass on the scalar engine.
    TileView e = b.tile(ep, {p, cols}, DType::fp32);
    TileView s = b.tile(sp, {p, 1}, DType::fp32);
    b.activation(e, x, isa::ActFunc::exp, 1.0f, nmx, s);
    TileView r = b.tile(sp, {p, 1}, DType::fp32);
    TensorScalarOpts recip;
    recip.reverse0 = true;  // 1 / s
    b.tensor_scalar(r, s, AluOp::div, 1.0f, recip);
    b.tensor_scalar(e, e, AluOp::mul, r);
    b.dma(Y({sl(r0, r0 + p), all()}), e);
  }
  return b.finish();
}

tile::Kernel layernorm(int64_t rows, int64_t cols, float eps) {
  Builder b("layernorm");
  HbmView X = b.input("X", {rows, cols}, DType::fp32);
  HbmView gamma = b.input("gamma", {cols}, DType::fp32);
  HbmView beta = b.input("beta", {cols}, DType::fp32);
  HbmView Y = b.output("Y", {rows, cols}, DType::fp32);
  const int64_t P = std::min<int64_t>(128, rows);
  PoolRef cp = b.pool("gb", MemSpace::sbuf, 2);
  PoolRef xp = b.pool("x", MemSpace::sbuf, 2);
  PoolRef yp = b.pool("y", MemSpace::sbuf, 2);
  PoolRef sp = b.pool("stats", MemSpace::sbuf, 6);
  // gamma and beta broadcast to every partition by a stride-0 row pattern.
  TileView g = b.tile(cp, {P, cols}, DType::fp32, "gamma_b");
  b.dma(g, gamma.broadcast(0, P));
  TileView be = b.tile(cp, {P, cols}, DType::fp32, "beta_b");
  b.dma(be, beta.broadcast(0, P));
  const int64_t nch = (cols + 511) / 512, cs = (cols + nch - 1) / nch;
  for (int64_t r0 = 0; r0 < rows; r0 += 128) {
    const int64_t p = std::min<int64_t>(128, rows - r0);
    TileView x = b.tile(xp, {p, cols}, DType::fp32);
    b.dma(x, X({sl(r0, r0 + p), all()}));
    TileView st = b.tile(sp, {p, 3 * nch}, DType::fp32);
    for (int64_t c = 0; c < nch; ++c)
      b.bn_stats(st({all(), sl(3 * c, 3 * c + 3)}),
                 x({all(), sl(c * cs, std::min(cols, (c + 1) * cs))}));
    TileView mv = b.tile(sp, {p, 2}, DType::fp32);
    b.bn_aggr(mv, st);
    TileView rstd = b.tile(sp, {p, 1}, DType::fp32);
    TensorScalarOpts pw;
    pw.op1 = AluOp::pow;
    pw.arg1 = -0.5f;
    b.tensor_scalar(rstd, mv({all(), sl(1, 2)}), AluOp::add, eps, pw);
    TileView y = b.tile(yp, {p, cols}, DType::fp32);
    TensorScalarOpts norm;
    norm.op1 = AluOp::mul;
    norm.arg1 = rstd;
    b.tensor_scalar(y, x, AluOp::sub, mv({all(), sl(0, 1)}), norm);
    b.tensor_tensor(y, y, g({sl(0, p), all()}), AluOp::mul);
    b.tensor_tensor(y, y, be({sl(0, p), all()}), AluOp::add);
    b.dma(Y({sl(r0, r0 + p), all()}), y);
  }
  return b.finish();
}

}  // namespace trnsim::kernels
