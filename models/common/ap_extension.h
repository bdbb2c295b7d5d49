// TLM-2.0 extension that carries a whole access pattern in one transaction, so an
// engine moves an operand with one b_transport instead of one per element. The
// generic payload's data pointer holds the elements packed in iteration order
// (raw bytes of ap.dtype); its length is ap.bytes(). This payload + extension is
// the interface a replacement block (e.g. RTL behind an adapter) must accept.
#pragma once

#include <cstdint>
#include <string>
#include <tlm>

#include "models/isa/access_pattern.h"

namespace trnsim::models {

struct ap_extension : tlm::tlm_extension<ap_extension> {
  isa::AccessPattern ap;     // hbm offsets are absolute here (the DMA adds the base)
  bool accumulate = false;   // write: add fp32 values to the memory (PSUM matmul)
  bool timing_only = false;  // no data moves; only timing is computed
  std::string error;         // set by a target on an error response
  sc_core::sc_time port_stall = sc_core::SC_ZERO_TIME;  // set by a target: wait for a
                                                        // port held by another initiator

  tlm::tlm_extension_base* clone() const override { return new ap_extension(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override {
    *this = static_cast<const ap_extension&>(e);
  }
};

// Issue one access-pattern transaction through `socket` (any initiator socket).
// Throws std::runtime_error with the target's message on an error response.
// `delay` is the LT local time offset: the access is offered at now + delay and on
// return it is the completion offset. `stall` (optional) accumulates port stalls.
template <class Socket>
void ap_transport(Socket& socket, tlm::tlm_command cmd, const isa::AccessPattern& ap, uint8_t* data,
                  sc_core::sc_time& delay, bool accumulate = false, bool timing_only = false,
                  sc_core::sc_time* stall = nullptr);

void check_response(tlm::tlm_generic_payload& gp, const ap_extension& ext, const char* what);

template <class Socket>
void ap_transport(Socket& socket, tlm::tlm_command cmd, const isa::AccessPattern& ap, uint8_t* data,
                  sc_core::sc_time& delay, bool accumulate, bool timing_only,
                  sc_core::sc_time* stall) {
  ap_extension ext;
  ext.ap = ap;
  ext.accumulate = accumulate;
  ext.timing_only = timing_only;
  tlm::tlm_generic_payload gp;
  gp.set_command(cmd);
  gp.set_address(ap.offset);
  gp.set_data_ptr(data);
  gp.set_data_length(static_cast<unsigned>(timing_only ? 0 : ap.bytes()));
  gp.set_streaming_width(gp.get_data_length());
  gp.set_byte_enable_ptr(nullptr);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp.set_extension(&ext);
  socket->b_transport(gp, delay);
  gp.clear_extension(&ext);
  if (stall) *stall += ext.port_stall;
  check_response(gp, ext, cmd == tlm::TLM_READ_COMMAND ? "read" : "write");
}

}  // namespace trnsim::models
