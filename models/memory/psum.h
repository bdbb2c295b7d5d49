// Partial-sum buffer (PSUM): 128 partitions of 8 banks. The tensor engine writes
// with accumulate (fp32 read-add-write near the memory); other engines see plain
// SRAM. Modelled: storage, bounds, fp32 accumulation, per-access port time. Not
// modelled yet: bank conflicts, vector/scalar port sharing on NC-v2.
#pragma once

#include "models/memory/memory_params.h"
#include "models/memory/partitioned_memory.h"

namespace trnsim::models {

class psum : public partitioned_memory {
 public:
  psum(const sc_core::sc_module_name& name, const psum_params& p);
  const psum_params& params() const { return params_; }

 protected:
  bool accumulate(const isa::AccessPattern& ap, const uint8_t* src, std::string& err) override;

 private:
  psum_params params_;
};

}  // namespace trnsim::models
