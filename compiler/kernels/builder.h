// The kernel-builder API: write a kernel at tile level, in the spirit of NKI, and
// get the tile IR (compiler/tile/ir.h) that the back-end passes compile.
//
//   kernels::Builder b("scale2");
//   auto x = b.input("x", {128, 512}, DType::fp32);
//   auto y = b.output("y", {128, 512}, DType::fp32);
//   auto sb = b.pool("sb", MemSpace::sbuf, 2);           // 2 rotating buffers
//   auto t = b.tile(sb, {128, 512}, DType::fp32);
//   b.dma(t, x);                                          // load
//   b.tensor_scalar(t, t, AluOp::mul, 2.0f);              // engine chosen by a pass
//   b.dma(y, t);                                          // store
//   tile::Kernel k = b.finish();
//
// Tiles are [partitions, free...]; HBM tensors are row-major. Views select parts:
// `t({sl(0, 64), sl(0, 512, 2)})` (partitions first, then free axes; missing axes
// whole; `at(i)` drops a free axis), `x({sl(r, r + 128), all()})`, `.T()`,
// `.permute()`, `.broadcast(axis, n)` (stride 0), `.reshape()`. A view must map
// onto an access pattern (at most 4 free dims after merging contiguous dims); the
// builder says so clearly when it does not. Ops take their operands in program
// order: the kernel means what running them one by one means. Engines: ops only
// one engine can run get it; the others (tensor_tensor, tensor_scalar, tensor_copy,
// memset, tensor_reduce, select) are balanced by the assign_engines pass unless an
// engine is given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "compiler/tile/ir.h"

namespace trnsim::kernels {

inline constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// Index along one axis: a slice [start, stop) with a positive step, or a single
// index (`at`), which drops a free axis (a partition index keeps one partition).
struct Ix {
  int64_t start = 0, stop = kEnd, step = 1;
  bool single = false;
};
inline Ix all() {
  return {};
}
inline Ix at(int64_t i) {
  return {i, i + 1, 1, true};
}
inline Ix sl(int64_t start, int64_t stop, int64_t step = 1) {
  return {start, stop, step, false};
}

class Builder;

// Part of an HBM tensor: element offset and (stride, size) per axis, outermost
// first. As an access pattern, axis 0 becomes the rows and the rest the free dims.
class HbmView {
 public:
  HbmView() = default;
  HbmView operator()(std::initializer_list<Ix> idx) const;
  HbmView T() const;  // reversed axes
  HbmView permute(const std::vector<int>& perm) const;
  HbmView broadcast(int axis, int64_t n) const;  // new axis of n copies (stride 0)
  // A new leading axis of n views, each `step` elements after the previous one
  // (overlapping windows: one DMA row per shift). Every window stays in the tensor.
  HbmView windows(int64_t n, int64_t step) const;
  HbmView reshape(const std::vector<int64_t>& shape) const;
  std::vector<int64_t> shape() const;
  int64_t elems() const;
  int tensor() const { return tensor_; }
  isa::AccessPattern ap() const;  // throws KernelError if not expressible
  // Every element of its tensor, in the tensor's row-major order (any shape).
  bool whole() const;

 private:
  friend class Builder;
  const Builder* b_ = nullptr;
  int tensor_ = -1;
  int64_t offset_ = 0;  // elements
  std::vector<isa::Dim> dims_;
};

// Part of a tile: a partition range and free axes (stride, size) in elements.
class TileView {
 public:
  TileView() = default;
  TileView operator()(std::initializer_list<Ix> idx) const;   // partitions, then free axes
  TileView broadcast(int free_axis, int64_t n) const;         // new free axis, stride 0
  TileView reshape(const std::vector<int64_t>& shape) const;  // [P, free...], P kept
  TileView permute(const std::vector<int>& free_perm) const;  // reorder free axes
  std::vector<int64_t> shape() const;                         // [P, free...]
  uint32_t partitions() const { return pcount_; }
  int64_t free_elems() const;
  int tile() const { return tile_; }
  // Free dims merged where contiguous; `group[i]` (if given) keeps axes of
  // different groups apart. Throws KernelError with more than 4 dims left.
  isa::AccessPattern ap(const std::vector<int>* group = nullptr) const;

 private:
  friend class Builder;
  const Builder* b_ = nullptr;
  int tile_ = -1;
  uint32_t pstart_ = 0, pcount_ = 0;
  int64_t offset_ = 0;  // elements within a partition
  std::vector<isa::Dim> dims_;
};

// An immediate or a per-partition [P,1] tile view.
struct Scalar {
  Scalar(float v) : imm(v) {}                       // NOLINT: implicit by design
  Scalar(double v) : imm(static_cast<float>(v)) {}  // NOLINT
  Scalar(int v) : imm(static_cast<float>(v)) {}     // NOLINT
  Scalar(const TileView& v) : view(v) {}            // NOLINT
  float imm = 0;
  std::optional<TileView> view;
};

struct PoolRef {
  int id = -1;
};

using EngineSel = std::optional<isa::Engine>;  // nullopt: chosen by assign_engines

// tensor_scalar's optional parts.
struct TensorScalarOpts {
  isa::AluOp op1 = isa::AluOp::bypass;
  Scalar arg1 = 0.0f;
  bool reverse0 = false, reverse1 = false;
  std::optional<TileView> accum;
  isa::AluOp accum_op = isa::AluOp::add;
  EngineSel engine;
};

class Builder {
 public:
  // hbm_bytes: the most HBM one tensor may take (the target's; 0: only overflow checked).
  // `partitions`: the target's SBUF partitions, which bound a tile's first dim and
  // a matmul's K and M.
  explicit Builder(std::string kernel_name, uint64_t hbm_bytes = 0, int64_t partitions = 128);

  // ---- HBM tensors
  HbmView input(const std::string& name, const std::vector<int64_t>& shape, isa::DType t);
  HbmView output(const std::string& name, const std::vector<int64_t>& shape, isa::DType t);
  HbmView scratch(const std::string& name, const std::vector<int64_t>& shape, isa::DType t);
  // Values are rounded to `t`.
  HbmView constant(const std::string& name, const std::vector<int64_t>& shape, isa::DType t,
                   const std::vector<float>& values);

  // ---- on-chip memory
  PoolRef pool(const std::string& name, isa::MemSpace space, uint32_t bufs);
  // A new tile in the pool's next buffer (name: "<pool>.<n>" when empty).
  TileView tile(PoolRef pool, const std::vector<int64_t>& shape, isa::DType t,
                const std::string& name = "");

  // ---- data movement
  void dma(const TileView& dst, const HbmView& src);   // load
  void dma(const HbmView& dst, const TileView& src);   // store
  void dma(const HbmView& dst, const HbmView& src);    // HBM -> HBM
  void dma(const TileView& dst, const TileView& src);  // SBUF -> SBUF
  // A collective (all_reduce, all_gather, reduce_scatter) on the sync queue over
  // the ranks `group`, both operands in HBM (docs/isa.md, Collectives).
  void collective(isa::Opcode opc, const HbmView& dst, const HbmView& src,
                  const std::vector<uint32_t>& group);

  // ---- tensor engine
  // dst[M,N] (psum fp32) (+)= stationary[K,M]^T @ moving[K,N]. double_row (fp8, on
  // targets with the mode): K = 2 x partitions, each operand's free elements holding
  // the two K halves one after the other ([P, 2, M] and [P, 2, N] views).
  void matmul(const TileView& dst, const TileView& stationary, const TileView& moving,
              bool accumulate, bool double_row = false);
  void transpose(const TileView& dst, const TileView& src);  // psum [F,P] = src [P,F]

  // ---- elementwise and reductions
  void activation(const TileView& dst, const TileView& src, isa::ActFunc f, Scalar scale = 1.0f,
                  Scalar bias = 0.0f, std::optional<TileView> accum = {});
  void tensor_tensor(const TileView& dst, const TileView& in0, const TileView& in1, isa::AluOp op,
                     EngineSel e = {});
  void tensor_scalar(const TileView& dst, const TileView& src, isa::AluOp op0, Scalar arg0,
                     const TensorScalarOpts& o = {});
  // Reduces the listed free axes of src (0 = first free axis).
  void tensor_reduce(const TileView& dst, const TileView& src, isa::AluOp op,
                     const std::vector<int>& free_axes, EngineSel e = {});
  void partition_reduce(const TileView& dst, const TileView& src, isa::AluOp op);
  void partition_broadcast(const TileView& dst, const TileView& src);
  void tensor_copy(const TileView& dst, const TileView& src, EngineSel e = {});
  void memset(const TileView& dst, float value, EngineSel e = {});
  void iota(const TileView& dst, float base, int32_t pstep, const std::vector<int32_t>& steps);
  void affine_select(const TileView& dst, const TileView& src, isa::AluOp cmp, float base,
                     int32_t pstep, const std::vector<int32_t>& steps, float fill);
  void select(const TileView& dst, const TileView& pred, const TileView& on_true,
              const TileView& on_false, EngineSel e = {});
  void bn_stats(const TileView& dst, const TileView& src);
  void bn_aggr(const TileView& dst, const TileView& src);

  // ---- whole kernels
  // Appends the ops of `sub` (a tile-IR kernel before the back-end passes, e.g.
  // parsed from text) after the ops so far. The tensors of `sub` listed in `bind`
  // (by index) address those views, which must be whole tensors of the same dtype
  // and element count; its other tensors, and its pools and tiles, are added under
  // `prefix` + their names. `origin` is noted on each op (tile::Kernel::op_origin),
  // followed by the op's source comment in `sub_text` when given.
  void splice(const tile::Kernel& sub, const std::map<int, HbmView>& bind,
              const std::string& prefix, const std::string& origin, std::string_view sub_text = {});

  const tile::Kernel& kernel() const { return k_; }
  // Checks and hands over the kernel; the builder is empty afterwards.
  tile::Kernel finish();

  [[noreturn]] void fail(const std::string& what) const;

 private:
  HbmView add_tensor(const std::string& name, const std::vector<int64_t>& shape, isa::DType t,
                     isa::TensorRole role);
  tile::Op& add_op(isa::Opcode opc, EngineSel e, const char* what);
  void set(tile::Op& op, tile::Slot s, const TileView& v, const std::vector<int>* group = nullptr);
  void set(tile::Op& op, tile::Slot s, const HbmView& v);
  void set_scalar(tile::Op& op, tile::Slot s, const Scalar& v, const char* what);
  void same_shape(const char* what, const TileView& dst, const TileView& src,
                  const char* src_name) const;
  void in_space(const char* what, const char* name, const TileView& v, isa::MemSpace space) const;

  tile::Kernel k_;
  uint64_t hbm_bytes_ = 0;
  int64_t partitions_ = 128;
  std::vector<uint32_t> pool_tiles_;  // tiles allocated per pool so far
  // The names in k_.tiles: a large model declares tens of thousands of tiles, and
  // a linear search per declaration made lowering quadratic.
  std::unordered_set<std::string> tile_names_;
};

}  // namespace trnsim::kernels
