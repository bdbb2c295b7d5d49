// The compiler's view of a platform (compiler::Target) filled from its config: the
// compiler does not depend on platform/, so the runtime makes the bridge.
#pragma once

#include <string>

#include "compiler/target.h"
#include "platform/config.h"

namespace trnsim::runtime {

compiler::Target target_from_config(const platform::platform_config& c);

// Every field of `t` as one JSON object (sorted keys, shortest round-trip numbers): what
// `trnsim info --target` prints, so that tools can tell when two configs compile alike.
std::string target_json(const compiler::Target& t);

}  // namespace trnsim::runtime
