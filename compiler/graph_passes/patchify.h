// A Conv whose windows tile its input exactly becomes a MatMul of the patches
// (patchify.cpp); fuse_patterns runs it first.
#pragma once

#include "compiler/graph_passes/pass.h"

namespace trnsim::graph_passes {

void patchify_convs(ir::Graph& g, PassContext& ctx);

}  // namespace trnsim::graph_passes
