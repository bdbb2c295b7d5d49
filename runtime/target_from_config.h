// The compiler's view of a platform (compiler::Target) filled from its config: the
// compiler does not depend on platform/, so the runtime makes the bridge.
#pragma once

#include <cstddef>

#include "compiler/target.h"
#include "platform/config.h"

namespace trnsim::runtime {

// The target of core type `core_type` (0: the `core:` section).
compiler::Target target_from_config(const platform::platform_config& c, size_t core_type = 0);

}  // namespace trnsim::runtime
