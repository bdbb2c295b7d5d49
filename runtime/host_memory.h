// Whether a run with data fits the host (defined in device.cpp).
#pragma once

#include "models/isa/program.h"

namespace trnsim::runtime {

// A functional run holds the program's inputs, constants and outputs (and, when
// poisoning, its scratch) in host memory, in the HBM model's pages and again as host
// tensors. Throws RunError naming the largest tensor when about twice their bytes
// exceed the host's physical memory (where a std::bad_alloc or the kernel's OOM
// killer would end the run instead).
void check_host_memory(const isa::Program& p, bool poison = false);

}  // namespace trnsim::runtime
