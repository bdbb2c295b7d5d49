// MatMul and trn.MatMulEpilogue: C = A @ B (+ epilogue steps applied while
// evacuating PSUM). For each 128-row m-tile and n-chunk (up to 512 columns, one
// PSUM bank of fp32), k-tiles of 128 accumulate in PSUM: the stationary operand is
// A^T [k, m] (A rows transposed on the tensor engine), the moving one B [k, n]. Operands are
// cast on chip to the node's compute_dtype; tails of any size are shorter tiles.
// Batched MatMul loops over the (flattened) batch dims; a 2-D B is shared by every row of A,
// so A's leading dims are flattened onto M. fp8 operands on a target with double-row
// mode take full k-tiles in pairs: one matmul with K = 256 (double_row=1) at the cost of
// K = 128, both halves side by side in one SBUF tile ([128, 2, m] and [128, 2, n]).
#include <algorithm>

#include "compiler/ir/trn_ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::DType;
using kernels::all;
using kernels::sl;
using kernels::TileView;

namespace {

struct MatmulShape {
  int64_t M, K, N, chunk;
  DType dt;            // operand type on chip
  int64_t nw = 1;      // n-chunks one B k-tile load covers (see wide_chunks)
  int64_t b_cap = 16;  // most B k-tiles in flight (deeper when B streams once)
};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// k-tiles of `s` that run as double-row pairs (full 128-row tiles, two at a time),
// and the k-tiles left to run alone.
struct KTiles {
  int64_t pairs, singles;
};
KTiles k_tiles(const compiler::Target& t, const MatmulShape& s) {
  const int64_t KT = ceil_div(s.K, t.k_tile());
  const int64_t pairs =
      t.matmul_double_row && isa::is_fp8(s.dt) ? s.K / t.k_tile() / 2 : int64_t{0};
  return {pairs, KT - 2 * pairs};
}

// PSUM banks for accumulators: two go to the A transposes.
int acc_banks(const compiler::Target& t) {
  return static_cast<int>(t.psum_partition_bytes / t.psum_bank_bytes) - 2;
}

// A rows are staged for their transposes this many k-tiles at a time: a 2 KiB run per
// partition in bf16, and SBUF left for a wider A^T block (fewer passes over B).
constexpr int64_t kRowsChunk = 8;

// SBUF bytes per partition of the blocked GEMM with `gm` m-tiles per block.
// Buffers of the A^T and B pools: single k-tiles (`at`, `b`) and double-row pairs.
struct BlockedBufs {
  int64_t at, b, at2, b2;
};
// `more`: another block follows, whose A^T tiles load while this one runs.
BlockedBufs blocked_bufs(const compiler::Target& t, const MatmulShape& s, bool more) {
  const KTiles k = k_tiles(t, s);
  return {k.singles + (more ? std::min<int64_t>(k.singles, 4) : 0),
          std::min<int64_t>(2 * k.singles, s.b_cap),
          k.pairs + (more ? std::min<int64_t>(k.pairs, 2) : 0), std::min<int64_t>(2 * k.pairs, 8)};
}

uint64_t blocked_need(const compiler::Target& t, const MatmulShape& s, int64_t gm) {
  const int64_t MT = ceil_div(s.M, t.m_tile());
  const uint64_t es = isa::dtype_size(s.dt);
  const int64_t width = std::min(gm, MT) * t.m_tile();
  const BlockedBufs b = blocked_bufs(t, s, MT > gm);
  return static_cast<uint64_t>((b.at + 2 * b.at2) * width) * es +
         static_cast<uint64_t>((b.b * s.nw + 2 * b.b2) * s.chunk) * es +
         2 * static_cast<uint64_t>(std::min(s.K, kRowsChunk * t.k_tile())) * es;
}

// m-tiles per block: as many as PSUM accumulators and SBUF allow (0: none fits).
int blocked_group(const compiler::Target& t, const MatmulShape& s, uint64_t other_bytes) {
  const uint64_t budget = t.sbuf_partition_bytes - std::min(t.sbuf_partition_bytes, other_bytes);
  int gm = static_cast<int>(std::min<int64_t>(acc_banks(t), ceil_div(s.M, t.m_tile())));
  while (gm > 0 && blocked_need(t, s, gm) > budget * 7 / 8) --gm;
  return gm;
}

struct BlockedPools {
  kernels::PoolRef at, b, acc, rows, tp;
  kernels::PoolRef at2, b2;  // double-row pairs (when k_tiles has any)
};

BlockedPools blocked_pools(Ctx& c, const std::string& pfx, const MatmulShape& s, int gm,
                           int64_t batches) {
  const compiler::Target& t = c.target;
  const int64_t MT = ceil_div(s.M, t.m_tile());
  const BlockedBufs b = blocked_bufs(t, s, MT > gm || batches > 1);
  auto bufs = [](int64_t n) { return static_cast<uint32_t>(std::max<int64_t>(n, 1)); };
  BlockedPools p;
  p.at = c.b.pool(pfx + ".at", isa::MemSpace::sbuf, bufs(b.at));
  p.b = c.b.pool(pfx + ".b", isa::MemSpace::sbuf, bufs(b.b));
  p.at2 = c.b.pool(pfx + ".at2", isa::MemSpace::sbuf, bufs(b.at2));
  p.b2 = c.b.pool(pfx + ".b2", isa::MemSpace::sbuf, bufs(b.b2));
  p.acc = c.b.pool(pfx + ".acc", isa::MemSpace::psum, static_cast<uint32_t>(gm * s.nw));
  p.rows = c.b.pool(pfx + ".rows", isa::MemSpace::sbuf, 2);
  p.tp = c.b.pool(pfx + ".tp", isa::MemSpace::psum, 2);
  return p;
}

// One batch of C = A @ B, A [M, K] and B [K, N] in HBM (fp32, cast on load), as
// blocks of gm m-tiles: the block's A rows are loaded and transposed on the tensor
// engine (four k-tiles per PSUM bank) into A^T k-tiles
// that stay in SBUF for every n-chunk; B k-tiles stream through rotating buffers
// (k outermost, so the first matmuls need one k-tile of each); each m-tile's
// accumulator is evacuated by `evac` (rows r0 + block offset).
template <typename Evac>
void blocked_gemm(Ctx& c, const BlockedPools& p, const MatmulShape& s, int gm,
                  const kernels::HbmView& A, const kernels::HbmView& B, int64_t r0,
                  const Evac& evac) {
  const compiler::Target& t = c.target;
  const int64_t KP = t.k_tile(), MP = t.m_tile();
  const int64_t KT = ceil_div(s.K, KP), MT = ceil_div(s.M, MP);
  const int64_t pairs = k_tiles(t, s).pairs;  // k-tiles 0 .. 2 * pairs - 1 go in twos
  for (int64_t m_base = 0; m_base < MT; m_base += gm) {
    const int64_t g = std::min<int64_t>(gm, MT - m_base);
    const int64_t m0 = m_base * MP, width = std::min(g * MP, s.M - m0);
    // A^T k-tiles [k, width]; a pair's two are the halves of one [128, 2, width] tile.
    std::vector<TileView> at, at2;
    for (int64_t j = 0; j < pairs; ++j) {
      at2.push_back(c.b.tile(p.at2, {KP, 2, width}, s.dt));
      for (int64_t h = 0; h < 2; ++h) at.push_back(at2.back()({all(), kernels::at(h), all()}));
    }
    for (int64_t kt = 2 * pairs; kt < KT; ++kt)
      at.push_back(c.b.tile(p.at, {std::min(KP, s.K - kt * KP), width}, s.dt));
    for (int64_t mt = 0; mt < g; ++mt) {
      const int64_t a0 = m0 + mt * MP, am = std::min(MP, s.M - a0);
      TileView rows;
      int64_t r0k = 0;  // first column of `rows`
      for (int64_t k0 = 0; k0 < KT; k0 += 4) {
        if (k0 % kRowsChunk == 0) {
          r0k = k0 * KP;
          const int64_t rw = std::min(kRowsChunk * KP, s.K - r0k);
          rows = c.b.tile(p.rows, {am, rw}, s.dt);
          c.b.dma(rows, A({sl(a0, a0 + am), sl(r0k, r0k + rw)}));  // casts to the operand type
        }
        const int64_t nk = std::min<int64_t>(4, KT - k0);
        const int64_t kw = std::min(nk * KP, s.K - k0 * KP);
        TileView tp = c.b.tile(p.tp, {std::min(KP, kw), nk * MP}, DType::fp32);
        for (int64_t j = 0; j < nk; ++j) {
          const int64_t kk = (k0 + j) * KP, ks = std::min(KP, s.K - kk);
          c.b.transpose(tp({sl(0, ks), sl(j * MP, j * MP + am)}),
                        rows({all(), sl(kk - r0k, kk - r0k + ks)}));
        }
        for (int64_t j = 0; j < nk; ++j) {
          const int64_t ks = std::min(KP, s.K - (k0 + j) * KP);
          c.b.tensor_copy(at[k0 + j]({all(), sl(mt * MP, mt * MP + am)}),
                          tp({sl(0, ks), sl(j * MP, j * MP + am)}));
        }
      }
    }
    if (s.nw > 1) {
      // A few m-tiles: each B k-tile load covers nw n-chunks, so a partition's run is
      // nw x chunk elements (a 1 KiB run of bf16 pays a descriptor per KiB, a third of
      // the DMA's shared rate at trn2's figures).
      for (int64_t n0 = 0; n0 < s.N; n0 += s.nw * s.chunk) {
        const int64_t wn = std::min(s.nw * s.chunk, s.N - n0), nc = ceil_div(wn, s.chunk);
        std::vector<TileView> acc;  // [mt][j]
        for (int64_t mt = 0; mt < g; ++mt)
          for (int64_t j = 0; j < nc; ++j)
            acc.push_back(c.b.tile(
                p.acc, {std::min(MP, s.M - m0 - mt * MP), std::min(s.chunk, wn - j * s.chunk)},
                DType::fp32));
        for (int64_t kt = 0; kt < KT; ++kt) {
          const int64_t kk = kt * KP, ks = std::min(KP, s.K - kk);
          TileView bt = c.b.tile(p.b, {ks, wn}, s.dt);
          c.b.dma(bt, B({sl(kk, kk + ks), sl(n0, n0 + wn)}));  // casts to the operand type
          for (int64_t mt = 0; mt < g; ++mt) {
            const int64_t am = std::min(MP, s.M - m0 - mt * MP);
            for (int64_t j = 0; j < nc; ++j) {
              const int64_t c0 = j * s.chunk, c1 = std::min(wn, c0 + s.chunk);
              c.b.matmul(acc[mt * nc + j], at[kt]({all(), sl(mt * MP, mt * MP + am)}),
                         bt({all(), sl(c0, c1)}), kt > 0);
            }
          }
        }
        for (int64_t mt = 0; mt < g; ++mt)
          for (int64_t j = 0; j < nc; ++j) {
            const int64_t c0 = j * s.chunk;
            evac(acc[mt * nc + j], r0 + m0 + mt * MP, std::min(MP, s.M - m0 - mt * MP), n0 + c0,
                 std::min(s.chunk, wn - c0));
          }
      }
      continue;
    }
    for (int64_t n0 = 0; n0 < s.N; n0 += s.chunk) {
      const int64_t nt = std::min(s.chunk, s.N - n0);
      std::vector<TileView> acc;
      for (int64_t mt = 0; mt < g; ++mt)
        acc.push_back(c.b.tile(p.acc, {std::min(MP, s.M - m0 - mt * MP), nt}, DType::fp32));
      for (int64_t j = 0; j < pairs; ++j) {  // K = 256 per matmul
        TileView bt = c.b.tile(p.b2, {KP, 2, nt}, s.dt);
        for (int64_t h = 0; h < 2; ++h) {
          const int64_t kk = (2 * j + h) * KP;
          c.b.dma(bt({all(), kernels::at(h), all()}), B({sl(kk, kk + KP), sl(n0, n0 + nt)}));
        }
        for (int64_t mt = 0; mt < g; ++mt) {
          const int64_t am = std::min(MP, s.M - m0 - mt * MP);
          c.b.matmul(acc[mt], at2[j]({all(), all(), sl(mt * MP, mt * MP + am)}), bt, j > 0, true);
        }
      }
      for (int64_t kt = 2 * pairs; kt < KT; ++kt) {
        const int64_t kk = kt * KP, ks = std::min(KP, s.K - kk);
        TileView bt = c.b.tile(p.b, {ks, nt}, s.dt);
        c.b.dma(bt, B({sl(kk, kk + ks), sl(n0, n0 + nt)}));  // casts to the operand type
        for (int64_t mt = 0; mt < g; ++mt) {
          const int64_t am = std::min(MP, s.M - m0 - mt * MP);
          c.b.matmul(acc[mt], at[kt]({all(), sl(mt * MP, mt * MP + am)}), bt, kt > 0);
        }
      }
      for (int64_t mt = 0; mt < g; ++mt)
        evac(acc[mt], r0 + m0 + mt * MP, std::min(MP, s.M - m0 - mt * MP), n0, nt);
    }
  }
}

// Whether lower_matmul casts constant weight `bv` of `n` once, at compile time: an
// fp32 constant with a narrower compute_dtype.
bool casts_weight(const ir::Node& n, const ir::Value* bv) {
  if (!bv->has_data() || bv->elem() != ir::ElemType::fp32) return false;
  const auto cd = ir::compute_dtype(n);
  if (!cd || *cd == ir::ElemType::fp32) return false;
  const auto t = ir::to_isa(*cd);
  return t && isa::dtype_size(*t) < 4;
}

}  // namespace

bool matmul_cast_weight_only(const ir::Graph& g, const ir::Value* v) {
  if (!v->is_constant || g.is_output(v)) return false;
  const auto users = g.users(v);
  if (users.empty()) return false;
  for (const auto& [node, idx] : users)
    if (idx != 1 || is_conv_node(*node) ||
        (node->op != "MatMul" && node->op != "trn.MatMulEpilogue") || !casts_weight(*node, v))
      return false;
  return true;
}

void lower_matmul(Ctx& c, const ir::Node& n) {
  std::vector<ir::FusedStep> steps;
  if (n.op == "trn.MatMulEpilogue") {
    steps = ir::fused_steps(n);
    const ir::FusedStep& s0 = steps.at(0);
    if (s0.op != "MatMul" || s0.args.size() != 2 || s0.args[0].is_step || s0.args[1].is_step ||
        s0.args[0].index != 0 || s0.args[1].index != 1)
      unsupported(n, "epilogue anchor '" + s0.op + "' is not lowered (only MatMul(%0, %1))");
    for (size_t i = 1; i < steps.size(); ++i)
      if (!is_lowerable_elementwise(steps[i].op))
        unsupported(n, "epilogue step '" + steps[i].op + "' is not lowered yet");
    for (size_t i = 1; i < steps.size(); ++i)
      for (const ir::FusedArg& a : steps[i].args)
        if (!a.is_step && a.index < 2)
          unsupported(n, "epilogue step '" + steps[i].op + "' reads a matmul operand");
  }
  const ir::Value* av = n.inputs.at(0);
  const ir::Value* bv = n.inputs.at(1);
  const ir::Value* cv = n.outputs.at(0);
  const ir::Shape &as = av->shape(), &bs = bv->shape(), &cs = cv->shape();
  if (as.size() < 2 || bs.size() < 2 || cs.size() < 2)
    unsupported(n, "MatMul operands " + av->type.str() + " x " + bv->type.str() +
                       ": 1-D operands are not lowered yet");
  const int64_t K = as.back(), N = bs.back();
  // Batches: a 2-D B flattens A's leading dims onto M; otherwise each operand
  // either has the output's batch dims (up to leading 1s) or none (shared).
  int64_t batches = 1, M = as[as.size() - 2];
  bool a_batched = false, b_batched = false;
  if (bs.size() == 2) {
    M = 1;
    for (size_t i = 0; i + 1 < as.size(); ++i) M *= as[i];
  } else {
    const ir::Shape cb(cs.begin(), cs.end() - 2);
    batches = ir::num_elements(cb);
    auto batched = [&](const ir::Value* v) {
      const ir::Shape& s = v->shape();
      ir::Shape lead(s.begin(), s.end() - 2);
      if (ir::num_elements(lead) == 1) return false;
      while (!lead.empty() && lead.size() > cb.size() && lead.front() == 1)
        lead.erase(lead.begin());
      ir::Shape want = cb;
      while (want.size() > lead.size() && want.front() == 1) want.erase(want.begin());
      if (lead != want)
        unsupported(n, "operand '" + v->name + "' " + v->type.str() +
                           " broadcasts over part of the batch dims of " + cv->type.str() +
                           "; not lowered yet");
      return true;
    };
    a_batched = batched(av);
    b_batched = batched(bv);
  }
  const kernels::HbmView A = c.view(av).reshape({a_batched ? batches : 1, M, K});
  // A weight only ever read cast has no fp32 tensor (matmul_cast_weight_only).
  kernels::HbmView B =
      c.hbm.count(bv) ? c.view(bv).reshape({b_batched ? batches : 1, K, N}) : kernels::HbmView{};
  const kernels::HbmView Y = c.view(cv).reshape({batches * M, N});

  // Operand type on chip: the autocast compute_dtype, else the operands' own type
  // (a bf16 graph multiplies in bf16).
  std::optional<DType> mm_t;
  if (auto cd = ir::compute_dtype(n); cd && *cd != ir::ElemType::fp32) {
    mm_t = ir::to_isa(*cd);
    if (!mm_t) unsupported(n, "compute_dtype has no chip type");
  } else if (!cd && av->elem() == bv->elem() && av->elem() != ir::ElemType::fp32) {
    mm_t = ir::to_isa(av->elem());
  }
  const uint32_t nin = static_cast<uint32_t>(n.num_inputs());
  const uint32_t work_bufs = 2 * static_cast<uint32_t>(steps.size() + nin + 1);
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  // Constant weights are cast once, at compile time: half the HBM bytes in bf16.
  if (mm_t && bv->has_data() && bv->elem() == ir::ElemType::fp32 && isa::dtype_size(*mm_t) < 4)
    B = c.b.constant(pfx + ".w_" + std::string(isa::dtype_name(*mm_t)),
                     {b_batched ? batches : 1, K, N}, *mm_t, bv->data->floats());
  if (B.tensor() < 0) throw ir::CompileError("lowering: value '" + bv->name + "' has no tensor");
  const kernels::PoolRef psum = c.b.pool(pfx + ".psum", isa::MemSpace::psum, 2);
  c.in_pool = c.b.pool(pfx + ".in", isa::MemSpace::sbuf, 2 * nin);
  c.work_pool = c.b.pool(pfx + ".work", isa::MemSpace::sbuf, work_bufs);
  // n-chunk: a PSUM bank of fp32 at most, and the SBUF buffers within half a partition.
  int64_t chunk =
      std::min<int64_t>(c.target.matmul_max_n, static_cast<int64_t>(c.target.psum_bank_bytes / 4));
  while (chunk > 16 && static_cast<uint64_t>(chunk) * 4 * (2 * nin + work_bufs + 2 + 4) >
                           c.target.sbuf_partition_bytes / 2)
    chunk /= 2;
  const DType dt = mm_t.value_or(DType::fp32);
  MatmulShape ms{M, K, N, chunk, dt};
  // Evacuates one [mt, nt] accumulator at output rows r0, columns n0 through the
  // epilogue steps and stores it.
  auto evacuate = [&](const TileView& ps, int64_t r0, int64_t mt, int64_t n0, int64_t nt) {
    Operand acc;
    acc.t = c.b.tile(c.work_pool, {mt, nt}, DType::fp32);
    c.b.tensor_copy(acc.t, ps);
    std::vector<Operand> ins(nin), res{acc};
    for (uint32_t k = 2; k < nin; ++k) ins[k] = load_operand(c, n, n.inputs[k], cs, r0, mt, n0, nt);
    for (size_t i = 1; i < steps.size(); ++i) {
      std::vector<Operand> args;
      for (const ir::FusedArg& a : steps[i].args)
        args.push_back(a.is_step ? res[a.index] : ins[a.index]);
      Operand r;
      r.t = apply_elementwise(c, n, steps[i].op, steps[i].attrs, args, mt, nt);
      res.push_back(r);
    }
    c.b.dma(Y({sl(r0, r0 + mt), sl(n0, n0 + nt)}), res.back().t);
  };
  const uint64_t other = static_cast<uint64_t>(chunk) * 4 * (2 * nin + work_bufs);
  int gm = blocked_group(c.target, ms, other);
  // One block of m-tiles that leaves PSUM accumulators spare (decode: M = batch) and
  // several n-chunks: wider B loads, as long as they fit SBUF too.
  const int64_t MT = ceil_div(M, c.target.m_tile());
  if (gm > 0 && MT <= gm && k_tiles(c.target, ms).pairs == 0 && N >= 2 * chunk &&
      K >= 2 * c.target.k_tile()) {
    MatmulShape wide = ms;
    wide.nw = std::min<int64_t>({4, acc_banks(c.target) / MT, ceil_div(N, chunk)});
    while (wide.nw > 1 && blocked_group(c.target, wide, other) < MT) --wide.nw;
    if (wide.nw > 1) ms = wide;
  }
  // One block of m-tiles (decode: M = batch): B streams through once and the matmul
  // waits on its loads, so a deeper B pool (as SBUF allows) lets them run ahead of
  // whatever the matmul waits for first (a norm, an all-reduce).
  if (gm > 0 && MT <= gm) {
    MatmulShape deep = ms;
    deep.b_cap = 2 * deep.b_cap;
    if (blocked_group(c.target, deep, other) >= MT) ms = deep;
  }
  if (gm > 0) {
    BlockedPools bp = blocked_pools(c, pfx, ms, gm, batches);
    for (int64_t bi = 0; bi < batches; ++bi)
      blocked_gemm(c, bp, ms, gm, A({kernels::at(a_batched ? bi : 0), all(), all()}),
                   B({kernels::at(b_batched ? bi : 0), all(), all()}), bi * M, evacuate);
    return;
  }
  // K too large to keep an A^T block resident: stream both operands per output tile.
  const kernels::PoolRef a_pool = c.b.pool(pfx + ".a", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef w_pool = c.b.pool(pfx + ".w", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef cast_pool = c.b.pool(pfx + ".cast", isa::MemSpace::sbuf, 4);
  const kernels::PoolRef tp_pool = c.b.pool(pfx + ".tp", isa::MemSpace::psum, 2);
  const int64_t kt_max = c.target.k_tile(), mt_max = c.target.m_tile();
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ab = a_batched ? bi : 0, bb = b_batched ? bi : 0;
    for (int64_t m0 = 0; m0 < M; m0 += mt_max) {
      const int64_t mt = std::min(mt_max, M - m0);
      for (int64_t n0 = 0; n0 < N; n0 += chunk) {
        const int64_t nt = std::min(chunk, N - n0);
        TileView ps = c.b.tile(psum, {mt, nt}, DType::fp32);
        for (int64_t k0 = 0; k0 < K; k0 += kt_max) {
          const int64_t kt = std::min(kt_max, K - k0);
          // A rows [m, k] (contiguous runs) -> A^T [k, m] on the tensor engine,
          // evacuated from PSUM straight into the operand type.
          TileView arows = c.b.tile(a_pool, {mt, kt}, DType::fp32);
          c.b.dma(arows, A({kernels::at(ab), sl(m0, m0 + mt), sl(k0, k0 + kt)}));
          TileView tp = c.b.tile(tp_pool, {kt, mt}, DType::fp32);
          c.b.transpose(tp, arows);
          TileView at = c.b.tile(cast_pool, {kt, mt}, dt);
          c.b.tensor_copy(at, tp);
          TileView wt = c.b.tile(w_pool, {kt, nt}, dt);
          c.b.dma(wt, B({kernels::at(bb), sl(k0, k0 + kt), sl(n0, n0 + nt)}));  // casts
          c.b.matmul(ps, at, wt, k0 > 0);
        }
        evacuate(ps, bi * M + m0, mt, n0, nt);
      }
    }
  }
}

}  // namespace trnsim::lower
