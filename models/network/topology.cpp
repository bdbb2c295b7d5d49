#include "models/network/topology.h"

#include <algorithm>
#include <stdexcept>

namespace trnsim::models::network {

double collective_dma_rate(const network_params& n, uint32_t engines, double engine_bps,
                           double core_bps) {
  return std::min(double(std::min(n.collective_dma_engines, engines)) * engine_bps, core_bps);
}

Topology::Topology(const topology_params& p) : p_(p) {
  const network_params& n = p.net;
  if (p.ranks == 0) throw std::invalid_argument("ranks must be >= 1");
  if (p.per_chip == 0 || p.per_chip > p.cores_per_chip)
    throw std::invalid_argument("ranks per chip (" + std::to_string(p.per_chip) +
                                ") must be 1..chip.cores (" + std::to_string(p.cores_per_chip) +
                                ")");
  if (p.ranks % p.per_chip != 0)
    throw std::invalid_argument("ranks (" + std::to_string(p.ranks) +
                                ") must be a multiple of the ranks per chip (" +
                                std::to_string(p.per_chip) + ")");
  chips_used_ = p.ranks / p.per_chip;
  const uint64_t chips_total = uint64_t{n.chips} * n.nodes;
  if (chips_used_ > chips_total)
    throw std::invalid_argument(std::to_string(p.ranks) + " ranks at " +
                                std::to_string(p.per_chip) + " per chip need " +
                                std::to_string(chips_used_) + " chips; the network has " +
                                std::to_string(chips_total) + " (network.nodes x network.chips)");
  nodes_used_ = (chips_used_ + n.chips - 1) / n.chips;
  for (uint32_t r = 0; r < p.ranks; ++r) {
    const uint32_t g = r / p.per_chip;
    const uint32_t c = g % n.chips;
    places_.push_back({r % p.per_chip, c, g / n.chips, c % n.torus_x, c / n.torus_x});
  }
  for (uint32_t r = 0; r < p.ranks; ++r)
    dma_.push_back(&add("rank" + std::to_string(r) + ".dma", {p.dma_bps, 0}));
  for (uint32_t nd = 0; nd < nodes_used_; ++nd) {
    const std::string np = "node" + std::to_string(nd);
    for (uint32_t c = 0; c < n.chips; ++c) {
      const std::string cp = np + ".chip" + std::to_string(c);
      local_.push_back(&add(cp + ".local", {n.chip_local_bandwidth_bps, n.chip_local_latency_s}));
      for (const char* d : {"x", "y"})
        for (const char* s : {"+", "-"})
          torus_.push_back(&add(cp + ".link" + d + s, {n.link_bandwidth_bps, n.link_latency_s}));
    }
    node_out_.push_back(&add(np + ".out", {n.node_bandwidth_bps, n.node_latency_s}));
    node_in_.push_back(&add(np + ".in", {n.node_bandwidth_bps, 0}));
  }
}

Link& Topology::add(std::string name, link_params p) {
  return links_.emplace_back(std::move(name), p);
}

std::vector<Link*> Topology::route(uint32_t src, uint32_t dst, int dir) {
  const network_params& n = p_.net;
  std::vector<Link*> path{dma_[src]};
  const rank_place& a = places_[src];
  const rank_place& b = places_[dst];
  if (a.node != b.node) {
    path.push_back(node_out_[a.node]);
    path.push_back(node_in_[b.node]);
    return path;
  }
  if (a.chip == b.chip) {
    path.push_back(local_[a.node * n.chips + a.chip]);
    return path;
  }
  // Dimension-order routing, x then y.
  uint32_t x = a.x, y = a.y;
  const auto walk = [&](uint32_t& pos, uint32_t to, uint32_t size, uint32_t dim) {
    if (pos == to) return;
    const uint32_t fwd = (to + size - pos) % size;  // hops going +
    const uint32_t bwd = size - fwd;
    const bool plus = fwd < bwd || (fwd == bwd && dir > 0);
    for (uint32_t h = 0; h < (plus ? fwd : bwd); ++h) {
      const uint32_t chip = x + n.torus_x * y;
      path.push_back(torus_[((a.node * n.chips + chip) * 2 + dim) * 2 + (plus ? 0 : 1)]);
      pos = plus ? (pos + 1) % size : (pos + size - 1) % size;
    }
  };
  walk(x, b.x, n.torus_x, 0);
  walk(y, b.y, n.torus_y, 1);
  return path;
}

}  // namespace trnsim::models::network
