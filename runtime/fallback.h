// Host fallback, runtime side: runs a partitioned model (compiler/partition.h)
// segment by segment. Device segments run on the simulated chip; host segments run
// in the reference interpreter. A value crossing the host<->device link (a host
// segment reading a device result, a device segment reading a host result) costs
// host.link_latency + bytes / host.link_bandwidth of simulated time, serialised with
// the segments. The run's boundary is HBM, as in a plain device run: model inputs
// start there (a host segment reading one downloads it) and outputs end there (one
// computed on the host is uploaded). Simulated time = device segments + link time.
// The host's own compute time is not simulated (no config models a host's speed):
// it is reported apart as wall-clock seconds, so the simulated figures stay
// deterministic.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "compiler/partition.h"
#include "platform/config.h"
#include "runtime/device.h"

namespace trnsim::runtime {

struct SegmentResult {
  bool on_device = true;
  size_t nodes = 0;
  double simulated_ns = 0;  // device segments: the run; host segments: 0
  double host_seconds = 0;  // host segments: interpreter wall-clock time (not simulated)
  uint64_t upload_bytes = 0, download_bytes = 0;
  double transfer_ns = 0;  // link time charged before this segment
  RunReport report;        // device segments
  // A host decision (compiler::Segment::branches): the branch run, its device and
  // host segments; simulated_ns is its device time, host_seconds its interpreter time.
  std::string branch;
  size_t branch_device_segments = 0, branch_host_segments = 0;
  uint64_t branch_upload_bytes = 0, branch_download_bytes = 0;  // the branch run's link
  // A timing-only run computes no data on the device: when the condition came from
  // such a value, its zero picked the branch (else_branch), an assumption the
  // report states.
  bool branch_assumed = false;
};

struct FallbackResult {
  interp::TensorMap outputs;  // by graph output name
  std::vector<SegmentResult> segments;
  RunReport total;         // device runs summed; simulated_ns includes the transfers
  double device_ns = 0;    // the device segments' simulated time
  double transfer_ns = 0;  // link time: every segment's, plus the outputs' upload
  uint64_t transfer_bytes = 0, transfers = 0;
  uint64_t output_upload_bytes = 0;  // host-computed outputs sent to HBM at the end
  double output_upload_ns = 0;
  double host_compute_seconds = 0;  // interpreter wall clock, not simulated
  // The stats JSON of every device run (host-decided branches' included).
  std::vector<std::string> device_trees;
  // The stats tree of a device run with the same keys (device segments summed; zero
  // where nothing ran on the device), a "host" group of the host and link figures,
  // and "fallback": the nodes that ran on the host and the segments.
  std::string stats_json, stats_text;
  // Outputs whose values are placeholders (a timing-only run's device results).
  std::set<std::string> unknown_outputs;
};

// A value as the device holds it for program tensor `d` (integers and bools as
// fp32, see runtime/onnx_program.h), and back in the graph value's type.
HostTensor to_device(const ir::Tensor& t, const isa::TensorDecl& d);
ir::Tensor from_device(const HostTensor& h, const ir::TensorType& type);

// `inputs` by model input name. Device segments run on `core` of `dev`. `unknown`:
// inputs whose values are placeholders (a timing-only run's device results).
FallbackResult run_partitioned(Device& dev, const platform::platform_config& cfg,
                               const compiler::PartitionedModel& m, const interp::TensorMap& inputs,
                               uint32_t core = 0, const std::set<std::string>& unknown = {});

// The command line's view of a fallback run: `launch` binds the model's inputs by
// program tensor name (runtime/onnx_program.h's declaration-only program). The
// report's launch 0 carries the outputs by tensor name, the whole-run figures and
// engines (device segments summed, plus link time); stats_json / stats_text are the
// fallback tree (FallbackResult); `summary` gets the format_fallback text.
RunReport run_fallback(Device& dev, const platform::platform_config& cfg,
                       const compiler::PartitionedModel& m, const Launch& launch,
                       std::string* summary = nullptr);

// The ONNX nodes (op type, node name) a fallen-back node computes: its imported
// origins, else itself.
std::vector<std::pair<std::string, std::string>> onnx_nodes(const compiler::FallbackNode& f);

// A readable summary: per segment (device time or host time, transfers) and the
// nodes that fell back with their reasons.
std::string format_fallback(const compiler::PartitionedModel& m, const FallbackResult& r);

}  // namespace trnsim::runtime
