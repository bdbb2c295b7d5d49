#include "models/network/link_tlm.h"

#include <stdexcept>

#include "models/common/sim_time.h"

namespace trnsim::models::network {

namespace {
link_params checked(const std::string& name, link_params p) {
  if (!(p.bandwidth_bps > 0))
    throw std::invalid_argument("link " + name + ": bandwidth must be > 0");
  if (!(p.latency_s >= 0)) throw std::invalid_argument("link " + name + ": latency must be >= 0");
  return p;
}
}  // namespace

link_tlm::link_tlm(const sc_core::sc_module_name& name, link_params p)
    : sc_module(name),
      in("in"),
      out("out"),
      p_(checked(basename(), p)),
      latency_(seconds_to_time(p_.latency_s)),
      res_(p_.bandwidth_bps) {
  in.register_b_transport(this, &link_tlm::b_transport);
}

link_tlm_stats link_tlm::stats() const {
  link_tlm_stats s = stats_;
  s.busy = res_.busy();
  return s;
}

void link_tlm::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time head = now + delay;
  const uint64_t bytes = t.get_data_length();
  link_transfer_ext* ext = nullptr;
  t.get_extension(ext);
  // First come first served: the transfer starts when the link is free, and cannot
  // finish before the stage feeding it has (cut-through).
  const sc_core::sc_time start = res_.next_free() > head ? res_.next_free() : head;
  sc_core::sc_time end = res_.reserve(head, bytes);
  if (ext && ext->tail > end) end = ext->tail;
  stats_.bytes += bytes;
  stats_.transfers += 1;
  stats_.queued += start - head;
  if (ext) ext->tail = checked_time(end + latency_);
  // The first byte reaches the far end a latency after it left.
  sc_core::sc_time d = checked_time(start + latency_) - now;
  out->b_transport(t, d);
  if (t.is_response_error()) return;
  // Done when the far end says so, and never before this link's last byte arrived.
  const sc_core::sc_time last = checked_time(end + latency_) - now;
  delay = d > last ? d : last;
}

}  // namespace trnsim::models::network
