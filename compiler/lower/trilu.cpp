// Trilu on the vector engines: the last two dims [M, N] of each matrix keep the
// elements on the kept side of diagonal k (upper: j - i >= k, lower: j - i <= k)
// and get 0 elsewhere (not x * 0: an inf there gives 0): a select against a 0/1
// mask that the compiler computes into a constant. The rows of several matrices
// share a tile when M fits the partitions (the mask repeats per matrix), so every
// tile starts at a mask row the constant holds.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::DType;
using kernels::all;
using kernels::HbmView;
using kernels::sl;
using kernels::TileView;

namespace {

// Column chunks: x, y and the mask (2 buffers each) and the zero row.
constexpr uint64_t kTriluRowTiles = 7;

}  // namespace

void lower_trilu(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* yv = n.outputs.at(0);
  const ir::Shape xs = xv->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) unsupported(n, "input must have rank >= 2");
  const int64_t M = xs[rank - 2], N = xs[rank - 1];
  const int64_t B = ir::num_elements(xs) / (M * N);
  const int64_t k = n.attr_int("k");
  const bool upper = n.attr_int("upper") != 0;
  const int64_t parts = c.target.partitions;
  const uint64_t budget = c.target.sbuf_partition_bytes * 3 / 4;
  const int64_t fmax = static_cast<int64_t>(budget / (4 * kTriluRowTiles));
  if (fmax < 1) unsupported(n, "SBUF partitions are too small");
  const int64_t nch = (N + fmax - 1) / fmax;
  const int64_t F = (N + nch - 1) / nch;

  // The mask's rows: q whole matrices when M fits the partitions, else one matrix.
  const int64_t q = M <= parts ? std::max<int64_t>(1, std::min(parts / M, B)) : 1;
  const int64_t Mm = q * M;
  std::vector<float> mask(static_cast<size_t>(Mm * N));
  for (int64_t r = 0; r < Mm; ++r)
    for (int64_t j = 0; j < N; ++j) {
      const int64_t d = j - r % M;
      mask[static_cast<size_t>(r * N + j)] = (upper ? d >= k : d <= k) ? 1.0f : 0.0f;
    }
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  const HbmView mk = c.b.constant(pfx + ".mask", {Mm, N}, DType::fp32, mask);
  const HbmView X = c.view(xv).reshape({B * M, N});
  const HbmView Y = c.view(yv).reshape({B * M, N});

  const auto xp = c.b.pool(pfx + ".x", isa::MemSpace::sbuf, 2);
  const auto mp = c.b.pool(pfx + ".mask", isa::MemSpace::sbuf, 2);
  const auto yp = c.b.pool(pfx + ".y", isa::MemSpace::sbuf, 2);
  const auto zp = c.b.pool(pfx + ".zero", isa::MemSpace::sbuf, 1);
  const int64_t P = std::min(parts, std::min(Mm, B * M));
  const TileView zero = c.b.tile(zp, {P, F}, DType::fp32);
  c.b.memset(zero, 0.0f);
  // Row tiles: (first row, rows, first mask row).
  std::vector<std::array<int64_t, 3>> tiles;
  if (M <= parts) {
    for (int64_t r0 = 0; r0 < B * M; r0 += Mm) tiles.push_back({r0, std::min(Mm, B * M - r0), 0});
  } else {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i0 = 0; i0 < M; i0 += parts)
        tiles.push_back({b * M + i0, std::min(parts, M - i0), i0});
  }
  // One column chunk and whole matrices per tile: the mask is loaded once.
  std::optional<TileView> resident;
  if (nch == 1 && M <= parts) {
    resident = c.b.tile(mp, {Mm, N}, DType::fp32);
    c.b.dma(*resident, mk);
  }
  for (const auto& [r0, p, m0] : tiles)
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t c0 = ch * F, c1 = std::min(N, c0 + F), w = c1 - c0;
      const TileView x = c.b.tile(xp, {p, w}, DType::fp32);
      c.b.dma(x, X({sl(r0, r0 + p), sl(c0, c1)}));
      TileView m;
      if (resident) {
        m = (*resident)({sl(0, p), all()});
      } else {
        m = c.b.tile(mp, {p, w}, DType::fp32);
        c.b.dma(m, mk({sl(m0, m0 + p), sl(c0, c1)}));
      }
      const TileView y = c.b.tile(yp, {p, w}, DType::fp32);
      c.b.select(y, m, x, zero({sl(0, p), sl(0, w)}));
      c.b.dma(Y({sl(r0, r0 + p), sl(c0, c1)}), y);
    }
}

}  // namespace trnsim::lower
