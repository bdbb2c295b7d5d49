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
  // Weight load in the background of the previous multiply, with fill/drain of
  // consecutive multiplies overlapped (off: every pass loads, streams and drains alone).
  bool background_load = true;
  uint32_t fast_load_speedup = 4;  // background load vs a multiply of the same free size [x]
  uint32_t tile_size = 32;         // smallest square tile a small matmul runs in [PEs]
  bool throttle = true;            // throughput ramp after idle (trn2/trn3)
  double throttle_start = 0.5;     // throughput when the ramp starts [fraction of peak]
  double throttle_ramp_s = 3e-6;   // time from throttle_start to full throughput [s]
  double throttle_idle_s = 3e-6;   // window of low utilisation that re-engages it [s]
  double throttle_reengage = 0.5;  // utilisation below which the window re-engages it [fraction]
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
