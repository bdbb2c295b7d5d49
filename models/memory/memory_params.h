// Parameters of the memories and the DMA engines. Plain structs with defaults and
// units; defaults are trn2 figures from shared/hardware.md.
#pragma once

#include <cstdint>

namespace trnsim::models {

struct sbuf_params {
  uint32_t partitions = 128;               // [partitions]
  uint64_t partition_bytes = 224 * 1024;   // [bytes] per partition
  double clock_hz = 1.4e9;                 // port clock [Hz]
  uint32_t port_elems_per_cycle = 128;     // elements per cycle per read/write port
  bool vector_gpsimd_shared_port = false;  // NC-v2: vector and GpSimd share one port
};

struct psum_params {
  uint32_t partitions = 128;               // [partitions]
  uint64_t partition_bytes = 16 * 1024;    // [bytes] per partition
  uint64_t bank_bytes = 2 * 1024;          // [bytes] per bank per partition
  double clock_hz = 1.4e9;                 // port clock [Hz]
  uint32_t port_elems_per_cycle = 128;     // elements per cycle per port
  bool vector_scalar_shared_port = false;  // NC-v2/v3: vector and scalar share a port ...
  bool shared_port_per_bank = false;       // ... NC-v3: only when both use the same bank
};

struct hbm_params {
  uint64_t size_bytes = 96ull << 30;  // capacity [bytes]
  double bandwidth_bps = 2.9e12;      // peak bandwidth shared by all DMA engines [bytes/s]
  double latency_s = 100e-9;          // access latency [s]
  uint32_t stacks = 4;                // HBM stacks
  uint32_t channels_per_stack = 16;   // independent channels per stack (HBM3: 16)
  uint64_t interleave_bytes = 256;    // address interleaving granule across channels [bytes]
};

struct dma_params {
  uint32_t engines = 16;              // DMA engines per core
  uint32_t queues_per_engine = 16;    // queues per DMA engine
  double bandwidth_bps = 27.2e9;      // per-engine bandwidth cap [bytes/s]
  double fixed_cost_s = 170e-9;       // start cost of every transfer (or share) [s]
  double descriptor_cost_s = 9.4e-9;  // per contiguous chunk [s]
};

}  // namespace trnsim::models
