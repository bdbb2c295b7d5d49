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
  // Set by DMA engines (kept across accesses): an SBUF/PSUM port moves 32-bit words
  // per partition per cycle for them, whatever the element type; engines stream
  // elements. (trn2 moves 32 KiB of bf16 into 4 partitions at the engine's 23 B/ns,
  // docs/hardware.md: DMA, faster than one bf16 element per partition per cycle.)
  bool words = false;
  std::string error;                                    // set by a target on an error response
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

// A payload and its extension, kept by an initiator that has one access in flight
// at a time and reused for every access: no allocation per access.
struct ap_payload {
  ap_payload() { gp.set_extension(&ext); }
  ~ap_payload() { gp.clear_extension(&ext); }
  ap_payload(const ap_payload&) = delete;
  ap_payload& operator=(const ap_payload&) = delete;
  ap_extension ext;  // declared first: outlives gp
  tlm::tlm_generic_payload gp;
};

// ap_transport through a reused payload `t`.
template <class Socket>
void ap_transport(Socket& socket, ap_payload& t, tlm::tlm_command cmd, const isa::AccessPattern& ap,
                  uint8_t* data, sc_core::sc_time& delay, bool accumulate = false,
                  bool timing_only = false, sc_core::sc_time* stall = nullptr) {
  ap_extension& ext = t.ext;
  ext.ap = ap;
  ext.accumulate = accumulate;
  ext.timing_only = timing_only;
  ext.error.clear();
  ext.port_stall = sc_core::SC_ZERO_TIME;
  tlm::tlm_generic_payload& gp = t.gp;
  gp.set_command(cmd);
  gp.set_address(ap.offset);
  gp.set_data_ptr(data);
  gp.set_data_length(static_cast<unsigned>(timing_only ? 0 : ap.bytes()));
  gp.set_streaming_width(gp.get_data_length());
  gp.set_byte_enable_ptr(nullptr);
  gp.set_byte_enable_length(0);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  socket->b_transport(gp, delay);
  if (stall) *stall += ext.port_stall;
  if (!gp.is_response_ok())
    check_response(gp, ext, cmd == tlm::TLM_READ_COMMAND ? "read" : "write");
}

template <class Socket>
void ap_transport(Socket& socket, tlm::tlm_command cmd, const isa::AccessPattern& ap, uint8_t* data,
                  sc_core::sc_time& delay, bool accumulate, bool timing_only,
                  sc_core::sc_time* stall) {
  ap_payload t;
  ap_transport(socket, t, cmd, ap, data, delay, accumulate, timing_only, stall);
}

}  // namespace trnsim::models
