// A norm's scale and bias move into the constant weights of the MatMuls that read
// it (fold_norm_affine.cpp); fuse_patterns runs it last.
#pragma once

#include "compiler/graph_passes/pass.h"

namespace trnsim::graph_passes {

void fold_norm_affine(ir::Graph& g, PassContext& ctx);

}  // namespace trnsim::graph_passes
