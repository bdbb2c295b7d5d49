// Parameters of the compute engines, one row each (models/common/params.h: key,
// default, unit, range, description, source, readers). The platform fills the
// structs from the config (platform/config_schema.cpp); models never read YAML.
// Defaults are the trn2 (NC-v3) figures of docs/hardware.md.
#pragma once

#include <cstdint>

#include "models/common/params.h"

// clang-format off

// The sequencer rows every engine has; `what` names the engine in descriptions.
#define TRNSIM_SEQUENCER_PARAMS(X, what, clock_default, clock_source)                                   \
  X(clock_hz, double, clock_default, "clock", frequency, "Hz", clock(), both, what " clock",             \
    clock_source)                                                                                 \
  X(min_ii_cycles, uint32_t, 64, "min_ii", cycles, "cycles", cycles(1), both,                     \
    what " minimum initiation interval: cycles between instruction starts",                     \
    "docs/hardware.md: Engines, per-instruction cost (MIN_II about 64 engine cycles)")            \
  X(overhead_cycles, uint32_t, 64, "overhead", cycles, "cycles", cycles(), both,                  \
    what " static per-instruction overhead",                                                     \
    "docs/hardware.md: Engines, per-instruction cost (60-100 cycles static overhead; low end)")  \
  X(sem_latency_cycles, uint32_t, 0, "sem_latency", cycles, "cycles", cycles(), sim,              \
    what " latency from a satisfied semaphore wait to issue",                                    \
    "no public figure; chosen: 0, the issue cost is in overhead")

#define TRNSIM_TENSOR_SEQUENCER_PARAMS(X)                                                         \
  TRNSIM_SEQUENCER_PARAMS(X, "Tensor Engine", 2.4e9,                                              \
    "docs/hardware.md: NeuronCore generations, Tensor Engine clock (NC-v3)")
#define TRNSIM_VECTOR_SEQUENCER_PARAMS(X)                                                         \
  TRNSIM_SEQUENCER_PARAMS(X, "Vector Engine", 0.96e9,                                             \
    "docs/hardware.md: NeuronCore generations, Vector Engine clock (NC-v3)")
#define TRNSIM_SCALAR_SEQUENCER_PARAMS(X)                                                         \
  TRNSIM_SEQUENCER_PARAMS(X, "Scalar Engine", 1.2e9,                                              \
    "docs/hardware.md: NeuronCore generations, Scalar Engine clock (NC-v3)")
#define TRNSIM_GPSIMD_SEQUENCER_PARAMS(X)                                                         \
  TRNSIM_SEQUENCER_PARAMS(X, "GpSimd Engine", 1.2e9,                                              \
    "docs/hardware.md: NeuronCore generations, GpSimd Engine clock (NC-v3)")
#define TRNSIM_SYNC_SEQUENCER_PARAMS(X)                                                           \
  TRNSIM_SEQUENCER_PARAMS(X, "Sync engine (DMA-triggering sequencer)", 1.2e9,                     \
    "no public figure; chosen: the Scalar and GpSimd clock of the generation")

#define TRNSIM_TENSOR_ENGINE_PARAMS(X)                                                            \
  X(rows, uint32_t, 128, "rows", count, "PEs", range(1, 128), sim,                                \
    "PE array rows, along the contraction K (a matmul with K > rows folds into passes)",         \
    "docs/hardware.md: NeuronCore generations, Tensor Engine array 128 x 128")                    \
  X(cols, uint32_t, 128, "cols", count, "PEs", range(1, 128), sim,                                \
    "PE array columns, along the stationary free size M (M > cols folds into passes)",           \
    "docs/hardware.md: NeuronCore generations, Tensor Engine array 128 x 128")                    \
  X(fp32_slowdown, uint32_t, 4, "fp32_slowdown", count, "x", factor(), both,                      \
    "passes an fp32 matmul takes relative to bf16",                                              \
    "docs/hardware.md: Engines, Tensor Engine (fp32 inputs about 4x slower)")                     \
  X(fp8_double_row, bool, true, "fp8_double_row", boolean, "", any(), both,                       \
    "fp8 matmul contracts 2*rows per pass at bf16 time (NC-v3+)",                                \
    "docs/hardware.md: Engines, Tensor Engine (fp8 double-row from NC-v3; fp8 peak 2x bf16)")     \
  X(max_moving_free, uint32_t, 512, "max_moving_free", count, "elements", at_least(1), both,      \
    "largest moving free size N of one matmul (fp32 results fit one PSUM bank)",                 \
    "docs/hardware.md: Engines, Tensor Engine (N <= 512, one fp32 PSUM bank)")                    \
  X(background_load, bool, true, "background_load", boolean, "", any(), sim,                      \
    "load the next stationary tile during the previous multiply and overlap fill/drain of "      \
    "consecutive multiplies (off: each pass loads R cycles, streams and drains alone)",          \
    "docs/hardware.md: Engines, Tensor Engine (load-stationary runs in the background)")          \
  X(fast_load_speedup, uint32_t, 4, "fast_load_speedup", count, "x", factor(), sim,               \
    "background stationary load vs a multiply of the same free size: a tile of M columns "       \
    "loads in ceil(M / this) cycles",                                                            \
    "docs/hardware.md: Engines, Tensor Engine (fast load about 4x a multiply of the same size)")  \
  X(tile_size, uint32_t, 32, "tile_size", count, "PEs", range(1, 128), sim,                       \
    "array tiling: matmuls with K and M <= this run concurrently in min(rows, cols) / this "     \
    "tiles (= rows: no tiling; 64: 2x64; 32: 4x32)",                                             \
    "docs/hardware.md: Engines, Tensor Engine (array tiling 4 x 32 from NC-v3)")                  \
  X(throttle, bool, true, "throttle", boolean, "", any(), sim,                                    \
    "throughput throttling: ramp from throttle_start to full after idle",                        \
    "docs/hardware.md: Engines, Tensor Engine (throttling on trn2 and trn3)")                     \
  X(throttle_start, double, 0.5, "throttle_start", ratio, "fraction", positive_at_most(1), sim,   \
    "streaming throughput when the throttle ramp starts (fraction of peak)",                     \
    "docs/hardware.md: Engines, Tensor Engine (throttling starts at about 50 %)")                 \
  X(throttle_ramp_s, double, 3e-6, "throttle_ramp", time, "s", duration(), sim,                   \
    "time the throttle ramps from throttle_start to full throughput",                            \
    "docs/hardware.md: Engines, Tensor Engine (ramps to 100 % over about 3 us)")                  \
  X(throttle_idle_s, double, 3e-6, "throttle_idle", time, "s", positive_at_most(1), sim,          \
    "window of utilisation below throttle_reengage after which the ramp restarts",               \
    "docs/hardware.md: Engines, Tensor Engine (re-engages after about 3 us below 50 %)")          \
  X(throttle_reengage, double, 0.5, "throttle_reengage", ratio, "fraction", range(0, 1), sim,     \
    "array utilisation below which a throttle_idle window re-engages the throttle",              \
    "docs/hardware.md: Engines, Tensor Engine (re-engages after about 3 us below 50 %)")

#define TRNSIM_VECTOR_ENGINE_PARAMS(X)                                                            \
  X(reciprocal_slowdown, uint32_t, 8, "reciprocal_slowdown", count, "x", factor(), both,          \
    "Vector reciprocal cost per element relative to 1 element/cycle",                            \
    "docs/hardware.md: Engines, per-instruction cost (max(MIN_II, 8N) for a reciprocal)")         \
  X(perf_modes, bool, true, "perf_modes", boolean, "", any(), both,                               \
    "bf16 2x/4x performance modes for copies, tensor_scalar and tensor_tensor",                  \
    "docs/hardware.md: Engines, Vector Engine performance modes (trn2: 2x/4x bf16)")                   \
  X(bn_stats_max_free, uint32_t, 512, "bn_stats_max_free", count, "elements", range(1, 65536),    \
    compiler, "largest free size one bn_stats takes (the compiler splits longer rows)",          \
    "docs/hardware.md: Engines, Vector Engine (bn_stats: at most 512 elements per partition)")

#define TRNSIM_SCALAR_ENGINE_PARAMS(X)                                                            \
  X(func_switch_cycles, uint32_t, 128, "func_switch_cost", cycles, "cycles", cycles(), both,      \
    "cost of switching the activation function (loading another table)",                         \
    "no public figure (docs/hardware.md: Engines, Scalar Engine: a switch has a cost); "         \
    "chosen: 2 x MIN_II")

#define TRNSIM_GPSIMD_ENGINE_PARAMS(X)                                                            \
  X(start_cycles, uint32_t, 150, "start_cost", cycles, "cycles", cycles(), both,                  \
    "fixed start cost of iota and affine_select",                                                \
    "docs/hardware.md: Engines, per-instruction cost (150 + N for GpSimd iota, affine_select)")

// clang-format on

namespace trnsim::models {

// Sequencer timing shared by every engine; each engine's params struct sets its
// own defaults from its sequencer rows.
struct engine_params {
  double clock_hz;              // engine clock [Hz]
  uint32_t min_ii_cycles;       // minimum initiation interval per instruction [cycles]
  uint32_t overhead_cycles;     // static per-instruction overhead [cycles]
  uint32_t sem_latency_cycles;  // semaphore wait-to-issue latency [cycles]
};

struct tensor_engine_params : engine_params {
  tensor_engine_params()
      : engine_params{} {TRNSIM_TENSOR_SEQUENCER_PARAMS(
            TRNSIM_PARAM_DEFAULT)} TRNSIM_TENSOR_ENGINE_PARAMS(TRNSIM_PARAM_FIELD)
};

struct vector_engine_params : engine_params {
  vector_engine_params()
      : engine_params{} {TRNSIM_VECTOR_SEQUENCER_PARAMS(
            TRNSIM_PARAM_DEFAULT)} TRNSIM_VECTOR_ENGINE_PARAMS(TRNSIM_PARAM_FIELD)
};

struct scalar_engine_params : engine_params {
  scalar_engine_params()
      : engine_params{} {TRNSIM_SCALAR_SEQUENCER_PARAMS(
            TRNSIM_PARAM_DEFAULT)} TRNSIM_SCALAR_ENGINE_PARAMS(TRNSIM_PARAM_FIELD)
};

struct gpsimd_engine_params : engine_params {
  gpsimd_engine_params()
      : engine_params{} {TRNSIM_GPSIMD_SEQUENCER_PARAMS(
            TRNSIM_PARAM_DEFAULT)} TRNSIM_GPSIMD_ENGINE_PARAMS(TRNSIM_PARAM_FIELD)
};

struct sync_engine_params : engine_params {
  sync_engine_params() : engine_params{} { TRNSIM_SYNC_SEQUENCER_PARAMS(TRNSIM_PARAM_DEFAULT) }
};

}  // namespace trnsim::models
