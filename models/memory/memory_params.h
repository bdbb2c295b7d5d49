// Parameters of the memories and the DMA engines, one row each
// (models/common/params.h). Defaults are the trn2 (NC-v3) figures of
// docs/hardware.md.
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/common/params.h"
#include "models/isa/limits.h"

namespace trnsim::models::checks {
// Up to the ISA's HBM address space.
inline constexpr Check hbm_size() {
  return Check{.min = 0, .min_exclusive = true, .max = double(isa::kMaxHbmBytes)};
}
}  // namespace trnsim::models::checks

// clang-format off

#define TRNSIM_SBUF_PARAMS(X)                                                                     \
  X(partitions, uint32_t, 128, "partitions", count, "partitions", partitions(), both,             \
    "SBUF partitions", "docs/hardware.md: NeuronCore generations, SBUF 128 partitions")           \
  X(partition_bytes, uint64_t, 224 * 1024, "partition_size", size, "B", partition_size(), both,   \
    "SBUF bytes per partition",                                                                  \
    "docs/hardware.md: NeuronCore generations, SBUF 28 MiB = 128 x 224 KiB (NC-v3)")              \
  X(clock_hz, double, 2.4e9, "clock", frequency, "Hz", clock(), sim, "SBUF port clock",           \
    "no public figure; chosen: the Tensor Engine clock, so one port streams a 128-row moving "   \
    "tile one column per Tensor Engine cycle")                                                   \
  X(port_elems_per_cycle, uint32_t, 128, "port_width", count, "elements/cycle", at_least(1), sim, \
    "elements per cycle per SBUF read or write port",                                            \
    "docs/hardware.md: Memories, SBUF peak 128 elements/cycle per port")                          \
  X(vector_gpsimd_shared_port, bool, false, "vector_gpsimd_shared_port", boolean, "", any(), sim, \
    "vector and GpSimd engines share one SBUF port (NC-v2)",                                     \
    "docs/hardware.md: Memories, the NC-v2 Vector/GpSimd SBUF port conflict (lifted in NC-v3)")

#define TRNSIM_PSUM_PARAMS(X)                                                                     \
  X(partitions, uint32_t, 128, "partitions", count, "partitions", partitions(), both,             \
    "PSUM partitions", "docs/hardware.md: NeuronCore generations, PSUM 128 partitions")           \
  X(partition_bytes, uint64_t, 16 * 1024, "partition_size", size, "B", partition_size(), both,    \
    "PSUM bytes per partition",                                                                  \
    "docs/hardware.md: NeuronCore generations, PSUM 2 MiB = 128 x 16 KiB")                        \
  /* Power of two so that a bank index is an address bit field. */                                \
  X(bank_bytes, uint64_t, 2 * 1024, "bank_size", size, "B",                                       \
    power_of_two(4, std::numeric_limits<double>::infinity()), both,                               \
    "PSUM bank bytes per partition",                                                             \
    "docs/hardware.md: NeuronCore generations, PSUM 8 banks x 2 KiB per partition")               \
  X(clock_hz, double, 2.4e9, "clock", frequency, "Hz", clock(), sim, "PSUM port clock",           \
    "no public figure; chosen: the Tensor Engine clock, which writes one result column per "     \
    "cycle")                                                                                     \
  X(port_elems_per_cycle, uint32_t, 128, "port_width", count, "elements/cycle", at_least(1), sim, \
    "elements per cycle per PSUM port", "no public figure; chosen: as SBUF (128 elements/cycle)") \
  X(vector_scalar_shared_port, bool, true, "vector_scalar_shared_port", boolean, "", any(), sim,  \
    "vector and scalar engines share one PSUM port",                                             \
    "docs/hardware.md: Memories, Vector and Scalar cannot access PSUM at the same time")          \
  X(shared_port_per_bank, bool, true, "shared_port_per_bank", boolean, "", any(), sim,            \
    "the vector/scalar PSUM port sharing applies only within one bank (NC-v3)",                  \
    "docs/hardware.md: Memories, NC-v3 lifts the conflict while they use different banks")

/* Storage is paged on first write: any size up to the ISA's limit costs only what */
/* programs touch. */
#define TRNSIM_HBM_PARAMS(X)                                                                      \
  X(size_bytes, uint64_t, 96ull << 30, "size", size, "B", hbm_size(), both,                       \
    "HBM capacity of the chip", "docs/hardware.md: Chips, HBM (96 GiB on trn2)")                  \
  X(bandwidth_bps, double, 2.9e12, "bandwidth", bandwidth, "B/s", bandwidth(), both,              \
    "peak HBM bandwidth of the chip, shared by all DMA engines",                                 \
    "docs/hardware.md: Chips, HBM (2.9 TB/s on trn2; another page says 3 TB/s, we take the "    \
    "lower)")                                                                                    \
  X(latency_s, double, 100e-9, "latency", time, "s", duration(), sim, "HBM access latency",       \
    "no public figure; chosen: the order of a DRAM row access plus the controller; the DMA "     \
    "fixed cost dominates anyway")                                                               \
  X(stacks, uint32_t, 4, "stacks", count, "stacks", range(1, 128), sim, "HBM stacks",             \
    "docs/hardware.md: Chips, HBM (4 stacks on trn2)")                                            \
  X(channels_per_stack, uint32_t, 16, "channels_per_stack", count, "channels", range(1, 1024),    \
    sim, "independent channels per stack; each serves bandwidth / (stacks x channels)",          \
    "no public trn2 figure; chosen: an HBM3 stack has 16 independent channels (JEDEC JESD238)")   \
  X(interleave_bytes, uint64_t, 256, "interleave", size, "B", power_of_two(1, 1 << 30), sim,      \
    "address interleaving granule: consecutive granules go to different channels",               \
    "no public figure (the hardware hashes addresses over channels); chosen: 4 x 64 B bursts, " \
    "so any run of >= channels x 256 B spreads over every channel")                              \
  X(channel_hash, bool, true, "channel_hash", boolean, "", any(), sim,                            \
    "rotate each block of granules' channel order by a hash of the block index (off: plain "     \
    "modulo interleaving, where power-of-two strides can pile onto one channel)",                \
    "no public figure (the hardware hashes addresses over channels); chosen: on")

/* DMA engine and queue numbers are 16 bits in the ISA. Queues cost only when a */
/* program uses them; engines are modules (cross_check bounds them per chip too). */
#define TRNSIM_DMA_PARAMS(X)                                                                      \
  X(engines, uint32_t, 16, "engines", count, "engines", range(1, 1024), both,                     \
    "DMA engines per core", "docs/hardware.md: NeuronCore generations, DMA engines per core")      \
  X(queues_per_engine, uint32_t, 16, "queues_per_engine", count, "queues", range(1, 65536), both, \
    "queues per DMA engine (served round-robin)",                                                \
    "docs/hardware.md: DMA, 16 queues per engine served round-robin")                             \
  X(bandwidth_bps, double, 23e9, "bandwidth", bandwidth, "B/s", bandwidth(), both,                \
    "rate at which one DMA engine moves a transfer's data",                                      \
    "docs/hardware.md: DMA, per engine (bandwidth table) 23 B/ns on trn2, which the measured "   \
    "32 KiB in 1416 ns (23.1 B/ns) confirms; the 27.2 GB/s 'theoretical' figure is not reached") \
  X(core_bandwidth_bps, double, 437.5e9, "core_bandwidth", bandwidth, "B/s", bandwidth(), both,   \
    "rate at which all DMA engines of a core together move data (they share it when their "      \
    "own rates add up to more)",                                                                 \
    "docs/hardware.md: Chips, chip DMA bandwidth 3.5 TB/s on trn2, over its 8 cores")            \
  X(core_descriptor_cost_s, double, 1.8e-9, "core_descriptor_cost", time, "s", duration(), both,   \
    "time of the core's shared DMA rate taken by each contiguous chunk (descriptor)",            \
    "fitted to docs/hardware.md: DMA, the trn2 tiled and hoisted matmul profiles (99.9 and "     \
    "99.7 % DMA active at 273 and 315 B/ns): 1.8 ns puts both within 6 points, 1.6 ns the "     \
    "hoisted one 10 points low, 2.0 ns the tiled one's TE 8 points low (scripts/calibrate.py)")  \
  X(fixed_cost_s, double, 0, "fixed_cost", time, "s", duration(), both,                           \
    "engine time per transfer beyond its descriptors and bytes (its start latency is apart)",    \
    "docs/hardware.md: DMA, 32 KiB on one trn2 engine in 1416 ns, 32768 B / 23 B/ns = 1424.7 "   \
    "ns: no fixed engine time is visible in a transfer's duration")                              \
  X(descriptor_cost_s, double, 1e-9, "descriptor_cost", time, "s", duration(), both,              \
    "engine time per contiguous chunk (descriptor) of a transfer",                               \
    "fitted to docs/hardware.md: DMA, a 2 KiB share of 8 x 256 B chunks moves in 97 ns on "      \
    "trn2: (97 - 2048 / 23) / 8 = 1.0 ns")                                                       \
  X(start_latency_s, double, 600e-9, "start_latency", time, "s", duration(), sim,                 \
    "from a dma_copy's issue (its waits met, a slot in its queue's window) to its data moving; "  \
    "overlaps other transfers",                                                                   \
    "docs/hardware.md: DMA, about 600 ns per hardware descriptor-generation instruction on trn2, " \
    "which generates a DMA's descriptors as it issues; the other figure, about 1.3 us from "     \
    "semaphore to start (generation not stated), makes trn2's DMA-bound published kernels 20-30 " \
    "% too slow (scripts/calibrate.py)")                                                          \
  X(queue_depth, uint32_t, 2, "queue_depth", count, "instructions", range(1, 1024), sim,          \
    "dma_copy instructions a queue keeps in flight (issued, not completed)",                     \
    "chosen: with 2, a transfer of >= start_latency x bandwidth (600 ns x 23 B/ns = 13.8 KB per " \
    "engine, about 2 KiB per partition) hides the next one's latency, where docs/hardware.md: "  \
    "DMA, Efficiency puts the knee (2 KiB recommended, 4 KiB saturates)")

// clang-format on

namespace trnsim::models {

struct sbuf_params {
  TRNSIM_SBUF_PARAMS(TRNSIM_PARAM_FIELD)
};

struct psum_params {
  TRNSIM_PSUM_PARAMS(TRNSIM_PARAM_FIELD)
};

struct hbm_params {
  TRNSIM_HBM_PARAMS(TRNSIM_PARAM_FIELD)
};

struct dma_params {
  TRNSIM_DMA_PARAMS(TRNSIM_PARAM_FIELD)

  // The most a core's engines move together: their summed rates, capped by the rate
  // they share.
  double core_rate_bps() const {
    return std::min(double(engines) * bandwidth_bps, core_bandwidth_bps);
  }
};

}  // namespace trnsim::models
