#include "models/common/sim_time.h"

#include <cstdio>

namespace trnsim::models {

void throw_time_overflow(const std::string& what, double seconds) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%s %.4g s is past the simulated time range (at most %.4g s: 2^62 ticks of %.4g s)",
                what.c_str(), seconds, max_seconds(), 1 / ticks_per_second());
  throw time_overflow(std::string(buf) +
                      "; a clock, bandwidth, cost or size of the config is too extreme");
}

}  // namespace trnsim::models
