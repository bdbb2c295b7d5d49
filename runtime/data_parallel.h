// Data parallel (`trnsim run MODEL.onnx --dp D`): each of D replicas runs the model
// on its slice of the batch. The compiler sees the model with dim 0 of every input
// divided by D (frontend ImportOptions::batch_split); the host splits a whole-batch
// input file row-wise, replica d taking rows [d B/D, (d+1) B/D).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/graph.h"
#include "models/isa/program.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

// The model at `path` imported with `opts.batch_split` replicas. A model whose
// shapes pin the whole batch (a Reshape to a constant shape, as a fixed-shape export
// writes) cannot be split: the error names the failing node and says so.
ir::Graph import_batch_split(const std::string& path, const frontend::ImportOptions& opts);

// Slice `part` of `parts` along dim 0 (throws RunError when parts does not divide it).
HostTensor batch_slice(const HostTensor& t, uint32_t part, uint32_t parts);

// `p` with every collective group's ranks increased by `by`: a tensor-parallel
// shard of replica 0 becomes the same shard of the replica whose ranks start at `by`
// (the split depends on the shard, not the replica: one compile per shard).
isa::Program shift_groups(const isa::Program& p, uint32_t by);

}  // namespace trnsim::runtime
