#include "models/isa/validate.h"

#include "models/isa/limits.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

namespace trnsim::isa {

namespace {

// Internal: the rule broken, without the queue/instruction prefix.
struct Broken {
  std::string msg;
};
[[noreturn]] void broken(std::string m) {
  throw Broken{std::move(m)};
}

std::string s(uint64_t v) {
  return std::to_string(v);
}
std::string s(int64_t v) {
  return std::to_string(v);
}
std::string s(uint32_t v) {
  return std::to_string(v);
}
std::string s(int v) {
  return std::to_string(v);
}

bool is_identifier(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string shape(const AccessPattern& ap) {
  return "[" + s(ap.partition_count) + "," + s(ap.free_elems()) + "]";
}

bool is_reduce_op(AluOp o) {
  return o == AluOp::add || o == AluOp::max || o == AluOp::min;
}
bool is_compare_op(AluOp o) {
  return o == AluOp::eq || o == AluOp::ne || o == AluOp::lt || o == AluOp::le || o == AluOp::gt ||
         o == AluOp::ge;
}

struct Operand {
  std::string_view name;
  const AccessPattern* ap;
  bool write;
};

class Checker {
 public:
  Checker(const Instruction& in, Engine e, const Limits& lim, uint32_t nsem)
      : in_(in), e_(e), lim_(lim), nsem_(nsem) {}

  void run() {
    enums();
    const auto& info = opcode_info(in_.op);
    if (!engine_allows(e_, in_.op))
      broken(std::string(info.name) + " is not allowed on the " + std::string(engine_name(e_)) +
             " engine");
    if (in_.nsrc != info.nsrc)
      broken("has " + s(int{in_.nsrc}) + " source operands; " + std::string(info.name) + " takes " +
             s(int{info.nsrc}));
    sync();
    collect(info);
    for (const auto& o : ops_) pattern(o);
    opcode_rules();
  }

 private:
  void enums() {
    if (static_cast<int>(in_.op) >= kNumOpcodes) broken("bad opcode " + s(int(in_.op)));
    if (static_cast<int>(in_.func) >= kNumActFuncs) broken("bad activation function");
    for (AluOp o : {in_.op0, in_.op1, in_.accum_op})
      if (static_cast<int>(o) >= kNumAluOps) broken("bad ALU op " + s(int(o)));
    if (in_.spread != 1 && in_.op != Opcode::dma_copy)
      broken("spread=" + s(int{in_.spread}) + " is only for dma_copy");
  }

  // dma_copy spread=N: rows split over N engines, so both sides need >= N equal rows.
  void spread() {
    const uint32_t n = in_.spread;
    const uint32_t most = std::min<uint32_t>(16, lim_.dma_engines);
    if (n < 1 || n > most)
      broken("spread=" + s(n) + " must be 1.." + s(most) + " (DMA engines per core)");
    if (n == 1) return;
    const uint32_t rd = in_.dst.partition_count, rs = in_.src[0].partition_count;
    if (rd != rs || rd < n)
      broken("spread=" + s(n) + " splits rows over engines: src and dst need the same " +
             "row count, at least " + s(n) + " (src has " + s(rs) + ", dst " + s(rd) + ")");
  }

  void sync() {
    for (const auto& w : in_.waits)
      if (w.sem >= nsem_)
        broken("wait on s" + s(int{w.sem}) + " but the program has " + s(nsem_) + " semaphores");
    for (const auto& g : in_.signals) {
      if (g.sem >= nsem_)
        broken("signal of s" + s(int{g.sem}) + " but the program has " + s(nsem_) + " semaphores");
      if (static_cast<int>(g.when) > 1) broken("bad signal time");
    }
  }

  // Scalar-operand key names as written in assembly.
  std::string_view arg_name(int i) const {
    if (in_.op == Opcode::activation) return i == 0 ? "scale" : "bias";
    if (in_.op == Opcode::memset) return "value";
    if (in_.op == Opcode::iota || in_.op == Opcode::affine_select) return "base";
    return i == 0 ? "arg0" : "arg1";
  }

  void collect(const OpcodeInfo& info) {
    if (info.has_dst) ops_.push_back({"dst", &in_.dst, true});
    for (int i = 0; i < info.nsrc; ++i) ops_.push_back({info.src_names[i], &in_.src[i], false});
    const bool scalar_aps = in_.op == Opcode::activation || in_.op == Opcode::tensor_scalar;
    const ScalarOperand* args[2] = {&in_.arg0, &in_.arg1};
    for (int i = 0; i < 2; ++i) {
      if (!args[i]->is_ap) continue;
      if (!scalar_aps) broken(std::string(arg_name(i)) + " must be an immediate");
      ops_.push_back({arg_name(i), &args[i]->ap, false});
    }
    if (in_.has_accum) {
      if (!scalar_aps) broken("accum is only for activation and tensor_scalar");
      ops_.push_back({"accum", &in_.accum, true});
    }
  }

  void pattern(const Operand& o) {
    const std::string n(o.name);
    const AccessPattern& ap = *o.ap;
    if (static_cast<int>(ap.space) > 2) broken(n + " has a bad memory space");
    if (static_cast<int>(ap.dtype) >= kNumDTypes) broken(n + " has a bad dtype");
    if (ap.ndims > kMaxDims)
      broken(n + " has " + s(int{ap.ndims}) + " dims (at most " + s(kMaxDims) + ")");
    if (ap.partition_count == 0) broken(n + " has 0 partitions");
    for (int i = 0; i < ap.ndims; ++i)
      if (ap.dims[i].size == 0) broken(n + " dim " + s(i) + " has size 0");
    space_rule(n, ap.space, o.write);
    if (ap.space == MemSpace::hbm) {
      if (ap.partition_start != 0)
        broken(n + " is an hbm pattern with partition_start " + s(ap.partition_start) +
               " (must be 0)");
      if (ap.min_byte() < 0) broken(n + " reaches hbm byte " + s(ap.min_byte()) + " (below 0)");
      if (lim_.hbm_bytes != 0 && static_cast<uint64_t>(ap.end_byte()) > lim_.hbm_bytes)
        broken(n + " ends at hbm byte " + s(ap.end_byte()) + ", past the " + s(lim_.hbm_bytes) +
               " bytes of hbm");
      return;
    }
    const bool sb = ap.space == MemSpace::sbuf;
    if (ap.partition_stride != 0)
      broken(n + " has partition_stride " + s(ap.partition_stride) + " (hbm only; must be 0)");
    const uint64_t pend = uint64_t{ap.partition_start} + ap.partition_count;
    if (pend > lim_.partitions)
      broken(n + " partitions " + s(ap.partition_start) + ".." + s(pend - 1) + " exceed the " +
             s(lim_.partitions) + " partitions");
    const uint64_t psize = sb ? lim_.sbuf_partition_bytes : lim_.psum_partition_bytes;
    if (ap.min_byte() < 0)
      broken(n + " reaches byte " + s(ap.min_byte()) + " of the partition (below 0)");
    if (static_cast<uint64_t>(ap.end_byte()) > psize)
      broken(n + " ends at byte " + s(ap.end_byte()) + ", past the " + s(psize) + "-byte " +
             std::string(mem_space_name(ap.space)) + " partition");
    // The rule binds the compute engines' partition quadrants; DMA addresses any
    // partition range (a transfer is spread 8 partitions per engine).
    const uint32_t st = ap.partition_start, c = ap.partition_count;
    if (e_ != Engine::dma && !partition_start_ok(st, c)) {
      const char* rule = c > 64   ? "more than 64 partitions start at 0"
                         : c > 32 ? "33..64 partitions start at 0 or 64"
                                  : "1..32 partitions start at 0, 32, 64 or 96";
      broken(n + " partition_start " + s(st) + " breaks the partition-start rule (" + rule + ")");
    }
  }

  void space_rule(const std::string& n, MemSpace sp, bool write) {
    const std::string where = n + " is in " + std::string(mem_space_name(sp)) + "; ";
    switch (e_) {
      case Engine::tensor:
        if (write && sp != MemSpace::psum) broken(where + "the tensor engine writes psum only");
        if (!write && sp != MemSpace::sbuf) broken(where + "the tensor engine reads sbuf only");
        break;
      case Engine::vector:
      case Engine::scalar:
        if (sp == MemSpace::hbm)
          broken(where + "the " + std::string(engine_name(e_)) +
                 " engine reads and writes sbuf and psum only");
        break;
      case Engine::gpsimd:
        if (sp != MemSpace::sbuf) broken(where + "the gpsimd engine reads and writes sbuf only");
        break;
      case Engine::dma:
        if (sp == MemSpace::psum) broken(where + "dma moves between hbm and sbuf only");
        break;
      case Engine::sync:
        if (!is_collective(in_.op)) broken(where + "the sync engine has no data path");
        if (sp != MemSpace::hbm) broken(where + "collective operands are in hbm");
        break;
    }
  }

  // Elementwise operand: same [P,C] as dst.
  void same_shape(std::string_view name, const AccessPattern& ap) {
    if (ap.partition_count != in_.dst.partition_count || ap.free_elems() != in_.dst.free_elems())
      broken(std::string(name) + " is " + shape(ap) + " (partitions x elements) but dst is " +
             shape(in_.dst));
  }
  // Per-partition scalar: [P,1] with dst's P.
  void per_partition(std::string_view name, const AccessPattern& ap) {
    if (ap.free_elems() != 1 || ap.partition_count != in_.dst.partition_count)
      broken(std::string(name) + " is " + shape(ap) + "; a per-partition operand must be [" +
             s(in_.dst.partition_count) + ",1] (one element per dst partition)");
  }
  void scalar_args() {
    if (in_.arg0.is_ap) per_partition(arg_name(0), in_.arg0.ap);
    if (in_.arg1.is_ap) per_partition(arg_name(1), in_.arg1.ap);
    if (in_.has_accum) per_partition("accum", in_.accum);
  }
  void srcs_same_shape() {
    const auto& info = opcode_info(in_.op);
    for (int i = 0; i < info.nsrc; ++i) same_shape(info.src_names[i], in_.src[i]);
  }
  void reduce_op(std::string_view key) {
    if (!is_reduce_op(in_.op0))
      broken(std::string(key) + "=" + std::string(alu_op_name(in_.op0)) +
             " is not a reduction (add, max, min)");
  }
  void steps_fit() {
    for (int k = in_.dst.ndims; k < kMaxDims; ++k)
      if (in_.steps[k] != 0)
        broken("steps[" + s(k) + "] is set but dst has " + s(int{in_.dst.ndims}) + " dims");
  }

  void opcode_rules() {
    const AccessPattern& d = in_.dst;
    switch (in_.op) {
      case Opcode::nop:
        break;
      case Opcode::dma_copy:
        if (d.elems() != in_.src[0].elems())
          broken("dst has " + s(d.elems()) + " elements but src has " + s(in_.src[0].elems()));
        spread();
        break;
      case Opcode::matmul:
        matmul();
        break;
      case Opcode::transpose: {
        const AccessPattern& sr = in_.src[0];
        const uint64_t P = sr.partition_count, F = sr.free_elems();
        if (P > lim_.matmul_max_k || F > lim_.matmul_max_m)
          broken("src is [P,F]=[" + s(P) + "," + s(F) + "]; transpose needs P <= " +
                 s(lim_.matmul_max_k) + " and F <= " + s(lim_.matmul_max_m));
        if (d.partition_count != F || d.free_elems() != P)
          broken("dst is " + shape(d) + " but the transpose of src [" + s(P) + "," + s(F) +
                 "] is [" + s(F) + "," + s(P) + "]");
        if (d.dtype != sr.dtype && d.dtype != DType::fp32)
          broken("dst dtype " + std::string(dtype_name(d.dtype)) + " must be the src dtype (" +
                 std::string(dtype_name(sr.dtype)) + ") or fp32");
        break;
      }
      case Opcode::activation:
        srcs_same_shape();
        scalar_args();
        if (in_.accum_op != AluOp::add)
          broken("activation accumulates with add only (accum_op is " +
                 std::string(alu_op_name(in_.accum_op)) + ")");
        break;
      case Opcode::tensor_tensor:
      case Opcode::tensor_copy:
      case Opcode::select:
        srcs_same_shape();
        break;
      case Opcode::tensor_scalar:
        srcs_same_shape();
        scalar_args();
        break;
      case Opcode::tensor_reduce: {
        reduce_op("op");
        const AccessPattern& sr = in_.src[0];
        uint64_t kept = 1;
        for (int i = 0; i < 8; ++i) {
          if (!(in_.axes >> i & 1)) {
            if (i < sr.ndims) kept *= sr.dims[i].size;
            continue;
          }
          if (i >= sr.ndims)
            broken("axes names dim " + s(i) + " but src has " + s(int{sr.ndims}) + " dims");
        }
        if (d.partition_count != sr.partition_count)
          broken("dst has " + s(d.partition_count) + " partitions but src has " +
                 s(sr.partition_count));
        if (d.free_elems() != kept)
          broken("dst has " + s(d.free_elems()) +
                 " elements per partition; the dims src keeps after the reduction hold " + s(kept));
        break;
      }
      case Opcode::partition_reduce:
        reduce_op("op");
        if (d.free_elems() != in_.src[0].free_elems())
          broken("dst has " + s(d.free_elems()) + " elements per partition but src has " +
                 s(in_.src[0].free_elems()));
        break;
      case Opcode::partition_broadcast:
        if (in_.src[0].partition_count != 1)
          broken("src must be one partition, has " + s(in_.src[0].partition_count));
        if (d.free_elems() != in_.src[0].free_elems())
          broken("dst has " + s(d.free_elems()) + " elements per partition but src has " +
                 s(in_.src[0].free_elems()));
        break;
      case Opcode::memset:
        break;
      case Opcode::iota:
        steps_fit();
        break;
      case Opcode::affine_select:
        srcs_same_shape();
        if (!is_compare_op(in_.op0))
          broken("cmp=" + std::string(alu_op_name(in_.op0)) +
                 " is not a comparison (eq, ne, lt, le, gt, ge)");
        steps_fit();
        break;
      case Opcode::bn_stats:
        if (d.partition_count != in_.src[0].partition_count || d.free_elems() != 3)
          broken("dst is " + shape(d) + "; bn_stats writes [" + s(in_.src[0].partition_count) +
                 ",3] (count, mean, M2 per src partition)");
        break;
      case Opcode::all_reduce:
      case Opcode::all_gather:
      case Opcode::reduce_scatter:
      case Opcode::barrier:
      case Opcode::all_to_all:
      case Opcode::permute:
        collective();
        break;
      case Opcode::bn_aggr: {
        const uint64_t c = in_.src[0].free_elems();
        if (c % 3 != 0)
          broken("src holds " + s(c) + " elements per partition; bn_aggr needs a multiple of 3");
        if (d.partition_count != in_.src[0].partition_count || d.free_elems() != 2)
          broken("dst is " + shape(d) + "; bn_aggr writes [" + s(in_.src[0].partition_count) +
                 ",2] (mean, variance per src partition)");
        break;
      }
    }
  }

  // Collectives: a group of ascending ranks; all_reduce keeps the element count,
  // all_gather multiplies it by the group size, reduce_scatter divides it.
  void collective() {
    if (in_.group.empty()) broken("group lists no rank");
    if (in_.group.size() > kMaxGroup) broken("group lists more than " + s(kMaxGroup) + " ranks");
    for (size_t i = 1; i < in_.group.size(); ++i)
      if (in_.group[i] <= in_.group[i - 1])
        broken("group ranks must be ascending and distinct (" + s(in_.group[i]) + " after " +
               s(in_.group[i - 1]) + ")");
    if (in_.group.back() == kNoPeer)
      broken("group rank " + s(kNoPeer) + " is the no-peer mark ('-'), not a rank");
    if (in_.op == Opcode::barrier) return;
    const AccessPattern &d = in_.dst, &sr = in_.src[0];
    for (const auto* x : {&d, &sr})
      if (x->dtype != DType::fp32 && x->dtype != DType::bf16)
        broken(std::string(x == &d ? "dst" : "src") + " dtype " +
               std::string(dtype_name(x->dtype)) + " is not a collective dtype (fp32, bf16)");
    if (d.dtype != sr.dtype)
      broken("dst is " + std::string(dtype_name(d.dtype)) + " but src is " +
             std::string(dtype_name(sr.dtype)) + "; a collective does not cast");
    const uint64_t g = in_.group.size(), ne = sr.elems(), nd = d.elems();
    if (in_.op == Opcode::all_reduce && nd != ne)
      broken("dst has " + s(nd) + " elements but src has " + s(ne) +
             "; all_reduce keeps the count");
    if (in_.op == Opcode::all_gather && nd != g * ne)
      broken("dst has " + s(nd) + " elements; all_gather over " + s(g) + " ranks of " + s(ne) +
             " needs " + s(g * ne));
    if (in_.op == Opcode::reduce_scatter && ne != g * nd)
      broken("src has " + s(ne) + " elements; reduce_scatter over " + s(g) + " ranks into " +
             s(nd) + " needs " + s(g * nd));
    if ((in_.op == Opcode::all_to_all || in_.op == Opcode::permute) && nd != ne)
      broken("dst has " + s(nd) + " elements but src has " + s(ne) + "; " +
             std::string(opcode_name(in_.op)) + " keeps the count");
    if (in_.op == Opcode::all_to_all && ne % g != 0)
      broken("src has " + s(ne) + " elements; all_to_all over " + s(g) +
             " ranks needs a multiple of " + s(g) + " (one block per rank)");
    if (in_.op == Opcode::permute) {
      if (in_.peers.size() != g)
        broken("peers lists " + s(in_.peers.size()) + " ranks; permute needs one per group rank (" +
               s(g) + ", '-' for one that sends nothing)");
      // A partial permutation: each real entry a group rank, none named twice (a
      // rank receives from at most one).
      std::vector<uint32_t> real;
      for (size_t i = 0; i < g; ++i) {
        const uint32_t r = in_.peers[i];
        if (r == kNoPeer) continue;
        if (!std::binary_search(in_.group.begin(), in_.group.end(), r))
          broken("peers entry " + s(i) + " is rank " + s(r) + ", not in the group");
        real.push_back(r);
      }
      std::sort(real.begin(), real.end());
      const auto dup = std::adjacent_find(real.begin(), real.end());
      if (dup != real.end())
        broken("peers name rank " + s(*dup) +
               " twice; a rank receives from at most one (peers must be injective)");
    }
  }

  void matmul() {
    const AccessPattern &d = in_.dst, &st = in_.src[0], &mv = in_.src[1];
    if (d.dtype != DType::fp32)
      broken("dst dtype is " + std::string(dtype_name(d.dtype)) +
             "; matmul writes fp32 (PSUM accumulates in fp32)");
    for (const auto* x : {&st, &mv}) {
      if (!is_float(x->dtype))
        broken(std::string(x == &st ? "stationary" : "moving") + " dtype " +
               std::string(dtype_name(x->dtype)) +
               " is not a matmul input (fp32, bf16, fp16, fp8e4m3, fp8e5m2)");
    }
    if (is_fp8(st.dtype) != is_fp8(mv.dtype))
      broken("stationary is " + std::string(dtype_name(st.dtype)) + " and moving is " +
             std::string(dtype_name(mv.dtype)) + "; matmul inputs are both fp8 or neither");
    const uint64_t P = st.partition_count;
    if (mv.partition_count != P)
      broken("stationary has K=" + s(P) + " partitions but moving has " + s(mv.partition_count));
    if (P > lim_.matmul_max_k) broken("K=" + s(P) + " exceeds " + s(lim_.matmul_max_k));
    if (in_.double_row) {
      if (!lim_.matmul_double_row)
        broken(
            "double_row=1 needs a tensor engine with fp8 double-row mode "
            "(core.tensor.fp8_double_row)");
      if (!is_fp8(st.dtype)) broken("double_row=1 is for fp8 inputs only");
      if (st.free_elems() % 2 || mv.free_elems() % 2)
        broken(
            "double_row=1 needs an even number of stationary and moving free elements "
            "(two K halves); they are " +
            s(st.free_elems()) + " and " + s(mv.free_elems()));
    }
    const MatmulDims md = matmul_dims(in_);
    const uint64_t M = md.M, N = md.N;
    if (M > lim_.matmul_max_m)
      broken("M=" + s(M) + " (stationary free elements) exceeds " + s(lim_.matmul_max_m));
    if (N > lim_.matmul_max_n)
      broken("N=" + s(N) + " (moving free elements) exceeds " + s(lim_.matmul_max_n));
    if (d.partition_count != M || d.free_elems() != N)
      broken("dst is " + shape(d) + " but stationary^T @ moving is [M,N]=[" + s(M) + "," + s(N) +
             "]");
    const uint64_t lo = static_cast<uint64_t>(d.min_byte());
    const uint64_t hi = static_cast<uint64_t>(d.end_byte());
    if (lim_.psum_bank_bytes != 0 && lo / lim_.psum_bank_bytes != (hi - 1) / lim_.psum_bank_bytes)
      broken("dst bytes " + s(lo) + ".." + s(hi) + " cross a " + s(lim_.psum_bank_bytes) +
             "-byte PSUM bank boundary");
  }

  const Instruction& in_;
  Engine e_;
  const Limits& lim_;
  uint32_t nsem_;
  std::vector<Operand> ops_;
};

std::string where(const Instruction& in) {
  const std::string op(opcode_name(in.op));
  if (in.line == 0) return "(" + op + ")";
  return "(line " + std::to_string(in.line) + ", " + op + ")";
}

}  // namespace

void validate_instruction(const Instruction& in, Engine e, const Limits& lim,
                          uint32_t num_semaphores) {
  try {
    Checker(in, e, lim, num_semaphores).run();
  } catch (const Broken& b) {
    throw ValidationError(std::string(engine_name(e)) + " engine " + where(in) + ": " + b.msg);
  }
}

// "[2,3] fp32 (24 bytes)"; a size past 2^64 reads "more than 2^64 bytes".
static std::string shape_text(const TensorDecl& t) {
  std::string r = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) r += (i ? "," : "") + s(t.shape[i]);
  const uint64_t b = t.bytes();
  return r + "] " + std::string(dtype_name(t.dtype)) + " (" +
         (b == UINT64_MAX ? std::string("more than 2^64") : s(b)) + " bytes)";
}

void validate(const Program& p, const Limits& lim) {
  auto fail = [](const std::string& m) { throw ValidationError(m); };
  if (p.num_semaphores > lim.max_semaphores)
    fail("program declares " + s(p.num_semaphores) + " semaphores; the core has " +
         s(lim.max_semaphores));
  if (!is_identifier(p.name)) fail("program name '" + p.name + "' is not an identifier");

  std::set<std::string_view> names;
  for (const auto& t : p.tensors) {
    const std::string tn = "tensor '" + t.name + "': ";
    if (!is_identifier(t.name)) fail(tn + "the name is not an identifier");
    if (!names.insert(t.name).second) fail(tn + "declared twice");
    if (static_cast<int>(t.dtype) >= kNumDTypes) fail(tn + "bad dtype");
    if (static_cast<int>(t.role) > 3) fail(tn + "bad role");
    for (int64_t d : t.shape)
      if (d < 0) fail(tn + "negative dimension " + s(d));
    uint64_t end;
    if (__builtin_add_overflow(t.hbm_offset, t.bytes(), &end)) end = UINT64_MAX;
    if (end > kMaxHbmBytes)
      fail(tn + shape_text(t) + " at hbm byte " + s(t.hbm_offset) + " ends past the " +
           s(kMaxHbmBytes) + " bytes (1 PiB) of the largest hbm the simulator models");
    if (lim.hbm_bytes != 0 && end > lim.hbm_bytes)
      fail(tn + "ends at hbm byte " + s(end) + ", past the " + s(lim.hbm_bytes) + " bytes of hbm");
  }
  for (const auto& [name, bytes] : p.constants) {
    const TensorDecl* t = p.find_tensor(name);
    if (!t) fail("constant data for '" + name + "' names no declared tensor");
    if (bytes.size() != t->bytes())
      fail("constant data for '" + name + "' has " + s(uint64_t{bytes.size()}) +
           " bytes; the tensor needs " + s(t->bytes()));
  }

  std::set<std::tuple<int, int, int>> seen;
  for (const auto& q : p.queues) {
    if (static_cast<int>(q.engine) >= kNumEngines) fail("queue with a bad engine");
    const std::string qn = "queue " + q.label();
    if (q.engine == Engine::dma) {
      if (q.dma_engine >= lim.dma_engines)
        fail(qn + ": dma engine " + s(uint32_t{q.dma_engine}) + " >= " + s(lim.dma_engines) +
             " dma engines");
      if (q.dma_queue >= lim.dma_queues)
        fail(qn + ": dma queue " + s(uint32_t{q.dma_queue}) + " >= " + s(lim.dma_queues) +
             " queues per dma engine");
    } else if (q.dma_engine != 0 || q.dma_queue != 0) {
      fail(qn + ": dma engine/queue ids set on a non-dma queue");
    }
    if (!seen.emplace(int(q.engine), q.dma_engine, q.dma_queue).second)
      fail(qn + ": appears twice in the program");
    for (size_t i = 0; i < q.instrs.size(); ++i) {
      const Instruction& in = q.instrs[i];
      try {
        Checker(in, q.engine, lim, p.num_semaphores).run();
      } catch (const Broken& b) {
        fail(qn + ", instruction " + std::to_string(i) + " " + where(in) + ": " + b.msg);
      }
    }
  }
}

}  // namespace trnsim::isa
