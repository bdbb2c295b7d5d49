// Parameters of the compute engines. Plain structs with defaults and units; the
// platform fills them from the config schema (platform/config_schema.cpp), models
// never read YAML. Defaults are trn2 (NC-v3) figures from shared/hardware.md.
#pragma once

#include <cstdint>

namespace trnsim::models {

// Shared by every compute engine's sequencer and cost model.
struct engine_params {
  double clock_hz = 1.2e9;          // engine clock [Hz]
  uint32_t min_ii_cycles = 64;      // minimum initiation interval per instruction [cycles]
  uint32_t overhead_cycles = 64;    // static per-instruction overhead [cycles]
  uint32_t sem_latency_cycles = 0;  // semaphore wait-to-issue latency [cycles]
};

struct tensor_engine_params : engine_params {
  uint32_t rows = 128;             // PE array rows (contraction, K) [PEs]
  uint32_t cols = 128;             // PE array columns (stationary free size, M) [PEs]
  uint32_t fp32_slowdown = 4;      // fp32 inputs take this many passes [x]
  bool fp8_double_row = true;      // fp8 matmul takes K=2*rows at bf16 time (NC-v3+)
  uint32_t max_moving_free = 512;  // N limit per matmul (one fp32 PSUM bank) [elements]
};

struct vector_engine_params : engine_params {
  uint32_t reciprocal_slowdown = 8;  // vector reciprocal vs 1 elem/cycle [x]
  bool perf_modes = true;            // trn2 bf16 2x/4x performance modes
};

struct scalar_engine_params : engine_params {
  uint32_t func_switch_cycles = 128;  // cost to load another activation table [cycles]
};

struct gpsimd_engine_params : engine_params {
  uint32_t start_cycles = 150;  // fixed start cost of iota/affine_select [cycles]
};

struct sync_engine_params : engine_params {};

}  // namespace trnsim::models
