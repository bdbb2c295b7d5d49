#include "runtime/target_from_config.h"

namespace trnsim::runtime {

compiler::Target target_from_config(const platform::platform_config& c) {
  compiler::Target t;
  t.name = c.name;
  const isa::Limits l = c.limits();
  t.partitions = l.partitions;
  t.sbuf_partition_bytes = l.sbuf_partition_bytes;
  t.psum_partition_bytes = l.psum_partition_bytes;
  t.psum_bank_bytes = l.psum_bank_bytes;
  t.hbm_bytes = l.hbm_bytes;
  t.matmul_max_k = l.matmul_max_k;
  t.matmul_max_m = l.matmul_max_m;
  t.matmul_max_n = l.matmul_max_n;
  t.matmul_double_row = l.matmul_double_row;
  t.semaphores = l.max_semaphores;
  t.dma_engines = c.core.dma.engines;
  t.dma_queues_per_engine = c.core.dma.queues_per_engine;
  t.dma_bandwidth_bytes_per_ns = c.core.dma.bandwidth_bps / 1e9;
  t.dma_fixed_ns = c.core.dma.fixed_cost_s * 1e9;
  t.dma_descriptor_ns = c.core.dma.descriptor_cost_s * 1e9;
  t.hbm_bandwidth_bytes_per_ns = c.hbm.bandwidth_bps / 1e9;
  auto eng = [](const models::engine_params& p) {
    return compiler::EngineCost{p.clock_hz, p.min_ii_cycles, p.overhead_cycles};
  };
  t.tensor = eng(c.core.tensor);
  t.vector = eng(c.core.vector);
  t.scalar = eng(c.core.scalar);
  t.gpsimd = eng(c.core.gpsimd);
  t.sync = eng(c.core.sync);
  t.matmul_fp32_slowdown = c.core.tensor.fp32_slowdown;
  t.vector_divide_slowdown = c.core.vector.reciprocal_slowdown;
  t.vector_perf_modes = c.core.vector.perf_modes;
  t.scalar_func_switch_cycles = c.core.scalar.func_switch_cycles;
  t.gpsimd_start_cycles = c.core.gpsimd.start_cycles;
  return t;
}

}  // namespace trnsim::runtime
