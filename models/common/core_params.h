// The parameters of every block of one NeuronCore, as one plain struct: what the
// platform builds a core from and what the compiler's Target describes. A block's
// new parameter is a row in its own params header; this list changes only when a
// core gains a block.
#pragma once

#include "models/common/rounding_params.h"
#include "models/engines/engine_params.h"
#include "models/memory/memory_params.h"

// clang-format off
/* Semaphore ids are 16 bits in the ISA. */
#define TRNSIM_SEMAPHORES_PARAMS(X)                                                               \
  X(count, uint32_t, 256, "semaphores", count, "semaphores", range(1, 65536), both,               \
    "semaphores per core",                                                                       \
    "no public figure; chosen: ample for compiler-inserted synchronisation")
// clang-format on

namespace trnsim::models {

struct semaphores_params {
  TRNSIM_SEMAPHORES_PARAMS(TRNSIM_PARAM_FIELD)
};

struct core_params {
  tensor_engine_params tensor;
  vector_engine_params vector;
  scalar_engine_params scalar;
  gpsimd_engine_params gpsimd;
  sync_engine_params sync;
  sbuf_params sbuf;
  psum_params psum;
  dma_params dma;
  semaphores_params semaphores;
  rounding_params rounding;
};

}  // namespace trnsim::models
