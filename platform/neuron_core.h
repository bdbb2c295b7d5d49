// A NeuronCore assembled from its config: tensor, vector, scalar, GpSimd and sync
// engines, SBUF, PSUM, the DMA engines and the semaphores, with every engine's
// sockets bound to the memories. HBM is the chip's (bound by chip).
#pragma once

#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "models/common/semaphores.h"
#include "models/cosim/tensor_datapath.h"
#include "models/engines/gpsimd_engine.h"
#include "models/engines/scalar_engine.h"
#include "models/engines/sync_engine.h"
#include "models/engines/tensor_engine.h"
#include "models/engines/vector_engine.h"
#include "models/memory/dma_engine.h"
#include "models/memory/psum.h"
#include "models/memory/sbuf.h"
#include "platform/config.h"

namespace trnsim::platform {

class neuron_core : public sc_core::sc_module {
 public:
  neuron_core(const sc_core::sc_module_name& name, const core_config& cfg,
              models::sim_context& ctx);

  models::semaphores sems;
  models::sbuf sbuf;
  models::psum psum;
  models::tensor_engine tensor;
  models::vector_engine vector;
  models::scalar_engine scalar;
  models::gpsimd_engine gpsimd;
  models::sync_engine sync;
  std::vector<std::unique_ptr<models::dma_engine>> dma;
  // The tensor engine's matmul data path other than the C++ sgemm (config
  // core.tensor.impl / numerics; docs/rtl-cosim.md): at most one is set.
  std::unique_ptr<cosim::systolic_datapath> tensor_systolic;
  std::unique_ptr<cosim::rtl_datapath> tensor_rtl;

  // Compute engines indexed by isa::Engine (tensor..sync).
  models::engine& engine_for(isa::Engine e);
  void register_stats(stats::group& g);
  void reset_stats();  // every block's counters to 0 (the runtime's stats are per run)
};

}  // namespace trnsim::platform
