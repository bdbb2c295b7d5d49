#include "models/network/link.h"

#include <stdexcept>
#include <utility>

namespace trnsim::models::network {

Link::Link(std::string name, link_params p) : name_(std::move(name)), p_(p) {
  if (!(p_.bandwidth_bps > 0))
    throw std::invalid_argument("link " + name_ + ": bandwidth must be > 0");
  if (!(p_.latency_s >= 0)) throw std::invalid_argument("link " + name_ + ": latency must be >= 0");
}

void Link::count_transfer(uint64_t bytes) {
  stats_.bytes += bytes;
  stats_.transfers += 1;
}

}  // namespace trnsim::models::network
