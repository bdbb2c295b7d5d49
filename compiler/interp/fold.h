// Constant folding with the reference interpreter: nodes whose inputs are all
// constants with data (Shape and Size: any input) are evaluated and replaced by
// constants that keep the output values' names.
#pragma once

#include "compiler/ir/graph.h"

namespace trnsim::interp {

// Folds until nothing changes; returns the number of nodes folded.
int fold_constants(ir::Graph& g);

// Whether a node can be folded now (all inputs are constants with data, or the op
// only needs input types).
bool foldable(const ir::Node& n);

}  // namespace trnsim::interp
