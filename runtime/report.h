// Human-readable summaries printed by the command line.
#pragma once

#include <string>

#include "models/isa/program.h"
#include "platform/config.h"
#include "runtime/device.h"

namespace trnsim::runtime {

// Simulated time, instruction counts, per-engine busy/active/waits, HBM traffic,
// host speed of one run.
std::string format_report(const isa::Program& p, const platform::platform_config& cfg,
                          const RunReport& r);
// The platform's resources and peak figures (for `trnsim info`).
std::string format_platform(const platform::platform_config& cfg);
// Peak dense tensor-engine throughput of one core [FLOP/s] for an input dtype.
double peak_flops(const platform::platform_config& cfg, isa::DType t);

}  // namespace trnsim::runtime
