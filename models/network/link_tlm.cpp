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

link_tlm::link_tlm(const sc_core::sc_module_name& name, link_params p, uint64_t packet_bytes)
    : sc_module(name),
      in("in"),
      out("out"),
      p_(checked(basename(), p)),
      packet_(packet_bytes),
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

std::map<sc_core::sc_time, sc_core::sc_time>::iterator link_tlm::idle_from(sc_core::sc_time& t) {
  auto it = busy_.upper_bound(t);
  if (it != busy_.begin()) {
    const auto p = std::prev(it);
    if (p->second > t) t = p->second;
  }
  // Reservations are merged when they touch, so this loop runs at most once.
  while (it != busy_.end() && it->first <= t) {
    if (it->second > t) t = it->second;
    ++it;
  }
  return it;
}

uint64_t link_tlm::fit(const sc_core::sc_time& gap, uint64_t left, uint64_t pkt) const {
  if (res_.duration(left) <= gap) return left;
  const uint64_t most = left / pkt;  // < the whole packets left when `left` does not fit
  // Estimate from the rate, then correct for the durations' rounding to the time
  // resolution (durations of byte counts, as a whole transfer's is).
  const double est = gap.to_seconds() * res_.rate() / static_cast<double>(pkt);
  uint64_t k = est >= static_cast<double>(most) ? most : static_cast<uint64_t>(est);
  while (k > 0 && res_.duration(k * pkt) > gap) --k;
  while (k < most && res_.duration((k + 1) * pkt) <= gap) ++k;
  return k * pkt;
}

void link_tlm::reserve(const sc_core::sc_time& s, const sc_core::sc_time& e) {
  // Merge with the neighbours it touches, so back-to-back pieces stay one entry.
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
}

link_tlm::placement link_tlm::place(const sc_core::sc_time& head, uint64_t bytes) {
  placement r;
  sc_core::sc_time s = head;
  auto it = idle_from(s);
  r.start = r.end = s;
  if (bytes == 0) return r;
  // A transfer no longer than a packet, or without packets, is one piece.
  const uint64_t pkt = packet_ == 0 || packet_ > bytes ? bytes : packet_;
  uint64_t left = bytes;
  bool first = true;
  // One iteration per idle gap [s, it->first) (the last one unbounded).
  for (;;) {
    const uint64_t take = it == busy_.end() ? left : fit(it->first - s, left, pkt);
    if (take > 0) {
      const sc_core::sc_time d = res_.duration(take);
      const sc_core::sc_time e = checked_time(s + d);
      if (first) r.start = s;
      first = false;
      reserve(s, e);  // may erase `it`: found again below
      r.busy += d;
      r.end = e;
      left -= take;
      if (left == 0) return r;
      s = e;
    } else {
      s = it->second;
    }
    it = idle_from(s);
  }
}

void link_tlm::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time head = now + delay;
  const uint64_t bytes = t.get_data_length();
  link_transfer_ext* ext = nullptr;
  t.get_extension(ext);
  // Its packets in the idle time from its head on; it cannot finish before the stage
  // feeding it has (cut-through).
  const placement pl = place(head, bytes);
  const sc_core::sc_time start = pl.start;
  sc_core::sc_time end = pl.end;
  if (ext && ext->tail > end) end = ext->tail;
  stats_.busy += pl.busy;
  stats_.bytes += bytes;
  stats_.transfers += 1;
  stats_.queued += pl.end - head - pl.busy;
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
