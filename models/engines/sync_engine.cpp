#include "models/engines/sync_engine.h"

namespace trnsim::models {

sync_engine::sync_engine(const sc_core::sc_module_name& name, const sync_engine_params& p,
                         semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::sync, p, sems, ctx) {}

}  // namespace trnsim::models
