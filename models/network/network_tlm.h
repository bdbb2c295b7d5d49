// A network of TLM links (link_tlm.h) for whole collectives: every resource of a
// Topology (each rank's DMA stage, each chip's intra-chip path, each torus link,
// each node's network ports; topology.h) is one link_tlm, joined by a fabric that
// passes a transfer from the far end of one link to the next link of its route.
// A collective's schedule (plan_collective / plan_direct, collective_engine.h: the
// ring, the dimension-wise torus, the point-to-point exchanges) runs on it as TLM
// writes, so every algorithm and path the analytic model has runs here too.
//
// The chips' collective engines (collective_engine_tlm.h: trnsim run, collbench and
// the tests) are its one driver: they send each transfer with transfer().
//
// Timing: loosely timed. transfer() is one b_transport over the links it is given
// (the engines give one link at a time, when the transfer's head reaches it), with
// the head as the annotated delay; each link places its packets (network.tlm_packet)
// in its idle time from then on and returns its arrival (link_tlm.h). The links keep their
// reservations between collectives: a transfer reaching a link another collective holds waits for
// it (contention between collectives). Where transfers meet on a resource (the torus's two halves
// on a rank's DMA stage, the ranks of one chip on its intra-chip path, a ring step leaving before
// the previous one has drained) TLM serves them one after the other and the analytic model side by
// side at fair shares: single transfers end earlier or later, the resource's work is the same.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <unordered_map>
#include <vector>

#include "models/network/collective_engine.h"
#include "models/network/link_tlm.h"
#include "models/network/topology.h"

namespace trnsim::models::network {

// The links a transfer still has to cross (indices into tlm_network::links()).
struct route_ext : tlm::tlm_extension<route_ext> {
  std::vector<uint32_t> hops;
  size_t next = 0;
  tlm::tlm_extension_base* clone() const override { return new route_ext(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override {
    *this = static_cast<const route_ext&>(e);
  }
};

// Joins the links: a transfer arriving (from the driver or a link's far end) goes
// on to the next link of its route_ext, or, at the end of its route, is delivered
// (TLM_OK_RESPONSE, its delay the arrival). No time of its own.
class tlm_fabric : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<tlm_fabric> in;
  tlm_utils::multi_passthrough_initiator_socket<tlm_fabric> out;  // out[k]: link k

  explicit tlm_fabric(const sc_core::sc_module_name& name);

 private:
  void b_transport(int id, tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
};

class tlm_network : public sc_core::sc_module {
 public:
  // The links of topology `p` (its ranks are the network's ranks). Build before
  // SystemC elaboration ends. Throws std::invalid_argument as Topology does.
  tlm_network(const sc_core::sc_module_name& name, const topology_params& p);

  // The links (indices into link()) a transfer from network rank `src` to `dst`
  // crosses, the sender's DMA first; `dir` as Topology::route's.
  std::vector<uint32_t> route(uint32_t src, uint32_t dst, int dir);
  // One transfer of `bytes` over links hops[from..]: its first byte at the first of
  // them at `head`, the stage feeding it done at `tail` (absolute times, not before
  // sc_time_stamp()). Returns when its last byte arrived (absolute). Throws
  // std::invalid_argument past 4 GiB and std::runtime_error when a link answers
  // with an error. `record` (may be null): the links' spans, in route order.
  sc_core::sc_time transfer(const std::vector<uint32_t>& hops, size_t from, uint64_t bytes,
                            bool reduce, sc_core::sc_time head, sc_core::sc_time tail,
                            std::vector<link_span>* record = nullptr);

  const Topology& topology() const { return topo_; }
  size_t size() const { return links_.size(); }
  const link_tlm& link(size_t k) const { return *links_[k]; }
  link_tlm& link(size_t k) { return *links_[k]; }
  // The Topology's name of link k ("node0.chip1.linkx+", "rank3.dma").
  const std::string& link_name(size_t k) const { return topo_.links()[k].name(); }

 private:
  Topology topo_;
  std::unordered_map<const Link*, uint32_t> index_;
  std::vector<std::unique_ptr<link_tlm>> links_;
  tlm_fabric fabric_;
  tlm_utils::simple_initiator_socket<tlm_network> drv_;
};

}  // namespace trnsim::models::network
