// Shared set-up of the network tests: a topology on the tiny config, and inputs whose
// sums depend on the order of their additions.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "models/network/topology.h"
#include "platform/config.h"

namespace trnsim::test {

// `ranks` ranks, `per_chip` to a chip, on tiny with `sets` applied.
inline models::network::topology_params tiny_topology(uint32_t ranks, uint32_t per_chip,
                                                      const std::vector<std::string>& sets = {}) {
  const platform::platform_config cfg = platform::load_config("tiny", sets);
  models::network::topology_params p;
  p.net = cfg.network;
  p.cores_per_chip = cfg.cores;
  p.dma_bps = cfg.core.dma.engines * cfg.core.dma.bandwidth_bps;
  p.ranks = ranks;
  p.per_chip = per_chip;
  return p;
}

// Non-dyadic inputs, so a different order of additions would change the bits.
inline std::vector<std::vector<float>> order_sensitive_inputs(uint32_t ranks, uint64_t count) {
  std::vector<std::vector<float>> d(ranks, std::vector<float>(count));
  for (uint32_t r = 0; r < ranks; ++r)
    for (uint64_t i = 0; i < count; ++i)
      d[r][i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * r) * (1 + r));
  return d;
}

}  // namespace trnsim::test
