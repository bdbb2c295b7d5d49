#include "models/network/network_tlm.h"

#include <cctype>
#include <limits>
#include <stdexcept>
#include <utility>

#include "models/common/sim_time.h"

namespace trnsim::models::network {

tlm_fabric::tlm_fabric(const sc_core::sc_module_name& name)
    : sc_module(name), in("in"), out("out") {
  in.register_b_transport(this, &tlm_fabric::b_transport);
}

void tlm_fabric::b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
  route_ext* r = nullptr;
  t.get_extension(r);
  if (!r) {
    t.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  if (r->next == r->hops.size()) {  // delivered
    t.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const uint32_t k = r->hops[r->next++];
  if (k >= out.size()) {
    t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  out[static_cast<int>(k)]->b_transport(t, delay);
}

namespace {
// SystemC names hold no '.', '+' or '-': "node0.chip1.linkx+" -> "node0_chip1_linkx_p".
std::string module_name(const std::string& s) {
  std::string m;
  for (char c : s) {
    if (c == '+')
      m += "_p";
    else if (c == '-')
      m += "_m";
    else
      m += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  return m;
}
}  // namespace

tlm_network::tlm_network(const sc_core::sc_module_name& name, const topology_params& p)
    : sc_module(name), topo_(p), fabric_("fabric"), drv_("drv") {
  for (const Link& l : topo_.links()) {
    index_[&l] = static_cast<uint32_t>(links_.size());
    links_.push_back(std::make_unique<link_tlm>(module_name(l.name()).c_str(), l.params(),
                                                p.net.tlm_packet_bytes));
  }
  for (auto& l : links_) {
    fabric_.out.bind(l->in);
    l->out.bind(fabric_.in);
  }
  drv_.bind(fabric_.in);
}

std::vector<uint32_t> tlm_network::route(uint32_t src, uint32_t dst, int dir) {
  std::vector<uint32_t> hops;
  for (Link* l : topo_.route(src, dst, dir)) hops.push_back(index_.at(l));
  return hops;
}

sc_core::sc_time tlm_network::transfer(const std::vector<uint32_t>& hops, size_t from,
                                       uint64_t bytes, bool reduce, sc_core::sc_time head,
                                       sc_core::sc_time tail, std::vector<link_span>* record) {
  if (bytes > std::numeric_limits<unsigned int>::max())
    throw std::invalid_argument("a transfer of " + std::to_string(bytes) +
                                " bytes exceeds what one TLM payload carries (4 GiB)");
  // Absolute times as annotated delays from SystemC's time (which the chip's own
  // scheduler leaves behind: models::now() may be later).
  const sc_core::sc_time base = sc_core::sc_time_stamp();
  if (head < base) head = base;
  tlm::tlm_generic_payload t;
  link_transfer_ext ext;
  route_ext route;
  route.hops.assign(hops.begin() + static_cast<std::ptrdiff_t>(from), hops.end());
  ext.tail = tail;
  ext.reduce = reduce;
  ext.record = record;
  t.set_command(tlm::TLM_WRITE_COMMAND);
  t.set_address(0);
  t.set_data_ptr(nullptr);
  t.set_data_length(static_cast<unsigned int>(bytes));
  t.set_streaming_width(static_cast<unsigned int>(bytes));
  t.set_byte_enable_ptr(nullptr);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  t.set_extension(&ext);
  t.set_extension(&route);
  sc_core::sc_time d = head - base;
  try {
    drv_->b_transport(t, d);
  } catch (...) {  // the payload must not free these stack extensions
    t.clear_extension(&ext);
    t.clear_extension(&route);
    throw;
  }
  t.clear_extension(&ext);
  t.clear_extension(&route);
  if (!t.is_response_ok()) throw std::runtime_error(t.get_response_string());
  const sc_core::sc_time arrival = base + d;
  return arrival > tail ? arrival : tail;
}

}  // namespace trnsim::models::network
