#include "compiler/ir/tensor.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "compiler/ir/error.h"

namespace trnsim::ir {
namespace {

void check_shape(const Shape& s) {
  for (int64_t d : s)
    if (d < 0) throw CompileError("tensor shape " + shape_str(s) + " has a negative dim");
}

// A valid shape, and as many values as it has elements.
void check_values(const Shape& shape, size_t count) {
  check_shape(shape);
  if (static_cast<int64_t>(count) != num_elements(shape))
    throw CompileError("tensor " + shape_str(shape) + " needs " +
                       std::to_string(num_elements(shape)) + " values, got " +
                       std::to_string(count));
}

int64_t wrap_int(ElemType t, int64_t v) {
  switch (t) {
    case ElemType::int32:
      return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case ElemType::int16:
      return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(v)));
    case ElemType::int8:
      return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v)));
    case ElemType::uint32:
      return static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffffffu);
    case ElemType::uint16:
      return static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffu);
    case ElemType::uint8:
      return static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffu);
    case ElemType::boolean:
      return v != 0;
    default:
      return v;
  }
}

// Float to integer as C truncation, with NaN -> 0 and saturation at the int64 range
// (the narrow types then wrap in normalize()).
int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// double -> float rounding to odd: truncate, then set the last bit when inexact. A
// narrow float type rounded from that float gets what rounding the double directly
// would give (no double rounding), since float keeps more than two extra bits.
float to_float_odd(double d) {
  if (std::isnan(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  if (static_cast<double>(f) != d) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits |= 1u;
    std::memcpy(&f, &bits, 4);
  }
  return f;
}

}  // namespace

Tensor::Tensor(ElemType elem, Shape shape) : elem_(elem), shape_(std::move(shape)) {
  check_shape(shape_);
  int64_t n = num_elements(shape_);
  if (elem_ == ElemType::fp64) {
    f_.clear();
    d_.assign(n, 0.0);
  } else if (is_float(elem_)) {
    f_.assign(n, 0.0f);
  } else {
    f_.clear();
    i_.assign(n, 0);
  }
}

Tensor Tensor::from_floats(Shape shape, std::vector<float> values, ElemType elem) {
  if (!is_float(elem))
    throw CompileError("Tensor::from_floats: " + std::string(elem_type_name(elem)) +
                       " is not a floating type");
  Tensor t;
  check_values(shape, values.size());
  t.elem_ = elem;
  t.shape_ = std::move(shape);
  if (elem == ElemType::fp64) {
    t.f_.clear();
    t.d_.assign(values.begin(), values.end());
    return t;
  }
  t.f_ = std::move(values);
  t.normalize();
  return t;
}

Tensor Tensor::from_doubles(Shape shape, std::vector<double> values) {
  Tensor t;
  check_values(shape, values.size());
  t.elem_ = ElemType::fp64;
  t.shape_ = std::move(shape);
  t.f_.clear();
  t.d_ = std::move(values);
  return t;
}

Tensor Tensor::from_ints(Shape shape, std::vector<int64_t> values, ElemType elem) {
  if (is_float(elem))
    throw CompileError("Tensor::from_ints: " + std::string(elem_type_name(elem)) +
                       " is a floating type");
  Tensor t;
  check_values(shape, values.size());
  t.elem_ = elem;
  t.shape_ = std::move(shape);
  t.f_.clear();
  t.i_ = std::move(values);
  t.normalize();
  return t;
}

std::vector<float>& Tensor::floats() {
  if (holds_doubles())
    throw UnsupportedError(
        "fp64 data is not supported here (this computation is float-only; running it in "
        "float would lose fp64 precision)");
  if (!holds_floats())
    throw CompileError("tensor of " + std::string(elem_type_name(elem_)) + " has no float data");
  return f_;
}
const std::vector<float>& Tensor::floats() const {
  return const_cast<Tensor*>(this)->floats();
}

std::vector<double>& Tensor::doubles() {
  if (!holds_doubles())
    throw CompileError("tensor of " + std::string(elem_type_name(elem_)) + " has no fp64 data");
  return d_;
}
const std::vector<double>& Tensor::doubles() const {
  return const_cast<Tensor*>(this)->doubles();
}

std::vector<int64_t>& Tensor::ints() {
  if (holds_floats())
    throw CompileError("tensor of " + std::string(elem_type_name(elem_)) + " has no integer data");
  return i_;
}
const std::vector<int64_t>& Tensor::ints() const {
  return const_cast<Tensor*>(this)->ints();
}

std::vector<int64_t> Tensor::to_int64s() const {
  if (!holds_floats()) return i_;
  if (holds_doubles()) {
    std::vector<int64_t> r(d_.size());
    for (size_t k = 0; k < d_.size(); ++k) r[k] = float_to_int(d_[k]);
    return r;
  }
  std::vector<int64_t> r(f_.size());
  for (size_t k = 0; k < f_.size(); ++k) r[k] = float_to_int(f_[k]);
  return r;
}

Tensor Tensor::reshaped(Shape shape) const {
  check_shape(shape);
  if (num_elements(shape) != numel())
    throw CompileError("cannot reshape " + type().str() + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::cast(ElemType to) const {
  Tensor t;
  t.elem_ = to;
  t.shape_ = shape_;
  t.f_.clear();
  if (to == ElemType::fp64) {
    if (holds_doubles())
      t.d_ = d_;
    else if (holds_floats())
      t.d_.assign(f_.begin(), f_.end());
    else
      t.d_.assign(i_.begin(), i_.end());
    return t;
  }
  if (is_float(to)) {
    if (holds_doubles()) {
      t.f_.resize(d_.size());
      // fp32 rounds once to nearest; narrower types round from an odd-rounded float.
      for (size_t k = 0; k < d_.size(); ++k)
        t.f_[k] = to == ElemType::fp32 ? static_cast<float>(d_[k]) : to_float_odd(d_[k]);
    } else if (holds_floats()) {
      t.f_ = f_;
    } else {
      t.f_.resize(i_.size());
      for (size_t k = 0; k < i_.size(); ++k) t.f_[k] = static_cast<float>(i_[k]);
    }
  } else {
    if (holds_doubles()) {
      t.i_.resize(d_.size());
      for (size_t k = 0; k < d_.size(); ++k)
        t.i_[k] = to == ElemType::boolean ? (d_[k] != 0.0) : float_to_int(d_[k]);
    } else if (holds_floats()) {
      t.i_.resize(f_.size());
      for (size_t k = 0; k < f_.size(); ++k)
        t.i_[k] = to == ElemType::boolean ? (f_[k] != 0.0f) : float_to_int(f_[k]);
    } else {
      t.i_ = i_;
    }
  }
  t.normalize();
  return t;
}

void Tensor::normalize() {
  if (holds_floats()) {
    if (elem_ == ElemType::fp32 || elem_ == ElemType::fp64) return;
    isa::DType d = *to_isa(elem_);
    for (float& v : f_) v = isa::round_to(d, v);
  } else {
    if (elem_ == ElemType::int64) return;
    for (int64_t& v : i_) v = wrap_int(elem_, v);
  }
}

std::string Tensor::str(int64_t max_elems) const {
  std::string r = type().str() + " [";
  int64_t n = numel();
  for (int64_t k = 0; k < n && k < max_elems; ++k) {
    if (k) r += ", ";
    if (holds_doubles()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d_[k]);
      r += buf;
    } else if (holds_floats()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", f_[k]);
      r += buf;
    } else {
      r += std::to_string(i_[k]);
    }
  }
  if (n > max_elems) r += ", ...";
  return r + "]";
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t k = s.size(); k-- > 0;) {
    st[k] = acc;
    acc *= s[k];
  }
  return st;
}

}  // namespace trnsim::ir
