// The roofline of a run: for the config, the least time each op kind (and the whole
// program) could take, max(FLOPs / peak FLOP/s of its dtype, minimum HBM bytes /
// memory bandwidth), against the simulated time, as efficiency = roofline /
// simulated. FLOPs and minimum bytes come from the compiler (compiler/roofline.h).
//
// Roofs, for the cores the run used (one launch: one core): compute = peak_flops()
// x cores; memory = min(the chip's HBM bandwidth, cores x DMA engines x DMA engine
// bandwidth) -- a core moves HBM data only through its DMA engines, so that is
// the most it can get (on trn2 the DMA side, 16 x 23 GB/s, is the smaller).
//
// Simulated time of an op kind: the time at least one instruction compiled from
// its ops was executing on some engine or DMA queue of the core (the union of
// those instructions' intervals, issue to completion). Kinds that run at the same
// time both count the overlap, so the column may sum past the run's time; time no
// instruction executed (semaphore latency, fixed costs) belongs to no kind.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "compiler/roofline.h"
#include "models/common/stats.h"
#include "models/common/trace.h"
#include "models/isa/program.h"
#include "platform/config.h"

namespace trnsim::runtime {

struct RooflineRow {
  std::string kind;
  uint64_t count = 0;
  double flops = 0;
  uint64_t min_bytes = 0;
  double compute_ns = 0;  // sum over its FLOPs of FLOPs / peak of their dtype
  double memory_ns = 0;   // min_bytes / memory roof
  double simulated_ns = 0;
  std::string fused;  // "Add x4, Relu x2": other ONNX op types fused into its nodes
  double roofline_ns() const { return compute_ns > memory_ns ? compute_ns : memory_ns; }
  bool compute_bound() const { return compute_ns >= memory_ns; }
  double efficiency_pct() const {
    return simulated_ns > 0 ? 100.0 * roofline_ns() / simulated_ns : 0.0;
  }
};

struct Roofline {
  bool available = false;
  bool from_compiler = false;      // FLOPs and bytes from the compiler, else from the program
  bool attributed = false;         // kinds have simulated times
  std::vector<RooflineRow> kinds;  // largest simulated time first
  RooflineRow total;               // whole program; simulated_ns = the run's
  double busy_ns = 0;              // time at least one instruction executed
  uint32_t cores = 1;
  double peak_bf16 = 0, peak_fp32 = 0;  // compute roofs [FLOP/s]
  double hbm_bps = 0, dma_bps = 0;      // the chip's HBM; the cores' DMA engines together
  double memory_bps = 0;                // min of the two: the memory roof
  uint32_t dma_engines = 0;             // per core
  double dma_engine_bps = 0;            // each
  double dma_core_bps = 0;              // what a core's engines share
};

// Per kind (index of meta.kinds), the union of its instructions' intervals [ns],
// and in `busy_ns` the union over all instructions.
std::vector<double> attribute_time(const compiler::ProgramRoofline& meta, const isa::Program& p,
                                   const std::vector<trace::recorder::interval>& iv,
                                   double* busy_ns);

// `cfg`: the config with `core` the type of the core the run used. `meta` null: the
// whole-program line only, from the program (matmul FLOPs executed, `executed`;
// bytes of its input, constant and output tensors). `kind_ns` null: no attribution.
Roofline make_roofline(const platform::platform_config& cfg, uint32_t cores,
                       const compiler::ProgramRoofline* meta, const isa::Program& p,
                       const std::array<uint64_t, isa::kNumDTypes>& executed, double simulated_ns,
                       const std::vector<double>* kind_ns, double busy_ns);

void add_roofline_stats(stats::group& root, const Roofline& r);
std::string format_roofline(const Roofline& r);

}  // namespace trnsim::runtime
