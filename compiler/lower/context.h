// Internal to compiler/lower: the state shared by the per-op lowerings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/kernels/builder.h"
#include "compiler/lower/int_range.h"
#include "compiler/target.h"

namespace trnsim::lower {

struct Ctx {
  explicit Ctx(const std::string& name, const compiler::Target& t)
      : b(name, t.hbm_bytes, t.partitions), target(t) {}
  kernels::Builder b;
  const compiler::Target& target;
  std::map<const ir::Value*, kernels::HbmView> hbm;
  kernels::PoolRef in_pool, w_pool, cast_pool, work_pool, small_pool, psum_pool;
  // Temporaries inside one elementwise step (elementwise.cpp), made per node on demand.
  kernels::PoolRef tmp_pool;
  const ir::Node* tmp_node = nullptr;
  // Operands broadcast into full-size HBM scratch copies (elementwise.cpp), per node.
  std::map<std::pair<const ir::Node*, const ir::Value*>, kernels::HbmView> expanded;
  // Proven ranges of the graph's integer values (int_range.h).
  IntRanges int_ranges;

  const kernels::HbmView& view(const ir::Value* v) const;
};

// An operand loaded for one [rows, cols] region of an elementwise computation:
// a full tile, a per-partition column [rows, 1] or an immediate.
struct Operand {
  enum class Kind { tile, column, imm } kind = Kind::tile;
  kernels::TileView t;
  float imm = 0;
};

// Loads value `v` (which broadcasts to `out` shape, viewed as [R, C] with C the
// last dim) for rows [r0, r0+rt) and cols [c0, c0+ct).
Operand load_operand(Ctx& c, const ir::Node& n, const ir::Value* v, const ir::Shape& out,
                     int64_t r0, int64_t rt, int64_t c0, int64_t ct);

// Applies elementwise op `op` (attrs as on the node) to operands into a new
// [rt, ct] fp32 work tile.
kernels::TileView apply_elementwise(Ctx& c, const ir::Node& n, const std::string& op,
                                    const std::map<std::string, ir::Attribute>& attrs,
                                    const std::vector<Operand>& args, int64_t rt, int64_t ct);

bool is_lowerable_elementwise(const std::string& op);
// The op types lower_elementwise / lower_rowwise handle, sorted (for lowerable_ops()).
const std::vector<std::string>& elementwise_ops();
const std::vector<std::string>& rowwise_ops();

// Per-op lowerings.
void lower_matmul(Ctx& c, const ir::Node& n);
void lower_elementwise(Ctx& c, const ir::Node& n);
void lower_rowwise(Ctx& c, const ir::Node& n);
bool is_rowwise(const std::string& op);
void lower_conv(Ctx& c, const ir::Node& n);  // Conv, trn.MatMulEpilogue on a Conv
bool is_conv_node(const ir::Node& n);
// A constant read only as Conv weights: lower_conv re-lays it out into a constant
// of its own, so lower_graph gives it no HBM tensor.
bool conv_weight_only(const ir::Graph& g, const ir::Value* v);
// A constant read only as the weight of matmuls that cast it to a narrower
// compute_dtype: lower_matmul makes the cast copy, so lower_graph gives the fp32
// original no HBM tensor (and the compiler no copy of its bytes).
bool matmul_cast_weight_only(const ir::Graph& g, const ir::Value* v);
void lower_pool(Ctx& c, const ir::Node& n);
bool is_pool(const std::string& op);
// Data movement (movement.cpp): Concat, Split, Slice, Pad, Expand, Tile, Gather, Cast.
void lower_movement(Ctx& c, const ir::Node& n);
// Transpose (movement.cpp): a strided DMA, or tensor-engine block transposes when
// the innermost axis moves.
void lower_transpose(Ctx& c, const ir::Node& n);
// The tensor-engine transpose of lower_transpose for other lowerings: xb [A, L] with
// contiguous rows into yb, y indexed like x (yb[a, l] is y[l, a]), both fp32 tiles
// on chip; the pools are made once per node.
struct TePools {
  kernels::PoolRef x, y, psum;
  int64_t cols = 0;  // L columns per load
};
TePools te_transpose_pools(Ctx& c);
void te_transpose(Ctx& c, const TePools& tp, const kernels::HbmView& xb, const kernels::HbmView& yb,
                  int64_t A, int64_t L);
// Below this many elements a permutation that moves the innermost axis stays one
// strided DMA (see movement.cpp).
int64_t te_transpose_min_elems();
bool is_movement(const std::string& op);
const std::vector<std::string>& movement_ops();

// [R, C] view of a shape: C = last dim (1 for scalars), R = the rest.
inline std::pair<int64_t, int64_t> rows_cols(const ir::Shape& s) {
  int64_t C = s.empty() ? 1 : s.back();
  int64_t R = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) R *= s[i];
  return {R, C};
}

// TopK, ArgMax, ArgMin (topk.cpp): k rounds of row max + first index of it on the
// vector engines.
void lower_topk(Ctx& c, const ir::Node& n);

// Trilu (trilu.cpp): a select against a constant mask on the vector engines.
void lower_trilu(Ctx& c, const ir::Node& n);
// CumSum (cumsum.cpp): a log-step prefix sum on the vector engines.
void lower_cumsum(Ctx& c, const ir::Node& n);

// trn.Attention (attention.cpp): one flash-attention kernel, no score tensor in HBM.
void lower_attention(Ctx& c, const ir::Node& n);

// trn.AllReduce (collective.cpp): an all_reduce over the node's group of ranks.
void lower_collective(Ctx& c, const ir::Node& n);

// trn.TileKernel (tile_kernel.cpp): the node's tile IR spliced in.
void lower_tile_kernel(Ctx& c, const ir::Node& n);

[[noreturn]] void unsupported(const ir::Node& n, const std::string& why);

}  // namespace trnsim::lower
