// Tensor: a dense host tensor, used for constants in the IR and for every value the
// reference interpreter computes.
//
// Storage: row-major, contiguous. Floating element types (fp32, fp16, bf16, fp8)
// keep their values as `float` in floats(); fp64 keeps them as `double` in
// doubles() (only fp64 tensors pay for double storage); every other type (integers
// and bool) keeps them as `int64_t` in ints(). floats() of an fp64 tensor throws
// ir::UnsupportedError, so a kernel written for float refuses fp64 by name instead
// of computing it in float. A narrow type's values are always values of
// that type: normalize() rounds fp16/bf16/fp8 (to nearest even, via the ISA's
// conversions), wraps narrow integers two's-complement style and maps bool to 0/1.
// Builders and the interpreter call it on every result, so kernels can compute in
// float/int64 and ignore the narrow types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/types.h"

namespace trnsim::ir {

class Tensor {
 public:
  Tensor() = default;  // an fp32 scalar 0
  // Zero-filled tensor of the given type.
  Tensor(ElemType elem, Shape shape);
  explicit Tensor(const TensorType& t) : Tensor(t.elem, t.shape) {}

  // Build from values (count must match the shape); the values are normalized.
  static Tensor from_floats(Shape shape, std::vector<float> values, ElemType elem = ElemType::fp32);
  static Tensor from_ints(Shape shape, std::vector<int64_t> values,
                          ElemType elem = ElemType::int64);
  static Tensor from_doubles(Shape shape, std::vector<double> values);  // fp64
  static Tensor scalar(float v) { return from_floats({}, {v}); }
  static Tensor scalar_int(int64_t v) { return from_ints({}, {v}); }

  ElemType elem() const { return elem_; }
  const Shape& shape() const { return shape_; }
  TensorType type() const { return {elem_, shape_}; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const {
    return static_cast<int64_t>(holds_doubles()  ? d_.size()
                                : holds_floats() ? f_.size()
                                                 : i_.size());
  }
  // Any floating type, fp64 included (whose data is in doubles(), not floats()).
  bool holds_floats() const { return is_float(elem_); }
  bool holds_doubles() const { return elem_ == ElemType::fp64; }

  // Storage access. Asking for the wrong storage kind throws CompileError.
  std::vector<float>& floats();
  const std::vector<float>& floats() const;
  std::vector<int64_t>& ints();
  const std::vector<int64_t>& ints() const;
  std::vector<double>& doubles();
  const std::vector<double>& doubles() const;

  // Element access through double, whatever the storage (exact for float, double
  // and integers up to 2^53).
  double at(int64_t flat) const {
    return holds_doubles() ? d_[flat] : holds_floats() ? f_[flat] : static_cast<double>(i_[flat]);
  }

  // Values converted to int64 (floats truncated): for shape-like constants.
  std::vector<int64_t> to_int64s() const;

  // Same data, another shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Element-type conversion with ONNX Cast semantics (float->int truncates toward
  // zero, NaN->0, anything->bool is `!= 0`).
  Tensor cast(ElemType to) const;

  // Bring every value into the element type's range (see the file comment).
  void normalize();

  // "fp32[2,2] [1, 2, 3, 4]", eliding after `max_elems` values.
  std::string str(int64_t max_elems = 16) const;

  bool operator==(const Tensor&) const = default;

 private:
  ElemType elem_ = ElemType::fp32;
  Shape shape_;
  std::vector<float> f_{0.0f};
  std::vector<int64_t> i_;
  std::vector<double> d_;
};

// Row-major strides (in elements) of a shape.
std::vector<int64_t> strides_of(const Shape& s);

}  // namespace trnsim::ir
