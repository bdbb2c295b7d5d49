// A chip: N NeuronCores sharing one HBM; every DMA engine of every core is bound
// to the HBM target, so their transfers share its bandwidth.
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
  chip(const sc_core::sc_module_name& name, const platform_config& cfg, models::sim_context& ctx);

  models::hbm hbm;
  std::vector<std::unique_ptr<neuron_core>> cores;

  void register_stats(stats::group& g);
  void reset_stats();  // every block's counters to 0 (the runtime's stats are per run)
};

}  // namespace trnsim::platform
