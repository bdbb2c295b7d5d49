#include "compiler/ir/types.h"

#include "compiler/ir/error.h"

#include <array>

namespace trnsim::ir {
namespace {

struct TypeInfo {
  ElemType t;
  std::string_view name;
};
constexpr std::array<TypeInfo, 14> kTypes{{{ElemType::fp32, "fp32"},
                                           {ElemType::fp16, "fp16"},
                                           {ElemType::bf16, "bf16"},
                                           {ElemType::fp8e4m3, "fp8e4m3"},
                                           {ElemType::fp8e5m2, "fp8e5m2"},
                                           {ElemType::int64, "int64"},
                                           {ElemType::int32, "int32"},
                                           {ElemType::int16, "int16"},
                                           {ElemType::int8, "int8"},
                                           {ElemType::uint32, "uint32"},
                                           {ElemType::uint16, "uint16"},
                                           {ElemType::uint8, "uint8"},
                                           {ElemType::boolean, "bool"},
                                           {ElemType::fp64, "fp64"}}};

}  // namespace

std::string_view elem_type_name(ElemType t) {
  for (const auto& e : kTypes)
    if (e.t == t) return e.name;
  return "?";
}

std::optional<ElemType> parse_elem_type(std::string_view s) {
  for (const auto& e : kTypes)
    if (e.name == s) return e.t;
  return std::nullopt;
}

bool is_float(ElemType t) {
  switch (t) {
    case ElemType::fp32:
    case ElemType::fp16:
    case ElemType::bf16:
    case ElemType::fp8e4m3:
    case ElemType::fp8e5m2:
    case ElemType::fp64:
      return true;
    default:
      return false;
  }
}

bool is_integer(ElemType t) {
  return !is_float(t) && t != ElemType::boolean;
}

std::optional<isa::DType> to_isa(ElemType t) {
  switch (t) {
    case ElemType::fp32:
      return isa::DType::fp32;
    case ElemType::fp16:
      return isa::DType::fp16;
    case ElemType::bf16:
      return isa::DType::bf16;
    case ElemType::fp8e4m3:
      return isa::DType::fp8e4m3;
    case ElemType::fp8e5m2:
      return isa::DType::fp8e5m2;
    case ElemType::int32:
      return isa::DType::int32;
    case ElemType::uint8:
      return isa::DType::uint8;
    default:
      return std::nullopt;
  }
}

ElemType from_isa(isa::DType t) {
  switch (t) {
    case isa::DType::fp32:
      return ElemType::fp32;
    case isa::DType::bf16:
      return ElemType::bf16;
    case isa::DType::fp16:
      return ElemType::fp16;
    case isa::DType::fp8e4m3:
      return ElemType::fp8e4m3;
    case isa::DType::fp8e5m2:
      return ElemType::fp8e5m2;
    case isa::DType::int32:
      return ElemType::int32;
    case isa::DType::uint8:
      return ElemType::uint8;
  }
  return ElemType::fp32;
}

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      throw CompileError("shape " + shape_str(s) + " has more elements than int64 can count");
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::string TensorType::str() const {
  return std::string(elem_type_name(elem)) + shape_str(shape);
}

}  // namespace trnsim::ir
