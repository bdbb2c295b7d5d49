// Tile-IR kernels (`.tir`, the text form of compiler/tile/ir.h) on the command line:
// `trnsim run KERNEL.tir` and `trnsim compile KERNEL.tir` run the back-end pass
// pipeline (allocation, engine and DMA queue assignment, scheduling, sync
// insertion) and code generation for the platform's target, as compiled graphs
// get. A kernel written from a published loop nest runs this way (scripts/
// calibration).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "models/isa/program.h"
#include "platform/config.h"

namespace trnsim::runtime {

// True for a path ending in ".tir" (any case).
bool is_tile_path(const std::string& path);

struct TileProgram {
  isa::Program program;
  std::map<std::string, double> compile_stats;  // what the passes reported
};

// Reads and compiles the kernel at `path` for `cfg.core`. IR dumps asked for by
// `print_after` (tile pass names or "*") go to `dumps`. Errors (unreadable file,
// parse errors as FILE:LINE:COL, pass and validation errors) name the file.
TileProgram compile_tile_file(const std::string& path, const platform::platform_config& cfg,
                              const std::vector<std::string>& print_after, std::ostream& dumps);

}  // namespace trnsim::runtime
