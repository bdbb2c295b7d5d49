#include "models/memory/psum.h"

#include <cstring>

#include "models/common/ap_fast.h"

namespace trnsim::models {

psum::psum(const sc_core::sc_module_name& name, const psum_params& p)
    : partitioned_memory(name, {isa::MemSpace::psum, p.partitions, p.partition_bytes, p.clock_hz,
                                p.port_elems_per_cycle}),
      params_(p) {}

bool psum::accumulate(const isa::AccessPattern& ap, const uint8_t* src, std::string& err) {
  if (ap.dtype != isa::DType::fp32) {
    err = "PSUM accumulates fp32 only, got " + std::string(isa::dtype_name(ap.dtype));
    return false;
  }
  const size_t row_elems = ap.free_elems();
  // Contiguous rows (every matmul's dst): a plain loop the compiler vectorises, with
  // the same additions as the general walk below.
  const bool contiguous = fast::free_contiguous(ap);
  const int64_t first = contiguous && row_elems ? ap.free_min_byte() : 0;
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    uint8_t* base = row(ap.partition_start + p) + ap.offset;
    const uint8_t* in = src + p * row_elems * 4;
    if (contiguous) {
      uint8_t* out = base + first;
      for (size_t i = 0; i < row_elems; ++i) {
        float v, add;
        std::memcpy(&v, out + i * 4, 4);
        std::memcpy(&add, in + i * 4, 4);
        v += add;
        std::memcpy(out + i * 4, &v, 4);
      }
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
