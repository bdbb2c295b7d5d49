// What the compiler back end knows about the machine it compiles for: the
// parameters of one core and the chip's HBM (`core`, `hbm`: the same params structs
// the models take, one row per parameter in their headers, trn2 defaults), the views
// of them the passes use (memory sizes, the ISA validator's rules, first-order
// costs per engine: the scheduler's model; the simulator's own timing is the truth)
// and the compiler's own policy knobs. The runtime fills `core` and `hbm` from the
// platform config (runtime/target_from_config.h). A pass that needs a new hardware
// parameter reads it from `core`/`hbm` directly: the parameter's row says the
// compiler reads it, and the sweep's compile cache keys on such rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "models/common/core_params.h"
#include "models/isa/instruction.h"
#include "models/isa/validate.h"

namespace trnsim::compiler {

// Sequencer timing of one compute engine: an instruction of N free elements costs
// about overhead + max(min_ii, N x rate) cycles.
struct EngineCost {
  double clock_hz;
  uint32_t min_ii_cycles;
  uint32_t overhead_cycles;
};

struct Target {
  std::string name = "trn2";

  // ---- the machine (set these, then derive())
  models::core_params core;
  models::hbm_params hbm;

  Target() { derive(); }
  Target(std::string name_, const models::core_params& core_, const models::hbm_params& hbm_)
      : name(std::move(name_)), core(core_), hbm(hbm_) {
    derive();
  }

  // ---- views of the machine, computed by derive() from `core` and `hbm`
  // memories
  uint32_t partitions;
  uint64_t sbuf_partition_bytes;
  uint64_t psum_partition_bytes;
  uint64_t psum_bank_bytes;
  uint64_t hbm_bytes;  // space a program may use
  // tensor-engine limits (K on SBUF partitions, M on PSUM partitions)
  uint32_t matmul_max_k;
  uint32_t matmul_max_m;
  uint32_t matmul_max_n;
  bool matmul_double_row;  // fp8 matmuls may take K = 2 x partitions
  // synchronisation and DMA resources the compiler may use
  uint32_t semaphores;
  uint32_t dma_engines;            // engines transfers are spread over
  uint32_t dma_queues_per_engine;  // hardware queues per engine
  // DMA cost: fixed + descriptors x per-descriptor + bytes / bandwidth
  double dma_bandwidth_bytes_per_ns;  // per engine
  double dma_fixed_ns;
  double dma_descriptor_ns;  // per contiguous run
  // What the engines of a core share: their total rate and each descriptor's time of it.
  double dma_core_bandwidth_bytes_per_ns;
  double dma_core_descriptor_ns;
  // HBM bandwidth of the chip: with every DMA engine busy each gets at most
  // hbm / dma_engines (the cost model takes the lower of that and its own cap).
  double hbm_bandwidth_bytes_per_ns;
  // compute engines
  EngineCost tensor, vector, scalar, gpsimd, sync;
  uint32_t matmul_fp32_slowdown;
  uint32_t vector_divide_slowdown;
  bool vector_perf_modes;  // bf16 2x/4x modes
  uint32_t scalar_func_switch_cycles;
  uint32_t gpsimd_start_cycles;

  // Recomputes the views above from `core` and `hbm`.
  void derive() {
    partitions = core.sbuf.partitions;
    sbuf_partition_bytes = core.sbuf.partition_bytes;
    psum_partition_bytes = core.psum.partition_bytes;
    psum_bank_bytes = core.psum.bank_bytes;
    hbm_bytes = hbm.size_bytes;
    // A matmul's K lies on the SBUF partitions and its M becomes the PSUM
    // partitions; a smaller PE array folds the matmul into passes.
    matmul_max_k = core.sbuf.partitions;
    matmul_max_m = core.psum.partitions;
    matmul_max_n = core.tensor.max_moving_free;
    matmul_double_row = core.tensor.fp8_double_row;
    semaphores = core.semaphores.count;
    dma_engines = core.dma.engines;
    dma_queues_per_engine = core.dma.queues_per_engine;
    dma_bandwidth_bytes_per_ns = core.dma.bandwidth_bps / 1e9;
    dma_fixed_ns = core.dma.fixed_cost_s * 1e9;
    dma_descriptor_ns = core.dma.descriptor_cost_s * 1e9;
    dma_core_bandwidth_bytes_per_ns = core.dma.core_bandwidth_bps / 1e9;
    dma_core_descriptor_ns = core.dma.core_descriptor_cost_s * 1e9;
    hbm_bandwidth_bytes_per_ns = hbm.bandwidth_bps / 1e9;
    const auto cost = [](const models::engine_params& p) {
      return EngineCost{p.clock_hz, p.min_ii_cycles, p.overhead_cycles};
    };
    tensor = cost(core.tensor);
    vector = cost(core.vector);
    scalar = cost(core.scalar);
    gpsimd = cost(core.gpsimd);
    sync = cost(core.sync);
    matmul_fp32_slowdown = core.tensor.fp32_slowdown;
    vector_divide_slowdown = core.vector.reciprocal_slowdown;
    vector_perf_modes = core.vector.perf_modes;
    scalar_func_switch_cycles = core.scalar.func_switch_cycles;
    gpsimd_start_cycles = core.gpsimd.start_cycles;
  }

  // Tile sizes the lowering uses: a k-tile lies on SBUF partitions, an m-tile's PSUM
  // rows are copied to SBUF partitions, so both are bounded by the partitions too.
  int64_t k_tile() const { return std::min<int64_t>(matmul_max_k, partitions); }
  int64_t m_tile() const { return std::min<int64_t>(matmul_max_m, partitions); }

  // ---- the compiler's own policy (not hardware)
  uint64_t sbuf_alignment = 64;  // allocation granule within a partition [bytes]
  uint64_t hbm_alignment = 64;   // tensor placement in the program's HBM space [bytes]
  // Queues per engine the compiler fills: loads, stores, other copies each get
  // their own so that a store waiting for compute never blocks a prefetch.
  uint32_t dma_queue_classes = 3;
  // split_dma: large transfers become pieces of >= this many bytes (at most
  // dma_split_max; by 32/64-partition groups, then the outermost free dim) so
  // several engines share them.
  uint64_t dma_split_min_bytes = 16 * 1024;
  uint32_t dma_split_max = 16;
  // ... and never cut a contiguous run (one descriptor each) so short that the
  // descriptor cost exceeds this fraction of its transfer time.
  double dma_split_max_descriptor_share = 0.25;
  // ... nor so short that a descriptor takes more than this fraction of the run's time
  // at the core's shared rate. Looser than the engine's: more pieces shorten a
  // transfer the next op waits for (a softmax tile: 0.25 -> 530 us, 0.5 -> 345 us, 1
  // -> 252 us on trn2), fewer descriptors help a DMA-bound stream (the trn1 GEMM:
  // 7.17, 7.00, 8.34 ms).
  double dma_split_max_shared_descriptor_share = 0.5;
  // The next matmul's issue overhead hides under the running multiply (background
  // weight load), so back-to-back matmuls cost max(N, min_ii) each.
  bool tensor_pipelined = true;

  const EngineCost& engine_cost(isa::Engine e) const {
    switch (e) {
      case isa::Engine::tensor:
        return tensor;
      case isa::Engine::vector:
        return vector;
      case isa::Engine::scalar:
        return scalar;
      case isa::Engine::gpsimd:
        return gpsimd;
      default:
        return sync;
    }
  }

  // What isa::validate needs.
  isa::Limits limits() const {
    isa::Limits l;
    l.partitions = partitions;
    l.sbuf_partition_bytes = sbuf_partition_bytes;
    l.psum_partition_bytes = psum_partition_bytes;
    l.psum_bank_bytes = psum_bank_bytes;
    l.matmul_max_k = matmul_max_k;
    l.matmul_max_m = matmul_max_m;
    l.matmul_max_n = matmul_max_n;
    l.matmul_double_row = matmul_double_row;
    l.hbm_bytes = hbm_bytes;
    l.dma_engines = dma_engines;
    l.dma_queues = dma_queues_per_engine;
    l.max_semaphores = semaphores;
    return l;
  }
};

}  // namespace trnsim::compiler
