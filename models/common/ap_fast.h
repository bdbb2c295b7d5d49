// Inline versions of the access-pattern queries on the simulation's hot paths
// (every operand access asks them several times). They return exactly what the
// isa:: functions return; anything unusual (empty patterns, 64-bit overflow) is
// left to those.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "models/isa/access_pattern.h"
#include "models/isa/dtype.h"
#include "models/isa/instruction.h"

namespace trnsim::models::fast {

// isa::dtype_size without the call.
[[gnu::always_inline]] inline uint64_t elem_size(isa::DType t) {
  static const std::array<uint8_t, isa::kNumDTypes> sizes = [] {
    std::array<uint8_t, isa::kNumDTypes> s{};
    for (int i = 0; i < isa::kNumDTypes; ++i)
      s[i] = static_cast<uint8_t>(isa::dtype_size(static_cast<isa::DType>(i)));
    return s;
  }();
  const auto i = static_cast<size_t>(t);
  return i < sizes.size() ? sizes[i] : isa::dtype_size(t);
}

// ap.free_elems().
[[gnu::always_inline]] inline uint64_t free_elems(const isa::AccessPattern& ap) {
  if (ap.ndims > isa::kMaxDims) return ap.free_elems();
  uint64_t n = 1;
  for (int i = 0; i < ap.ndims; ++i)
    if (__builtin_mul_overflow(n, uint64_t{ap.dims[i].size}, &n)) return UINT64_MAX;
  return n;
}

// ap.bytes().
[[gnu::always_inline]] inline uint64_t bytes(const isa::AccessPattern& ap) {
  return free_elems(ap) * ap.partition_count * elem_size(ap.dtype);
}

// ap.innermost_dim().
[[gnu::always_inline]] inline int innermost_dim(const isa::AccessPattern& ap) {
  if (ap.ndims > isa::kMaxDims) return ap.innermost_dim();
  for (int i = ap.ndims - 1; i >= 0; --i)
    if (ap.dims[i].size > 1) return i;
  return -1;
}

// ap.free_contiguous().
[[gnu::always_inline]] inline bool free_contiguous(const isa::AccessPattern& ap) {
  if (ap.ndims > isa::kMaxDims) return ap.free_contiguous();
  int64_t expect = 1;
  for (int i = ap.ndims - 1; i >= 0; --i) {
    if (ap.dims[i].size == 1) continue;
    if (ap.dims[i].stride != expect) return false;
    expect *= ap.dims[i].size;
  }
  return true;
}

// ap.byte_range(min, end).
[[gnu::always_inline]] inline void byte_range(const isa::AccessPattern& ap, int64_t& min,
                                              int64_t& end) {
  const int64_t es = static_cast<int64_t>(elem_size(ap.dtype));
  bool ok = ap.ndims <= isa::kMaxDims && ap.partition_count > 0 &&
            ap.offset <= uint64_t(std::numeric_limits<int64_t>::max());
  int64_t lo = 0, hi = 0;
  auto add = [&](int64_t stride, uint32_t size) {
    int64_t d;
    if (size == 0 || __builtin_mul_overflow(stride, int64_t{size} - 1, &d) ||
        __builtin_mul_overflow(d, es, &d)) {
      ok = false;  // empty (size 0) or overflowing: the isa:: function decides
      return;
    }
    int64_t& acc = d < 0 ? lo : hi;
    if (__builtin_add_overflow(acc, d, &acc)) ok = false;
  };
  for (int i = 0; ok && i < ap.ndims; ++i) add(ap.dims[i].stride, ap.dims[i].size);
  if (ok && ap.space == isa::MemSpace::hbm) add(ap.partition_stride, ap.partition_count);
  const int64_t off = static_cast<int64_t>(ap.offset);
  if (ok && !__builtin_add_overflow(off, lo, &min) && !__builtin_add_overflow(off, hi, &end) &&
      !__builtin_add_overflow(end, es, &end))
    return;
  ap.byte_range(min, end);
}

// A queue's instructions are large and far apart in a big program; a sequencer that
// starts instruction `pc` asks for the next two ahead of time: the whole of pc + 2,
// and the waits/signals of pc + 1 (their pointers are in its now-cached body). No
// effect but on the host's caches.
// (GCC 12 at -O2 drops __builtin_prefetch here, so x86 gets the instruction itself.)
inline void prefetch(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}
inline void prefetch_ahead(const std::vector<isa::Instruction>& q, size_t pc) {
  if (pc + 2 < q.size()) {
    const char* p = reinterpret_cast<const char*>(&q[pc + 2]);
    for (size_t o = 0; o < sizeof(isa::Instruction); o += 64) prefetch(p + o);
  }
  if (pc + 1 < q.size()) {
    const isa::Instruction& n = q[pc + 1];
    if (!n.waits.empty()) prefetch(n.waits.data());
    if (!n.signals.empty()) prefetch(n.signals.data());
  }
}

}  // namespace trnsim::models::fast
