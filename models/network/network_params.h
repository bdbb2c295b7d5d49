// Parameters of the scale-out network, one row each (models/common/params.h): how
// many chips a node has and how they are wired (a ring, or a 2-D torus), the
// chip-to-chip links, the path between cores of one chip, and the network between
// nodes. Defaults are the trn2.48xlarge figures of docs/hardware.md ("Scale-out").
#pragma once

#include <cstdint>

#include "models/common/params.h"

// clang-format off

#define TRNSIM_NETWORK_PARAMS(X)                                                                  \
  X(chips, uint32_t, 16, "chips", count, "chips", range(1, 4096), sim, "chips per node",          \
    "docs/hardware.md: Scale-out, trn2.48xlarge has 16 Trainium2 chips")                          \
  X(torus_x, uint32_t, 4, "torus_x", count, "chips", range(1, 4096), sim,                         \
    "chips along the first torus dimension; torus_x x torus_y = chips",                          \
    "docs/hardware.md: Scale-out, trn2 chips form a 4 x 4 2-D torus")                             \
  X(torus_y, uint32_t, 4, "torus_y", count, "chips", range(1, 4096), sim,                         \
    "chips along the second torus dimension; 1 makes the chips one ring",                        \
    "docs/hardware.md: Scale-out, trn2 chips form a 4 x 4 2-D torus")                             \
  X(links_per_chip, uint32_t, 4, "links_per_chip", count, "links", range(0, 1024), sim,           \
    "chip-to-chip links leaving a chip: 2 per torus dimension longer than 1 chip",               \
    "docs/hardware.md: Scale-out, a 2-D torus gives each chip 4 neighbours")                      \
  X(link_bandwidth_bps, double, 320e9, "link_bandwidth", bandwidth, "B/s", bandwidth(), sim,      \
    "bandwidth of one chip-to-chip link, per direction",                                         \
    "docs/hardware.md: Scale-out, 1.28 TB/s per trn2 chip over 4 links = 320 GB/s per link")      \
  X(link_latency_s, double, 1e-6, "link_latency", time, "s", duration(), sim,                     \
    "time from a transfer's first byte leaving a chip to it arriving at the neighbour",          \
    "no public figure; chosen: docs/hardware.md: Scale-out, the order of a DMA start plus a hop") \
  X(chip_local_bandwidth_bps, double, 3.5e12, "chip_local_bandwidth", bandwidth, "B/s",           \
    bandwidth(), sim,                                                                            \
    "bandwidth of the path between cores of one chip (a copy through the chip's DMA), shared "  \
    "by every intra-chip transfer of the chip",                                                  \
    "docs/hardware.md: Scale-out, the trn2 chip DMA bandwidth (3.5 TB/s)")                        \
  X(chip_local_latency_s, double, 600e-9, "chip_local_latency", time, "s", duration(), sim,        \
    "latency of one transfer between cores of one chip",                                         \
    "chosen: docs/hardware.md: Scale-out, a DMA start (600 ns)")                                  \
  X(nodes, uint32_t, 1, "nodes", count, "nodes", range(1, 4096), sim,                             \
    "nodes (instances), joined by the inter-node network",                                      \
    "chosen: one node; set it to model several instances")                                       \
  X(node_bandwidth_bps, double, 400e9, "node_bandwidth", bandwidth, "B/s", bandwidth(), sim,      \
    "inter-node network bandwidth of one node, per direction, shared by its chips",             \
    "docs/hardware.md: Scale-out, 3.2 Tbps EFA per trn2.48xlarge = 400 GB/s")                     \
  X(node_latency_s, double, 10e-6, "node_latency", time, "s", duration(), sim,                    \
    "latency of one transfer between nodes",                                                     \
    "no public figure; chosen: docs/hardware.md: Scale-out, the order of an RDMA message")  \
  X(collective_dma_engines, uint32_t, 16, "collective_dma_engines", count, "engines",            \
    range(1, 1024), sim,                                                                         \
    "DMA engines of a rank's core that carry its collectives' transfers (at most core.dma."     \
    "engines); their time and the core's shared DMA rate are taken from compute DMA",           \
    "no public figure; chosen: every engine of a core (docs/hardware.md: DMA, 16 per core), "   \
    "as the engines are shared between compute and communication")                            \
  X(tlm_packet_bytes, uint64_t, 4096, "tlm_packet", size, "B", range(0, 1 << 30), sim,            \
    "packet size of the TLM links (network.model tlm): a transfer is cut into packets that "    \
    "fill the idle gaps other transfers left on a link; 0 serves each transfer whole",          \
    "no public figure; chosen: 4 KiB, a page, the order of a network MTU (a smaller packet "    \
    "fills more gaps)")

// clang-format on

namespace trnsim::models {

// What times the collectives of `trnsim run` (the `network.model` choice key,
// platform/config_schema.cpp): the analytic fair-sharing model
// (collective_engine.h) or the SystemC/TLM link blocks (network_tlm.h).
enum class NetworkModel : uint32_t { analytic, tlm };

struct network_params {
  TRNSIM_NETWORK_PARAMS(TRNSIM_PARAM_FIELD)
  NetworkModel model = NetworkModel::analytic;  // a choice key, not a row: no unit
};

}  // namespace trnsim::models
