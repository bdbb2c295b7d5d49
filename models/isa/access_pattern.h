// Access patterns: how an instruction operand addresses memory.
// On-chip memories (SBUF, PSUM) are 2-D: a contiguous range of partitions, and in
// each partition the same byte offset and free-axis pattern. HBM is linear; an HBM
// pattern has `partition_count` rows `partition_stride` elements apart (stride 0
// broadcasts one row). Free-axis dims are listed outermost first, stride and size
// in elements of `dtype`. Iteration order is row-major: partition, dims[0], ...
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "models/isa/dtype.h"

namespace trnsim::isa {

enum class MemSpace : uint8_t { hbm, sbuf, psum };
std::string_view mem_space_name(MemSpace s);

struct Dim {
  int64_t stride = 1;  // elements
  uint32_t size = 1;   // elements
  bool operator==(const Dim&) const = default;
};

inline constexpr int kMaxDims = 4;

struct AccessPattern {
  MemSpace space = MemSpace::sbuf;
  DType dtype = DType::fp32;
  uint32_t partition_start = 0;  // sbuf/psum: first partition; hbm: 0
  uint32_t partition_count = 1;  // partitions (hbm: rows)
  int64_t partition_stride = 0;  // hbm only: elements between rows
  uint64_t offset = 0;           // bytes: in each partition, or from the program's HBM base
  uint8_t ndims = 0;
  std::array<Dim, kMaxDims> dims{};

  uint64_t free_elems() const;  // product of dims sizes (1 when ndims == 0)
  uint64_t elems() const { return free_elems() * partition_count; }
  uint64_t bytes() const { return elems() * dtype_size(dtype); }
  // Lowest and one-past-highest byte address touched, `offset` included: within a
  // partition for sbuf/psum; over all rows for hbm. Negative strides allowed.
  int64_t min_byte() const;
  int64_t end_byte() const;
  void byte_range(int64_t& min, int64_t& end) const;  // both in one pass over the dims
  // Lowest byte of the free pattern relative to the row start (<= 0 with negative
  // strides).
  int64_t free_min_byte() const;
  // True when the free pattern is one ascending contiguous run of free_elems()
  // elements (innermost stride 1 and each outer stride = inner size * stride; size-1
  // dims ignored). Then a row is [row start + free_min_byte, + free_elems*size).
  bool free_contiguous() const;
  // The innermost dim that actually steps (size > 1); -1 when none does.
  int innermost_dim() const;
  bool operator==(const AccessPattern&) const = default;
};

// The partition-start rule for on-chip patterns: more than 64 partitions start at 0,
// 33..64 at 0 or 64, 1..32 at 0, 32, 64 or 96.
bool partition_start_ok(uint32_t start, uint32_t count);

// Build a simple pattern: `parts` partitions from `pstart`, `n` contiguous elements.
AccessPattern ap_2d(MemSpace s, DType t, uint32_t pstart, uint32_t parts, uint64_t offset,
                    uint32_t n);

// Byte offsets (relative to the pattern's own offset, within one partition/row) of
// every free element in iteration order. Calls f(index, byte_offset).
template <class F>
void for_each_free(const AccessPattern& ap, F&& f) {
  const int64_t es = static_cast<int64_t>(dtype_size(ap.dtype));
  std::array<uint32_t, kMaxDims> size{1, 1, 1, 1};
  std::array<int64_t, kMaxDims> stride{0, 0, 0, 0};
  // Right-align dims so the loop nest is always 4 deep.
  const int pad = kMaxDims - ap.ndims;
  for (int i = 0; i < ap.ndims; ++i) {
    size[pad + i] = ap.dims[i].size;
    stride[pad + i] = ap.dims[i].stride * es;
  }
  uint64_t idx = 0;
  for (uint32_t a = 0; a < size[0]; ++a)
    for (uint32_t b = 0; b < size[1]; ++b)
      for (uint32_t c = 0; c < size[2]; ++c) {
        int64_t base = a * stride[0] + b * stride[1] + c * stride[2];
        for (uint32_t d = 0; d < size[3]; ++d) f(idx++, base + d * stride[3]);
      }
}

std::string to_string(const AccessPattern& ap);  // assembly syntax

}  // namespace trnsim::isa
