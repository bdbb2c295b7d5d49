// ONNX models on the command line: `trnsim compile` and `trnsim run MODEL.onnx`
// compile with the platform's target (runtime/target_from_config.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "models/isa/program.h"
#include "platform/config.h"

namespace trnsim::runtime {

// True for a path ending in ".onnx" (any case).
bool is_onnx_path(const std::string& path);

// Compiles the model for `cfg` at `precision` ("bf16", "fp32", "fp8"; anything
// else throws std::invalid_argument naming the option). IR dumps asked for by
// `print_after` (graph or tile pass names, or "*") go to `dumps`.
isa::Program compile_model(const std::string& path, const platform::platform_config& cfg,
                           const std::string& precision,
                           const std::vector<std::string>& print_after, std::ostream& dumps);

}  // namespace trnsim::runtime
