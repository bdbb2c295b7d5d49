// The unroll_rnn graph pass's refusal reasons, shared with the lowering so that a
// recurrent node the pass leaves in place is refused by name (see unroll_rnn.cpp).
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace trnsim::graph_passes {

// Why unroll_rnn leaves this LSTM/GRU/RNN node alone ("" when it unrolls it).
std::string rnn_unroll_refusal(const ir::Node& n);

}  // namespace trnsim::graph_passes
