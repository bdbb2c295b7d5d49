// The trnsim ISA: one instruction = opcode + operand access patterns + immediates +
// synchronisation. Semantics of each opcode are specified in docs/isa.md; the
// per-opcode operand names and engine placement are in the opcode table below.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/isa/access_pattern.h"

namespace trnsim::isa {

enum class Engine : uint8_t { tensor, vector, scalar, gpsimd, sync, dma };
inline constexpr int kNumEngines = 6;
std::string_view engine_name(Engine e);
std::optional<Engine> parse_engine(std::string_view s);

enum class Opcode : uint8_t {
  nop,                  // any queue: only waits and signals
  dma_copy,             // dma: dst <- src element stream, with dtype cast
  matmul,               // tensor: psum[M,N] (+)= stationary[K,M]^T @ moving[K,N]
  transpose,            // tensor: psum[F,P] = src[P,F]
  activation,           // scalar: func(src*scale+bias), optional add-reduce
  tensor_tensor,        // vector/gpsimd: dst = in0 op in1
  tensor_scalar,        // vector/gpsimd/scalar: dst = (src op0 arg0) op1 arg1
  tensor_reduce,        // vector/gpsimd: reduce free axes
  partition_reduce,     // gpsimd: reduce over partitions, result to every dst partition
  partition_broadcast,  // gpsimd: one source partition to every dst partition
  tensor_copy,          // vector/scalar/gpsimd: dst = src with cast
  memset,               // vector/scalar/gpsimd: dst = value
  iota,                 // gpsimd: dst = base + pstep*p + sum(steps[i]*idx_i)
  affine_select,        // gpsimd: dst = (affine(p,idx) cmp 0) ? src : fill
  select,               // vector/gpsimd: dst = pred != 0 ? on_true : on_false
  bn_stats,             // vector: dst[P,3] = (count, mean, M2) over src free elems
  bn_aggr,              // vector: dst[P,2] = (mean, var) combining src[P,3k]
  all_reduce,           // sync: dst = sum over the group's ranks of src (hbm)
  all_gather,           // sync: dst = the group's src buffers, concatenated in group order
  reduce_scatter,       // sync: dst = this rank's block of the sum of the group's src
  barrier,              // sync: every rank of the group reached it
  all_to_all,           // sync: dst block q = rank q's src block p (p: this rank's position)
  permute,              // sync: the src of the rank whose `peers` entry is this rank
};
inline constexpr int kNumOpcodes = 23;
// A permute `peers` entry for a rank that sends nothing (`-` in assembly); no rank
// can have this number (the assembler and decoder keep ranks below it).
inline constexpr uint32_t kNoPeer = 0xFFFFFFFFu;
// The cross-rank opcodes (all_reduce .. permute): a rendezvous of `group`.
bool is_collective(Opcode o);

enum class ActFunc : uint8_t {
  identity,
  relu,
  gelu,
  gelu_tanh,
  sigmoid,
  tanh,
  exp,
  log,
  silu,
  sqrt,
  rsqrt,
  reciprocal,
  square,
  abs,
  erf,
  softplus,
};
inline constexpr int kNumActFuncs = 16;

// Binary ALU ops. Comparisons give 1.0 / 0.0. `bypass` passes the left operand.
enum class AluOp : uint8_t { bypass, add, sub, mul, div, max, min, pow, eq, ne, lt, le, gt, ge };
inline constexpr int kNumAluOps = 14;

std::string_view opcode_name(Opcode o);
std::optional<Opcode> parse_opcode(std::string_view s);
std::string_view act_func_name(ActFunc f);
std::optional<ActFunc> parse_act_func(std::string_view s);
std::string_view alu_op_name(AluOp o);
std::optional<AluOp> parse_alu_op(std::string_view s);

// A scalar operand: an immediate, or a per-partition value read from an [P,1] pattern.
struct ScalarOperand {
  bool is_ap = false;
  float imm = 0.0f;
  AccessPattern ap;
  // Compares only the half in use (ap if is_ap, else imm); floats compare by bits,
  // except that any two NaNs are equal (the text form writes every NaN as `nan`).
  bool operator==(const ScalarOperand& o) const;
};

struct SemWait {
  uint16_t sem = 0;
  uint32_t value = 0;  // proceed when semaphore >= value
  bool operator==(const SemWait&) const = default;
};

enum class SignalWhen : uint8_t { start, done };  // read-start or completion
struct SemSignal {
  uint16_t sem = 0;
  uint32_t inc = 1;
  SignalWhen when = SignalWhen::done;
  bool operator==(const SemSignal&) const = default;
};

struct Instruction {
  // The fields every sequencer reads first, together in the first cache lines: a
  // long program streams through memory once, and the operand patterns an opcode
  // does not use are never touched.
  Opcode op = Opcode::nop;
  uint8_t nsrc = 0;
  bool accumulate = false;  // matmul: add into PSUM instead of overwriting
  // matmul, fp8 only (NC-v3+): K = 2 x partitions. Each partition's first M (N)
  // stationary (moving) elements are K rows 0..P-1, the next M (N) rows P..2P-1.
  bool double_row = false;
  bool has_accum = false;  // activation/tensor_scalar: also reduce results along free axes
  uint8_t spread = 1;      // dma_copy: DMA engines of the core sharing the rows (1..16)
  uint32_t line = 0;       // assembly source line (0: none); not part of equality
  std::vector<SemWait> waits;
  std::vector<SemSignal> signals;

  AccessPattern dst;
  std::array<AccessPattern, 3> src{};

  // Immediates; which ones an opcode uses is given in docs/isa.md.
  ActFunc func = ActFunc::identity;  // activation
  AluOp op0 = AluOp::bypass;         // tensor_tensor/reduce op, tensor_scalar first op, cmp
  AluOp op1 = AluOp::bypass;         // tensor_scalar second op
  AluOp accum_op = AluOp::add;       // tensor_scalar: reduction into `accum` (activation: add)
  bool reverse0 = false;             // tensor_scalar: arg0 op0 src instead of src op0 arg0
  bool reverse1 = false;
  ScalarOperand arg0;                     // activation scale (default 1); tensor_scalar arg0;
                                          // memset value; iota/affine_select base
  ScalarOperand arg1;                     // activation bias; tensor_scalar arg1
  AccessPattern accum;                    // has_accum: ... into this [P,1] pattern with accum_op
  uint8_t axes = 0;                       // tensor_reduce: bit i set = free dim i reduced
  int32_t pstep = 0;                      // iota/affine_select: coefficient of the partition index
  std::array<int32_t, kMaxDims> steps{};  // ... and of each free index
  float fill = 0.0f;                      // affine_select: value where the predicate fails
  // Collectives: the ranks taking part, ascending (docs/isa.md, "Collectives").
  std::vector<uint32_t> group;
  // permute: the rank group position i sends its src to, one per group rank, or
  // kNoPeer where that rank sends nothing (a partial permutation: pipeline stages).
  // The real entries are distinct ranks of `group`.
  std::vector<uint32_t> peers;

  // Every field but `line`; src slots beyond nsrc and `accum` without has_accum carry
  // nothing and are ignored; floats compare as in ScalarOperand.
  bool operator==(const Instruction& o) const;
};

// Opcode table: operand names as written in assembly, engines allowed.
struct OpcodeInfo {
  Opcode op;
  std::string_view name;
  std::array<std::string_view, 3> src_names;  // empty = unused
  uint8_t nsrc;
  bool has_dst;
  uint32_t engines;  // bit per Engine
};
const OpcodeInfo& opcode_info(Opcode o);

// A matmul's logical sizes: dst[M,N] (+)= stationary[K,M]^T @ moving[K,N] (double_row:
// K = 2 x partitions, M and N half the free elements).
struct MatmulDims {
  uint64_t K = 0, M = 0, N = 0;
};
MatmulDims matmul_dims(const Instruction& in);
bool engine_allows(Engine e, Opcode o);

}  // namespace trnsim::isa
