#include "models/memory/sbuf.h"

namespace trnsim::models {

sbuf::sbuf(const sc_core::sc_module_name& name, const sbuf_params& p)
    : partitioned_memory(name, {isa::MemSpace::sbuf, p.partitions, p.partition_bytes, p.clock_hz,
                                p.port_elems_per_cycle}),
      params_(p) {}

}  // namespace trnsim::models
