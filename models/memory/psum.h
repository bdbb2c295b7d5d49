// Partial-sum buffer (PSUM): 128 partitions of 8 banks. The tensor engine writes
// with accumulate (fp32 read-add-write near the memory); other engines see plain
// SRAM. Modelled: storage, bounds, fp32 accumulation, per-access port time. Not
// modelled yet: bank conflicts, vector/scalar port sharing on NC-v2.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "models/memory/memory_params.h"
#include "models/memory/partitioned_memory.h"

namespace trnsim::models {

class psum : public partitioned_memory {
 public:
  psum(const sc_core::sc_module_name& name, const psum_params& p);
  const psum_params& params() const { return params_; }

  // A write whose values are still being computed (a matmul's product on a worker
  // thread; its timing was accounted when it was issued). Held writes are applied
  // in the order given, before any access that moves data or at drain(): nothing
  // can see PSUM before they are in, so the contents never depend on when a worker
  // finishes.
  struct held_write {
    isa::AccessPattern ap;  // fp32
    bool accumulate = false;
    std::function<const uint8_t*()> data;  // waits for the values, then points at them
    std::function<void()> done;            // after they are in
  };
  void hold(held_write w);
  // Applies the held writes, oldest first, until at most `keep` are left.
  void drain(size_t keep = 0);
  size_t held() const { return held_.size(); }

 protected:
  bool accumulate(const isa::AccessPattern& ap, const uint8_t* src, std::string& err) override;
  void before_data_access() override { drain(); }

 private:
  psum_params params_;
  std::deque<held_write> held_;
};

}  // namespace trnsim::models
