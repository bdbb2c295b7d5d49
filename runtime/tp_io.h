// Graph inputs and outputs that `--tp N` splits across the ranks
// (graph_passes::TensorParallelSplit, e.g. a KV cache by heads): the host hands
// rank r its slice of a whole input and gathers a split output back from the ranks
// of its tensor-parallel group, so every rank reports the whole output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph_passes/tensor_parallel.h"
#include "runtime/onnx_program.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

// Slice `part` of `parts` along `axis` (throws RunError naming `what` when parts
// does not divide it).
HostTensor axis_slice(const HostTensor& t, int axis, uint32_t part, uint32_t parts,
                      const std::string& what);

// `parts` (equal shapes but along `axis`) joined along `axis`.
HostTensor axis_concat(const std::vector<const HostTensor*>& parts, int axis);

// inputs[k] (program tensor name -> tensor) for launch rank k, shard k % tp: a split
// input given whole (a file of the model's shape) becomes the shard's slice; one
// already of the slice's shape (random values) is left as it is. `model_in` maps
// the split's graph input names to program tensors.
void split_tp_inputs(std::vector<std::map<std::string, HostTensor>>& inputs, uint32_t tp,
                     const graph_passes::TensorParallelSplit& split,
                     const std::vector<ModelIo>& model_in);

// outputs[k] of launch rank k: each split output (by its program tensor, via
// `model_out`) replaced by its tp group's slices joined in shard order.
void gather_tp_outputs(std::vector<std::map<std::string, HostTensor>>& outputs, uint32_t tp,
                       const graph_passes::TensorParallelSplit& split,
                       const std::vector<ModelIo>& model_out);

}  // namespace trnsim::runtime
