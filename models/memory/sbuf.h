// State buffer (SBUF): the core's main on-chip memory, 128 partitions. Modelled:
// storage, bounds, per-access port time. Not modelled yet: port arbitration between
// engines and DMA, the NC-v2 vector/gpsimd port sharing.
#pragma once

#include "models/memory/memory_params.h"
#include "models/memory/partitioned_memory.h"

namespace trnsim::models {

class sbuf : public partitioned_memory {
 public:
  sbuf(const sc_core::sc_module_name& name, const sbuf_params& p);
  const sbuf_params& params() const { return params_; }

 private:
  sbuf_params params_;
};

}  // namespace trnsim::models
