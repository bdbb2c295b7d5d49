// High-bandwidth memory shared by every core of a chip: a TLM-2.0 target taking
// access-pattern transactions with absolute byte offsets. Storage is paged and
// allocated on first write (a 96 GiB device costs only what programs touch; unwritten
// bytes read as 0). Timing: a fixed access latency plus the transfer's share of the
// peak bandwidth, served first come first served by one analytic bandwidth resource.
// Not modelled yet: stacks/channels with address interleaving, refresh, bank state.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/bandwidth.h"
#include "models/common/stats.h"
#include "models/memory/memory_params.h"

namespace trnsim::models {

class hbm : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<hbm> tgt_socket;

  hbm(const sc_core::sc_module_name& name, const hbm_params& p);
  const hbm_params& params() const { return params_; }

  // Direct (untimed) access for loaders and tests.
  void write(uint64_t addr, const uint8_t* src, uint64_t n);
  void read(uint64_t addr, uint8_t* dst, uint64_t n) const;

  void register_stats(stats::group& g);
  uint64_t read_bytes() const { return read_bytes_; }
  uint64_t write_bytes() const { return write_bytes_; }

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void check_range(uint64_t addr, uint64_t n) const;  // throws std::out_of_range
  static constexpr uint64_t kPageBits = 20;           // 1 MiB pages
  static constexpr uint64_t kPage = uint64_t(1) << kPageBits;

  hbm_params params_;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  bandwidth_resource bw_;
  uint64_t read_bytes_ = 0, write_bytes_ = 0, transfers_ = 0;
};

}  // namespace trnsim::models
