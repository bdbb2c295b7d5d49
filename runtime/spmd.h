// SPMD runs: one program on R ranks (trnsim run PROGRAM --ranks R). Rank r runs on
// core r % chip.cores of chip r / chip.cores; its collective instructions meet the
// other ranks' in the run's collective unit (models/network/collective_unit.h),
// timed over the `network:` section's links for that placement.
//
// Ranks beyond one chip: the device elaborates every chip the ranks fill, each of
// chip.cores cores with its own HBM (the config's hbm size, stacks, channels and
// bandwidth), and places each rank's program in its chip's HBM: ranks contend for
// their own chip's memory only, and a program that does not fit its chip is an
// error naming the rank and chip. The collectives' timing places the ranks on
// their real chips.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph_passes/tensor_parallel.h"
#include "runtime/device.h"
#include "runtime/onnx_program.h"

namespace trnsim::runtime {

// The platform an SPMD run of `ranks` simulates (see above): chip.cores is every
// chip's cores together, hbm one chip's; run it with DeviceOptions::chip_cores =
// cfg.cores. Throws RunError when the ranks need more chips than network.nodes x
// network.chips.
platform::platform_config spmd_config(const platform::platform_config& cfg, uint32_t ranks);

// One launch per rank of `program`, rank r on core r, with inputs[r].
std::vector<Launch> spmd_launches(const isa::Program* program,
                                  std::vector<std::map<std::string, HostTensor>> inputs);

// --tp N [--dp D]: the model for each of N x D ranks (rank d x N + t: shard t of
// replica d): the imported graph canonicalized, split by
// graph_passes::tensor_parallel for shard t with replica d's group, compiled (no
// host fallback). `split`: the graph inputs and outputs split across the ranks
// (the same for every shard).
std::vector<OnnxModel> compile_tensor_parallel(const ir::Graph& imported, const std::string& path,
                                               const platform::platform_config& cfg,
                                               const std::string& precision, int tp,
                                               bool keep_on_chip, int dp = 1,
                                               graph_passes::TensorParallelSplit* split = nullptr);

// Per rank: simulated time, collectives, their model time and rendezvous wait, and
// the communication share (collective time / simulated time); then the step.
std::string format_spmd_report(const RunReport& rep);

}  // namespace trnsim::runtime
