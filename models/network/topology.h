// Where the ranks of a collective sit and the links between them: R ranks, `per_chip`
// cores on each chip, chips filled in order, nodes filled in order. Chips of a node
// form a torus_x x torus_y 2-D torus (torus_y = 1: a ring); chip c sits at
// (c % torus_x, c / torus_x). Each chip has one link per direction per torus
// dimension; a transfer between chips follows dimension-order routing (x first,
// shortest way round, ties broken by the caller's direction) and crosses each link
// on the way. Cores of one chip talk over the chip's intra-chip path (one shared
// resource); nodes over their network ports (one out and one in per node). Every
// transfer also passes through the sending core's DMA, at its engines x per-engine
// bandwidth: collectives share the core's DMA (docs/hardware.md, Scale-out).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/network/link.h"
#include "models/network/network_params.h"

namespace trnsim::models::network {

struct topology_params {
  network_params net;
  uint32_t cores_per_chip = 1;  // chip.cores
  double dma_bps = 1e9;         // one core's DMA: core.dma.engines x core.dma.bandwidth
  uint32_t ranks = 1;
  uint32_t per_chip = 1;  // ranks on each chip used
};

// One core's DMA rate for collectives: the engines they may use
// (network.collective_dma_engines, at most the core's `engines`) x the per-engine
// bandwidth, within the core's shared rate.
double collective_dma_rate(const network_params& n, uint32_t engines, double engine_bps,
                           double core_bps);

struct rank_place {
  uint32_t core, chip, node;  // chip within its node
  uint32_t x, y;              // the chip's torus coordinates
};

class Topology {
 public:
  // Throws std::invalid_argument when the ranks do not fit (more per chip than
  // cores, not a multiple of per_chip, more chips than nodes x chips).
  explicit Topology(const topology_params& p);

  uint32_t ranks() const { return p_.ranks; }
  const topology_params& params() const { return p_; }
  const rank_place& place(uint32_t r) const { return places_[r]; }
  uint32_t chips_used() const { return chips_used_; }
  uint32_t nodes_used() const { return nodes_used_; }
  // The resources a transfer src -> dst crosses, the sender's DMA first. `dir` (+1
  // or -1) picks the way round a torus dimension when both are as short.
  std::vector<Link*> route(uint32_t src, uint32_t dst, int dir);
  // Every resource, for per-link statistics.
  const std::deque<Link>& links() const { return links_; }

 private:
  Link& add(std::string name, link_params p);

  topology_params p_;
  std::vector<rank_place> places_;
  uint32_t chips_used_ = 0, nodes_used_ = 0;
  std::deque<Link> links_;    // stable addresses
  std::vector<Link*> dma_;    // per rank
  std::vector<Link*> local_;  // per (node, chip)
  // per (node, chip, dimension, direction 0: +, 1: -)
  std::vector<Link*> torus_;
  std::vector<Link*> node_out_, node_in_;  // per node
};

}  // namespace trnsim::models::network
