// MatMul and trn.MatMulEpilogue: C = A @ B (+ epilogue steps applied while
// evacuating PSUM). For each 128-row m-tile and n-chunk (up to 512 columns, one
// PSUM bank of fp32), k-tiles of 128 accumulate in PSUM: the stationary operand is
// A^T [k, m] (A rows transposed on the tensor engine), the moving one B [k, n]. Operands are
// cast on chip to the node's compute_dtype; tails of any size are shorter tiles.
// Batched MatMul loops over the (flattened) batch dims; a 2-D B is shared by every row of A,
// so A's leading dims are flattened onto M.
#include <algorithm>

#include "compiler/ir/trn_ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::DType;
using kernels::all;
using kernels::sl;
using kernels::TileView;

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
  const kernels::HbmView B = c.view(bv).reshape({b_batched ? batches : 1, K, N});
  const kernels::HbmView Y = c.view(cv).reshape({batches * M, N});

  std::optional<DType> mm_t;
  if (auto cd = ir::compute_dtype(n); cd && *cd != ir::ElemType::fp32) {
    mm_t = ir::to_isa(*cd);
    if (!mm_t) unsupported(n, "compute_dtype has no chip type");
  }
  const uint32_t nin = static_cast<uint32_t>(n.num_inputs());
  const uint32_t work_bufs = 2 * static_cast<uint32_t>(steps.size() + nin + 1);
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const kernels::PoolRef a_pool = c.b.pool(pfx + ".a", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef w_pool = c.b.pool(pfx + ".w", isa::MemSpace::sbuf, 2);
  const kernels::PoolRef cast_pool = c.b.pool(pfx + ".cast", isa::MemSpace::sbuf, 4);
  const kernels::PoolRef psum = c.b.pool(pfx + ".psum", isa::MemSpace::psum, 2);
  const kernels::PoolRef tp_pool = c.b.pool(pfx + ".tp", isa::MemSpace::psum, 2);
  c.in_pool = c.b.pool(pfx + ".in", isa::MemSpace::sbuf, 2 * nin);
  c.work_pool = c.b.pool(pfx + ".work", isa::MemSpace::sbuf, work_bufs);
  // n-chunk: a PSUM bank of fp32 at most, and the SBUF buffers within half a partition.
  int64_t chunk =
      std::min<int64_t>(c.target.matmul_max_n, static_cast<int64_t>(c.target.psum_bank_bytes / 4));
  while (chunk > 16 && static_cast<uint64_t>(chunk) * 4 * (2 * nin + work_bufs + 2 + 4) >
                           c.target.sbuf_partition_bytes / 2)
    chunk /= 2;
  const int64_t kt_max = c.target.matmul_max_k, mt_max = c.target.matmul_max_m;

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
          TileView at = c.b.tile(cast_pool, {kt, mt}, mm_t.value_or(DType::fp32));
          c.b.tensor_copy(at, tp);
          TileView wt = c.b.tile(w_pool, {kt, nt}, DType::fp32);
          c.b.dma(wt, B({kernels::at(bb), sl(k0, k0 + kt), sl(n0, n0 + nt)}));
          if (mm_t) {
            TileView wt2 = c.b.tile(cast_pool, {kt, nt}, *mm_t);
            c.b.tensor_copy(wt2, wt);
            wt = wt2;
          }
          c.b.matmul(ps, at, wt, k0 > 0);
        }
        const int64_t r0 = bi * M + m0;
        Operand acc;
        acc.t = c.b.tile(c.work_pool, {mt, nt}, DType::fp32);
        c.b.tensor_copy(acc.t, ps);
        std::vector<Operand> ins(nin), res{acc};
        for (uint32_t k = 2; k < nin; ++k)
          ins[k] = load_operand(c, n, n.inputs[k], cs, r0, mt, n0, nt);
        for (size_t i = 1; i < steps.size(); ++i) {
          std::vector<Operand> args;
          for (const ir::FusedArg& a : steps[i].args)
            args.push_back(a.is_step ? res[a.index] : ins[a.index]);
          Operand r;
          r.t = apply_elementwise(c, n, steps[i].op, steps[i].attrs, args, mt, nt);
          res.push_back(r);
        }
        c.b.dma(Y({sl(r0, r0 + mt), sl(n0, n0 + nt)}), res.back().t);
      }
    }
  }
}

}  // namespace trnsim::lower
