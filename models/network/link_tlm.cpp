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
  return stats_;
}

void link_tlm::forget_before(const sc_core::sc_time& t) {
  while (!busy_.empty() && busy_.begin()->second <= t) busy_.erase(busy_.begin());
}

sc_core::sc_time link_tlm::place(const sc_core::sc_time& head, const sc_core::sc_time& d) {
  sc_core::sc_time s = head;
  auto it = busy_.upper_bound(s);
  if (it != busy_.begin()) {
    const auto p = std::prev(it);
    if (p->second > s) s = p->second;
  }
  // Past every reservation that would overlap [s, s + d).
  while (it != busy_.end() && it->first < checked_time(s + d)) {
    if (it->second > s) s = it->second;
    ++it;
  }
  if (d == sc_core::SC_ZERO_TIME) return s;
  const sc_core::sc_time e = checked_time(s + d);
  // Merge with the neighbours it touches, so back-to-back transfers stay one entry.
  sc_core::sc_time lo = s, hi = e;
  auto next = busy_.lower_bound(s);
  if (next != busy_.begin()) {
    const auto p = std::prev(next);
    if (p->second == s) {
      lo = p->first;
      busy_.erase(p);
    }
  }
  next = busy_.find(e);
  if (next != busy_.end()) {
    hi = next->second;
    busy_.erase(next);
  }
  busy_[lo] = hi;
  return s;
}

void link_tlm::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time head = now + delay;
  const uint64_t bytes = t.get_data_length();
  link_transfer_ext* ext = nullptr;
  t.get_extension(ext);
  // The earliest idle stretch from its head on; it cannot finish before the stage
  // feeding it has (cut-through).
  const sc_core::sc_time dur = res_.duration(bytes);
  const sc_core::sc_time start = place(head, dur);
  sc_core::sc_time end = checked_time(start + dur);
  if (ext && ext->tail > end) end = ext->tail;
  stats_.busy += dur;
  stats_.bytes += bytes;
  stats_.transfers += 1;
  stats_.queued += start - head;
  if (ext && ext->record) ext->record->push_back({this, start, end});
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
