// The tile IR: what the kernel builder produces and the back-end passes refine
// into an isa::Program. A kernel is HBM tensors, on-chip pools and tiles, and a
// list of ops in a valid sequential order (running them one after the other in
// list order gives the kernel's meaning).
//
// An op is an isa::Instruction whose access patterns are relative to the object
// they address: a tile's patterns have offsets from the tile's first byte in each
// partition (tiles always start at partition 0), a tensor's from the tensor's first
// byte. `ref` says which tile (sbuf/psum operands) or tensor (hbm operands) each
// operand slot addresses. Passes (compiler/passes/, in this order) fill in the rest:
//   keep_on_chip      store-then-load round trips through HBM become on-chip
//                     copies where SBUF holds the stored tiles (else they spill)
//   split_dma         large transfers split into pieces for several DMA engines
//   assign_engines    engine of ops built with engine "auto"
//   alloc_memory      pool and tile addresses
//   assign_dma_queues DMA engine and queue of each dma_copy
//   schedule          reorders the list (still a valid order) so that each
//                     queue's ops, taken in list order, are that queue's program;
//                     may move transfers between DMA engines and compiler-chosen
//                     elementwise ops between engines
//   alloc_hbm         HBM tensor offsets (scratch reuses dead tensors' bytes);
//                     drops tensors no op touches
//   insert_sync       semaphore waits and signals, `semaphores`
// Text form (to_text / parse) in text.cpp; see the comment there.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/isa/instruction.h"
#include "models/isa/program.h"

namespace trnsim::tile {

// A kernel the back end cannot compile, or a malformed tile IR; the message says
// which kernel, op, tile or line and what to change.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  isa::DType dtype = isa::DType::fp32;
  isa::TensorRole role = isa::TensorRole::scratch;
  std::vector<uint8_t> data;  // constant bytes (role constant)
  int64_t hbm_offset = -1;    // placed by alloc_hbm (-1: codegen lays it out)
  uint64_t elems() const;
  uint64_t bytes() const { return elems() * isa::dtype_size(dtype); }
};

// `bufs` rotating buffers in one memory: the pool's i-th tile lives in buffer
// i % bufs, so tile i + bufs reuses tile i's memory once tile i is dead.
struct Pool {
  std::string name;
  isa::MemSpace space = isa::MemSpace::sbuf;
  uint32_t bufs = 1;
  int64_t addr = -1;       // alloc_memory: first byte in each partition
  uint64_t buf_bytes = 0;  // alloc_memory: bytes per buffer per partition
};

struct Tile {
  std::string name;
  int pool = -1;
  std::vector<int64_t> shape;  // [partitions, free...]
  isa::DType dtype = isa::DType::fp32;
  uint32_t slot = 0;  // buffer of its pool
  int64_t addr = -1;  // alloc_memory: first byte in each partition
  uint64_t partition_bytes() const;
};

// Operand slots of an op; dst and accum are written, the others read (a matmul
// with accumulate=1 also reads dst).
enum Slot : int { kDst, kSrc0, kSrc1, kSrc2, kArg0, kArg1, kAccum, kNumSlots };

struct Op {
  int id = 0;  // stable name for dumps and tests (kept by reordering passes)
  isa::Instruction ins;
  std::array<int, kNumSlots> ref{-1, -1, -1, -1, -1, -1, -1};
  isa::Engine engine = isa::Engine::vector;
  bool engine_auto = false;  // assign_engines picks `engine`
  bool pinned = false;       // the kernel asked for this engine
  int dma_engine = -1;       // assign_dma_queues (dma_copy)
  int dma_queue = -1;
  bool dma_pinned = false;              // the kernel placed it (`dma.E.Q!`): not split or moved
  double est_start = -1, est_end = -1;  // schedule: estimated times [ns]
  // lower_graph: index of the graph node whose lowering emitted it (-1: none); passes
  // copy it to the ops they derive, so reports can tie instructions to graph ops.
  int node = -1;
};

struct Kernel {
  std::string name = "kernel";
  uint32_t semaphores = 0;
  std::vector<Tensor> tensors;
  std::vector<Pool> pools;
  std::vector<Tile> tiles;
  std::vector<Op> ops;
  // Where ops came from, by op id, for messages (op_label): e.g. the graph node and
  // kernel source line of a spliced user kernel (kernels::Builder::splice).
  std::map<int, std::string> op_origin;

  int find_tensor(std::string_view n) const;  // -1 when absent
  int find_pool(std::string_view n) const;
  int find_tile(std::string_view n) const;
  int next_op_id() const;
};

// ---- operands

struct Operand {
  Slot slot;
  const isa::AccessPattern* ap;
  int ref;  // tile (sbuf/psum) or tensor (hbm) index
  bool read, write;
};
// At most one operand per slot, held in place: operands() runs for every op in every
// pass, and a heap allocation per call cost more than the work on its result.
class Operands {
 public:
  const Operand* begin() const { return v_.data(); }
  const Operand* end() const { return v_.data() + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Operand& operator[](size_t i) const { return v_[i]; }
  void push_back(const Operand& o) { v_[n_++] = o; }

 private:
  std::array<Operand, kNumSlots> v_{};
  size_t n_ = 0;
};
// Every access-pattern operand of `op` (dst, sources, per-partition scalars, accum).
Operands operands(const Op& op);
isa::AccessPattern* slot_ap(isa::Instruction& in, Slot s);  // nullptr if the slot is unused
const isa::AccessPattern* slot_ap(const isa::Instruction& in, Slot s);
std::string_view slot_key(const isa::Instruction& in, Slot s);  // "dst", "stationary", "bias", ...

// ---- queues: a compute engine, or one queue of one DMA engine

struct QueueId {
  isa::Engine engine = isa::Engine::sync;
  int dma_engine = -1, dma_queue = -1;
  auto operator<=>(const QueueId&) const = default;
  std::string label() const;  // "tensor", "dma.3.1"
};
QueueId queue_of(const Op& op);

// "kernel 'k' op %12 (vector tensor_copy)", plus " from ORIGIN" when op_origin has it.
std::string op_label(const Kernel& k, const Op& op);

// ---- text form
struct TextOptions {
  bool estimates = false;  // append "# t=start..end ns" to scheduled ops
};
std::string to_text(const Kernel& k, const TextOptions& opts = {});
// Throws KernelError "FILE:LINE: ..." on malformed text.
Kernel parse(std::string_view text, const std::string& file = "<tile-ir>");

// Consistency checks every pass relies on (refs in range, operand spaces match
// their refs, patterns inside their tile or tensor, engines allowed); throws
// KernelError naming the op.
void verify(const Kernel& k);

}  // namespace trnsim::tile
