#include "models/isa/instruction.h"

#include <bit>
#include <cmath>

namespace trnsim::isa {

namespace {

constexpr std::array<std::string_view, kNumEngines> kEngineNames{"tensor", "vector", "scalar",
                                                                 "gpsimd", "sync",   "dma"};

constexpr std::array<std::string_view, kNumActFuncs> kActNames{
    "identity", "relu", "gelu",  "gelu_tanh",  "sigmoid", "tanh", "exp", "log",
    "silu",     "sqrt", "rsqrt", "reciprocal", "square",  "abs",  "erf", "softplus"};

constexpr std::array<std::string_view, kNumAluOps> kAluNames{
    "bypass", "add", "sub", "mul", "div", "max", "min", "pow", "eq", "ne", "lt", "le", "gt", "ge"};

constexpr uint32_t bit(Engine e) {
  return 1u << static_cast<unsigned>(e);
}
constexpr uint32_t kAll = (1u << kNumEngines) - 1;
constexpr uint32_t kT = bit(Engine::tensor), kV = bit(Engine::vector), kS = bit(Engine::scalar),
                   kG = bit(Engine::gpsimd), kD = bit(Engine::dma), kY = bit(Engine::sync);

// Indexed by Opcode; the order must match the enum (checked below).
constexpr std::array<OpcodeInfo, kNumOpcodes> kOpcodes{{
    {Opcode::nop, "nop", {}, 0, false, kAll},
    {Opcode::dma_copy, "dma_copy", {"src"}, 1, true, kD},
    {Opcode::matmul, "matmul", {"stationary", "moving"}, 2, true, kT},
    {Opcode::transpose, "transpose", {"src"}, 1, true, kT},
    {Opcode::activation, "activation", {"src"}, 1, true, kS},
    {Opcode::tensor_tensor, "tensor_tensor", {"in0", "in1"}, 2, true, kV | kG},
    {Opcode::tensor_scalar, "tensor_scalar", {"src"}, 1, true, kV | kG | kS},
    {Opcode::tensor_reduce, "tensor_reduce", {"src"}, 1, true, kV | kG},
    {Opcode::partition_reduce, "partition_reduce", {"src"}, 1, true, kG},
    {Opcode::partition_broadcast, "partition_broadcast", {"src"}, 1, true, kG},
    {Opcode::tensor_copy, "tensor_copy", {"src"}, 1, true, kV | kS | kG},
    {Opcode::memset, "memset", {}, 0, true, kV | kS | kG},
    {Opcode::iota, "iota", {}, 0, true, kG},
    {Opcode::affine_select, "affine_select", {"src"}, 1, true, kG},
    {Opcode::select, "select", {"pred", "on_true", "on_false"}, 3, true, kV | kG},
    {Opcode::bn_stats, "bn_stats", {"src"}, 1, true, kV},
    {Opcode::bn_aggr, "bn_aggr", {"src"}, 1, true, kV},
    {Opcode::all_reduce, "all_reduce", {"src"}, 1, true, kY},
    {Opcode::all_gather, "all_gather", {"src"}, 1, true, kY},
    {Opcode::reduce_scatter, "reduce_scatter", {"src"}, 1, true, kY},
    {Opcode::barrier, "barrier", {}, 0, false, kY},
    {Opcode::all_to_all, "all_to_all", {"src"}, 1, true, kY},
    {Opcode::permute, "permute", {"src"}, 1, true, kY},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kNumOpcodes; ++i)
    if (static_cast<int>(kOpcodes[i].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order());

template <size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, size_t i) {
  return i < N ? names[i] : std::string_view("?");
}

template <class E, size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

}  // namespace

std::string_view engine_name(Engine e) {
  return name_of(kEngineNames, static_cast<size_t>(e));
}
std::optional<Engine> parse_engine(std::string_view s) {
  return find_name<Engine>(kEngineNames, s);
}

std::string_view opcode_name(Opcode o) {
  const auto i = static_cast<size_t>(o);
  return i < kOpcodes.size() ? kOpcodes[i].name : std::string_view("?");
}
std::optional<Opcode> parse_opcode(std::string_view s) {
  for (const auto& info : kOpcodes)
    if (info.name == s) return info.op;
  return std::nullopt;
}

std::string_view act_func_name(ActFunc f) {
  return name_of(kActNames, static_cast<size_t>(f));
}
std::optional<ActFunc> parse_act_func(std::string_view s) {
  return find_name<ActFunc>(kActNames, s);
}
std::string_view alu_op_name(AluOp o) {
  return name_of(kAluNames, static_cast<size_t>(o));
}
std::optional<AluOp> parse_alu_op(std::string_view s) {
  return find_name<AluOp>(kAluNames, s);
}

const OpcodeInfo& opcode_info(Opcode o) {
  const auto i = static_cast<size_t>(o);
  return kOpcodes.at(i);
}

bool is_collective(Opcode o) {
  return o == Opcode::all_reduce || o == Opcode::all_gather || o == Opcode::reduce_scatter ||
         o == Opcode::barrier || o == Opcode::all_to_all || o == Opcode::permute;
}

bool engine_allows(Engine e, Opcode o) {
  const auto i = static_cast<size_t>(o);
  const auto ei = static_cast<unsigned>(e);
  return i < kOpcodes.size() && ei < kNumEngines && (kOpcodes[i].engines & (1u << ei)) != 0;
}

bool ScalarOperand::operator==(const ScalarOperand& o) const {
  if (is_ap != o.is_ap) return false;
  return is_ap ? ap == o.ap : same_float(imm, o.imm);
}

MatmulDims matmul_dims(const Instruction& in) {
  const uint64_t P = in.src[0].partition_count, fs = in.src[0].free_elems(),
                 fm = in.src[1].free_elems();
  if (in.double_row) return {2 * P, fs / 2, fm / 2};
  return {P, fs, fm};
}

bool Instruction::operator==(const Instruction& o) const {
  if (op != o.op || nsrc != o.nsrc || !(dst == o.dst)) return false;
  for (size_t i = 0; i < std::min<size_t>(nsrc, src.size()); ++i)
    if (!(src[i] == o.src[i])) return false;
  if (has_accum != o.has_accum || (has_accum && !(accum == o.accum))) return false;
  return func == o.func && op0 == o.op0 && op1 == o.op1 && accum_op == o.accum_op &&
         arg0 == o.arg0 && arg1 == o.arg1 && reverse0 == o.reverse0 && reverse1 == o.reverse1 &&
         accumulate == o.accumulate && double_row == o.double_row && axes == o.axes &&
         pstep == o.pstep && steps == o.steps && same_float(fill, o.fill) && spread == o.spread &&
         waits == o.waits && signals == o.signals && group == o.group && peers == o.peers;
}

}  // namespace trnsim::isa
