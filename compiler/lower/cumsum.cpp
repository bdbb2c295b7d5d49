// CumSum on the vector engines: the axis is viewed last (a strided HBM -> HBM
// DMA first when no view can), rows on partitions, and a row is scanned in
// log2(C) steps of a Hillis-Steele prefix sum: step s adds the row shifted by s
// (s = 1, 2, 4, ...), into a second tile (the first s columns copied); reverse
// shifts the other way. exclusive shifts the inclusive result by one column and
// puts 0 in front.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::HbmView;
using kernels::sl;
using kernels::TileView;

namespace {

// Rows [p, C] of the scan in SBUF at once: four rotating buffers (the steps
// ping-pong, and the next row tile's load overlaps).
constexpr uint64_t kScanRowTiles = 4;

}  // namespace

void lower_cumsum(Ctx& c, const ir::Node& n) {
  const ir::Value* xv = n.inputs.at(0);
  const ir::Value* yv = n.outputs.at(0);
  const ir::Shape xs = xv->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0) unsupported(n, "input must have rank >= 1");
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) unsupported(n, "axis out of range");
  const bool exclusive = n.attr_int("exclusive") != 0;
  const bool reverse = n.attr_int("reverse") != 0;
  const int64_t C = xs[axis];
  const uint64_t budget = c.target.sbuf_partition_bytes * 3 / 4;
  if (static_cast<uint64_t>(C) * 4 * kScanRowTiles > budget)
    unsupported(n, "the CumSum axis holds " + std::to_string(C) +
                       " elements: rows that long do not stay resident in SBUF (at most " +
                       std::to_string(budget / (4 * kScanRowTiles)) + ")");

  std::vector<int> perm;
  int64_t R = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(static_cast<int>(d)), R *= xs[d];
  perm.push_back(static_cast<int>(axis));
  std::vector<int> inv(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inv[perm[d]] = static_cast<int>(d);
  std::vector<int64_t> pshape;
  for (int d : perm) pshape.push_back(xs[d]);

  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  HbmView X, Y;
  std::optional<HbmView> y_scratch;
  try {
    X = c.view(xv).reshape(xs).permute(perm).reshape({R, C});
  } catch (const tile::KernelError&) {
    const HbmView t = c.b.scratch(pfx + ".xT", pshape, DType::fp32);
    c.b.dma(t, c.view(xv).reshape(xs).permute(perm));
    X = t.reshape({R, C});
  }
  try {
    Y = c.view(yv).reshape(xs).permute(perm).reshape({R, C});
  } catch (const tile::KernelError&) {
    y_scratch = c.b.scratch(pfx + ".yT", pshape, DType::fp32);
    Y = y_scratch->reshape({R, C});
  }

  const int64_t parts = c.target.partitions;
  const auto sp = c.b.pool(pfx + ".scan", isa::MemSpace::sbuf, kScanRowTiles);
  for (int64_t r0 = 0; r0 < R; r0 += parts) {
    const int64_t p = std::min(parts, R - r0);
    TileView a = c.b.tile(sp, {p, C}, DType::fp32);
    c.b.dma(a, X({sl(r0, r0 + p), all()}));
    for (int64_t s = 1; s < C; s *= 2) {
      const TileView b = c.b.tile(sp, {p, C}, DType::fp32);
      if (!reverse) {
        c.b.tensor_copy(b({all(), sl(0, s)}), a({all(), sl(0, s)}));
        c.b.tensor_tensor(b({all(), sl(s, C)}), a({all(), sl(s, C)}), a({all(), sl(0, C - s)}),
                          AluOp::add);
      } else {
        c.b.tensor_copy(b({all(), sl(C - s, C)}), a({all(), sl(C - s, C)}));
        c.b.tensor_tensor(b({all(), sl(0, C - s)}), a({all(), sl(0, C - s)}), a({all(), sl(s, C)}),
                          AluOp::add);
      }
      a = b;
    }
    if (exclusive) {
      const TileView e = c.b.tile(sp, {p, C}, DType::fp32);
      if (C == 1) {
        c.b.memset(e, 0.0f);
      } else if (!reverse) {
        c.b.memset(e({all(), sl(0, 1)}), 0.0f);
        c.b.tensor_copy(e({all(), sl(1, C)}), a({all(), sl(0, C - 1)}));
      } else {
        c.b.memset(e({all(), sl(C - 1, C)}), 0.0f);
        c.b.tensor_copy(e({all(), sl(0, C - 1)}), a({all(), sl(1, C)}));
      }
      a = e;
    }
    c.b.dma(Y({sl(r0, r0 + p), all()}), a);
  }
  if (y_scratch) c.b.dma(c.view(yv).reshape(xs), y_scratch->permute(inv));
}

}  // namespace trnsim::lower
