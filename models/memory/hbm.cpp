#include "models/memory/hbm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace trnsim::models {

hbm::hbm(const sc_core::sc_module_name& name, const hbm_params& p)
    : sc_module(name),
      tgt_socket("tgt_socket"),
      params_(p),
      pages_((p.size_bytes + kPage - 1) >> kPageBits),
      bw_(p.bandwidth_bps) {
  tgt_socket.register_b_transport(this, &hbm::b_transport);
}

void hbm::write(uint64_t addr, const uint8_t* src, uint64_t n) {
  check_range(addr, n);
  while (n > 0) {
    uint64_t page = addr >> kPageBits, off = addr & (kPage - 1);
    uint64_t len = std::min(n, kPage - off);
    auto& pg = pages_.at(page);
    if (!pg) pg = std::make_unique<uint8_t[]>(kPage);  // value-initialised: zeros
    std::memcpy(pg.get() + off, src, len);
    addr += len, src += len, n -= len;
  }
}

void hbm::read(uint64_t addr, uint8_t* dst, uint64_t n) const {
  check_range(addr, n);
  while (n > 0) {
    uint64_t page = addr >> kPageBits, off = addr & (kPage - 1);
    uint64_t len = std::min(n, kPage - off);
    const auto& pg = pages_.at(page);
    if (pg)
      std::memcpy(dst, pg.get() + off, len);
    else
      std::memset(dst, 0, len);
    addr += len, dst += len, n -= len;
  }
}

void hbm::check_range(uint64_t addr, uint64_t n) const {
  if (addr > params_.size_bytes || n > params_.size_bytes - addr)
    throw std::out_of_range("HBM bytes [" + std::to_string(addr) + ", " + std::to_string(addr + n) +
                            ") outside the device's " + std::to_string(params_.size_bytes) +
                            " bytes");
}

void hbm::register_stats(stats::group& g) {
  g.add_counter("read_bytes", "bytes", "bytes read from HBM", &read_bytes_);
  g.add_counter("write_bytes", "bytes", "bytes written to HBM", &write_bytes_);
  g.add_counter("transfers", "transfers", "DMA transactions served", &transfers_);
  g.add("busy_ns", "ns", "time the HBM bandwidth was in use",
        [this] { return bw_.busy().to_seconds() * 1e9; });
}

void hbm::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  auto* ext = gp.get_extension<ap_extension>();
  if (!ext) {
    gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  const isa::AccessPattern& ap = ext->ap;
  if (ap.space != isa::MemSpace::hbm) {
    ext->error = "non-HBM access pattern sent to HBM";
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  int64_t row_lo = ap.min_byte(), row_hi = ap.end_byte();
  if (row_lo < 0 || uint64_t(row_hi) > params_.size_bytes) {
    ext->error = "HBM bytes [" + std::to_string(row_lo) + ", " + std::to_string(row_hi) +
                 ") outside the device's " + std::to_string(params_.size_bytes) + " bytes";
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const bool timing_only = ext->timing_only || gp.get_data_ptr() == nullptr;
  if (!timing_only && gp.get_data_length() != ap.bytes()) {
    ext->error = "data length " + std::to_string(gp.get_data_length()) + " != pattern bytes " +
                 std::to_string(ap.bytes());
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  const size_t es = isa::dtype_size(ap.dtype);
  const uint64_t row_bytes = ap.free_elems() * es;
  if (!timing_only) {
    uint8_t* data = gp.get_data_ptr();
    const bool contiguous = ap.free_contiguous();
    for (uint32_t r = 0; r < ap.partition_count; ++r) {
      const int64_t row_base = int64_t(ap.offset) + int64_t(r) * ap.partition_stride * int64_t(es);
      uint8_t* buf = data + r * row_bytes;
      if (contiguous) {
        const uint64_t start = uint64_t(row_base + ap.free_min_byte());
        if (gp.is_read())
          read(start, buf, row_bytes);
        else
          write(start, buf, row_bytes);
      } else {
        isa::for_each_free(ap, [&](uint64_t i, int64_t off) {
          if (gp.is_read())
            read(uint64_t(row_base + off), buf + i * es, es);
          else
            write(uint64_t(row_base + off), buf + i * es, es);
        });
      }
    }
  }
  (gp.is_read() ? read_bytes_ : write_bytes_) += ap.bytes();
  ++transfers_;
  // Latency, then the bandwidth share, offered at the initiator's local time.
  const sc_core::sc_time now = sc_core::sc_time_stamp() + delay;
  const sc_core::sc_time offer = now + sc_core::sc_time(params_.latency_s, sc_core::SC_SEC);
  delay = bw_.reserve(offer, ap.bytes()) - sc_core::sc_time_stamp();
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace trnsim::models
