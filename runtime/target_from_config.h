// The compiler's view of a platform (compiler::Target) filled from its config: the
// compiler does not depend on platform/, so the runtime makes the bridge.
#pragma once

#include "compiler/target.h"
#include "platform/config.h"

namespace trnsim::runtime {

compiler::Target target_from_config(const platform::platform_config& c);

}  // namespace trnsim::runtime
