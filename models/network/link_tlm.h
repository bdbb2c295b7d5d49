// A link as a SystemC/TLM-2.0 block: one direction of a channel, with a target
// socket `in` for transfers offered to it and an initiator socket `out` toward its
// far end (the next link of a route or the receiving rank). Any block with a
// tlm_utils-compatible target socket can stand in for it (an RTL team's link or
// switch): transfers are plain tlm_generic_payload writes, loosely timed.
//
// Protocol: b_transport(payload, delay) offers the payload's data_length bytes
// whose first byte is at the link at sc_time_stamp() + delay. On return, delay is
// the offset from sc_time_stamp() at which the last byte reached the far end (the
// later of what the far end returns and this link's own finish plus latency). An
// optional link_transfer_ext carries the time the upstream stage finished sending
// (a link cannot drain a transfer before what feeds it has), and is updated to this
// link's own finish plus its latency for the next stage.
//
// Modelled: serialization at params.bandwidth_bps, params.latency_s from a byte
// leaving to it arriving, cut-through between stages (a route moves at its slowest
// stage, as the analytic model's transfers do), contention between transfers that
// overlap on the link, packets, and per-link bytes, transfers, busy and queued time.
// With packets of P bytes (network.tlm_packet; 0: whole transfers) a transfer is
// cut into P-byte packets (the last one shorter), placed in order in the link's
// idle time from the transfer's head on: each idle gap takes as many whole packets
// as fit (a gap shorter than a packet is skipped), so a transfer fills the gaps
// earlier transfers left, and drains with its last packet. Without packets a
// transfer is served whole in the earliest idle stretch long enough for it. Either
// way two transfers offered at once finish at B/bw and 2B/bw, which drains both at
// the time max-min fair sharing does, and a transfer offered later for an earlier,
// still idle stretch takes it, so loosely timed callers need not offer transfers
// in time order. Placement costs O(gaps touched), not O(packets). Not modelled:
// round-robin interleaving of packets of transfers offered at once (the later one
// waits, with packets or not), packet headers, flow control and credits, link
// errors, priorities, and the time of the response path.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <cstdint>
#include <map>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/bandwidth.h"
#include "models/network/link.h"

namespace trnsim::models::network {

// One link's share of a transfer (link_transfer_ext::record): its bytes flowed on
// `link` from `start` to `drain` (absolute).
struct link_span {
  const class link_tlm* link = nullptr;
  sc_core::sc_time start, drain;
};

// What a transfer carries besides its bytes: when its last byte left the previous
// stage plus that stage's latency (absolute time), and what the receiver does with
// the data (a reduce step adds it to its own buffer; else it copies). `record`
// (when set): each link it crosses appends its span, in route order.
struct link_transfer_ext : tlm::tlm_extension<link_transfer_ext> {
  sc_core::sc_time tail = sc_core::SC_ZERO_TIME;
  bool reduce = false;
  std::vector<link_span>* record = nullptr;
  tlm::tlm_extension_base* clone() const override { return new link_transfer_ext(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override {
    *this = static_cast<const link_transfer_ext&>(e);
  }
};

struct link_tlm_stats {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
  sc_core::sc_time busy;  // serializing
  // Summed over transfers: head to last packet's end minus its own serializing, the
  // time it waited for other transfers (before its first packet and between packets).
  sc_core::sc_time queued;
};

class link_tlm : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<link_tlm> in;
  tlm_utils::simple_initiator_socket<link_tlm> out;

  // Throws std::invalid_argument for a bandwidth <= 0 or a negative latency.
  // packet_bytes: the packet size (0: whole transfers).
  link_tlm(const sc_core::sc_module_name& name, link_params p, uint64_t packet_bytes = 0);

  const link_params& params() const { return p_; }
  uint64_t packet_bytes() const { return packet_; }
  link_tlm_stats stats() const;
  // Drops the link's reservations that end by `t` (no transfer offered from then on
  // can use them): keeps a long run's bookkeeping small.
  void forget_before(const sc_core::sc_time& t);

 private:
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay);

  struct placement {
    sc_core::sc_time start, end;  // first packet's start, last packet's end
    sc_core::sc_time busy;        // serializing, summed over the pieces
  };
  // Reserves `bytes` in packets in the idle time from `head` on (above).
  placement place(const sc_core::sc_time& head, uint64_t bytes);
  // Moves t past the reservation holding it; returns the first reservation after t.
  std::map<sc_core::sc_time, sc_core::sc_time>::iterator idle_from(sc_core::sc_time& t);
  // The most bytes, whole packets of `pkt` or all `left`, that serialize within `gap`.
  uint64_t fit(const sc_core::sc_time& gap, uint64_t left, uint64_t pkt) const;
  // Books [s, e), merged with the reservations it touches.
  void reserve(const sc_core::sc_time& s, const sc_core::sc_time& e);

  link_params p_;
  uint64_t packet_;
  sc_core::sc_time latency_;
  bandwidth_resource res_;                             // the rate (durations)
  std::map<sc_core::sc_time, sc_core::sc_time> busy_;  // reservations: start -> end
  link_tlm_stats stats_;
};

}  // namespace trnsim::models::network
