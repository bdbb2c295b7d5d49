// Host-side tensors and .npy files. A HostTensor holds raw bytes in its dtype,
// row-major. .npy I/O supports float32, float16, int32, uint8 and (as float32 on
// disk) bf16/fp8: numpy has no bf16, so those are widened when written and
// narrowed (round to nearest even) when read into a bf16/fp8 tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/isa/dtype.h"

namespace trnsim::runtime {

struct HostTensor {
  std::vector<int64_t> shape;
  isa::DType dtype = isa::DType::fp32;
  std::vector<uint8_t> data;  // elems() * dtype_size(dtype) bytes

  uint64_t elems() const;
  std::vector<float> to_float() const;
  static HostTensor from_float(const std::vector<int64_t>& shape, isa::DType t,
                               const std::vector<float>& values);
  HostTensor cast(isa::DType t) const;
};

class NpyError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

HostTensor read_npy(const std::string& path);  // errors name the file and what is wrong
void write_npy(const std::string& path, const HostTensor& t);
// The numpy dtype write_npy writes a tensor of `t` as ("float32" for bf16 and fp8:
// numpy has no such types, their values are stored exactly as fp32).
std::string npy_dtype(isa::DType t);
std::string shape_string(const std::vector<int64_t>& shape);  // "[2,3]"

// Writes what `body` streams (or `bytes`) to `path`, created or truncated, then
// flushes and closes it: a failure to open, write or close (a full disk may show
// only at the close) throws std::runtime_error naming the file and the reason.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& body);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace trnsim::runtime
