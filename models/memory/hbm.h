// High-bandwidth memory shared by every core of a chip: a TLM-2.0 target taking
// access-pattern transactions with absolute byte offsets. Storage is paged and
// allocated on first write, in a map (a device of any size costs only what programs
// touch; unwritten bytes read as 0).
//
// Timing: stacks x channels_per_stack independent channels, each an analytic
// bandwidth resource of bandwidth / channels served first come, first served.
// Addresses interleave over the channels in `interleave_bytes` granules: the C
// granules of each aligned block of C granules go to C different channels, in an
// order rotated by a hash of the block index. The rotation stands in for the
// hardware's hashed channel mapping, so power-of-two row strides do not all land on
// one channel. A transaction's bytes are split over the channels its runs touch; it
// finishes when the last of them does, after the access latency.
// Not modelled: bank/row-buffer state, refresh, read/write turnaround.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <bit>
#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/bandwidth.h"
#include "models/common/stats.h"
#include "models/isa/instruction.h"
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

  // Scratch pages a functional run may drop once done with them: a program's
  // intermediates can need more host memory than everything else together. For
  // each page wholly inside one of `freeable` (absolute [begin, end) byte ranges),
  // counts the DMA copies of `queues` (each with its program's HBM base) whose HBM
  // operands span it; a page another instruction reaches is kept. copy_done()
  // counts down and drops a page at 0 (it reads as zeros again). Replaces the plan
  // of the previous run; an empty plan drops nothing.
  void plan_release(
      const std::vector<std::pair<uint64_t, uint64_t>>& freeable,
      const std::vector<std::pair<const std::vector<isa::Instruction>*, uint64_t>>& queues);
  // DMA copy `in` of the program based at `base` has moved all its data.
  void copy_done(const isa::Instruction& in, uint64_t base);
  uint64_t pages() const { return pages_.size(); }  // pages held now
  uint64_t peak_pages() const { return peak_pages_; }

  // Timing only: `bytes` read (or written) spread evenly over the channels, offered
  // now plus the latency (a collective's traffic, whose chunks cover its buffers
  // evenly); counted in the read/write bytes. Returns when the last channel is done.
  sc_core::sc_time reserve_spread(uint64_t bytes, bool write);
  // The same offered at `offer` (absolute; no latency added), which may lie before
  // now: a channel free then takes the bytes from then on.
  sc_core::sc_time reserve_spread_from(uint64_t bytes, bool write, sc_core::sc_time offer);
  // Each channel's time for its share of `bytes` spread evenly (reserve_spread's).
  sc_core::sc_time spread_duration(uint64_t bytes) const;

  uint32_t channels() const { return static_cast<uint32_t>(ch_.size()); }
  uint32_t channel_of(uint64_t addr) const;
  // Bytes of `ap` (absolute offsets) served by each channel.
  std::vector<uint64_t> channel_bytes(const isa::AccessPattern& ap) const;

  void register_stats(stats::group& g);
  void reset_stats();  // zero the counters (the runtime's stats are per run)
  uint64_t read_bytes() const { return read_bytes_; }
  uint64_t write_bytes() const { return write_bytes_; }
  // Channel busy time summed over channels / channels: the time the whole HBM
  // would have been busy at its peak bandwidth.
  double busy_ns() const;
  double channel_busy_ns(uint32_t c) const {
    return (ch_.at(c).busy() + common_busy_).to_seconds() * 1e9;
  }

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void check_range(uint64_t addr, uint64_t n) const;  // throws std::out_of_range
  uint32_t rotation(uint64_t block) const;
  // Adds the bytes of [addr, addr + n) to `per` (one slot per channel); whole blocks
  // of channels x granule bytes go to `every` (the same count on each channel).
  void add_run(uint64_t addr, uint64_t n, std::vector<uint64_t>& per, uint64_t& every) const;
  void split(const isa::AccessPattern& ap, std::vector<uint64_t>& per) const;
  // Adds the bytes of `ap` to `per` except those of whole blocks, which it returns
  // (bytes every channel gets); sets split_partial_ when `per` was touched.
  uint64_t add_split(const isa::AccessPattern& ap, std::vector<uint64_t>& per) const;
  // x / d and x % d by shifts and masks when d is a power of two (the presets'
  // granule, channel count and block are): the channel split runs per granule.
  struct divisor {
    uint64_t d = 1, mask = 0;
    int shift = 0;
    bool pow2 = true;
    explicit divisor(uint64_t v = 1)
        : d(v), mask(v - 1), shift(std::countr_zero(v)), pow2((v & (v - 1)) == 0) {}
    uint64_t div(uint64_t x) const { return pow2 ? x >> shift : x / d; }
    uint64_t mod(uint64_t x) const { return pow2 ? x & mask : x % d; }
  };
  divisor granule_, channels_, block_;
  static constexpr uint64_t kPageBits = 20;  // 1 MiB pages
  static constexpr uint64_t kPage = uint64_t(1) << kPageBits;

  hbm_params params_;
  // Pages written so far, by index: any capacity costs only what programs touch.
  mutable std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  // The page last looked up (element-wise patterns touch one page many times).
  mutable uint64_t last_page_ = UINT64_MAX;
  mutable uint8_t* last_ = nullptr;
  // Page `page`'s bytes; nullptr when never written and not `create`.
  uint8_t* page_at(uint64_t page, bool create) const;
  // Pages [first, last] that HBM operand `ap` (relative to `base`) may touch.
  static bool page_span(const isa::AccessPattern& ap, uint64_t base, uint64_t& first,
                        uint64_t& last);
  std::unordered_map<uint64_t, uint32_t> release_;  // page -> DMA copies still to come
  mutable uint64_t peak_pages_ = 0;
  std::vector<bandwidth_resource> ch_;
  std::vector<uint64_t> ch_bytes_;
  std::vector<uint64_t> split_;         // scratch for b_transport, all zeros between calls
  mutable bool split_partial_ = false;  // add_run touched the per-channel counts
  // Most transfers give every channel the same share. While `uniform_`, every
  // channel is free from `uniform_free_` (their own next-free times are stale), so
  // such a transfer costs O(1); `common_*` add to every channel's figures.
  bool uniform_ = false;
  sc_core::sc_time uniform_free_, common_busy_;
  uint64_t common_bytes_ = 0;
  uint64_t read_bytes_ = 0, write_bytes_ = 0, transfers_ = 0;
};

}  // namespace trnsim::models
