// Attention written with the scale on Q or K's head transpose and K^T as one
// Transpose, rewritten to the form the Attention matcher takes (attention_forms.cpp);
// fuse_patterns runs it first.
#pragma once

#include "compiler/graph_passes/pass.h"

namespace trnsim::graph_passes {

void expose_attention_scores(ir::Graph& g, PassContext& ctx);

}  // namespace trnsim::graph_passes
