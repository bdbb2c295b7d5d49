// split_dma: splits large transfers into pieces on 32/64-partition boundaries so
// that several DMA engines move them at once (a DMA engine runs one transfer at a
// time; trn2's 16 engines at 23 B/ns each are the bandwidth only together).
//
// A transfer is split when it moves at least 2 x target.dma_split_min_bytes and its
// SBUF side's partitions (or, HBM to HBM, its rows: plan_hbm) pair row for row with the other side
// (same row count and elements per row): first into row groups (32 or 64 partitions, following the
// partition-start rule), then, if pieces are still large, each row group into
// equal parts of the outermost free dim when both sides start with a free dim of
// the same size, as long as contiguous runs stay long enough for their descriptor
// cost on the engine and at the core's shared rate
// (target.dma_split_max_descriptor_share, dma_split_max_shared_descriptor_share). At most
// target.dma_split_max pieces of at least dma_split_min_bytes. The first piece keeps the op's id,
// the others get new ids and follow it in the list.
#include <algorithm>

#include "compiler/passes/pass.h"

namespace trnsim::passes {

using tile::Kernel;
using tile::Op;

namespace {

isa::AccessPattern take_rows(const isa::AccessPattern& ap, uint32_t first, uint32_t count) {
  isa::AccessPattern p = ap;
  p.partition_count = count;
  if (ap.space == isa::MemSpace::hbm)
    p.offset += static_cast<uint64_t>(static_cast<int64_t>(first) * ap.partition_stride *
                                      static_cast<int64_t>(isa::dtype_size(ap.dtype)));
  else
    p.partition_start += first;
  return p;
}

// Part j of n of the outermost free dim.
isa::AccessPattern take_part(const isa::AccessPattern& ap, uint32_t j, uint32_t n) {
  if (n == 1) return ap;
  isa::AccessPattern p = ap;
  const uint32_t len = ap.dims[0].size / n;
  p.dims[0].size = len;
  p.offset += static_cast<uint64_t>(static_cast<int64_t>(j) * len * ap.dims[0].stride *
                                    static_cast<int64_t>(isa::dtype_size(ap.dtype)));
  return p;
}

// Whether cutting the outermost free dim of `ap` into f parts keeps its contiguous
// runs long enough that their descriptors cost at most
// target.dma_split_max_descriptor_share of the transfer (or as long as they were).
bool runs_ok(const compiler::Target& t, const isa::AccessPattern& ap, uint32_t f) {
  const uint64_t es = isa::dtype_size(ap.dtype);
  // The engine's own descriptor cost and its share of the core's rate: when every
  // engine is busy, the shared cost is what limits short runs.
  const double min_run_d = std::max(t.dma_descriptor_ns * t.dma_bandwidth_bytes_per_ns /
                                        std::max(1e-9, t.dma_split_max_descriptor_share),
                                    t.dma_core_descriptor_ns * t.dma_core_bandwidth_bytes_per_ns /
                                        std::max(1e-9, t.dma_split_max_shared_descriptor_share));
  const uint64_t min_run = static_cast<uint64_t>(min_run_d);
  if (!ap.free_contiguous()) {
    // Only the outermost dim shrinks; runs shrink too if it is the innermost one.
    if (ap.innermost_dim() != 0 || ap.dims[0].stride != 1) return true;
    return ap.dims[0].size / f * es >= min_run;
  }
  const uint64_t run = ap.free_elems() * es;
  return run / f >= std::min<uint64_t>(run, min_run);
}

// An HBM -> HBM copy (Transpose, Concat, Slice, ... lowered as DMA) has no
// partition-start rule: its rows split into up to dma_split_max equal groups, and
// with fewer rows than that, into parts of the outermost free dim as well.
std::vector<uint32_t> plan_hbm(const compiler::Target& t, const isa::AccessPattern& d,
                               const isa::AccessPattern& s, uint32_t& free_split) {
  if (d.partition_count != s.partition_count || d.free_elems() != s.free_elems()) return {};
  const uint64_t bytes = std::max(d.bytes(), s.bytes());
  const uint64_t want =
      std::min<uint64_t>(t.dma_split_max, bytes / std::max<uint64_t>(1, t.dma_split_min_bytes));
  if (want < 2) return {};
  const uint32_t P = d.partition_count;
  const uint32_t groups = static_cast<uint32_t>(std::min<uint64_t>(want, P));
  if (groups < want && d.ndims >= 1 && s.ndims >= 1 && d.dims[0].size == s.dims[0].size) {
    const uint32_t n = d.dims[0].size;
    for (uint32_t f = static_cast<uint32_t>(want / groups); f >= 2; --f)
      if (n % f == 0 && runs_ok(t, d, f) && runs_ok(t, s, f)) {
        free_split = f;
        break;
      }
  }
  if (groups < 2) return free_split > 1 ? std::vector<uint32_t>{P} : std::vector<uint32_t>{};
  std::vector<uint32_t> pieces;
  for (uint32_t i = 0; i < groups; ++i) pieces.push_back(P / groups + (i < P % groups ? 1 : 0));
  return pieces;
}

// Row counts of the pieces, or empty when the op stays whole; `free_split` parts
// of the outermost free dim per row group.
std::vector<uint32_t> plan(const compiler::Target& t, const Op& op, uint32_t& free_split) {
  free_split = 1;
  const isa::AccessPattern &d = op.ins.dst, &s = op.ins.src[0];
  if (d.space == isa::MemSpace::hbm && s.space == isa::MemSpace::hbm)
    return plan_hbm(t, d, s, free_split);
  const isa::AccessPattern* sb = d.space == isa::MemSpace::sbuf   ? &d
                                 : s.space == isa::MemSpace::sbuf ? &s
                                                                  : nullptr;
  if (!sb || d.partition_count != s.partition_count || d.free_elems() != s.free_elems()) return {};
  const uint64_t bytes = std::max(d.bytes(), s.bytes());
  const uint64_t want =
      std::min<uint64_t>(t.dma_split_max, bytes / std::max<uint64_t>(1, t.dma_split_min_bytes));
  if (want < 2) return {};
  const uint32_t P = sb->partition_count;
  // Free-dim parts for `groups` row groups.
  auto parts = [&](size_t groups) {
    if (d.ndims < 1 || s.ndims < 1 || d.dims[0].size != s.dims[0].size) return 1u;
    const uint32_t n = d.dims[0].size;
    for (uint32_t f = static_cast<uint32_t>(want / groups); f >= 2; --f)
      if (n % f == 0 && runs_ok(t, d, f) && runs_ok(t, s, f)) return f;
    return 1u;
  };
  if (P <= 32) {
    free_split = parts(1);
    return free_split > 1 ? std::vector<uint32_t>{P} : std::vector<uint32_t>{};
  }
  for (uint32_t q : {32u, 64u}) {
    if ((P + q - 1) / q > want || P <= q) continue;
    std::vector<uint32_t> pieces;
    uint32_t done = 0;
    bool ok = true;
    while (done < P) {
      const uint32_t c = std::min(q, P - done);
      const uint32_t st = sb->partition_start + done;
      const uint32_t other = d.space == isa::MemSpace::sbuf && s.space == isa::MemSpace::sbuf
                                 ? (sb == &d ? s.partition_start : d.partition_start) + done
                                 : 0;
      ok = ok && isa::partition_start_ok(st, c) &&
           (!(d.space == isa::MemSpace::sbuf && s.space == isa::MemSpace::sbuf) ||
            isa::partition_start_ok(other, c));
      pieces.push_back(c);
      done += c;
    }
    if (ok) {
      free_split = parts(pieces.size());
      return pieces;
    }
  }
  free_split = parts(1);
  return free_split > 1 ? std::vector<uint32_t>{P} : std::vector<uint32_t>{};
}

void run(Kernel& k, PassContext& ctx) {
  std::vector<Op> out;
  int next = k.next_op_id();
  int split = 0, pieces = 0;
  for (Op& op : k.ops) {
    if (op.ins.op != isa::Opcode::dma_copy || !op.ins.waits.empty() || op.dma_pinned) {
      out.push_back(std::move(op));
      continue;
    }
    uint32_t fs = 1;
    const std::vector<uint32_t> plan_rows = plan(ctx.target, op, fs);
    if (plan_rows.empty()) {
      out.push_back(std::move(op));
      continue;
    }
    ++split;
    uint32_t first = 0;
    for (size_t i = 0; i < plan_rows.size(); ++i) {
      for (uint32_t j = 0; j < fs; ++j) {
        Op p = op;
        if (i > 0 || j > 0) p.id = next++;
        p.ins.dst = take_part(take_rows(op.ins.dst, first, plan_rows[i]), j, fs);
        p.ins.src[0] = take_part(take_rows(op.ins.src[0], first, plan_rows[i]), j, fs);
        out.push_back(std::move(p));
        ++pieces;
      }
      first += plan_rows[i];
    }
  }
  k.ops = std::move(out);
  ctx.stats["split_dma.split"] += split;
  ctx.stats["split_dma.pieces"] += pieces;
}

}  // namespace

const PassInfo& split_dma_pass() {
  static const PassInfo p{"split_dma",
                          "split large DMA transfers into 32/64-partition pieces for several "
                          "DMA engines",
                          run};
  return p;
}

}  // namespace trnsim::passes
