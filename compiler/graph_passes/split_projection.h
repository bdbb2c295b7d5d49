// A projection whose result is only cut along its last axis becomes one projection
// per part (split_projection.cpp); fuse_patterns runs it first.
#pragma once

#include "compiler/graph_passes/pass.h"

namespace trnsim::graph_passes {

void split_projections(ir::Graph& g, PassContext& ctx);

}  // namespace trnsim::graph_passes
