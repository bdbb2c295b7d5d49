// Seconds -> sc_time on the hot paths. sc_time(double, SC_SEC) is a library call
// that looks up the time parameters every time; this inline version computes the
// very same tick count (value = seconds x ticks per second + 0.5, truncated, as
// the SystemC kernel does), so timing is bit-identical to the constructor.
#pragma once

#include <cstdint>
#include <systemc>

namespace trnsim::models {

// Ticks of the time resolution per second (1e12 at the default 1 ps); exact,
// since the resolution is a power of ten.
inline double ticks_per_second() {
  static const double t = static_cast<double>(sc_core::sc_time(1.0, sc_core::SC_SEC).value());
  return t;
}

// sc_time of `v` ticks without sc_time::from_value's library call: one tick scaled
// by v (the inline sc_time::operator*= computes v * 1.0 + 0.5, truncated: exactly v
// below 2^52 ticks, about 75 minutes at 1 ps).
inline sc_core::sc_time time_from_ticks(uint64_t v) {
  static const sc_core::sc_time one = sc_core::sc_time::from_value(1);
  if (v >= (uint64_t{1} << 52)) return sc_core::sc_time::from_value(v);
  sc_core::sc_time t = one;
  t *= static_cast<double>(v);
  return t;
}

inline sc_core::sc_time seconds_to_time(double s) {
  if (s == 0) return sc_core::SC_ZERO_TIME;
  // volatile: round exactly as the kernel does (no fused or extended-precision math).
  volatile double ticks = s * ticks_per_second() + 0.5;
  return time_from_ticks(static_cast<uint64_t>(static_cast<int64_t>(ticks)));
}

}  // namespace trnsim::models
