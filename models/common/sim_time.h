// Seconds -> sc_time on the hot paths. sc_time(double, SC_SEC) is a library call
// that looks up the time parameters every time; this inline version computes the
// very same tick count (value = seconds x ticks per second + 0.5, truncated, as
// the SystemC kernel does), so timing is bit-identical to the constructor.
//
// The simulated time range: every duration and every absolute time the models
// store or schedule stays at or below kMaxTicks (2^62 ticks, about 53 days at the
// default 1 ps resolution), so adding two or three of them never wraps the 64-bit
// tick count; a conversion or a sum past it throws time_overflow, which the
// sequencers report against the instruction they were running.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <systemc>

namespace trnsim::models {

inline constexpr uint64_t kMaxTicks = uint64_t{1} << 62;

class time_overflow : public std::overflow_error {
  using std::overflow_error::overflow_error;
};

// Ticks of the time resolution per second (1e12 at the default 1 ps); exact,
// since the resolution is a power of ten.
inline double ticks_per_second() {
  static const double t = static_cast<double>(sc_core::sc_time(1.0, sc_core::SC_SEC).value());
  return t;
}

// The longest duration (and latest time) the simulator represents, in seconds.
inline double max_seconds() {
  return static_cast<double>(kMaxTicks) / ticks_per_second();
}

// "1.2e+07 s": `what` (a duration, a time) is past the range.
[[noreturn]] void throw_time_overflow(const std::string& what, double seconds);

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

// Throws time_overflow when `s` (also NaN or infinite) is past the range.
inline sc_core::sc_time seconds_to_time(double s) {
  if (s == 0) return sc_core::SC_ZERO_TIME;
  // volatile: round exactly as the kernel does (no fused or extended-precision math).
  volatile double ticks = s * ticks_per_second() + 0.5;
  if (!(ticks < static_cast<double>(kMaxTicks) && ticks >= 0))
    throw_time_overflow("a duration of", s);
  return time_from_ticks(static_cast<uint64_t>(ticks));
}

// `t` itself, or time_overflow when it is past the range (a sum of in-range times).
inline const sc_core::sc_time& checked_time(const sc_core::sc_time& t) {
  if (t.value() > kMaxTicks) throw_time_overflow("a simulated time of", t.to_seconds());
  return t;
}

}  // namespace trnsim::models
