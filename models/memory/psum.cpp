#include "models/memory/psum.h"

#include <cstring>

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
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    uint8_t* base = row(ap.partition_start + p) + ap.offset;
    const uint8_t* in = src + p * row_elems * 4;
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
