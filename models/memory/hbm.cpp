#include "models/memory/hbm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "models/common/ap_fast.h"
#include "models/common/scheduler.h"
#include "models/common/sim_time.h"

namespace trnsim::models {

hbm::hbm(const sc_core::sc_module_name& name, const hbm_params& p)
    : sc_module(name), tgt_socket("tgt_socket"), params_(p) {
  params_.stacks = std::max<uint32_t>(params_.stacks, 1);
  params_.channels_per_stack = std::max<uint32_t>(params_.channels_per_stack, 1);
  params_.interleave_bytes = std::max<uint64_t>(params_.interleave_bytes, 1);
  const uint32_t n = params_.stacks * params_.channels_per_stack;
  ch_.assign(n, bandwidth_resource(params_.bandwidth_bps / n));
  ch_bytes_.assign(n, 0);
  split_.assign(n, 0);
  granule_ = divisor(params_.interleave_bytes);
  channels_ = divisor(n);
  block_ = divisor(params_.interleave_bytes * n);
  tgt_socket.register_b_transport(this, &hbm::b_transport);
}

void hbm::write(uint64_t addr, const uint8_t* src, uint64_t n) {
  check_range(addr, n);
  while (n > 0) {
    uint64_t page = addr >> kPageBits, off = addr & (kPage - 1);
    uint64_t len = std::min(n, kPage - off);
    std::memcpy(page_at(page, true) + off, src, len);
    addr += len, src += len, n -= len;
  }
}

void hbm::read(uint64_t addr, uint8_t* dst, uint64_t n) const {
  check_range(addr, n);
  while (n > 0) {
    uint64_t page = addr >> kPageBits, off = addr & (kPage - 1);
    uint64_t len = std::min(n, kPage - off);
    if (const uint8_t* pg = page_at(page, false))
      std::memcpy(dst, pg + off, len);
    else
      std::memset(dst, 0, len);
    addr += len, dst += len, n -= len;
  }
}

uint8_t* hbm::page_at(uint64_t page, bool create) const {
  if (page == last_page_) return last_;
  const auto it = pages_.find(page);
  uint8_t* p = nullptr;
  if (it != pages_.end())
    p = it->second.get();
  else if (create) {
    p = pages_.emplace(page, std::make_unique<uint8_t[]>(kPage)).first->second.get();  // zeros
    peak_pages_ = std::max<uint64_t>(peak_pages_, pages_.size());
  }
  if (p) last_page_ = page, last_ = p;
  return p;
}

bool hbm::page_span(const isa::AccessPattern& ap, uint64_t base, uint64_t& first, uint64_t& last) {
  if (ap.space != isa::MemSpace::hbm || ap.partition_count == 0) return false;
  int64_t lo = 0, end = 0;
  fast::byte_range(ap, lo, end);
  if (end <= lo || lo < 0) return false;
  first = (base + uint64_t(lo)) >> kPageBits;
  last = (base + uint64_t(end) - 1) >> kPageBits;
  return true;
}

void hbm::plan_release(
    const std::vector<std::pair<uint64_t, uint64_t>>& freeable,
    const std::vector<std::pair<const std::vector<isa::Instruction>*, uint64_t>>& queues) {
  release_.clear();
  std::vector<std::pair<uint64_t, uint64_t>> pages;  // [first, last) whole pages
  for (const auto& [b, e] : freeable) {
    const uint64_t first = (b + kPage - 1) >> kPageBits, last = e >> kPageBits;
    if (last > first) pages.emplace_back(first, last);
  }
  if (pages.empty()) return;
  std::sort(pages.begin(), pages.end());
  const auto freeable_page = [&](uint64_t pg) {
    auto it = std::upper_bound(pages.begin(), pages.end(), std::make_pair(pg, UINT64_MAX));
    return it != pages.begin() && pg < std::prev(it)->second;
  };
  std::unordered_map<uint64_t, bool> kept;
  for (const auto& q : queues) {
    const uint64_t base = q.second;  // a plain name: lambdas below capture it
    for (const auto& in : *q.first) {
      const bool copy = in.op == isa::Opcode::dma_copy;
      const auto add = [&](const isa::AccessPattern& ap) {
        uint64_t first, last;
        if (!page_span(ap, base, first, last)) return;
        for (uint64_t pg = first; pg <= last; ++pg) {
          if (!freeable_page(pg)) continue;
          if (copy)
            ++release_[pg];
          else
            kept[pg] = true;
        }
      };
      if (copy) {  // the two operands copy_done() counts down
        add(in.src[0]);
        add(in.dst);
        continue;
      }
      for (int i = 0; i < in.nsrc && i < int(in.src.size()); ++i) add(in.src[i]);
      add(in.dst);
      if (in.arg0.is_ap) add(in.arg0.ap);
      if (in.arg1.is_ap) add(in.arg1.ap);
      if (in.has_accum) add(in.accum);
    }
  }
  for (const auto& [pg, k] : kept) release_.erase(pg);
}

void hbm::copy_done(const isa::Instruction& in, uint64_t base) {
  if (release_.empty()) return;
  for (const isa::AccessPattern* ap : {&in.src[0], &in.dst}) {
    uint64_t first, last;
    if (!page_span(*ap, base, first, last)) continue;
    for (uint64_t pg = first; pg <= last; ++pg) {
      const auto it = release_.find(pg);
      if (it == release_.end() || --it->second > 0) continue;
      release_.erase(it);
      pages_.erase(pg);
      if (last_page_ == pg) last_page_ = UINT64_MAX, last_ = nullptr;
    }
  }
}

void hbm::check_range(uint64_t addr, uint64_t n) const {
  if (addr > params_.size_bytes || n > params_.size_bytes - addr)
    throw std::out_of_range("HBM bytes [" + std::to_string(addr) + ", " + std::to_string(addr + n) +
                            ") outside the device's " + std::to_string(params_.size_bytes) +
                            " bytes");
}

uint32_t hbm::rotation(uint64_t block) const {
  if (!params_.channel_hash) return 0;
  // splitmix64 finaliser: neighbouring blocks get unrelated rotations.
  uint64_t z = block + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<uint32_t>(channels_.mod(z));
}

uint32_t hbm::channel_of(uint64_t addr) const {
  const uint64_t g = granule_.div(addr);
  return static_cast<uint32_t>(channels_.mod(channels_.mod(g) + rotation(channels_.div(g))));
}

void hbm::add_run(uint64_t addr, uint64_t n, std::vector<uint64_t>& per, uint64_t& every) const {
  const uint64_t g = granule_.d, block = block_.d;
  if (block_.mod(addr) != 0 || block_.mod(n) != 0) split_partial_ = true;
  while (n > 0) {
    const uint64_t off = block_.mod(addr);
    if (off == 0 && n >= block) {  // whole blocks: every channel gets one granule each
      const uint64_t k = block_.div(n);
      every += k * g;
      addr += k * block, n -= k * block;
      continue;
    }
    const uint64_t end = off + std::min(n, block - off);  // within this block
    const uint64_t rot = rotation(block_.div(addr));
    for (uint64_t x = off; x < end;) {
      const uint64_t gi = granule_.div(x), take = std::min((gi + 1) * g, end) - x;
      per[channels_.mod(gi + rot)] += take;
      x += take;
    }
    addr += end - off, n -= end - off;
  }
}

void hbm::split(const isa::AccessPattern& ap, std::vector<uint64_t>& per) const {
  std::fill(per.begin(), per.end(), 0);
  const uint64_t every = add_split(ap, per);
  if (every)
    for (auto& b : per) b += every;
}

uint64_t hbm::add_split(const isa::AccessPattern& ap, std::vector<uint64_t>& per) const {
  uint64_t every = 0;
  const int64_t es = int64_t(fast::elem_size(ap.dtype));
  const uint64_t row_bytes = fast::free_elems(ap) * es;
  // Contiguous runs: the whole row, or the innermost stride-1 dim, or single elements.
  const bool contiguous = fast::free_contiguous(ap);
  if (contiguous && ap.partition_stride * es == int64_t(row_bytes)) {
    // Rows laid end to end: one run (the per-channel sums depend only on the bytes).
    add_run(uint64_t(int64_t(ap.offset) + ap.free_min_byte()), row_bytes * ap.partition_count, per,
            every);
  } else {
    isa::AccessPattern starts = ap;
    uint64_t run = uint64_t(es);
    const int inner = fast::innermost_dim(ap);
    if (!contiguous && inner >= 0 && ap.dims[inner].stride == 1) {
      run = uint64_t(ap.dims[inner].size) * es;
      starts.dims[inner].size = 1;
    }
    const int64_t first = contiguous ? ap.free_min_byte() : 0;
    for (uint32_t r = 0; r < ap.partition_count; ++r) {
      const int64_t row_base = int64_t(ap.offset) + int64_t(r) * ap.partition_stride * es;
      if (contiguous) {
        add_run(uint64_t(row_base + first), row_bytes, per, every);
      } else {
        isa::for_each_free(starts, [&](uint64_t, int64_t off) {
          add_run(uint64_t(row_base + off), run, per, every);
        });
      }
    }
  }
  return every;
}

std::vector<uint64_t> hbm::channel_bytes(const isa::AccessPattern& ap) const {
  std::vector<uint64_t> per(ch_.size());
  split(ap, per);
  return per;
}

double hbm::busy_ns() const {
  double s = 0;
  for (const auto& c : ch_) s += (c.busy() + common_busy_).to_seconds();
  return s / double(ch_.size()) * 1e9;
}

void hbm::reset_stats() {
  read_bytes_ = write_bytes_ = transfers_ = 0;
  for (auto& c : ch_) c.reset_busy();
  std::fill(ch_bytes_.begin(), ch_bytes_.end(), 0);
  common_busy_ = sc_core::SC_ZERO_TIME;
  common_bytes_ = 0;
}

void hbm::register_stats(stats::group& g) {
  g.add_counter("read_bytes", "bytes", "bytes read from HBM", &read_bytes_);
  g.add_counter("write_bytes", "bytes", "bytes written to HBM", &write_bytes_);
  g.add_counter("transfers", "transfers", "DMA transactions served", &transfers_);
  g.add("busy_ns", "ns",
        "channel busy time summed over channels / channels (time at peak bandwidth)",
        [this] { return busy_ns(); });
  g.add("max_channel_busy_ns", "ns",
        "busy time of the busiest channel (imbalance when above busy_ns)", [this] {
          double m = 0;
          for (uint32_t c = 0; c < channels(); ++c) m = std::max(m, channel_busy_ns(c));
          return m;
        });
  g.add("peak_bytes_per_ns", "bytes/ns", "peak bandwidth (all channels)",
        [this] { return params_.bandwidth_bps * 1e-9; });
  for (uint32_t c = 0; c < channels(); ++c) {
    auto& cg = g.child("ch" + std::to_string(c), "one HBM channel");
    cg.add(
        "bytes", "bytes", "bytes served by this channel",
        [this, c] { return double(ch_bytes_[c] + common_bytes_); }, true);
    cg.add("busy_ns", "ns", "time this channel's bandwidth was in use",
           [this, c] { return channel_busy_ns(c); });
  }
}

sc_core::sc_time hbm::reserve_spread(uint64_t bytes, bool write) {
  if (bytes == 0) return now();
  return reserve_spread_from(bytes, write,
                             checked_time(now() + seconds_to_time(params_.latency_s)));
}

sc_core::sc_time hbm::spread_duration(uint64_t bytes) const {
  return ch_[0].duration((bytes + ch_.size() - 1) / ch_.size());
}

sc_core::sc_time hbm::reserve_spread_from(uint64_t bytes, bool write, sc_core::sc_time offer) {
  if (bytes == 0) return offer;
  (write ? write_bytes_ : read_bytes_) += bytes;
  ++transfers_;
  const uint64_t share = (bytes + ch_.size() - 1) / ch_.size();
  const sc_core::sc_time d = ch_[0].duration(share);
  if (!uniform_) {
    sc_core::sc_time latest = sc_core::SC_ZERO_TIME;
    for (const auto& ch : ch_) latest = std::max(latest, ch.next_free());
    if (latest <= offer) uniform_ = true, uniform_free_ = offer;
  }
  if (uniform_) {
    uniform_free_ = checked_time(std::max(offer, uniform_free_) + d);
    common_busy_ += d;
    common_bytes_ += share;
    return uniform_free_;
  }
  sc_core::sc_time finish = offer;
  for (size_t c = 0; c < ch_.size(); ++c) {
    ch_bytes_[c] += share;
    finish = std::max(finish, ch_[c].reserve_for(offer, ch_[c].duration(share)));
  }
  return finish;
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
  int64_t row_lo, row_hi;
  fast::byte_range(ap, row_lo, row_hi);
  if (row_lo < 0 || uint64_t(row_hi) > params_.size_bytes) {
    ext->error = "HBM bytes [" + std::to_string(row_lo) + ", " + std::to_string(row_hi) +
                 ") outside the device's " + std::to_string(params_.size_bytes) + " bytes";
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const size_t es = fast::elem_size(ap.dtype);
  const uint64_t row_bytes = fast::free_elems(ap) * es;
  const uint64_t bytes = fast::free_elems(ap) * ap.partition_count * es;  // ap.bytes()
  const bool timing_only = ext->timing_only || gp.get_data_ptr() == nullptr;
  if (!timing_only && gp.get_data_length() != bytes) {
    ext->error = "data length " + std::to_string(gp.get_data_length()) + " != pattern bytes " +
                 std::to_string(bytes);
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
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
  (gp.is_read() ? read_bytes_ : write_bytes_) += bytes;
  ++transfers_;
  // After the latency, every touched channel serves its share at its own rate,
  // starting no earlier than the initiator's local time plus the latency.
  const sc_core::sc_time offer = checked_time(now() + delay + seconds_to_time(params_.latency_s));
  sc_core::sc_time finish = offer;
  // split_ is all zeros between calls; runs of whole blocks only add to `every`.
  split_partial_ = false;
  const uint64_t every = add_split(ap, split_);
  uint64_t share = every;
  bool same = share > 0;
  if (split_partial_) {
    for (auto& b : split_) b += every;
    share = split_[0];
    same = share > 0;
    for (size_t c = 1; same && c < split_.size(); ++c) same = split_[c] == share;
  }
  // Zeroes split_ again on every return below.
  struct rezero {
    std::vector<uint64_t>& v;
    bool dirty;
    ~rezero() {
      if (dirty) std::fill(v.begin(), v.end(), 0);
    }
  } rz{split_, split_partial_};
  if (same && !uniform_) {
    // Every channel free by the offer: they all finish together, from now on in step.
    sc_core::sc_time latest = sc_core::SC_ZERO_TIME;
    for (const auto& ch : ch_) latest = std::max(latest, ch.next_free());
    if (latest <= offer) uniform_ = true, uniform_free_ = offer;
  }
  if (same && uniform_) {  // the channels' rates are equal: one duration for all
    const sc_core::sc_time d = ch_[0].duration(share);
    uniform_free_ = checked_time(std::max(offer, uniform_free_) + d);
    common_busy_ += d;
    common_bytes_ += share;
    delay = uniform_free_ - now();
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  if (uniform_) {
    for (auto& ch : ch_) ch.set_next_free(uniform_free_);
    uniform_ = false;
  }
  if (!split_partial_ && every) {  // whole blocks only: spell out the per-channel share
    std::fill(split_.begin(), split_.end(), every);
    rz.dirty = true;
  }
  // Most channels get the same share: convert bytes to time once per distinct share.
  uint64_t last_bytes = 0;
  double last_rate = 0;
  sc_core::sc_time last_time;
  for (size_t c = 0; c < ch_.size(); ++c) {
    const uint64_t b = split_[c];
    if (b == 0) continue;
    ch_bytes_[c] += b;
    if (b != last_bytes || ch_[c].rate() != last_rate) {
      last_bytes = b, last_rate = ch_[c].rate();
      last_time = ch_[c].duration(b);
    }
    finish = std::max(finish, ch_[c].reserve_for(offer, last_time));
  }
  delay = finish - now();
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace trnsim::models
