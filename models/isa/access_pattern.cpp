#include "models/isa/access_pattern.h"

#include <algorithm>
#include <limits>

namespace trnsim::isa {

namespace {

int ndims_of(const AccessPattern& ap) {
  return std::min<int>(ap.ndims, kMaxDims);
}

bool empty(const AccessPattern& ap) {
  if (ap.partition_count == 0) return true;
  for (int i = 0; i < ndims_of(ap); ++i)
    if (ap.dims[i].size == 0) return true;
  return false;
}

int64_t clamp64(__int128 v) {
  constexpr __int128 lo = std::numeric_limits<int64_t>::min();
  constexpr __int128 hi = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::clamp(v, lo, hi));
}

// Lowest and highest element-start byte relative to `offset`, in 128-bit so that
// absurd strides from a corrupt program cannot overflow.
void span(const AccessPattern& ap, __int128& lo, __int128& hi) {
  const __int128 es = static_cast<__int128>(dtype_size(ap.dtype));
  lo = hi = 0;
  auto add = [&](int64_t stride, uint64_t size) {
    const __int128 d = static_cast<__int128>(stride) * static_cast<__int128>(size - 1) * es;
    (d < 0 ? lo : hi) += d;
  };
  for (int i = 0; i < ndims_of(ap); ++i) add(ap.dims[i].stride, ap.dims[i].size);
  if (ap.space == MemSpace::hbm) add(ap.partition_stride, ap.partition_count);
}

// The same span in 64-bit arithmetic, the common case; false when anything
// overflows (then the 128-bit span decides).
bool span64(const AccessPattern& ap, int64_t& lo, int64_t& hi) {
  const int64_t es = static_cast<int64_t>(dtype_size(ap.dtype));
  lo = hi = 0;
  auto add = [&](int64_t stride, uint64_t size) {
    int64_t d;
    if (__builtin_mul_overflow(stride, static_cast<int64_t>(size - 1), &d) ||
        __builtin_mul_overflow(d, es, &d))
      return false;
    int64_t& acc = d < 0 ? lo : hi;
    return !__builtin_add_overflow(acc, d, &acc);
  };
  for (int i = 0; i < ndims_of(ap); ++i)
    if (!add(ap.dims[i].stride, ap.dims[i].size)) return false;
  if (ap.space == MemSpace::hbm && !add(ap.partition_stride, ap.partition_count)) return false;
  return true;
}

// offset + lo and offset + hi + element size without overflow: the exact results
// the 128-bit path would clamp to the same values.
bool range64(const AccessPattern& ap, int64_t& min, int64_t& end) {
  int64_t lo, hi;
  if (ap.offset > uint64_t(std::numeric_limits<int64_t>::max()) || !span64(ap, lo, hi))
    return false;
  const int64_t off = static_cast<int64_t>(ap.offset);
  return !__builtin_add_overflow(off, lo, &min) && !__builtin_add_overflow(off, hi, &end) &&
         !__builtin_add_overflow(end, static_cast<int64_t>(dtype_size(ap.dtype)), &end);
}

}  // namespace

std::string_view mem_space_name(MemSpace s) {
  switch (s) {
    case MemSpace::hbm:
      return "hbm";
    case MemSpace::sbuf:
      return "sbuf";
    case MemSpace::psum:
      return "psum";
  }
  return "?";
}

uint64_t AccessPattern::free_elems() const {
  uint64_t n = 1;
  for (int i = 0; i < ndims_of(*this); ++i)
    if (__builtin_mul_overflow(n, uint64_t{dims[i].size}, &n)) return UINT64_MAX;
  return n;
}

int64_t AccessPattern::min_byte() const {
  if (empty(*this)) return clamp64(offset);
  if (int64_t a, b; range64(*this, a, b)) return a;
  __int128 lo, hi;
  span(*this, lo, hi);
  return clamp64(static_cast<__int128>(offset) + lo);
}

int64_t AccessPattern::end_byte() const {
  if (empty(*this)) return clamp64(offset);
  if (int64_t a, b; range64(*this, a, b)) return b;
  __int128 lo, hi;
  span(*this, lo, hi);
  return clamp64(static_cast<__int128>(offset) + hi + dtype_size(dtype));
}

void AccessPattern::byte_range(int64_t& min, int64_t& end) const {
  if (empty(*this)) {
    min = end = clamp64(offset);
    return;
  }
  if (range64(*this, min, end)) return;
  __int128 lo, hi;
  span(*this, lo, hi);
  min = clamp64(static_cast<__int128>(offset) + lo);
  end = clamp64(static_cast<__int128>(offset) + hi + dtype_size(dtype));
}

int64_t AccessPattern::free_min_byte() const {
  const int64_t es = static_cast<int64_t>(dtype_size(dtype));
  int64_t lo = 0;
  for (int i = 0; i < ndims_of(*this); ++i)
    if (dims[i].stride < 0 && dims[i].size > 0)
      lo += dims[i].stride * static_cast<int64_t>(dims[i].size - 1) * es;
  return lo;
}

int AccessPattern::innermost_dim() const {
  for (int i = ndims_of(*this) - 1; i >= 0; --i)
    if (dims[i].size > 1) return i;
  return -1;
}

bool AccessPattern::free_contiguous() const {
  // Walk from the innermost dim; each dim of size > 1 must step over exactly the
  // elements covered by the dims inside it. Size-1 dims never move, so any stride.
  int64_t expect = 1;
  for (int i = ndims_of(*this) - 1; i >= 0; --i) {
    if (dims[i].size == 1) continue;
    if (dims[i].stride != expect) return false;
    expect *= dims[i].size;
  }
  return true;
}

bool partition_start_ok(uint32_t start, uint32_t count) {
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return start % 32 == 0;
}

AccessPattern ap_2d(MemSpace s, DType t, uint32_t pstart, uint32_t parts, uint64_t offset,
                    uint32_t n) {
  AccessPattern ap;
  ap.space = s;
  ap.dtype = t;
  ap.partition_count = parts;
  ap.offset = offset;
  ap.ndims = 1;
  ap.dims[0] = {1, n};
  if (s == MemSpace::hbm) {
    ap.partition_stride = n;  // rows back to back; HBM has no partition start
  } else {
    ap.partition_start = pstart;
  }
  return ap;
}

std::string to_string(const AccessPattern& ap) {
  std::string s(mem_space_name(ap.space));
  s += '[';
  if (ap.space == MemSpace::hbm) {
    s += std::to_string(ap.partition_count) + "x" + std::to_string(ap.partition_stride);
  } else {
    s += std::to_string(ap.partition_start) + ":" +
         std::to_string(uint64_t{ap.partition_start} + ap.partition_count);
  }
  s += ", " + std::to_string(ap.offset) + ", ";
  s += dtype_name(ap.dtype);
  for (int i = 0; i < ndims_of(ap); ++i)
    s += ", [" + std::to_string(ap.dims[i].stride) + "," + std::to_string(ap.dims[i].size) + "]";
  s += ']';
  return s;
}

}  // namespace trnsim::isa
