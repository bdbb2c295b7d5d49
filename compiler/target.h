// What the compiler back end knows about the machine it compiles for: memory sizes
// and the rules the ISA validator checks, how many DMA engines/queues and
// semaphores to use, and first-order cost estimates per engine (the scheduler's
// model; the simulator's own timing is the truth). Plain fields with trn2 defaults
// (shared/hardware.md, configs/trn2.yaml); the runtime fills them from the platform
// config. The compiler depends on the ISA only, so this is its own small struct.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "models/isa/instruction.h"
#include "models/isa/validate.h"

namespace trnsim::compiler {

// Sequencer timing of one compute engine: an instruction of N free elements costs
// about overhead + max(min_ii, N x rate) cycles.
struct EngineCost {
  double clock_hz = 1.2e9;
  uint32_t min_ii_cycles = 64;
  uint32_t overhead_cycles = 64;
};

struct Target {
  std::string name = "trn2";

  // ---- memories
  uint32_t partitions = 128;
  uint64_t sbuf_partition_bytes = 224 * 1024;
  uint64_t psum_partition_bytes = 16 * 1024;
  uint64_t psum_bank_bytes = 2 * 1024;
  uint64_t sbuf_alignment = 64;  // allocation granule within a partition [bytes]
  uint64_t hbm_alignment = 64;   // tensor placement in the program's HBM space [bytes]
  uint64_t hbm_bytes = 0;        // space a program may use (0: unchecked)

  // ---- tensor-engine limits (K on SBUF partitions, M on PSUM partitions)
  uint32_t matmul_max_k = 128;
  uint32_t matmul_max_m = 128;
  uint32_t matmul_max_n = 512;
  bool matmul_double_row = false;  // fp8 matmuls may take K = 2 x partitions

  // Tile sizes the lowering uses: a k-tile lies on SBUF partitions, an m-tile's PSUM
  // rows are copied to SBUF partitions, so both are bounded by the partitions too.
  int64_t k_tile() const { return std::min<int64_t>(matmul_max_k, partitions); }
  int64_t m_tile() const { return std::min<int64_t>(matmul_max_m, partitions); }

  // ---- synchronisation and DMA resources the compiler may use
  uint32_t semaphores = 256;
  uint32_t dma_engines = 16;            // engines transfers are spread over
  uint32_t dma_queues_per_engine = 16;  // hardware queues per engine
  // Queues per engine the compiler fills: loads, stores, other copies each get
  // their own so that a store waiting for compute never blocks a prefetch.
  uint32_t dma_queue_classes = 3;

  // ---- DMA cost: fixed + descriptors x per-descriptor + bytes / bandwidth
  double dma_bandwidth_bytes_per_ns = 27.2;  // per engine (configs/trn2.yaml)
  double dma_fixed_ns = 170;
  double dma_descriptor_ns = 9.4;  // per contiguous run
  // split_dma: large transfers become pieces of >= this many bytes (at most
  // dma_split_max; by 32/64-partition groups, then the outermost free dim) so
  // several engines share them.
  uint64_t dma_split_min_bytes = 16 * 1024;
  uint32_t dma_split_max = 16;
  // ... and never cut a contiguous run (one descriptor each) so short that the
  // descriptor cost exceeds this fraction of its transfer time.
  double dma_split_max_descriptor_share = 0.25;
  // HBM bandwidth of the chip: with every DMA engine busy each gets at most
  // hbm / dma_engines (the cost model takes the lower of that and its own cap).
  double hbm_bandwidth_bytes_per_ns = 2900.0;

  // ---- compute engines
  EngineCost tensor{2.4e9, 64, 64};
  EngineCost vector{0.96e9, 64, 64};
  EngineCost scalar{1.2e9, 64, 64};
  EngineCost gpsimd{1.2e9, 64, 64};
  EngineCost sync{1.2e9, 64, 64};
  uint32_t matmul_fp32_slowdown = 4;
  // The next matmul's issue overhead hides under the running multiply (background
  // weight load), so back-to-back matmuls cost max(N, min_ii) each.
  bool tensor_pipelined = true;
  uint32_t vector_divide_slowdown = 8;
  bool vector_perf_modes = true;  // trn2 bf16 2x/4x modes
  uint32_t scalar_func_switch_cycles = 128;
  uint32_t gpsimd_start_cycles = 150;

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
