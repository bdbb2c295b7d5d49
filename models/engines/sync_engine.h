// Sync engine: a sequencer with no datapath. It runs nop instructions whose waits
// and signals order other queues (e.g. a barrier). Cost: the static overhead only.
#pragma once

#include "models/engines/engine.h"

namespace trnsim::models {

class sync_engine : public engine {
 public:
  sync_engine(const sc_core::sc_module_name& name, const sync_engine_params& p, semaphores& sems,
              sim_context& ctx);

 protected:
  uint64_t cost_cycles(const isa::Instruction&) override { return 0; }
};

}  // namespace trnsim::models
