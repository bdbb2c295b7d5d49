#include "models/memory/partitioned_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "models/common/ap_fast.h"
#include "models/common/scheduler.h"
#include "models/common/sim_time.h"

namespace trnsim::models {

partitioned_memory::partitioned_memory(const sc_core::sc_module_name& name,
                                       const partitioned_memory_geometry& g)
    : sc_module(name), tgt_socket("tgt_socket"), geo_(g) {
  tgt_socket.register_b_transport(this, &partitioned_memory::b_transport);
}

uint8_t* partitioned_memory::allocate() const {
  // The config bounds partitions x partition size; the host may still lack the memory.
  const uint64_t n = uint64_t(geo_.partitions) * geo_.partition_bytes;
  data_.reset(static_cast<uint8_t*>(std::calloc(n, 1)));
  if (!data_)
    throw std::runtime_error(std::string(name()) + ": cannot allocate " + std::to_string(n) +
                             " bytes of host memory for " + std::to_string(geo_.partitions) +
                             " partitions of " + std::to_string(geo_.partition_bytes) + " bytes");
  return data_.get();
}

void partitioned_memory::share_ports(int a, int b, bool per_bank, uint64_t bank_bytes) {
  if (sharing_.size() <= size_t(std::max(a, b))) sharing_.resize(std::max(a, b) + 1);
  sharing_[b] = {a, per_bank, bank_bytes};
  if (per_bank) sharing_[a] = {a, per_bank, bank_bytes};
}

sc_core::sc_time partitioned_memory::reserve_port(int id, bool write, const isa::AccessPattern& ap,
                                                  const sc_core::sc_time& offer,
                                                  const sc_core::sc_time& duration,
                                                  sc_core::sc_time& stall) {
  int owner = id;
  uint64_t bank = 0, banks = 1;
  if (size_t(id) < sharing_.size() && sharing_[id].owner >= 0) {
    owner = sharing_[id].owner;
    if (sharing_[id].per_bank && sharing_[id].bank_bytes) {
      banks = geo_.partition_bytes / sharing_[id].bank_bytes;
      bank = ap.offset / sharing_[id].bank_bytes % banks;
    }
  }
  // Key space: (owner, bank, direction); banks only split ports that are shared per bank.
  const size_t max_banks = 64;
  const size_t key = (size_t(owner) * max_banks + bank) * 2 + (write ? 1 : 0);
  if (ports_.size() <= key) ports_.resize(key + 1);
  port_state& ps = ports_[key];
  // An initiator's own accesses stream in parallel (its sequencer already orders
  // them); only another initiator's reservation makes it wait, and that is a stall.
  const bool other = ps.last_user >= 0 && ps.last_user != id;
  const sc_core::sc_time start = other ? std::max(offer, ps.next_free) : offer;
  stall = start - offer;
  stall_total_ += stall;
  const sc_core::sc_time finish = checked_time(start + duration);
  ps.next_free = std::max(ps.next_free, finish);
  ps.last_user = id;
  return finish;
}

void partitioned_memory::clear() {
  data_.reset();  // zeros again when next used
}

void partitioned_memory::fill(uint8_t byte) {
  before_data_access();
  std::memset(mem(), byte, size_t(geo_.partitions) * geo_.partition_bytes);
}

void partitioned_memory::reset_stats() {
  read_bytes_ = write_bytes_ = reads_ = writes_ = peak_byte_ = 0;
  stall_total_ = sc_core::SC_ZERO_TIME;
  touched_.reset();
  touched_count_ = 0;
  marked_.clear();
  for (auto& c : access_cache_) c.valid = false;  // so their patterns mark again
}

size_t partitioned_memory::ap_hash::operator()(const isa::AccessPattern& ap) const {
  uint64_t h = uint64_t(ap.space) ^ (uint64_t(ap.dtype) << 8) ^ (uint64_t(ap.ndims) << 16);
  const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x9e3779b97f4a7c15ull; };
  mix(ap.partition_start);
  mix(ap.partition_count);
  mix(uint64_t(ap.partition_stride));
  mix(ap.offset);
  for (const isa::Dim& d : ap.dims) {
    mix(uint64_t(d.stride));
    mix(d.size);
  }
  return size_t(h ^ (h >> 29));
}

void partitioned_memory::mark_touched(const isa::AccessPattern& ap) {
  if (!marked_.insert(ap).second) return;
  const uint64_t words = (geo_.partition_bytes + 63) / 64;
  if (!touched_) {
    touched_.reset(static_cast<uint64_t*>(std::calloc(words * geo_.partitions, sizeof(uint64_t))));
    if (!touched_)
      throw std::runtime_error(std::string(name()) + ": cannot allocate its touched-bytes bitmap");
  }
  // The free pattern is the same in every partition: build its mask once over the
  // pattern's word span, then OR it into each partition's row.
  int64_t lo = 0, end = 0;
  fast::byte_range(ap, lo, end);
  const uint64_t w0 = uint64_t(lo) / 64, w1 = (uint64_t(end) + 63) / 64;
  touched_mask_.assign(w1 - w0, 0);
  const auto mark = [&](uint64_t from, uint64_t to) {
    for (uint64_t b = from; b < to;) {
      const uint64_t bit = b % 64, n = std::min<uint64_t>(64 - bit, to - b);
      touched_mask_[b / 64 - w0] |= (n == 64 ? ~0ull : ((1ull << n) - 1)) << bit;
      b += n;
    }
  };
  const uint64_t es = fast::elem_size(ap.dtype);
  if (fast::free_contiguous(ap)) {
    const uint64_t from = ap.offset + uint64_t(ap.free_min_byte());
    mark(from, from + fast::free_elems(ap) * es);
  } else {
    isa::for_each_free(ap, [&](uint64_t, int64_t off) {
      mark(uint64_t(int64_t(ap.offset) + off), uint64_t(int64_t(ap.offset) + off) + es);
    });
  }
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    uint64_t* row = touched_.get() + size_t(ap.partition_start + p) * words + w0;
    for (size_t w = 0; w < touched_mask_.size(); ++w) {
      touched_count_ += uint64_t(__builtin_popcountll(touched_mask_[w] & ~row[w]));
      row[w] |= touched_mask_[w];
    }
  }
}

uint64_t partitioned_memory::touched_bytes() const {
  return touched_count_;
}

void partitioned_memory::register_stats(stats::group& g) {
  g.add_counter("read_bytes", "bytes", "bytes read by engines and DMA", &read_bytes_);
  g.add_counter("write_bytes", "bytes", "bytes written by engines and DMA", &write_bytes_);
  g.add_counter("reads", "accesses", "read transactions", &reads_);
  g.add_counter("writes", "accesses", "write transactions", &writes_);
  g.add("port_stall_ns", "ns", "time accesses waited for a port held by another initiator",
        [this] { return stall_total_.to_seconds() * 1e9; });
  g.add(
      "high_water_bytes", "bytes",
      "(highest byte offset touched in any partition + 1) x partitions: the address space used",
      [this] { return double(high_water_bytes()); }, true);
  g.add(
      "touched_bytes", "bytes", "distinct bytes accessed at least once, summed over partitions",
      [this] { return double(touched_bytes()); }, true);
}

sc_core::sc_time partitioned_memory::port_time(const isa::AccessPattern& ap) const {
  return port_time(ap, fast::free_elems(ap), fast::elem_size(ap.dtype));
}

sc_core::sc_time partitioned_memory::port_time(const isa::AccessPattern& ap, uint64_t n,
                                               uint64_t es) const {
  // Strides wider than 16 bytes halve the port rate (docs/hardware.md, Memories).
  const int inner = fast::innermost_dim(ap);
  const bool wide = inner >= 0 && std::llabs(ap.dims[inner].stride) * int64_t(es) > 16;
  // A pure function of (n, wide): programs repeat a few shapes, so remember them.
  port_cache_entry& c = port_cache_[(n * 2 + wide) % port_cache_.size()];
  if (c.valid && c.elems == n && c.wide == wide) return c.time;
  const double lane_rate = double(geo_.port_elems_per_cycle) / geo_.partitions;
  double cycles = double(n) / lane_rate;
  if (wide) cycles *= 2;
  c = {n, wide, true, seconds_to_time(std::ceil(cycles) / geo_.clock_hz)};
  return c.time;
}

bool partitioned_memory::check_bounds(const isa::AccessPattern& ap, std::string& err,
                                      int64_t* end) const {
  if (ap.space != geo_.space) {
    err = "access pattern for " + std::string(isa::mem_space_name(ap.space)) + " sent to " +
          std::string(isa::mem_space_name(geo_.space));
    return false;
  }
  if (ap.partition_count == 0 ||
      uint64_t(ap.partition_start) + ap.partition_count > geo_.partitions) {
    err = "partitions " + std::to_string(ap.partition_start) + ".." +
          std::to_string(uint64_t(ap.partition_start) + ap.partition_count) + " exceed " +
          std::to_string(geo_.partitions);
    return false;
  }
  int64_t lo, hi;
  ap.byte_range(lo, hi);
  if (end) *end = hi;
  if (lo < 0 || uint64_t(hi) > geo_.partition_bytes) {
    err = "bytes [" + std::to_string(lo) + ", " + std::to_string(hi) +
          ") outside the partition size " + std::to_string(geo_.partition_bytes);
    return false;
  }
  return true;
}

void partitioned_memory::gather(const isa::AccessPattern& ap, uint8_t* dst) const {
  const size_t es = isa::dtype_size(ap.dtype);
  const size_t row_bytes = ap.free_elems() * es;
  const bool contiguous = ap.free_contiguous();
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    const uint8_t* base = mem() + size_t(ap.partition_start + p) * geo_.partition_bytes + ap.offset;
    uint8_t* out = dst + p * row_bytes;
    if (contiguous) {
      std::memcpy(out, base + ap.free_min_byte(), row_bytes);
    } else {
      isa::for_each_free(
          ap, [&](uint64_t i, int64_t off) { std::memcpy(out + i * es, base + off, es); });
    }
  }
}

void partitioned_memory::scatter(const isa::AccessPattern& ap, const uint8_t* src) {
  const size_t es = isa::dtype_size(ap.dtype);
  const size_t row_bytes = ap.free_elems() * es;
  const bool contiguous = ap.free_contiguous();
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    uint8_t* base = mem() + size_t(ap.partition_start + p) * geo_.partition_bytes + ap.offset;
    const uint8_t* in = src + p * row_bytes;
    if (contiguous) {
      std::memcpy(base + ap.free_min_byte(), in, row_bytes);
    } else {
      isa::for_each_free(
          ap, [&](uint64_t i, int64_t off) { std::memcpy(base + off, in + i * es, es); });
    }
  }
}

bool partitioned_memory::accumulate(const isa::AccessPattern&, const uint8_t*, std::string& err) {
  err = "accumulating writes are only supported by PSUM";
  return false;
}

void partitioned_memory::b_transport(int id, tlm::tlm_generic_payload& gp,
                                     sc_core::sc_time& delay) {
  auto* ext = gp.get_extension<ap_extension>();
  if (!ext) {
    gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  const isa::AccessPattern& ap = ext->ap;
  // Everything below up to the port reservation is a pure function of the pattern
  // (and this memory's geometry); instructions repeat their patterns, so a small
  // cache keeps the results of checked ones.
  uint64_t h = ap.offset ^ (uint64_t(ap.partition_start) << 24) ^
               (uint64_t(ap.partition_count) << 40) ^ (uint64_t(ap.dims[0].size) << 8) ^
               uint64_t(ap.dtype);
  h *= 0x9e3779b97f4a7c15ull;
  access_entry& c = access_cache_[h >> 59];  // 32 entries
  if (!c.valid || !(c.ap == ap) || c.words != ext->words) {
    // The common case inline: right space, partitions and bytes within bounds; any
    // failure goes through check_bounds for its message.
    int64_t lo = -1, end = 0;
    const bool in_parts = ap.space == geo_.space && ap.partition_count > 0 &&
                          uint64_t(ap.partition_start) + ap.partition_count <= geo_.partitions;
    if (in_parts) fast::byte_range(ap, lo, end);
    if (!in_parts || lo < 0 || uint64_t(end) > geo_.partition_bytes) {
      if (!check_bounds(ap, ext->error, &end)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
      }
    }
    const uint64_t es = fast::elem_size(ap.dtype), n = fast::free_elems(ap);
    c.ap = ap;
    c.valid = true;
    c.end = end;
    c.bytes = n * ap.partition_count * es;  // ap.bytes()
    // A DMA's port time counts 32-bit words per partition (ap_extension::words).
    c.port = port_time(ap, ext->words ? (n * es + 3) / 4 : n, es);
    c.words = ext->words;
    mark_touched(ap);
  }
  const int64_t end = c.end;
  const uint64_t bytes = c.bytes;
  const bool timing_only = ext->timing_only || gp.get_data_ptr() == nullptr;
  if (!timing_only && gp.get_data_length() != bytes) {
    ext->error = "data length " + std::to_string(gp.get_data_length()) + " != pattern bytes " +
                 std::to_string(bytes);
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  peak_byte_ = std::max<uint64_t>(peak_byte_, uint64_t(end));
  if (!timing_only) before_data_access();
  if (gp.is_read()) {
    if (!timing_only) gather(ap, gp.get_data_ptr());
    read_bytes_ += bytes;
    ++reads_;
  } else {
    if (!timing_only) {
      if (ext->accumulate) {
        if (!accumulate(ap, gp.get_data_ptr(), ext->error)) {
          gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
          return;
        }
      } else {
        scatter(ap, gp.get_data_ptr());
      }
    }
    write_bytes_ += bytes;
    ++writes_;
  }
  const sc_core::sc_time now = models::now();
  sc_core::sc_time stall;
  delay = reserve_port(id, gp.is_write(), ap, now + delay, c.port, stall) - now;
  ext->port_stall += stall;
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace trnsim::models
