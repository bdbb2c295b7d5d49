#include "runtime/spmd.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/tensor_parallel.h"
#include "runtime/comm_profile.h"

namespace trnsim::runtime {

platform::platform_config spmd_config(const platform::platform_config& cfg, uint32_t ranks) {
  if (ranks == 0) throw RunError("--ranks must be at least 1");
  if (ranks <= cfg.cores) return cfg;
  const uint32_t chips = (ranks + cfg.cores - 1) / cfg.cores;
  const uint64_t have = uint64_t{cfg.network.chips} * cfg.network.nodes;
  if (chips > have)
    throw RunError(std::to_string(ranks) + " ranks at " + std::to_string(cfg.cores) +
                   " per chip (chip.cores) need " + std::to_string(chips) +
                   " chips; the network has " + std::to_string(have) +
                   " (network.nodes x network.chips)");
  if (!cfg.layout.empty())
    throw RunError("--ranks " + std::to_string(ranks) +
                   " spans several chips; a chip.layout of mixed core types is not supported "
                   "there");
  // Every chip's cores; hbm stays one chip's: the device gives each chip its own
  // (DeviceOptions::chip_cores = cfg.cores).
  platform::platform_config c = cfg;
  c.cores = chips * cfg.cores;
  return c;
}

std::vector<Launch> spmd_launches(const isa::Program* program,
                                  std::vector<std::map<std::string, HostTensor>> inputs) {
  std::vector<Launch> ls;
  for (size_t r = 0; r < inputs.size(); ++r) {
    Launch l;
    l.program = program;
    l.core = uint32_t(r);
    l.rank = int32_t(r);
    l.inputs = std::move(inputs[r]);
    ls.push_back(std::move(l));
  }
  return ls;
}

std::vector<OnnxModel> compile_tensor_parallel(const ir::Graph& imported, const std::string& path,
                                               const platform::platform_config& cfg,
                                               const std::string& precision, int tp,
                                               bool keep_on_chip, int dp,
                                               graph_passes::TensorParallelSplit* split) {
  std::vector<OnnxModel> models;
  for (int k = 0; k < tp * dp; ++k) {
    const int r = k % tp, first = k - r;
    ir::Graph g = imported.clone();
    // Gemm becomes MatMul + Add, constants fold: the pairs are then plain to see.
    graph_passes::PassContext ctx;
    graph_passes::run_passes(g, ctx, {"decompose", "unroll_rnn", "decompose_3d", "canonicalize"});
    graph_passes::tensor_parallel(g, r, tp, first, k == 0 ? split : nullptr);
    std::ostringstream dumps;
    models.push_back(
        compile_onnx_graph(std::move(g), path, cfg, precision, {}, dumps, false, keep_on_chip));
  }
  return models;
}

std::string format_spmd_report(const RunReport& rep) {
  std::string s = "ranks:\n";
  char buf[256];
  double comm = 0, wait = 0;
  for (const LaunchResult& l : rep.launches) {
    const double share = l.simulated_ns > 0 ? 100.0 * l.collective_ns / l.simulated_ns : 0;
    std::snprintf(buf, sizeof buf,
                  "  rank %d: %.1f ns, %llu instructions, %llu collectives: %.1f ns (%.1f%% of "
                  "its time), rendezvous wait %.1f ns, %llu bytes sent\n",
                  l.rank, l.simulated_ns, static_cast<unsigned long long>(l.instructions),
                  static_cast<unsigned long long>(l.collectives), l.collective_ns, share,
                  l.rendezvous_ns, static_cast<unsigned long long>(l.comm_bytes));
    s += buf;
    comm = std::max(comm, l.collective_ns);
    wait = std::max(wait, l.rendezvous_ns);
  }
  std::snprintf(buf, sizeof buf,
                "step: %.1f ns over %zu ranks; communication %.1f ns (%.1f%% of the step), "
                "longest rendezvous wait %.1f ns\n",
                rep.simulated_ns, rep.launches.size(), comm,
                rep.simulated_ns > 0 ? 100.0 * comm / rep.simulated_ns : 0.0, wait);
  s += buf;
  return s + format_comm_profile(rep);
}

}  // namespace trnsim::runtime
