// A chip: N NeuronCores sharing one HBM; every DMA engine of every core is bound
// to the HBM target, so their transfers share its bandwidth. A multi-chip launch
// (runtime/spmd.h) elaborates one chip per chip it spans, each with its own HBM of
// the config's per-chip size, channels and bandwidth.
#pragma once

#include <memory>
#include <systemc>
#include <vector>

#include "models/common/sim_context.h"
#include "models/memory/hbm.h"
#include "platform/config.h"
#include "platform/neuron_core.h"

namespace trnsim::platform {

class chip : public sc_core::sc_module {
 public:
  // Cores first_core .. first_core + cores - 1 of `cfg` (their core types); cores 0:
  // all of cfg.cores. Module names are local to the chip: core0 .. core{cores - 1}.
  chip(const sc_core::sc_module_name& name, const platform_config& cfg, models::sim_context& ctx,
       uint32_t first_core = 0, uint32_t cores = 0);

  models::hbm hbm;
  std::vector<std::unique_ptr<neuron_core>> cores;

  void register_stats(stats::group& g);
  void reset_stats();  // every block's counters to 0 (the runtime's stats are per run)
};

}  // namespace trnsim::platform
