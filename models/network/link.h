// A link: one direction of a channel that moves bytes at a bandwidth after a
// latency. Transfers that overlap in time share its bandwidth (contention): the
// collective engine gives every transfer in flight a max-min fair share of each
// resource on its route, so two transfers on one link each get half of it unless
// one is held back elsewhere. Modelled: bandwidth, latency, fair sharing, bytes,
// transfers and busy time. Not modelled: packets, flow control, credit stalls,
// link errors, priorities.
//
// The same block stands for every resource a collective's transfer crosses: a
// chip-to-chip link, the intra-chip path, a node's network port, and the sending
// core's DMA (models/network/topology.h).
#pragma once

#include <cstdint>
#include <string>

namespace trnsim::models::network {

struct link_params {
  double bandwidth_bps = 1e9;  // bytes per second; > 0
  double latency_s = 0;        // a transfer's data arrives this long after it drains
};

struct link_stats {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
  double busy_s = 0;       // time with at least one transfer on the link
  double contended_s = 0;  // time with two or more sharing it
};

class Link {
 public:
  // Throws std::invalid_argument for a bandwidth <= 0 or a negative latency.
  Link(std::string name, link_params p);

  const std::string& name() const { return name_; }
  const link_params& params() const { return p_; }
  const link_stats& stats() const { return stats_; }
  // A transfer of `bytes` finished on the link.
  void count_transfer(uint64_t bytes);
  // The link carried at least one transfer for `dt` seconds.
  void add_busy(double dt) { stats_.busy_s += dt; }
  // The link carried two or more transfers at once for `dt` seconds.
  void add_contended(double dt) { stats_.contended_s += dt; }

 private:
  std::string name_;
  link_params p_;
  link_stats stats_;
};

}  // namespace trnsim::models::network
