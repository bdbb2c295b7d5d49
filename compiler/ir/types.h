// Element types, shapes and tensor types of the compiler IR.
//
// ElemType covers what ONNX models feed the compiler plus the chip's narrow floats.
// Names follow the ISA's spelling (fp32, int32, ...). Types the chip has map to
// isa::DType via to_isa(); the others (int64 indices, bool masks, ...) exist only
// in the graph and are lowered away or computed on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/isa/dtype.h"

namespace trnsim::ir {

enum class ElemType : uint8_t {
  fp32,
  fp16,
  bf16,
  fp8e4m3,
  fp8e5m2,
  int64,
  int32,
  int16,
  int8,
  uint32,
  uint16,
  uint8,
  boolean,  // printed "bool"
  // ONNX DOUBLE: host-only (the chip has no fp64), held exactly as double.
  fp64,
};

std::string_view elem_type_name(ElemType t);
std::optional<ElemType> parse_elem_type(std::string_view s);
// Floating types are held as float in host tensors (fp64 as double), all others as
// int64_t.
bool is_float(ElemType t);
bool is_integer(ElemType t);  // signed or unsigned integers, not bool
std::optional<isa::DType> to_isa(ElemType t);
ElemType from_isa(isa::DType t);

// A static shape: every dim is known and >= 0. Rank 0 is a scalar.
using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);  // "[1,3,224,224]"

struct TensorType {
  ElemType elem = ElemType::fp32;
  Shape shape;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return num_elements(shape); }
  std::string str() const;  // "fp32[1,3,224,224]"
  bool operator==(const TensorType&) const = default;
};

}  // namespace trnsim::ir
