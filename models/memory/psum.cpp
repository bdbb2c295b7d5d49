#include "models/memory/psum.h"

#include <cstring>
#include <stdexcept>

#include "models/common/ap_fast.h"

namespace trnsim::models {

psum::psum(const sc_core::sc_module_name& name, const psum_params& p)
    : partitioned_memory(name, {isa::MemSpace::psum, p.partitions, p.partition_bytes, p.clock_hz,
                                p.port_elems_per_cycle}),
      params_(p) {}

void psum::hold(held_write w) {
  held_.push_back(std::move(w));
}

void psum::drain(size_t keep) {
  while (held_.size() > keep) {
    held_write w = std::move(held_.front());
    held_.pop_front();
    const uint8_t* d = w.data();
    std::string err;
    if (w.accumulate) {
      if (!accumulate(w.ap, d, err)) throw std::runtime_error(err);
    } else {
      scatter(w.ap, d);
    }
    if (w.done) w.done();
  }
}

namespace {

// out[i] += in[i] over n fp32 values, in blocks of a fixed 16 through local arrays:
// GCC's -O2 (cheap vectorisation only) vectorises them.
void add_row(uint8_t* __restrict out, const uint8_t* __restrict in, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float v[16], a[16];
    std::memcpy(v, out + i * 4, sizeof v);
    std::memcpy(a, in + i * 4, sizeof a);
    for (size_t k = 0; k < 16; ++k) v[k] += a[k];
    std::memcpy(out + i * 4, v, sizeof v);
  }
  for (; i < n; ++i) {
    float v, a;
    std::memcpy(&v, out + i * 4, 4);
    std::memcpy(&a, in + i * 4, 4);
    v += a;
    std::memcpy(out + i * 4, &v, 4);
  }
}

}  // namespace

bool psum::accumulate(const isa::AccessPattern& ap, const uint8_t* src, std::string& err) {
  if (ap.dtype != isa::DType::fp32) {
    err = "PSUM accumulates fp32 only, got " + std::string(isa::dtype_name(ap.dtype));
    return false;
  }
  const size_t row_elems = ap.free_elems();
  // Contiguous rows (every matmul's dst): add_row, with the same additions as the
  // general walk below.
  const bool contiguous = fast::free_contiguous(ap);
  const int64_t first = contiguous && row_elems ? ap.free_min_byte() : 0;
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    uint8_t* base = row(ap.partition_start + p) + ap.offset;
    const uint8_t* in = src + p * row_elems * 4;
    if (contiguous) {
      add_row(base + first, in, row_elems);
      continue;
    }
    isa::for_each_free(ap, [&](uint64_t i, int64_t off) {
      float v, add;
      std::memcpy(&v, base + off, 4);
      std::memcpy(&add, in + i * 4, 4);
      v += add;
      std::memcpy(base + off, &v, 4);
    });
  }
  return true;
}

}  // namespace trnsim::models
