// An analytically modelled shared bandwidth: it knows when it is next free and
// answers "B bytes offered at t finish at t'", so a transfer costs a couple of
// events instead of one per cycle. Requests are served first come, first served.
#pragma once

#include <cstdint>
#include <systemc>

#include "models/common/sim_time.h"

namespace trnsim::models {

class bandwidth_resource {
 public:
  explicit bandwidth_resource(double bytes_per_s = 1e9) : bps_(bytes_per_s) {}
  void set_rate(double bytes_per_s) { bps_ = bytes_per_s; }
  double rate() const { return bps_; }
  // Reserve the resource for `bytes` starting no earlier than `start`; returns the finish.
  sc_core::sc_time reserve(const sc_core::sc_time& start, uint64_t bytes) {
    return reserve_for(start, duration(bytes));
  }
  // The same with the duration already known (duration(bytes) of a resource at this rate).
  sc_core::sc_time reserve_for(const sc_core::sc_time& start, const sc_core::sc_time& d) {
    sc_core::sc_time s = start > next_free_ ? start : next_free_;
    sc_core::sc_time f = checked_time(s + d);  // throws before anything changes
    busy_ += d;
    next_free_ = f;
    return f;
  }
  sc_core::sc_time duration(uint64_t bytes) const {
    return seconds_to_time(static_cast<double>(bytes) / bps_);
  }
  const sc_core::sc_time& next_free() const { return next_free_; }
  void set_next_free(const sc_core::sc_time& t) { next_free_ = t; }
  const sc_core::sc_time& busy() const { return busy_; }
  void reset_busy() { busy_ = sc_core::SC_ZERO_TIME; }

 private:
  double bps_;
  sc_core::sc_time next_free_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
};

}  // namespace trnsim::models
