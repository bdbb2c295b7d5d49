// Rounding of the narrowing conversions the simulated chip makes (config section
// `core.rounding`): one row per key (models/common/params.h).
#pragma once

#include <cstdint>

#include "models/common/params.h"

// clang-format off
// How the engines and the DMA casts round fp32 values written as a narrower float type
// (the `core.rounding` section; models/isa/dtype.h). Only the simulator reads it: the
// program is the same.
#define TRNSIM_ROUNDING_PARAMS(X)                                                                 \
  X(stochastic, bool, false, "stochastic", boolean, "", any(), sim,                               \
    "round fp32 values the engines write and DMA transfers cast as bf16, fp16 or fp8 "           \
    "stochastically (away from zero with probability = the dropped fraction of a unit in the "   \
    "last place; off: to nearest, ties to even)",                                                \
    "docs/hardware.md: Training numerics (stochastic rounding, a runtime switch); chosen: off")  \
  X(seed, uint32_t, 0, "seed", count, "seed", any(), sim,                                         \
    "seed of the stochastic rounding's random bits: the same program, config and seed round "    \
    "every result the same way",                                                                 \
    "no public figure; chosen: 0, any value")

// clang-format on

namespace trnsim::models {

struct rounding_params {
  TRNSIM_ROUNDING_PARAMS(TRNSIM_PARAM_FIELD)
};

}  // namespace trnsim::models
